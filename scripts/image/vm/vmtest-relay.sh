#!/bin/sh
# vmtest-relay (test copy only, put there by scripts/image/test-vm.sh): the
# relay line of a booted image on gpio-sim, watched from outside gatewayd.
# gpio-sim (gpio-sim-ext.ko, built for the image's own kernel by
# scripts/gpio-vm/run.sh MODULE=; the chip made by scripts/gpio-vm/checks-lib.sh,
# put beside the module) models what the Pi's pin controller does under Debian's kernel: a released line takes its pull, a request's bias sets
# the pull, and a new line starts pulled down (GPIO17 at reset).
#   vmtest-relay chip         load gpio-sim, make the Pi's header lines the door
#                             uses (GPIO17 relay, GPIO22/23/24, GPIO27), print
#                             the chip's name
#   vmtest-relay value        the relay line's level now (0/1)
#   vmtest-relay pull         its pull now
#   vmtest-relay start NAME   sample the line in the background (a transient
#                             unit: every change with its time, ~0.2 ms apart)
#   vmtest-relay stop NAME    end that sampler; print the levels it saw in order
set -eu
CFG=/sys/kernel/config/gpio-sim/vmtest-pi
STATE=/run/vmtest-relay
mkdir -p "$STATE"
sys() { cat "$STATE/sys"; }
case ${1:-} in
chip)
    grep -qw configfs /proc/filesystems || modprobe configfs
    mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
    [ -d /sys/kernel/config/gpio-sim ] || insmod /usr/local/lib/vmtest/gpio-sim-ext.ko
    # shellcheck source=scripts/gpio-vm/checks-lib.sh
    [ -d "$CFG" ] || { . /usr/local/lib/vmtest/checks-lib.sh && pi_header_sim "$CFG"; }
    chip=$(cat "$CFG/bank0/chip_name")
    echo "/sys/devices/platform/$(cat "$CFG/dev_name")/$chip" > "$STATE/sys"
    # The shipped udev rule gives the chip's node to group gpio.
    udevadm settle
    echo "$chip"
    ;;
value) cat "$(sys)/sim_gpio0/value" ;;
pull) cat "$(sys)/sim_gpio0/pull" ;;
start)
    name=${2:?start NAME}
    rm -f "$STATE/$name.samples"
    systemd-run --quiet --unit="vmtest-relay-$name" -p StandardOutput="file:$STATE/$name.samples" \
        gatewayctl gpio sample --file "$(sys)/sim_gpio0/value" --duration-ms 900000
    i=0
    while [ ! -s "$STATE/$name.samples" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    [ -s "$STATE/$name.samples" ]
    ;;
stop)
    name=${2:?stop NAME}
    systemctl stop "vmtest-relay-$name" 2> /dev/null || true
    grep -v end "$STATE/$name.samples" | awk '{ printf "%s%s", sep, $2; sep = " " } END { print "" }'
    ;;
*)
    echo "usage: vmtest-relay chip|value|pull|start NAME|stop NAME" >&2
    exit 2
    ;;
esac
