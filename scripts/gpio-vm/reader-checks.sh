#!/bin/sh
# Reader checks over I2C and SPI, run inside the gpio-vm guest after
# gateway-checks.sh (POSIX sh). pn532-sim registers /dev/i2c-1 or
# /dev/spidev0.0 through CUSE (/dev/cuse, cuse.ko), so libnfc's pn532_i2c and
# pn532_spi drivers reach the emulated PN532 through the kernel's character
# device layer with their own open/ioctl/read/write calls. The static
# gateway's `gatewayctl reader scan|write` and `gatewayd` (on a gpio-sim
# chip) are the hosts.
#
# One result line per check: "PASS <check>: <detail>" or "FAIL <check>: <detail>";
# lines starting with "#" are the wire trace and figures. Exit 0 when all passed.
# Bounds are generous (TCG is slow and the host is shared): the checks assert
# behaviour, never timing.
#
# Environment: GATEWAY, PN532SIM (default: on PATH), WORKDIR (/tmp/reader-checks),
# TIME_SCALE (checks.env: 3 on the slower arm64 guest) multiplies every wait.

set -u

GATEWAY=${GATEWAY:-$(command -v gateway)}
PN532SIM=${PN532SIM:-$(command -v pn532-sim)}
WORKDIR=${WORKDIR:-/tmp/reader-checks}
CFG=/sys/kernel/config/gpio-sim
SIMDEV=$CFG/doorgateway-reader
FAILED=0
S=${TIME_SCALE:-1}
SIMPID=
DAEMONPID=
rm -rf "$WORKDIR" && mkdir -p "$WORKDIR"

pass() { echo "PASS $1: $2"; }
fail() { echo "FAIL $1: $2"; FAILED=1; }
ctl() { "$GATEWAY" ctl "$@"; }
simctl() { "$PN532SIM" --control "$WORKDIR/sim.sock" --send "$*"; }

# The compat vectors' stickers (Tests/Fixtures/compat.json): v1, v2, and a
# Text + URI + External message.
V1='smp://action?idx=1&ts=1758686540&sig=eeaa6b04b4a2a004c1e52585799713f461eafa81573a7a23e255963a3ce13e69'
V2="$V1&u=Kxpen2V3lbY5yg2NFWxRgA"
V2UID=04F11AE6510705
MULTI=91010d5402656e46726f6e7420646f6f7211017f5500736d703a2f2f616374696f6e3f6964783d312674733d31373538363836353430267369673d6565616136623034623461326130303463316535323538353739393731336634363165616661383135373361376132336532353539363361336365313365363926753d4b7870656e3256336c6259357967324e465778526741541702646f6f72676174657761792e6578616d706c653a7461670102

# wait_for FILE PATTERN [TENTHS]: until a line of FILE matches (default 10 s).
wait_for() {
    n=$((${3:-100} * S))
    while [ "$n" -gt 0 ]; do
        grep -q "$2" "$1" 2>/dev/null && return 0
        sleep 0.1
        n=$((n - 1))
    done
    return 1
}

# start_sim BUS DEVICE [ARGS…]: pn532-sim on the bus, its device node ready.
start_sim() {
    bus=$1 dev=$2; shift 2
    rm -f "$WORKDIR/sim.sock" "$WORKDIR/sim.out"
    "$PN532SIM" "--$bus" "$dev" --control "$WORKDIR/sim.sock" --rf-timing --trace "$@" \
        > "$WORKDIR/sim.out" 2> "$WORKDIR/sim.log" &
    SIMPID=$!
    wait_for "$WORKDIR/sim.out" "$dev" 300 && [ -S "$WORKDIR/sim.sock" ] && [ -c "$dev" ]
}

stop_sim() {
    [ -n "$SIMPID" ] && kill "$SIMPID" 2>/dev/null && wait "$SIMPID" 2>/dev/null
    SIMPID=
}

# scan NAME CONNSTRING [ARGS…]: gatewayctl reader scan into NAME.out/.err, status in $rc.
scan() {
    name=$1 conn=$2; shift 2
    ctl reader scan --device "$conn" "$@" > "$WORKDIR/$name.out" 2> "$WORKDIR/$name.err"
    rc=$?
    return $rc
}

write_tag() {
    name=$1 conn=$2; shift 2
    ctl reader write --device "$conn" --timeout 20 "$@" > "$WORKDIR/$name.out" 2> "$WORKDIR/$name.err"
    rc=$?
}

errs() { tail -2 "$WORKDIR/$1.err" 2>/dev/null | tr '\n' ' '; }

# --- gatewayctl reader scan|write over one bus --------------------------------
check_reader() {
    bus=$1 dev=$2 conn=$3
    # The chip is off the bus when the host opens it: no reader (exit 2);
    # once it is on the bus, the same command finds the reader and no tag.
    if ! start_sim "$bus" "$dev" --absent; then
        fail "$bus-absent" "pn532-sim did not register $dev: $(tail -3 "$WORKDIR/sim.log" | tr '\n' ' ')"
        stop_sim
        return
    fi
    scan absent "$conn" --timeout 1
    rc_absent=$rc
    simctl present > /dev/null
    scan present "$conn" --timeout 1
    if [ $rc_absent = 2 ] && [ $rc = 1 ]; then
        pass "$bus-absent" "chip off the bus: exit 2 ($(errs absent)); on the bus, no tag: exit 1"
    else
        fail "$bus-absent" "absent: exit $rc_absent ($(errs absent)), present without tag: exit $rc (want 2, 1) $(errs present)"
    fi

    # v1, then v2 password-protected over it, read back each time.
    simctl insert $V2UID ntag213 > /dev/null
    ok=yes detail=
    scan blank "$conn" --timeout 20 --json
    grep -q '"content" *: *"blank"' "$WORKDIR/blank.out" || { ok=no; detail="$detail blank scan: $(cat "$WORKDIR/blank.out") $(errs blank);"; }
    write_tag v1 "$conn" --url "$V1"
    [ $rc = 0 ] || { ok=no; detail="$detail v1 write exit $rc $(errs v1);"; }
    scan v1scan "$conn" --timeout 20
    grep -qF "$V1" "$WORKDIR/v1scan.out" || { ok=no; detail="$detail v1 not read back: $(cat "$WORKDIR/v1scan.out") $(errs v1scan);"; }
    write_tag v2 "$conn" --url "$V2" --overwrite --protect --state-dir "$WORKDIR/state"
    grep -q "password-protected" "$WORKDIR/v2.out" || { ok=no; detail="$detail v2 write exit $rc $(errs v2);"; }
    scan v2scan "$conn" --timeout 20 --json
    grep -qF "u=Kxpen2V3lbY5yg2NFWxRgA" "$WORKDIR/v2scan.out" && grep -q '"password_protected_from_page" *: *4' "$WORKDIR/v2scan.out" \
        || { ok=no; detail="$detail v2 not read back protected: $(cat "$WORKDIR/v2scan.out") $(errs v2scan);"; }
    if [ $ok = yes ]; then
        pass "$bus-v1-v2" "blank read, v1 written and read back, v2 written password-protected and read back (UID $V2UID)"
    else
        fail "$bus-v1-v2" "$detail"
    fi

    # Wire trace of one tap: what libnfc does on this bus for the v2 sticker.
    simctl remove > /dev/null
    simctl stats reset > /dev/null
    before=$(wc -l < "$WORKDIR/sim.log")
    ( sleep 0.5; simctl reinsert > /dev/null ) &
    scan tap "$conn" --timeout 20
    wait $!
    stats=$(simctl stats)
    if [ $rc = 0 ] && grep -qF "$V2" "$WORKDIR/tap.out"; then
        pass "$bus-tap-trace" "a tap read while waiting; chip and bus counters: ${stats#ok }"
    else
        fail "$bus-tap-trace" "exit $rc $(errs tap); ${stats#ok }"
    fi
    # From the InAutoPoll that found the tag (the last one sent) to the end.
    tail -n +"$((before + 1))" "$WORKDIR/sim.log" | grep -v "control:" > "$WORKDIR/tap.trace"
    from=$(grep -n "d4 60 " "$WORKDIR/tap.trace" | tail -1 | cut -d: -f1)
    echo "# $bus wire trace of one tap, from the InAutoPoll (60h) that found the tag (not-ready polls shown 1 in 50):"
    tail -n +"${from:-1}" "$WORKDIR/tap.trace" | sed 's/^pn532-sim: /#   /' | cut -c1-200 | head -60

    # A three-record message on a fresh NTAG215.
    simctl insert 04A1B2C3D4E5F6 ntag215 > /dev/null
    write_tag multi "$conn" --ndef "$MULTI"
    scan multiscan "$conn" --timeout 20
    if [ $rc = 0 ] && grep -q "Front door" "$WORKDIR/multiscan.out" && grep -qF "$V2" "$WORKDIR/multiscan.out" \
        && grep -q "NTAG215" "$WORKDIR/multiscan.out"; then
        pass "$bus-multi-record" "Text + URI + External written and read back on an NTAG215: $(grep -c '^  \[' "$WORKDIR/multiscan.out") records"
    else
        fail "$bus-multi-record" "exit $rc: $(cat "$WORKDIR/multi.out" "$WORKDIR/multiscan.out" | tr '\n' ' ') $(errs multiscan)"
    fi

    # A muted chip: the host gives up (a timeout, not a hang) and exits non-zero.
    simctl mute > /dev/null
    t0=$(date +%s)
    scan muted "$conn" --timeout 2 &
    SCANPID=$!
    n=$((900 * S))
    while [ $n -gt 0 ] && kill -0 $SCANPID 2>/dev/null; do sleep 0.1; n=$((n - 1)); done
    if kill -0 $SCANPID 2>/dev/null; then
        kill $SCANPID; wait $SCANPID
        fail "$bus-muted" "gatewayctl reader scan still running after 90 s on a muted chip"
    else
        wait $SCANPID; rc=$?
        [ -s "$WORKDIR/muted.err" ] || true
        if [ $rc != 0 ]; then
            pass "$bus-muted" "muted chip: gave up after $(( $(date +%s) - t0 )) s with exit $rc ($(errs muted))"
        else
            fail "$bus-muted" "muted chip, yet exit 0: $(cat "$WORKDIR/muted.out")"
        fi
    fi
    simctl unmute > /dev/null
    stop_sim
}

# --- gatewayd on one bus: tap → verdict → relay pulse on a gpio-sim line -------
setup_gpio() {
    [ -d "$SIMDEV" ] && return 0
    mkdir "$SIMDEV" "$SIMDEV/bank0" || return 1
    echo 8 > "$SIMDEV/bank0/num_lines"
    echo doorgateway-reader > "$SIMDEV/bank0/label"
    i=0
    for name in RELAY LED_GREEN LED_RED BUZZER BUTTON DOOR; do
        mkdir "$SIMDEV/bank0/line$i"
        echo "$name" > "$SIMDEV/bank0/line$i/name"
        i=$((i + 1))
    done
    echo 1 > "$SIMDEV/live"
    CHIP=$(cat "$SIMDEV/bank0/chip_name")
    SYS=/sys/devices/platform/$(cat "$SIMDEV/dev_name")/$CHIP
    echo pull-up > "$SYS/sim_gpio4/pull"  # the button is not pressed
}

teardown_gpio() {
    [ -d "$SIMDEV" ] || return 0
    echo 0 > "$SIMDEV/live" 2>/dev/null
    for d in "$SIMDEV"/bank0/line*; do [ -d "$d" ] && rmdir "$d"; done
    rmdir "$SIMDEV/bank0" "$SIMDEV" 2>/dev/null
}

write_config() {
    D=$WORKDIR/daemon-$1
    rm -rf "$D" && mkdir -p "$D/state" "$D/run"
    cat > "$D/gateway.toml" <<EOF
[device]
id = "vm-$1"
[board]
kind = "real"
chip = "$CHIP"
[reader]
connstring = "$2"
[[outputs]]
name = "strike"
line = "RELAY"
[indicators.buzzer]
line = "BUZZER"
[indicators.green]
line = "LED_GREEN"
[indicators.red]
line = "LED_RED"
[inputs.button]
line = "BUTTON"
active_low = true
bias = "pull-up"
[[actions]]
index = 0
name = "door"
steps = [{ pulse = "strike", ms = 1500 }]
[clock]
declare_synchronised = true
[control]
admin_group = "root"
[paths]
state_dir = "$D/state"
runtime_dir = "$D/run"
EOF
}

dctl() { DOORGATEWAY_SOCKET="$D/run/control.sock" "$GATEWAY" ctl "$@"; }

# relay_pulse_seen TENTHS: the RELAY line goes to 1 (unlocked) within the time.
relay_pulse_seen() {
    n=$1
    while [ "$n" -gt 0 ]; do
        [ "$(cat "$SYS/sim_gpio0/value")" = 1 ] && return 0
        sleep 0.05
        n=$((n - 1))
    done
    return 1
}

check_daemon() {
    bus=$1 dev=$2 conn=$3
    setup_gpio || { fail "$bus-daemon" "no gpio-sim chip"; return; }
    write_config "$bus" "$conn"
    if ! start_sim "$bus" "$dev"; then
        fail "$bus-daemon" "pn532-sim did not register $dev"
        stop_sim
        return
    fi
    "$GATEWAY" daemon --config "$D/gateway.toml" > "$D/daemon.log" 2>&1 &
    DAEMONPID=$!
    wait_for "$D/daemon.log" "reader" 300
    n=$((300 * S))
    while [ $n -gt 0 ] && ! dctl status > /dev/null 2>&1; do sleep 0.1; n=$((n - 1)); done
    ok=yes detail=
    # Provisioning: arm, present a blank sticker; the daemon writes and verifies it.
    dctl provision --action 0 --label "vm $bus" > "$D/provision.out" 2>&1 || { ok=no; detail="provision: $(cat "$D/provision.out");"; }
    simctl insert 04C0FFEE00$( [ "$bus" = i2c ] && echo 0001 || echo 0002 ) ntag213 > /dev/null
    n=$((600 * S))
    while [ $n -gt 0 ] && ! dctl tags list 2>/dev/null | grep -q active; do sleep 0.1; n=$((n - 1)); done
    dctl tags list > "$D/tags.out" 2>&1
    grep -q active "$D/tags.out" || { ok=no; detail="$detail no active tag after provisioning: $(cat "$D/tags.out" | tr '\n' ' ');"; }
    simctl remove > /dev/null
    sleep 2  # longer than same_tag_quiet_ms: the next tap is a new one
    [ "$(cat "$SYS/sim_gpio0/value")" = 0 ] || { ok=no; detail="$detail relay not locked before the tap;"; }
    simctl stats reset > /dev/null
    simctl reinsert > /dev/null
    if relay_pulse_seen $((400 * S)); then
        pulse=yes
    else
        pulse=no
        ok=no detail="$detail no relay pulse on RELAY within 20 s;"
    fi
    stats=$(simctl stats)
    n=$((100 * S))
    while [ $n -gt 0 ] && ! dctl log --limit 5 2>/dev/null | grep -q granted; do sleep 0.1; n=$((n - 1)); done
    dctl log --limit 5 > "$D/log.out" 2>&1
    grep -q granted "$D/log.out" || { ok=no; detail="$detail no 'granted' in the audit log: $(tail -3 "$D/log.out" | tr '\n' ' ');"; }
    if [ $ok = yes ]; then
        pass "$bus-daemon" "gatewayd on $conn: provisioned sticker tapped → granted → relay pulse on $CHIP RELAY; ${stats#ok }"
    else
        fail "$bus-daemon" "$detail $(tail -5 "$D/daemon.log" | tr '\n' ' ')"
    fi
    # Reader loss and recovery: the chip leaves the bus and comes back; the
    # daemon reopens it without restarting and without leaking descriptors.
    simctl remove > /dev/null
    fds_before=$(ls /proc/$DAEMONPID/fd | wc -l)
    simctl absent > /dev/null
    n=$((300 * S))
    while [ $n -gt 0 ] && ! dctl reader info 2>/dev/null | grep -q "lost"; do sleep 0.1; n=$((n - 1)); done
    lost=$(dctl reader info 2>&1 | grep -i health | tr '\n' ' ')
    simctl present > /dev/null
    n=$((300 * S))
    while [ $n -gt 0 ] && dctl reader info 2>/dev/null | grep -q "lost"; do sleep 0.1; n=$((n - 1)); done
    back=$(dctl reader info 2>&1 | grep -i health | tr '\n' ' ')
    fds_after=$(ls /proc/$DAEMONPID/fd | wc -l)
    if echo "$lost" | grep -q lost && ! echo "$back" | grep -q lost && [ "$fds_after" -le "$fds_before" ]; then
        pass "$bus-recovery" "chip off the bus: $lost; back on it: $back; daemon fds $fds_before → $fds_after"
    else
        fail "$bus-recovery" "off: ${lost:-?}; back: ${back:-?}; fds $fds_before → $fds_after; $(tail -4 "$D/daemon.log" | tr '\n' ' ')"
    fi
    kill "$DAEMONPID" 2>/dev/null
    wait "$DAEMONPID" 2>/dev/null
    DAEMONPID=
    stop_sim
}

# --- make bench-bus: insertion → decoded NDEF on each transport ------------------
# The same hidden `gatewayctl reader bench` on each wire, in this one guest, so
# the transports are compared under the same (TCG-slowed) CPU.
bench() {
    taps=${READER_BENCH_TAPS:-40}
    # pn532-sim's UART front is a pty: the guest needs devpts.
    [ -e /dev/pts/ptmx ] || { mkdir -p /dev/pts && mount -t devpts devpts /dev/pts; }
    for t in "i2c /dev/i2c-1 pn532_i2c:/dev/i2c-1 i2c:100000 --i2c-speed 100000" \
        "i2c /dev/i2c-1 pn532_i2c:/dev/i2c-1 i2c:400000 --i2c-speed 400000" \
        "spi /dev/spidev0.0 pn532_spi:/dev/spidev0.0:1000000 spi:1000000" \
        "uart - pn532_uart:$WORKDIR/pn532 uart:115200 --baud 115200"; do
        set -- $t
        bus=$1 dev=$2 conn=$3 wire=$4; shift 4
        rm -f "$WORKDIR/sim.sock"
        if [ "$bus" = uart ]; then
            "$PN532SIM" --link "$WORKDIR/pn532" --control "$WORKDIR/sim.sock" --rf-timing "$@" > /dev/null 2> "$WORKDIR/sim.log" &
        else
            "$PN532SIM" "--$bus" "$dev" --control "$WORKDIR/sim.sock" --rf-timing "$@" > /dev/null 2> "$WORKDIR/sim.log" &
        fi
        SIMPID=$!
        n=$((300 * S))
        while [ $n -gt 0 ] && [ ! -S "$WORKDIR/sim.sock" ]; do sleep 0.1; n=$((n - 1)); done
        ctl reader bench --device "$conn" --sim-control "$WORKDIR/sim.sock" --wire "$wire" --taps "$taps" --scratch "$WORKDIR" \
            || echo "bench $wire failed: $(tail -3 "$WORKDIR/sim.log" | tr '\n' ' ')"
        stop_sim
    done
}

main() {
    if [ "${1:-}" = bench ]; then
        bench
        return 0
    fi
    [ -x "$GATEWAY" ] || { echo "FAIL setup: gateway binary $GATEWAY not executable"; exit 1; }
    [ -x "$PN532SIM" ] || { echo "FAIL setup: pn532-sim binary $PN532SIM not executable"; exit 1; }
    [ -c /dev/cuse ] || { echo "FAIL setup: no /dev/cuse (cuse.ko)"; exit 1; }
    # gatewayd reads the admin group from /etc/group (never NSS).
    [ -f /etc/group ] || { mkdir -p /etc && echo "root:x:0:" > /etc/group && echo "root:x:0:0:root:/:/bin/sh" > /etc/passwd; }
    if [ "${READER_CHECKS_ONLY:-}" != daemon ]; then
        check_reader i2c /dev/i2c-1 pn532_i2c:/dev/i2c-1
        check_reader spi /dev/spidev0.0 pn532_spi:/dev/spidev0.0:500000
    fi
    check_daemon i2c /dev/i2c-1 pn532_i2c:/dev/i2c-1
    check_daemon spi /dev/spidev0.0 pn532_spi:/dev/spidev0.0:500000
    teardown_gpio
    return $FAILED
}

main "$@"
