#!/bin/sh
# checks-lib.sh — sourced, never run: what gateway-checks.sh and
# reader-checks.sh share in the gpio-vm guest (POSIX sh, busybox ash). run.sh
# copies it beside them into the initramfs. The Pi's header lines and the
# image's door on them serve the Pi image's VM tests too: scripts/image/vm/
# vmtest-relay.sh (in the booted image) and scripts/raspi3b/run.sh (its
# initramfs). sh has no locals: the names here start with an underscore so
# that they never clobber a caller's.

FAILED=0
pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; FAILED=1; }

# poll TENTHS COMMAND...: runs COMMAND every 0.1 s until it succeeds, at most
# TENTHS × TIME_SCALE times (TIME_SCALE, default 1: run.sh ARCH=arm64 sets 3,
# where every process takes seconds to start under TCG on a loaded host).
poll() {
    _pn=$(($1 * ${TIME_SCALE:-1}))
    shift
    until "$@"; do
        _pn=$((_pn - 1))
        [ "$_pn" -gt 0 ] || return 1
        sleep 0.1
    done
}

# wait_for FILE PATTERN [TENTHS]: until a line of FILE matches (default 10 s).
wait_for() { poll "${3:-100}" grep -q "$2" "$1" 2>/dev/null; }

# gpio_sim_add DIR LABEL LINES NAME...: a live gpio-sim chip at configfs DIR
# (one bank of LINES lines), its first lines named NAME… in order; its chip name in SIM_CHIP, its sysfs directory (sim_gpioN/value,
# pull) in SIM_SYS. A chip left at DIR by an earlier run is removed first.
gpio_sim_add() {
    _dir=$1 _label=$2 _lines=$3
    shift 3
    [ -d "$_dir" ] && gpio_sim_remove "$_dir"
    mkdir "$_dir" "$_dir/bank0" || return 1
    echo "$_lines" > "$_dir/bank0/num_lines"
    echo "$_label" > "$_dir/bank0/label"
    _i=0
    for _line in "$@"; do
        mkdir "$_dir/bank0/line$_i"
        echo "$_line" > "$_dir/bank0/line$_i/name"
        _i=$((_i + 1))
    done
    echo 1 > "$_dir/live"
    SIM_CHIP=$(cat "$_dir/bank0/chip_name")
    SIM_SYS=/sys/devices/platform/$(cat "$_dir/dev_name")/$SIM_CHIP
    [ -e "$SIM_SYS/sim_gpio0/value" ]
}

# gpio_sim_remove DIR: the chip at DIR gone (nothing when there is none).
gpio_sim_remove() {
    [ -d "$1" ] || return 0
    echo 0 > "$1/live" 2>/dev/null
    for _d in "$1"/bank0/line*; do [ -d "$_d" ] && rmdir "$_d"; done
    rmdir "$1/bank0" "$1" 2>/dev/null
}

# pi_header_sim DIR: the Pi's header lines the door uses (GPIO17 the relay,
# GPIO22/23/24 the indicators, GPIO27 the button) as a gpio-sim chip at DIR.
pi_header_sim() { gpio_sim_add "$1" doorgateway-pi 5 GPIO17 GPIO22 GPIO23 GPIO24 GPIO27; }

# pi_door_toml ID CHIP CONNSTRING ACTIVE_LOW STATE_DIR RUNTIME_DIR: the image's
# door on those lines (a strike on GPIO17) as a gateway.toml, on stdout.
pi_door_toml() {
    cat <<EOF
[device]
id = "$1"
[board]
kind = "real"
chip = "$2"
[reader]
connstring = "$3"
[[outputs]]
name = "strike"
line = "GPIO17"
active_low = $4
locked_level = "deenergised"
[indicators.green]
line = "GPIO22"
[indicators.red]
line = "GPIO23"
[indicators.buzzer]
line = "GPIO24"
[inputs.button]
line = "GPIO27"
active_low = true
bias = "pull-up"
[clock]
declare_synchronised = true
[control]
admin_group = "root"
[paths]
state_dir = "$5"
runtime_dir = "$6"
EOF
}
