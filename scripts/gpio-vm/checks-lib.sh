#!/bin/sh
# checks-lib.sh — sourced, never run: what gateway-checks.sh, fire-checks.sh and
# reader-checks.sh share in the gpio-vm guest (POSIX sh, busybox ash). run.sh
# copies it beside them into the initramfs. The Pi's header lines and the
# image's door on them serve the Pi image's VM tests too: scripts/image/vm/
# vmtest-relay.sh (in the booted image) and scripts/raspi3b/run.sh (its
# initramfs). sh has no locals: the names here start with an underscore so
# that they never clobber a caller's.

FAILED=0
# A door with no reader: libnfc retries; the lines are what is watched.
NO_READER=pn532_uart:/dev/no-reader-here
pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; FAILED=1; }

# A check notes what is wrong with `problem TEXT` (problems is emptied at its
# start) and ends with judge NAME DETAIL [MORE]: PASS with DETAIL when nothing
# was noted, else FAIL with the problems, DETAIL and MORE.
problem() { problems="$problems; $*"; }
judge() { if [ -z "$problems" ]; then pass "$1" "$2"; else fail "$1" "${problems#; } — $2${3:+; $3}"; fi; }
# verdict STATUS NAME PASS_DETAIL FAIL_DETAIL: PASS when STATUS (the check's
# test, $? right after it) is 0, else FAIL.
verdict() { if [ "$1" = 0 ]; then pass "$2" "$3"; else fail "$2" "$4"; fi; }

# guest_setup BINARY...: each BINARY executable, configfs mounted with
# gpio-sim in it, and /etc/group: gatewayd reads the admin group from it
# (never NSS). Anything missing is one "FAIL setup" line and exit 1.
guest_setup() {
    for _b in "$@"; do [ -x "$_b" ] || { echo "FAIL setup: $_b not executable"; exit 1; }; done
    modprobe gpio-sim 2>/dev/null || true
    mountpoint -q /sys/kernel/config 2>/dev/null || mount -t configfs none /sys/kernel/config
    [ -d /sys/kernel/config/gpio-sim ] || { echo "FAIL setup: no gpio-sim configfs (CONFIG_GPIO_SIM)"; exit 1; }
    [ -f /etc/group ] || { mkdir -p /etc && echo "root:x:0:" > /etc/group && echo "root:x:0:0:root:/:/bin/sh" > /etc/passwd; }
}

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
# not COMMAND...: COMMAND's status inverted (for poll).
not() { ! "$@"; }

# holds FILE VALUE TWENTIETHS: FILE reads VALUE at every look, each 0.05 s.
holds() {
    _hn=$3
    while [ "$_hn" -gt 0 ]; do
        [ "$(cat "$1")" = "$2" ] || return 1
        sleep 0.05
        _hn=$((_hn - 1))
    done
}

# run_bg NAME COMMAND...: COMMAND in the background, its pid in $PID (exec
# keeps it: the core probe names its file by it, and a signal reaches COMMAND
# itself) and its exit status in $WORKDIR/NAME.status once it ends. The caller
# redirects its output.
run_bg() {
    _name=$1
    shift
    rm -f "$WORKDIR/$_name.pid" "$WORKDIR/$_name.status"
    (
        sh -c 'echo $$ > "$0"; exec "$@"' "$WORKDIR/$_name.pid" "$@"
        echo $? > "$WORKDIR/$_name.status"
    ) &
    poll 50 test -s "$WORKDIR/$_name.pid"
    PID=$(cat "$WORKDIR/$_name.pid")
}

# status NAME: wait (up to STATUS_WAIT_S, default 10 s) for run_bg's NAME to
# end; print its exit status. run.sh ARCH=arm64 sets 90: under TCG the
# aarch64 stack-overflow case is locked at once but takes 15-40 s to die.
status() {
    _sn=$(( ${STATUS_WAIT_S:-10} * 10 ))
    while [ ! -s "$WORKDIR/$1.status" ] && [ $_sn -gt 0 ]; do sleep 0.1; _sn=$((_sn - 1)); done
    cat "$WORKDIR/$1.status" 2>/dev/null
}

# start_daemon NAME CONFIG: gatewayd on CONFIG by run_bg, its output in
# $WORKDIR/NAME.log; waits for "ready".
start_daemon() {
    run_bg "$1" "$GATEWAY" daemon --config "$2" > "$WORKDIR/$1.log" 2>&1
    wait_for "$WORKDIR/$1.log" 'ready in' 300
}

# sampler FILE MS OUT: `gatewayctl gpio sample` (sub-millisecond) of a line's
# value FILE into OUT for MS × TIME_SCALE in the background, $SAMPLER the
# sampler itself (not a subshell: it may be killed); returns once it runs.
sampler() {
    "$GATEWAY" ctl gpio sample --file "$1" --duration-ms "$(($2 * ${TIME_SCALE:-1}))" > "$3" &
    SAMPLER=$!
    wait_for "$3" . 50 || true
}
sampler_stop() { kill "$SAMPLER" 2>/dev/null; wait "$SAMPLER" 2>/dev/null; }

# levels FILE: the sampled levels in order, e.g. "1 0 1 0 1".
levels() { grep -v end "$1" | awk '{ printf "%s%s", sep, $2; sep=" " }'; }

# audit_rows OUT SOCKET LIMIT N PATTERN...: at least N rows of the audit log's
# newest LIMIT (through SOCKET, kept in OUT) each match every PATTERN.
audit_rows() {
    _out=$1 _sock=$2 _limit=$3 _want=$4
    shift 4
    "$GATEWAY" ctl log --limit "$_limit" --socket "$_sock" > "$_out" 2>&1 || return 1
    _rows=$(cat "$_out")
    for _p in "$@"; do _rows=$(echo "$_rows" | grep -- "$_p") || return 1; done
    [ "$(echo "$_rows" | grep -c .)" -ge "$_want" ]
}

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

# latency_verdict RC NAME OUT QUANTILE BOUND SKIP ABOUT: a timer's report
# (firebench, wiegandtx -b) in OUT, printed as "#" lines, judged: exit RC 0,
# at least 20 samples and QUANTILE (p50, p99) under BOUND × TIME_SCALE ms; the
# failure names OUT's lines but those starting with SKIP (one per sample).
latency_verdict() {
    sed "s/^/# $2: /" "$3"
    _fig=$(grep '^latency' "$3")
    _q=$(echo "$_fig" | sed -n "s/.* $4=\([0-9]*\)\..*/\1/p")
    _n=$(echo "$_fig" | sed -n 's/.* n=\([0-9]*\) .*/\1/p')
    _bound=$(($5 * ${TIME_SCALE:-1}))
    if [ "$1" = 0 ] && [ "${_n:-0}" -ge 20 ] && [ -n "$_q" ] && [ "$_q" -lt "$_bound" ]; then
        pass "$2" "$_fig, $4 bound $_bound ms ($7)"
    else
        fail "$2" "exit $1, ${_fig:-no figures}: $(grep -v "^$6" "$3" | tr '\n' ' ')"
    fi
}

# door_toml ID CHIP CONNSTRING STATE_DIR RUNTIME_DIR: what every door in these
# checks has, as gateway.toml lines on stdout: the board on CHIP, the reader,
# a synchronised clock, root the admin group, and the two directories.
door_toml() {
    cat <<EOF
[device]
id = "$1"
[board]
kind = "real"
chip = "$2"
[reader]
connstring = "$3"
[clock]
declare_synchronised = true
[control]
admin_group = "root"
[paths]
state_dir = "$4"
runtime_dir = "$5"
EOF
}

# toml_output NAME LINE ACTIVE_LOW LOCKED_LEVEL: one [[outputs]] entry.
toml_output() { printf '[[outputs]]\nname = "%s"\nline = "%s"\nactive_low = %s\nlocked_level = "%s"\n' "$@"; }

# toml_panel GREEN RED BUZZER BUTTON: the indicators' lines and the button's
# (active low, pulled up).
toml_panel() {
    printf '[indicators.green]\nline = "%s"\n[indicators.red]\nline = "%s"\n[indicators.buzzer]\nline = "%s"\n' "$1" "$2" "$3"
    printf '[inputs.button]\nline = "%s"\nactive_low = true\nbias = "pull-up"\n' "$4"
}

# toml_action INDEX NAME [CREDENTIAL]: an action that pulses the strike 1.5 s.
toml_action() {
    printf '[[actions]]\nindex = %s\nname = "%s"\nsteps = [{ pulse = "strike", ms = 1500 }]\n' "$1" "$2"
    [ -z "${3:-}" ] || printf 'credentials = ["%s"]\n' "$3"
}

# pi_door_toml ID CHIP CONNSTRING ACTIVE_LOW STATE_DIR RUNTIME_DIR: the image's
# door on those lines (a strike on GPIO17) as a gateway.toml, on stdout.
pi_door_toml() {
    door_toml "$1" "$2" "$3" "$5" "$6"
    toml_output strike GPIO17 "$4" deenergised
    toml_panel GPIO22 GPIO23 GPIO24 GPIO27
}
