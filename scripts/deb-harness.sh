#!/bin/sh
# deb-harness.sh — sourced, never run: what the package tests share.
# scripts/test-deb.sh (a chroot), scripts/test-deb-service.sh and
# scripts/test-upgrade.sh (the test-deb chroot booted with systemd-nspawn).
# Set HARNESS_NAME (the script's name, for its messages) before sourcing.

# The tally (pass, fail, passed, failed), retry, the test PKI and broker.
# shellcheck source=scripts/lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
# check NAME COMMAND...: the command runs with `inside` (which the script
# defines: its chroot, or container_inside) and must exit 0.
check() {
    name=$1
    shift
    if out=$(inside "$@" 2>&1); then pass "$name"; else fail "$name" "$(printf '%s' "$out" | tail -3)"; fi
}
# expect NAME WANT COMMAND...: the command's output (run with `inside`) must equal WANT.
expect() {
    name=$1 want=$2
    shift 2
    got=$(inside "$@" 2>&1 || true)
    if [ "$got" = "$want" ]; then pass "$name"; else fail "$name" "got '$got', want '$want'"; fi
}

# check_stop_locks NAME: `systemctl stop gatewayd` and the journal's last
# lines say the outputs were locked.
check_stop_locks() {
    check "$1" sh -c 'systemctl stop gatewayd &&
    journalctl -u gatewayd -o cat --no-pager | tail -5 | grep -c >/dev/null "stopped; outputs locked"'
}

# --- the booted container (test-deb-service, test-upgrade) ------------------
# Root and systemd-nspawn, or exit 2.
container_preflight() {
    [ "$(id -u)" = 0 ] || { echo "$HARNESS_NAME: needs root" >&2; exit 2; }
    command -v systemd-nspawn >/dev/null || { echo "$HARNESS_NAME: needs systemd-nspawn (systemd-container)" >&2; exit 2; }
}

# CACHE and BASE: test-deb's cached chroot (made by scripts/test-deb.sh), or exit 2.
container_base() {
    CACHE=${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/deb-test
    BASE=$CACHE/bookworm-amd64
    [ -f "$BASE/.doorgateway-stamp" ] || { echo "$HARNESS_NAME: no $BASE (run make test-deb once)" >&2; exit 2; }
}

# container_root NAME [PN532_SIM]: RUN (a fresh directory in CACHE) and ROOT,
# its copy of BASE with PN532_SIM as /usr/bin/pn532-sim (the package does not
# ship it). Set the EXIT trap (container_cleanup, or a function calling it)
# before: RUN is removed there. Then copy the packages in and container_boot.
container_root() {
    NSPAWN= INIT=
    RUN=$(mktemp -d "$CACHE/$1.XXXXXX")
    ROOT=$RUN/root
    cp -a "$BASE" "$ROOT"
    [ -z "${2:-}" ] || install -m 0755 "$2" "$ROOT/usr/bin/pn532-sim"
}

# container_boot MACHINE_PREFIX: boots ROOT with systemd 252 as PID 1
# (NSPAWN: nspawn's pid; INIT: the container's init), waits for the boot to
# finish, and defines `inside` (check's and expect's runner) as
# container_inside. nspawn's own seccomp filter refuses @clock inside
# containers unless told otherwise: the unit's filter decides.
container_boot() {
    INIT=
    SYSTEMD_NSPAWN_UNIFIED_HIERARCHY=1 systemd-nspawn -q -D "$ROOT" -M "$1-$(basename "$RUN" | tr -c 'a-zA-Z0-9\n' -)" --register=no --keep-unit \
        --system-call-filter='adjtimex clock_adjtime' -b --console=pipe > "$RUN/console.log" 2>&1 &
    NSPAWN=$!
    # The container's init is the child of nspawn in a new PID namespace:
    # nspawn's first child (the "outer child", in ours) lives only until it
    # has cloned init, and taking it for init failed a run (its pid gone by
    # the time nsenter used it).
    ours=$(readlink /proc/self/ns/pid)
    retry 60 0.5 container_init || { cat "$RUN/console.log" >&2; echo "$HARNESS_NAME: the container did not start" >&2; exit 1; }
    state=$(timeout 90 nsenter -t "$INIT" -a systemctl is-system-running --wait 2>/dev/null || true)
    echo "$HARNESS_NAME: container booted ($state)"
    inside() { container_inside "$@"; }
}

container_init() { # INIT: the child of nspawn in a PID namespace not ours
    for p in $(pgrep -P "$NSPAWN" || true); do
        ns=$(readlink "/proc/$p/ns/pid" 2>/dev/null || true)
        if [ -n "$ns" ] && [ "$ns" != "$ours" ]; then INIT=$p && return 0; fi
    done
    return 1
}

# A command in the container, with a clean environment (PATH: CONTAINER_PATH).
container_inside() {
    nsenter -t "$INIT" -a /usr/bin/env -i PATH="${CONTAINER_PATH:-/usr/sbin:/usr/bin:/sbin:/bin}" LC_ALL=C.UTF-8 "$@"
}

# For the EXIT trap: the container powered off (killed if it does not go),
# RUN's mounts undone and RUN removed, nspawn's runtime directories with it
# when nothing else uses them.
container_cleanup() {
    [ -n "${RUN:-}" ] || return 0
    if [ -n "${NSPAWN:-}" ] && kill -0 "$NSPAWN" 2>/dev/null; then
        [ -n "${INIT:-}" ] && nsenter -t "$INIT" -a systemctl poweroff >/dev/null 2>&1 || true
        retry 20 0.5 gone "$NSPAWN" || true
    fi
    [ -z "${NSPAWN:-}" ] || reap "$NSPAWN" 1
    for m in $(awk -v r="$RUN" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
    rm -rf "$RUN"
    rmdir "/run/systemd/nspawn/propagate/$(basename "$RUN")" /run/systemd/nspawn/propagate \
        /run/systemd/nspawn/locks /run/systemd/nspawn 2>/dev/null || true
}
