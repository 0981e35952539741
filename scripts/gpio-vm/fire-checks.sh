#!/bin/sh
# Fire alarm checks (docs/policy.md "Fire alarm", issue 36) against a real
# kernel's GPIO character device, in the gpio-vm guest (POSIX sh, busybox
# ash), on gpio-sim lines, with the static gateway binary as the door runs it.
#
# One result line per check: "PASS <check>: <detail>" or "FAIL <check>: <detail>".
# Exit status: 0 when every check passed, 1 otherwise.
#
# The door: a maglock (locked energised: on_fire "release" by default) and a
# fail-secure strike (on_fire "keep" by default), and [fire_alarm] as shipped
# (alarm_level "high", bias "pull-up", supervised): a normally-closed loop to
# ground. In gpio-sim the "pull" file is the world outside the pin: writing
# pull-down is the loop closed (reads low, no alarm); pull-up is the loop
# open — the panel in alarm, or a cut wire, which leaves the line at the
# request's own pull-up (a request's bias sets the sim line's pull: a fresh
# start with nothing written reads high, as a cut wire does).
#
# Environment: GATEWAY (default: `gateway` on PATH, else /gateway), WORKDIR,
# TIME_SCALE, STATUS_WAIT_S (checks.env), FIREBENCH (default: firebench on PATH).

set -u

GATEWAY=${GATEWAY:-$(command -v gateway || echo /gateway)}
FIREBENCH=${FIREBENCH:-$(command -v firebench || echo /bin/firebench)}
WORKDIR=${WORKDIR:-/tmp/fire-checks}
EDGES=${FIRE_EDGES:-20}
FIRESIM=/sys/kernel/config/gpio-sim/doorgateway-fire
rm -rf "$WORKDIR" && mkdir -p "$WORKDIR"
# shellcheck source=scripts/gpio-vm/checks-lib.sh
. "$(dirname "$0")/checks-lib.sh"

# Lines: 0 MAGLOCK, 1 STRIKE, 2 FIRE, 3 BUTTON, 4 GREEN, 5 RED, 6 BUZZER.
# The maglock is active-high and locked energised: locked reads 1, released 0.
LOCKED=1 RELEASED=0
value() { cat "$FSYS/sim_gpio$1/value"; }
loop() {
    if [ "$1" = closed ]; then echo pull-down; else echo pull-up; fi > "$FSYS/sim_gpio2/pull"
}

# stop NAME SIGNAL: the signal to $PID, then its exit status.
stop() { kill "-$2" "$PID" 2>/dev/null; status "$1"; }

ctl() { "$GATEWAY" ctl "$@" --socket "$WORKDIR/run/control.sock"; }
fire_state() { ctl status --json 2>/dev/null | sed -n 's/.*"fire":{"state":"\([a-z]*\)".*/\1/p'; }
is_value() { [ "$(value "$1")" = "$2" ]; }
is_fire() { [ "$(fire_state)" = "$1" ]; }
# audited KIND TEXT: how many of the last audit rows of KIND carry TEXT (reason, detail).
audited() { ctl log --limit 50 --json 2>/dev/null | tr '}' '\n' | grep "\"kind\":\"$1\"" | grep -c "$2"; }

# --- checks ------------------------------------------------------------------

# A cut wire is an alarm: gatewayd starts with nothing on the fire line but
# its own pull-up (the loop cut before the start) and the maglock is released
# from its request on — never seen locked — while the fail-secure strike stays
# locked. Then the loop closes (fire_cleared: still released), and the loop
# cut again while running is an alarm too.
check_wire_break() {
    problems=""
    sampler "$FSYS/sim_gpio0/value" 30000 "$WORKDIR/wire-break.samples"
    if ! start_daemon wire-break "$CONF"; then
        fail wire-break "gatewayd not ready: $(tail -3 "$WORKDIR/wire-break.log" | tr '\n' ' ')"
        kill "$SAMPLER" 2>/dev/null
        return 1
    fi
    poll 30 is_fire alarm || problem "status fire '$(fire_state)' (want alarm)"
    running=$(value 0) strike=$(value 1)
    [ "$running" = "$RELEASED" ] || problem "maglock $running while the loop is cut"
    [ "$strike" = 0 ] || problem "strike $strike (on_fire keep: locked, 0)"
    grep -q 'fire alarm input in alarm at start' "$WORKDIR/wire-break.log" || problem "no start-in-alarm line in the log"
    sampler_stop
    across=$(levels "$WORKDIR/wire-break.samples")
    [ "$across" = "$RELEASED" ] || problem "maglock levels across the start '$across' (want $RELEASED only)"
    # The loop closes: the input clears, the maglock stays released until a reset.
    loop closed
    poll 30 is_fire cleared || problem "after the loop closed fire '$(fire_state)' (want cleared)"
    [ "$(value 0)" = "$RELEASED" ] || problem "maglock $(value 0) after the input cleared (want released until reset)"
    ctl fire reset > "$WORKDIR/reset1.out" 2>&1 || problem "reset after clear: $(cat "$WORKDIR/reset1.out")"
    poll 30 is_value 0 "$LOCKED" || problem "maglock $(value 0) after the reset (want $LOCKED)"
    # Cut while running.
    loop open
    poll 30 is_value 0 "$RELEASED" || problem "maglock $(value 0) after the wire was cut while running"
    poll 30 is_fire alarm || problem "fire '$(fire_state)' after the cut (want alarm)"
    judge wire-break "start with the loop cut: fire alarm, maglock $running, strike $strike, maglock levels from before the start '$across'; closed → cleared, reset → locked; cut while running → released"
}

# A reset while the input is still in alarm is refused (exit non-zero, the
# maglock stays released, fire_reset_refused audited); once the loop closes
# it succeeds, audited fire_reset by the caller.
check_reset_refused() {
    problems=""
    is_fire alarm || loop open
    poll 30 is_fire alarm || problem "not in alarm: '$(fire_state)'"
    ctl fire reset > "$WORKDIR/refused.out" 2>&1
    rc=$?
    [ "$rc" != 0 ] || problem "reset in alarm exited 0"
    grep -q 'still in alarm' "$WORKDIR/refused.out" || problem "refusal said: $(cat "$WORKDIR/refused.out")"
    sleep 0.3
    [ "$(value 0)" = "$RELEASED" ] || problem "maglock $(value 0) after a refused reset"
    is_fire alarm || problem "fire '$(fire_state)' after a refused reset"
    loop closed
    poll 30 is_fire cleared || problem "fire '$(fire_state)' after the loop closed"
    ctl fire reset > "$WORKDIR/reset2.out" 2>&1 || problem "reset after clear: $(cat "$WORKDIR/reset2.out")"
    poll 30 is_value 0 "$LOCKED" || problem "maglock $(value 0) after the reset"
    refused=$(audited fire_reset_refused input_active) reset=$(audited fire_reset 'by=uid=0')
    [ "${refused:-0}" -ge 1 ] || problem "no fire_reset_refused input_active in the audit log"
    [ "${reset:-0}" -ge 1 ] || problem "no fire_reset by=uid=0 in the audit log: $(ctl log --limit 5 --json 2>&1)"
    judge reset-refused "reset in alarm: exit $rc, '$(head -1 "$WORKDIR/refused.out")', maglock held; after the loop closed: reset, maglock $(value 0); audit: $refused refused, $reset reset by uid=0"
}

# Input edge → maglock released, EDGES times (each reset after the loop
# closes): p99 ≤ 100 ms, the debounce included. Under TCG on arm64 (run.sh
# sets TIME_SCALE 3: every instruction emulated) the bound scales with it;
# the figures are printed either way.
check_latency() {
    "$FIREBENCH" "$FSYS/sim_gpio2/pull" "$FSYS/sim_gpio0/value" "$RELEASED" "$EDGES" \
        "$GATEWAY" ctl fire reset --socket "$WORKDIR/run/control.sock" > "$WORKDIR/latency.out" 2>&1
    latency_verdict $? fire-latency "$WORKDIR/latency.out" p99 100 edge "input edge → maglock line released, debounce 20 ms included"
}

# kill -9 in alarm: the maglock line stays released (the released level's
# pull); SIGTERM in alarm too; a restart with the input still in alarm is
# released at once — never locked on the way.
check_kill() {
    problems=""
    loop open
    poll 30 is_value 0 "$RELEASED" || problem "maglock $(value 0) in alarm before the kill"
    rc_kill=$(stop wire-break KILL)
    after_kill=$(value 0) strike=$(value 1)
    [ "$after_kill" = "$RELEASED" ] || problem "after kill -9: maglock $after_kill (want $RELEASED)"
    [ "$strike" = 0 ] || problem "after kill -9: strike $strike (want 0)"
    sampler "$FSYS/sim_gpio0/value" 60000 "$WORKDIR/restart.samples"
    start_daemon restart "$CONF" || problem "restart not ready: $(tail -2 "$WORKDIR/restart.log" | tr '\n' ' ')"
    poll 30 is_fire alarm || problem "after the restart fire '$(fire_state)'"
    rc_term=$(stop restart TERM)
    after_term=$(value 0)
    [ "$rc_term" = 0 ] || problem "SIGTERM exit status $rc_term"
    [ "$after_term" = "$RELEASED" ] || problem "after SIGTERM in alarm: maglock $after_term"
    sampler_stop
    across=$(levels "$WORKDIR/restart.samples")
    [ "$across" = "$RELEASED" ] || problem "maglock levels across the restart and stop '$across' (want $RELEASED only)"
    # Sanity: out of alarm, the stop locks it as ever (the pull of the locked
    # level). The request's pull-up opens the loop again (gpio-sim): close it
    # after the start, then reset.
    if start_daemon after "$CONF"; then
        loop closed
        poll 30 is_fire cleared || problem "last start: fire '$(fire_state)' after the loop closed"
        ctl fire reset > /dev/null 2>&1 || problem "last start: reset refused"
        poll 30 is_value 0 "$LOCKED" || problem "no alarm: maglock $(value 0) while running"
        stop after KILL > /dev/null
        [ "$(value 0)" = "$LOCKED" ] || problem "no alarm, after kill -9: maglock $(value 0)"
    else
        problem "last start not ready"
        kill -KILL "$PID" 2>/dev/null
    fi
    judge fire-kill "in alarm: kill -9 (exit $rc_kill) → maglock $after_kill, strike $strike; restart in alarm and SIGTERM (exit $rc_term) → $after_term; maglock levels from the kill to after the stop '$across'; out of alarm kill -9 → $(value 0)"
}

main() {
    guest_setup "$GATEWAY"
    gpio_sim_add "$FIRESIM" doorgateway-fire 7 MAGLOCK STRIKE FIRE BUTTON GREEN RED BUZZER \
        || { echo "FAIL setup: no gpio-sim chip at $FIRESIM"; exit 1; }
    FCHIP=$SIM_CHIP FSYS=$SIM_SYS
    echo "# gpio-sim chip $FCHIP (label doorgateway-fire) at $FSYS"
    # The door above.
    CONF=$WORKDIR/fire.toml
    mkdir -p "$WORKDIR/state" "$WORKDIR/run"
    {
        door_toml vm-fire "$FCHIP" "$NO_READER" "$WORKDIR/state" "$WORKDIR/run"
        toml_output maglock MAGLOCK false energised
        toml_output strike STRIKE false deenergised
        toml_panel GREEN RED BUZZER BUTTON
        printf '[fire_alarm]\nline = "FIRE"\nalarm_level = "high"\nbias = "pull-up"\ndebounce_ms = 20\nsupervised = true\n'
    } > "$CONF"
    if check_wire_break; then
        check_reset_refused
        check_latency
        check_kill
    else
        for c in reset-refused fire-latency fire-kill; do fail $c "not run: gatewayd did not start"; done
    fi
    kill -KILL "$PID" 2>/dev/null
    gpio_sim_remove "$FIRESIM"
    return $FAILED
}

main
