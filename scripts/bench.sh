#!/usr/bin/env bash
# bench.sh — make bench: figures, printed, not asserted.
#
#   footprint  the static gateway's stripped size, whether ICU's data is in it
#              (strings | grep icudt), and which Swift sources still import
#              Foundation proper (what pulls ICU in);
#   reader     libnfc → pn532-sim at 115200 baud with RF timing (reader-bench): a v2
#              sticker, and an NTAG 424 DNA (EV2 + SUN; `reader-bench SIM TAPS ntag424`
#              runs that row alone);
#   mqtt       the durable outbox to a local mosquitto with mutual TLS (mqtt-bench);
#   daemon     start → READY, idle CPU, tap → output, RSS at the first tap and
#              after N taps, flat or not (scripts/bench-daemon.py);
#   osdp       an OSDP card → the relay at 115200 and 9600 baud with Secure
#              Channel, beside libosdp's own control panel on the same kind of
#              line, and issue 35's goal (scripts/bench-osdp.py; BENCH_OSDP_TAPS);
#   lockdown   `gatewayctl lockdown start|end --site-key` at one of five doors →
#              each door locked down (or not), p50/p99/max, over MQTT and NATS.
#
# The default run takes a few minutes on the 2-core build machine (1 000
# daemon taps, 20 s idle, 2 000 MQTT events); BENCH_FULL=1 is the long run
# (10 000 taps, 60 s idle, 10 000 events; about half an hour). BENCH_TAPS,
# BENCH_IDLE_S, BENCH_LATENCY_TAPS, BENCH_READER_TAPS and BENCH_MQTT_EVENTS
# override single figures. BIN is the static build (make static).
#
# The two bench programs are built in the static build's scratch path with
# its flags, so they reuse the release objects `make static` already has.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN="${BIN:-out/static}"
SWIFT="${SWIFT:-swift}"
SCRATCH=.build-static

# daemon taps, idle s, latency taps, MQTT events: the default run's, or BENCH_FULL=1's
defaults=(1000 20 100 2000)
[ "${BENCH_FULL:-}" = 1 ] && defaults=(10000 60 200 10000)
export BENCH_TAPS="${BENCH_TAPS:-${defaults[0]}}" BENCH_IDLE_S="${BENCH_IDLE_S:-${defaults[1]}}"
export BENCH_LATENCY_TAPS="${BENCH_LATENCY_TAPS:-${defaults[2]}}"
READER_TAPS="${BENCH_READER_TAPS:-200}" MQTT_EVENTS="${BENCH_MQTT_EVENTS:-${defaults[3]}}"

started=$(date +%s)
section() { echo; echo "== $* ($(($(date +%s) - started)) s)"; }

section "footprint: $BIN/gateway"
scripts/bench-footprint.sh "$BIN/gateway"

section "building reader-bench and mqtt-bench (release, static flags, $SCRATCH)"
PKG_CONFIG_PATH="$(scripts/static-deps.sh)"
export PKG_CONFIG_PATH
build=("$SWIFT" build -c release --scratch-path "$SCRATCH" --static-swift-stdlib -Xswiftc -static-executable)
benign='in statically linked applications requires at runtime|the use of `mktemp. is dangerous'
for product in reader-bench mqtt-bench; do
    "${build[@]}" --product "$product" 2>&1 | { grep -Ev "$benign" || true; } | tail -n 3
done
bench_bin="$("${build[@]}" --show-bin-path)"

section "reader: $READER_TAPS taps"
"$bench_bin/reader-bench" "$BIN/pn532-sim" "$READER_TAPS"

section "mqtt: $MQTT_EVENTS events"
"$bench_bin/mqtt-bench" "$MQTT_EVENTS"

section "daemon: $BENCH_TAPS taps, $BENCH_IDLE_S s idle"
BIN="$BIN" python3 scripts/bench-daemon.py

section "osdp: card → relay beside libosdp's control panel, ${BENCH_OSDP_TAPS:-40} taps per row"
BIN="$BIN" python3 scripts/bench-osdp.py
section "fleet lockdown: 5 doors, over MQTT and over NATS (FleetLockdownTests on $BIN)"
# Five gatewayd of the static build, one mosquitto on the shipped ACL or one
# nats-server; the figures are the test's own printed line (docs/reliability.md).
# The test build is the debug one `make test` uses (built here when missing).
"$SWIFT" build --build-tests 2>&1 | tail -n 1
DOORGATEWAY_E2E_BIN="$BIN" python3 scripts/no-leftovers.py --label fleet-lockdown -- \
    "$SWIFT" test --skip-build --filter 'FleetLockdownTests' 2>&1 |
    { grep -E "^fleet lockdown|error:|Executed" || true; }

section "done"
echo "make bench took $(($(date +%s) - started)) s$([ "${BENCH_FULL:-}" = 1 ] && echo ' (BENCH_FULL=1)' || true)"
