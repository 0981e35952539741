#!/usr/bin/env bash
# test-e2e.sh BIN — the x86_64 end-to-end suite (Tests/EndToEndTests) against
# the aarch64 binaries in BIN (make static-arm64's out/static-arm64), run
# through qemu-user: the x86_64 test process starts BIN/gatewayd, which starts
# its aarch64 pn532-sim, and every gatewayctl call is an aarch64 process.
#
# That needs binfmt_misc with qemu-aarch64 registered (flag F: the kernel keeps
# the interpreter open, so it also works for binaries started by binaries).
# When this script has to mount binfmt_misc or register the handler, it undoes
# exactly that on exit, so the machine is left as it was found.
#
# The tests are built with their own scratch path (.build-e2e-arm64), never the
# project's .build, which other builds use at the same time. The waits that an
# emulated binary stretches scale by DOORGATEWAY_E2E_TIME_SCALE (default 3
# here), see Tests/EndToEndTests/OutputWaits.swift.
set -euo pipefail

BIN="${1:?usage: scripts/arm64/test-e2e.sh BIN}"
cd "$(dirname "$0")/../.."
SWIFT="${SWIFT:-swift}"
# E2E_SCRATCH: the scratch path of the x86_64 test build. .ci/run points it at
# .build once `make test` has built the tests there, so the tests are built once.
SCRATCH="${E2E_SCRATCH:-.build-e2e-arm64}"
BINFMT=/proc/sys/fs/binfmt_misc
BUILD_NAME=test-e2e-arm64
# shellcheck source=scripts/build-lib.sh
. scripts/build-lib.sh # say, die, install_missing_packages

[ -x "$BIN/gateway" ] || die "no $BIN/gateway (run make static-arm64)"
file -b "$BIN/gateway" | grep -c >/dev/null 'ARM aarch64' || die "$BIN/gateway is not an aarch64 binary"
[ "$(id -u)" = 0 ] || die "needs root (binfmt_misc)"
command -v qemu-aarch64-static >/dev/null || die "qemu-aarch64-static missing (make static-arm64 installs it)"

mounted_binfmt=0 registered=0
# Other jobs on this machine run aarch64 programs through the same handler
# (make image's emulated debootstrap steps). Users of binfmt_misc hold a shared
# lock on $BINFMT_LOCK while they need it; this script undoes its mount and
# registration only if it can then take the lock exclusively and no emulated
# aarch64 process is running, so it never pulls the handler from under a job.
BINFMT_LOCK=/run/lock/doorgateway-binfmt.lock
exec 8>"$BINFMT_LOCK"
flock -s 8
cleanup() {
    flock -u 8
    if { [ "$registered" = 1 ] || [ "$mounted_binfmt" = 1 ]; } &&
        { ! flock -n -x 8 || pgrep -f 'qemu-aarch64|aarch64-binfmt' >/dev/null; }; then
        say "binfmt_misc left as it is: another job is using aarch64 emulation"
        return
    fi
    if [ "$registered" = 1 ] && [ -e "$BINFMT/qemu-aarch64" ]; then
        echo -1 >"$BINFMT/qemu-aarch64" || true
        say "unregistered the qemu-aarch64 binfmt handler this run added"
    fi
    if [ "$mounted_binfmt" = 1 ]; then
        # Every handler registered since (binfmt-support's too) goes with it.
        umount "$BINFMT" || true
        say "unmounted $BINFMT (this run mounted it)"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# binfmt_misc as found before anything here ran: installing binfmt-support
# mounts it and registers its handlers (postinst), so that counts as ours too.
was_mounted=0
[ -e "$BINFMT/register" ] && was_mounted=1
install_missing_packages binfmt-support
[ "$was_mounted" = 1 ] || [ ! -e "$BINFMT/register" ] || mounted_binfmt=1

if [ ! -e "$BINFMT/register" ]; then
    mount -t binfmt_misc binfmt_misc "$BINFMT"
    mounted_binfmt=1
fi
[ "$mounted_binfmt" = 1 ] && registered=1
if [ ! -e "$BINFMT/qemu-aarch64" ]; then
    update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
    if [ ! -e "$BINFMT/qemu-aarch64" ]; then
        # update-binfmts could not: register what qemu-user-static's
        # /usr/share/binfmts/qemu-aarch64 describes, flags F (fixed
        # interpreter) and P (argv[0] kept: the multi-call binary reads it).
        awk '{ v[$1] = $2 } END { printf ":qemu-aarch64:M::%s:%s:%s:PF\n", v["magic"], v["mask"], v["interpreter"] }' \
            /usr/share/binfmts/qemu-aarch64 >"$BINFMT/register"
    fi
    registered=1
fi
grep -q '^enabled' "$BINFMT/qemu-aarch64" || die "qemu-aarch64 binfmt handler is not enabled"
say "binfmt_misc: qemu-aarch64 $(grep '^flags' "$BINFMT/qemu-aarch64")"
"$BIN/gateway" ctl version >/dev/null || die "$BIN/gateway does not run through binfmt_misc"

say "swift build --build-tests --scratch-path $SCRATCH"
mkdir -p out
build_status=0
nice -n 10 "$SWIFT" build --build-tests --scratch-path "$SCRATCH" -j "$(nproc)" >out/e2e-arm64-build.log 2>&1 || build_status=$?
grep -E 'error:|Compiling|Build complete' out/e2e-arm64-build.log | grep -v '^\[' >&2 || true
[ "$build_status" = 0 ] || die "test build failed (exit $build_status; log out/e2e-arm64-build.log)"

# What runs: E2E_FILTER (a regular expression), or with E2E_ALL=1 all of
# EndToEndTests, or by default the set in Tests/aarch64-e2e.txt (one test or
# suite per line, with what it proves on aarch64). Each name of the set must
# match a test the build has, so a rename cannot drop it unnoticed.
filters=()
if [ -n "${E2E_FILTER:-}" ]; then
    filters=(--filter "$E2E_FILTER")
elif [ "${E2E_ALL:-0}" = 1 ]; then
    filters=(--filter EndToEndTests)
else
    "$SWIFT" test list --skip-build --scratch-path "$SCRATCH" >out/e2e-arm64-list.txt 2>/dev/null \
        || die "swift test list failed"
    unknown=0
    while read -r name _; do
        case $name in '' | '#'*) continue ;; esac
        if ! grep -c >/dev/null "^EndToEndTests\.$name\(/\|\$\)" out/e2e-arm64-list.txt; then
            say "Tests/aarch64-e2e.txt names $name, which is no test of EndToEndTests"
            unknown=1
        fi
        filters+=(--filter "^EndToEndTests\.$name(/|\$)")
    done <Tests/aarch64-e2e.txt
    [ "$unknown" = 0 ] || die "Tests/aarch64-e2e.txt is out of date"
    say "the aarch64 set: $((${#filters[@]} / 2)) entries of Tests/aarch64-e2e.txt ($(grep -c '^EndToEndTests\.' out/e2e-arm64-list.txt) end-to-end tests in all; E2E_ALL=1 runs them all)"
fi
say "swift test ${filters[*]} against $BIN (aarch64, qemu-user, time scale ${DOORGATEWAY_E2E_TIME_SCALE:-3})"
export DOORGATEWAY_E2E_BIN="$BIN" DOORGATEWAY_E2E_TIME_SCALE="${DOORGATEWAY_E2E_TIME_SCALE:-3}"
status=0
# E2E_SKIP: a regular expression of tests to leave out (none by default).
skip=()
[ -z "${E2E_SKIP:-}" ] || skip=(--skip "$E2E_SKIP")
"$SWIFT" test --skip-build --scratch-path "$SCRATCH" "${filters[@]}" "${skip[@]}" || status=$?
# A gatewayd or pn532-sim that outlived a failed test would be a leak.
if pgrep -f "^/usr/bin/qemu-aarch64-static .*$(realpath "$BIN")" >/dev/null 2>&1; then
    say "warning: emulated processes from $BIN are still running:"
    pgrep -af "$(realpath "$BIN")" >&2 || true
fi
exit "$status"
