#!/usr/bin/env bash
# scripts/check-skip-gate.sh — proves, on a real `swift test` run, that the
# skip gate of `make test` can fail. SwiftPM's parallel xUnit file records an
# XCTSkip'd test as a plain <testcase> (no <skipped>), so a gate that read only
# that file saw no skip at all and Tests/allowed-skips.txt allowed and forbade
# nothing. The fixture package Tests/Fixtures/skip-gate has a test that passes,
# an XCTest that skips and a Swift Testing test that is skipped; it runs through
# scripts/no-leftovers.py exactly as `make test` runs the suite, four times:
#   1. both skips on the allow-list          → passes, "1 passed, 0 failed, 2 skipped"
#   2. the XCTest skip not on the list       → fails, naming it
#   3. the Swift Testing skip not on the list → fails, naming it
#   4. without --verbose (no per-test results) → fails: the skips cannot be seen
# make test runs it before the suite. Builds the fixture in out/skip-gate.
set -euo pipefail
cd "$(dirname "$0")/.."
SWIFT=${SWIFT:-swift}
pkg=Tests/Fixtures/skip-gate
work=out/skip-gate
mkdir -p "$work"
"$SWIFT" build --build-tests --package-path "$pkg" --scratch-path "$work/.build" -q

xctest_skip=SkipGateTests.SkipGateTests/testSkipsWithoutItsTool
swift_testing_skip='SkipGateTests/swiftTestingSkip()'
fail=0
check() { # check NAME WANT(pass|fail) EXPECTED-TEXT ALLOW-LINES [swift test flags...]
    local name=$1 want=$2 expect=$3 allow=$4 rc=0
    shift 4
    printf '%s' "$allow" > "$work/$name.allow"
    python3 scripts/no-leftovers.py --label skip-gate --xunit "$work/$name.xml" --allowed-skips "$work/$name.allow" -- \
        "$SWIFT" test --package-path "$pkg" --scratch-path "$work/.build" --skip-build --parallel "$@" \
        --xunit-output "$work/$name.xml" > "$work/$name.log" 2>&1 || rc=$?
    local got=pass
    [ "$rc" = 0 ] || got=fail
    if [ "$got" != "$want" ]; then
        echo "check-skip-gate: $name: the run should $want, it did $got (exit $rc); $work/$name.log:" >&2
        sed 's/^/  | /' "$work/$name.log" >&2
        fail=1
    elif ! grep -qF -- "$expect" "$work/$name.log"; then
        echo "check-skip-gate: $name: no '$expect' in $work/$name.log:" >&2
        sed 's/^/  | /' "$work/$name.log" >&2
        fail=1
    else
        echo "check-skip-gate: $name: $want, as it should ($expect)"
    fi
}
both="$xctest_skip # the fixture's tool
$swift_testing_skip # the fixture's tool
"
check listed pass "skip-gate: 1 passed, 0 failed, 2 skipped" "$both" --verbose
check xctest-unlisted fail "skip(s) not on $work/xctest-unlisted.allow" \
    "$swift_testing_skip # the fixture's tool
" --verbose
grep -qxF "  $xctest_skip" "$work/xctest-unlisted.log" ||
    { echo "check-skip-gate: xctest-unlisted: the failure does not name $xctest_skip" >&2; fail=1; }
check swift-testing-unlisted fail "skip(s) not on $work/swift-testing-unlisted.allow" \
    "$xctest_skip # the fixture's tool
" --verbose
grep -qxF "  $swift_testing_skip" "$work/swift-testing-unlisted.log" ||
    { echo "check-skip-gate: swift-testing-unlisted: the failure does not name $swift_testing_skip" >&2; fail=1; }
check not-verbose fail "without \`swift test --verbose\` a skip cannot be seen" "$both"
[ "$fail" = 0 ] || { echo "check-skip-gate: the skip gate of make test is broken (scripts/no-leftovers.py)" >&2; exit 1; }
echo "check-skip-gate: a skip outside Tests/allowed-skips.txt fails the run"
