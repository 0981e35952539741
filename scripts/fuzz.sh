#!/usr/bin/env bash
# make fuzz: coverage-guided fuzzing (libFuzzer + AddressSanitizer/LeakSanitizer) of every
# parser the door feeds with outside bytes. Builds Sources/fuzz-targets with
# -sanitize=address,fuzzer into .build-fuzz (the normal .build is untouched), then runs each
# target for FUZZ_S seconds from its seeds in Fuzz/corpus/<target> with Fuzz/dict/<target>.dict.
#
#   FUZZ_S=30          seconds per target
#   FUZZ_TARGETS="…"   a subset (default: all fourteen)
#   FUZZ_CHUNK_S=300   longest single libFuzzer run; a longer FUZZ_S is run in parts (see below)
#   DOORGATEWAY_CACHE  where grown corpora, findings and logs go (default /var/cache/doorgateway):
#                      <cache>/fuzz/corpus/<target>/ (what libFuzzer adds; never committed),
#                      <cache>/fuzz/findings/<target>/ (crash-*, leak-*, timeout-*, oom-*),
#                      <cache>/fuzz/logs/<target>.log
#
# Every target runs with -timeout=1 -rss_limit_mb=2048 -detect_leaks=1. Prints executions, exec/s and findings per target and a final table; exits 1
# when any target found something (a crash, a leak, a timeout over 1 s, an RSS over 2 GB).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_S="${FUZZ_S:-30}"
ALL_TARGETS="ndef sticker compat native toml control reader mqtt fleet natsjwt mdns ntag424 osdp osdpcp"
TARGETS="${FUZZ_TARGETS:-$ALL_TARGETS}"
CHUNK="${FUZZ_CHUNK_S:-300}"
CACHE="${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/fuzz"
SCRATCH=.build-fuzz

say() { printf 'fuzz: %s\n' "$*" >&2; }
die() { say "$*"; exit 2; }

[[ "$FUZZ_S" =~ ^[0-9]+$ && "$FUZZ_S" -gt 0 ]] || die "FUZZ_S must be a positive number of seconds, not '$FUZZ_S'"
[[ "$CHUNK" =~ ^[0-9]+$ && "$CHUNK" -gt 0 ]] || die "FUZZ_CHUNK_S must be a positive number of seconds"
for t in $TARGETS; do
    [[ " $ALL_TARGETS " == *" $t "* ]] || die "unknown target '$t' (targets: $ALL_TARGETS)"
    [[ -d "Fuzz/corpus/$t" && -f "Fuzz/dict/$t.dict" ]] || die "Fuzz/corpus/$t or Fuzz/dict/$t.dict is missing"
done

# SwiftPM's --sanitize=fuzzer links libFuzzer's main instead of the module's entry point, but
# it passes -sanitize=fuzzer and -sanitize=address to swiftc as two flags and the last one wins
# (measured: no ASan in the Swift objects); -sanitize=address,fuzzer as one flag, given last,
# instruments Swift with both. C targets get -fsanitize=address,fuzzer from SwiftPM. -enable-testing lets the control and MQTT targets reach the internal parsers of
# GatewayControl and GatewayMQTT; -D FUZZING drops the replayer's main.
build=(swift build -c release --scratch-path "$SCRATCH" --product fuzz-targets
    --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=address,fuzzer
    -Xswiftc -DFUZZING -Xswiftc -enable-testing)
mkdir -p "$CACHE/logs"
# One make fuzz at a time per cache (grown corpora, logs, the .build-fuzz of this tree).
exec 9>"$CACHE/.lock"
if ! flock -n 9; then
    say "another make fuzz holds $CACHE/.lock; waiting"
    flock 9
fi
say "${build[*]}"
started=$SECONDS
if ! "${build[@]}" >"$CACHE/logs/build.log" 2>&1; then
    grep -E 'error:' "$CACHE/logs/build.log" | head -20 >&2 || tail -20 "$CACHE/logs/build.log" >&2
    die "the fuzz build failed (full log: $CACHE/logs/build.log)"
fi
BIN="$SCRATCH/release/fuzz-targets"
say "built $BIN in $((SECONDS - started)) s"

# The runtime's own backtracer would catch the crash signal first; the sanitizer must report.
export SWIFT_BACKTRACE=enable=no
# Symbolized ASan/LSan reports; LSan at exit as well as libFuzzer's per-input check.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:symbolize=1:abort_on_error=0}"

declare -A ROW  # target -> its line of the final table
failed=0
for t in $TARGETS; do
    grow="$CACHE/corpus/$t"
    findings="$CACHE/findings/$t"
    log="$CACHE/logs/$t.log"
    mkdir -p "$grow" "$findings"
    marker="$CACHE/logs/$t.started"
    touch "$marker"
    say "$t: ${FUZZ_S} s (grown corpus $grow, $(find "$grow" -type f | wc -l) files)"
    # Runs of at most FUZZ_CHUNK_S seconds, one after the other on the same grown corpus: RSS
    # grows with a run (libFuzzer's own tables).
    remaining=$FUZZ_S execs=0 elapsed=0 rc=0 part=0
    : >"$log"
    while [[ $remaining -gt 0 && $rc -eq 0 ]]; do
        slice=$((remaining < CHUNK ? remaining : CHUNK))
        part=$((part + 1))
        opts=(-max_total_time="$slice" -timeout=1 -rss_limit_mb=2048 -detect_leaks=1
            -dict="Fuzz/dict/$t.dict" -artifact_prefix="$findings/" -print_final_stats=1)
        [[ $CHUNK -lt $FUZZ_S ]] && echo "=== part $part: $slice s" >>"$log"
        t0=$SECONDS
        FUZZ_TARGET="$t" "$BIN" "${opts[@]}" "$grow" "Fuzz/corpus/$t" >"$log.part" 2>&1 || rc=$?
        elapsed=$((elapsed + SECONDS - t0))
        cat "$log.part" >>"$log"
        n=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log.part" | tail -1)
        execs=$((execs + ${n:-0}))
        remaining=$((remaining - slice))
    done
    rm -f "$log.part"
    rate=$((execs / (elapsed > 0 ? elapsed : 1)))
    count() { find "$findings" -maxdepth 1 -type f -name "$1-*" -newer "$marker" | wc -l; }
    crashes=$(count crash) leaks=$(count leak) timeouts=$(count timeout) ooms=$(count oom)
    # A leak LeakSanitizer reports only at exit leaves no artifact: count it from the log.
    if [[ $leaks -eq 0 ]] && grep -q 'ERROR: LeakSanitizer' "$log"; then leaks=1; fi
    found="crashes $crashes, leaks $leaks, timeouts $timeouts, oom $ooms"
    status=ok
    if [[ $rc -ne 0 || $((crashes + leaks + timeouts + ooms)) -gt 0 ]]; then
        status="FINDING (exit $rc)"
        failed=1
        say "$t: FINDING — $found; new artifacts in $findings:"
        find "$findings" -maxdepth 1 -type f -newer "$marker" | sed 's/^/    /' >&2
        grep -E '^==[0-9]+==ERROR|^SUMMARY|invariant broken|Fatal error|^    #[0-9] ' "$log" | head -25 >&2 || true
        say "$t: full log $log; replay with: FUZZ_TARGET=$t SWIFT_BACKTRACE=enable=no $BIN <artifact>"
    fi
    say "$t: $execs executions, $rate exec/s, $found"
    ROW[$t]=$(printf '%-8s %12s %8s  %-45s %s' "$t" "$execs" "$rate" "$found" "$status")
done

printf '\n%-8s %12s %8s  %-45s %s\n' target executions exec/s findings status
for t in $TARGETS; do echo "${ROW[$t]}"; done
printf '(%s s per target, %s s in all; grown corpora and findings in %s)\n' "$FUZZ_S" "$((SECONDS - started))" "$CACHE"
exit $failed
