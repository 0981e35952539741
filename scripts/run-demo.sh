#!/usr/bin/env bash
# make run: the whole gateway on this machine without hardware. Starts a local
# mosquitto with generated certificates (mutual TLS), gatewayd on the simulated
# board (it starts its own pn532-sim and reaches it through libnfc), and tells
# a short story while the MQTT events and the audit log scroll by. An outdoor
# reader too: libosdp's peripheral device (PyPI libosdp, scripts/osdp/pd.py) on
# a pseudo-terminal, an OSDP reader with a keypad that gatewayd drives with
# Secure Channel; the story taps a card on it and types its PIN (card + PIN).
# Without the libosdp venv (scripts/osdp/venv.sh: PyPI unreachable) that part is
# left out, and the demo says so.
# The broker runs the shipped provisioning/ configuration and ACL; only the
# port, the certificate paths and the ACL path differ.
# Ctrl-C stops everything and removes the temporary directory (DEMO_KEEP=1
# keeps it). DEMO_EXIT=1 ends after the story (used by tests). Every child is
# started with a parent-death signal, so even a SIGKILLed script leaves none.
set -euo pipefail
BIN=${BIN:-out/static}
GATEWAY="$(cd "$(dirname "$BIN/gateway")" && pwd)/gateway"
[ -x "$GATEWAY" ] || { echo "run: no $BIN/gateway (make static)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/doorgateway-demo.XXXXXX)
PIDS=()
cleanup() {
  trap - EXIT INT TERM
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  local left="files kept in $WORK"
  [ "${DEMO_KEEP:-0}" = 1 ] || { rm -rf "$WORK"; left="removed $WORK (DEMO_KEEP=1 keeps it)"; }
  printf '\nrun: stopped gatewayd, pn532-sim, the OSDP reader and mosquitto; %s\n' "$left"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Children get SIGTERM when this script dies, however it dies. An array, not a
# function: a backgrounded simple command is exec'd, so $! is the child itself
# and `wait` in cleanup waits for it to exit.
CHILD=(setpriv --pdeathsig TERM --)
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
ctl() { DOORGATEWAY_SOCKET="$WORK/run/control.sock" "$GATEWAY" ctl "$@"; }
# shellcheck source=scripts/lib/harness.sh
. "$(dirname "$0")/lib/harness.sh"
# expect KIND COMMAND...: COMMAND (its output dropped), then until the audit log
# holds one more KIND event than before it (15 s at most).
count() { ctl log --limit 100000 --json | python3 -c "import json,sys; print(sum(1 for r in json.load(sys.stdin) if r.get('kind')=='$1'))"; }
more() { [ "$(count "$1")" -gt "$2" ]; }
expect() {
  local kind=$1 n
  n=$(count "$kind")
  shift
  "$@" >/dev/null
  retry 150 0.1 more "$kind" "$n" || { echo "run: no $kind event" >&2; return 1; }
}

# 1. Certificates: a CA, the broker, the door and a phone (client certificates).
say "generating a CA and certificates for the broker, the door and a phone in $WORK/pki"
mkdir -p "$WORK/state" "$WORK/run"
pki_ca "$WORK/pki" demo-ca
# CNs are what the shipped ACL knows: the door's device id, the phone's name
# and Home Assistant's (the demo's watcher: one connection per certificate, so
# the phone's publishes below must not share its certificate).
pki_cert "$WORK/pki" broker DNS:localhost,IP:127.0.0.1 localhost
for name in front-door phone-alice homeassistant; do pki_cert "$WORK/pki" $name DNS:localhost,IP:127.0.0.1; done

# 2. The broker.
PORT=$(free_port)
broker_conf "$(cd "$(dirname "$0")/.." && pwd)" "$PORT" 127.0.0.1 "$WORK/pki" > "$WORK/mosquitto.conf"
cat >> "$WORK/mosquitto.conf" <<CONF
# As root, mosquitto drops to its own user, which cannot read our 0600 keys.
user $(id -un)
log_dest stderr
CONF
"${CHILD[@]}" mosquitto -c "$WORK/mosquitto.conf" 2> "$WORK/mosquitto.log" &
PIDS+=($!)
say "mosquitto on 127.0.0.1:$PORT (mutual TLS, the shipped configuration and ACL)"

# 3. The outdoor reader: libosdp's peripheral device in install mode (no key yet), its
# pseudo-terminal at $WORK/osdp-street (as /dev/serial/by-id/… names an RS-485 adapter);
# the story writes its card and keypad lines into a FIFO (fd 7).
OSDP_READERS=""
if PD_PY=$("$(dirname "$0")/osdp/venv.sh" 2> "$WORK/osdp-venv.log"); then
  mkfifo "$WORK/osdp.in"
  "${CHILD[@]}" "$PD_PY" "$(dirname "$0")/osdp/pd.py" --address 1 --link "$WORK/osdp-street" < "$WORK/osdp.in" > "$WORK/osdp.out" 2>&1 &
  PIDS+=($!)
  exec 7> "$WORK/osdp.in"
  OSDP_READERS="
[[readers]]
name = \"pn532\"
kind = \"pn532\"
[[readers]]
name = \"street\"
kind = \"osdp\"
side = \"entry\"
actions = [1]
device = \"$WORK/osdp-street\"
baud = 115200
address = 1"
  retry 100 0.1 test -L "$WORK/osdp-street" || true
  say "an outdoor OSDP reader with a keypad (libosdp's peripheral device) on $WORK/osdp-street"
else
  say "no libosdp venv (scripts/osdp/venv.sh failed, see $WORK/osdp-venv.log): the outdoor reader is left out"
fi

# 4. The door.
cat > "$WORK/gateway.toml" <<CONF
[device]
id = "front-door"
[board]
kind = "sim"
[reader]
simulator = "spawn"
[[actions]]
index = 0
name = "front door"
steps = [{ pulse = "strike", ms = 1500 }]
[[actions]]
index = 1
name = "street gate"
steps = [{ pulse = "strike", ms = 1500 }]
credentials = ["card+pin"]
[clock]
declare_synchronised = true
[mqtt]
enabled = true
host = "localhost"
port = $PORT
uid_in_events = "full"
telemetry_s = 30
[mqtt.tls]
ca_file = "$WORK/pki/ca.crt"
cert_file = "$WORK/pki/front-door.crt"
key_file = "$WORK/pki/front-door.key"
[mqtt.commands]
compat_topics = ["phone/front-door"]
[paths]
state_dir = "$WORK/state"
runtime_dir = "$WORK/run"
$OSDP_READERS
CONF
"${CHILD[@]}" "$GATEWAY" daemon --config "$WORK/gateway.toml" 2> "$WORK/gatewayd.log" &
PIDS+=($!)
retry 100 0.1 ctl status >/dev/null 2>&1 || { cat "$WORK/gatewayd.log"; exit 1; }
say "gatewayd is up (log: $WORK/gatewayd.log)"
ctl status | sed 's/^/   /' | head -12

MQ=(--cafile "$WORK/pki/ca.crt" --cert "$WORK/pki/phone-alice.crt" --key "$WORK/pki/phone-alice.key" -h localhost -p "$PORT")
HA=(--cafile "$WORK/pki/ca.crt" --cert "$WORK/pki/homeassistant.crt" --key "$WORK/pki/homeassistant.key" -h localhost -p "$PORT")
# Process substitution: $! is mosquitto_sub itself, and sed ends at its EOF.
"${CHILD[@]}" mosquitto_sub "${HA[@]}" -v -t 'doorgateway/front-door/#' > >(sed -u 's/^/   [mqtt]  /') &
PIDS+=($!)
DOORGATEWAY_SOCKET="$WORK/run/control.sock" "${CHILD[@]}" "$GATEWAY" ctl log --follow > >(sed -u 's/^/   [audit] /') &
PIDS+=($!)
sleep 1

say "the phone app's timestamp key: made on the door, exported for the phone"
ctl keys otp new >/dev/null
ctl keys otp export > "$WORK/otp.key"

say "holding the door's button for 6 s: provisioning is armed (the hold opens nothing)"
expect provisioning_armed ctl sim press --hold 6

say "a blank sticker on the reader: written, read back and verified"
expect provisioning_written ctl sim tap --blank --uid 04D00D00C0FFEE
ctl sim dump "$WORK/sticker.dump" >/dev/null
ctl tags list | sed 's/^/   /'

say "that sticker tapped again: granted (relay pulse, double beep)"
ctl sim remove >/dev/null; sleep 1.2
expect access_granted ctl sim reinsert
ctl status --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print("   strike:", s["outputs"]["strike"], " indicators:", s.get("board",{}).get("indicators"))'

say "a copy of it on another tag (another UID): denied"
ctl sim remove >/dev/null; sleep 1.2
expect access_denied ctl sim tap --dump "$WORK/sticker.dump" --uid 04BADC0FFEE000

say "a forged sticker: denied"
ctl sim remove >/dev/null; sleep 1.2
expect access_denied ctl sim tap "smp://action?idx=0&ts=1760000000&sig=$(openssl rand -hex 32)&u=$(openssl rand -base64 16 | tr '+/' '-_' | tr -d '=')"
ctl sim remove >/dev/null

say "a phone-style OTP command over MQTT: granted"
MSG=$(ctl otp make --key-file "$WORK/otp.key" --command 1)
echo "   $MSG"
expect remote_accepted mosquitto_pub "${MQ[@]}" -q 1 -t phone/front-door -m "$MSG"

say "the same message replayed: rejected"
expect remote_rejected mosquitto_pub "${MQ[@]}" -q 1 -t phone/front-door -m "$MSG"

if [ -n "$OSDP_READERS" ]; then
  say "the outdoor reader: its install window (the door hands it its own Secure Channel key)"
  ctl reader osdp install street --seconds 30 >/dev/null
  secure() { ctl reader osdp status --json | python3 -c 'import json,sys; sys.exit(0 if any(r.get("secure_channel") for r in json.load(sys.stdin)) else 1)'; }
  retry 150 0.1 secure || true
  ctl reader osdp status | sed 's/^/   /'

  say "a card enrolled for the street gate (card + PIN), its PIN set"
  ctl tags enroll-card --action 1 --label alice-badge 26:7:1234 | sed 's/^/   /'
  echo 2468 | ctl pins set 26:7:1234 >/dev/null

  say "the card tapped on the outdoor reader, then its PIN typed on the reader's keypad: granted"
  card_and_pin() {
    echo "card 26 $(python3 -c 'b=[(7<<16|1234)>>(23-i)&1 for i in range(24)]; v=int("".join(map(str,[sum(b[:12])%2]+b+[1-sum(b[12:])%2])),2)<<6; print(f"{v:08X}")')" >&7
    sleep 0.5
    echo "keys 2468#" >&7
  }
  expect access_granted card_and_pin
  ctl log --limit 5 --json | python3 -c 'import json,sys; r=[r for r in json.load(sys.stdin) if r.get("kind")=="access_granted"][-1]; print("   %s, reason %s, action %s, %s (the card waited for its PIN)" % (r["kind"], r.get("reason"), r.get("action"), r.get("source")))'
  retry 30 0.1 grep -c "'on_color', 2" "$WORK/osdp.out" >/dev/null || true
  echo "   the reader was told: $(grep -c "'on_color', 2" "$WORK/osdp.out" || true) osdp_LED green, $(grep -c "'rep_count', 2" "$WORK/osdp.out" || true) osdp_BUZ double beep"
fi

sleep 1
say "the audit chain"
ctl log --verify | sed 's/^/   /'
if [ "${DEMO_EXIT:-0}" = 1 ]; then exit 0; fi
say "the story is over; the door keeps running (try: DOORGATEWAY_SOCKET=$WORK/run/control.sock $GATEWAY ctl status). Ctrl-C stops everything."
wait
