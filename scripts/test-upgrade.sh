#!/bin/sh
# scripts/test-upgrade.sh NEW_DEB PN532_SIM — `apt install` of this tree's
# package over a running 0.2.0 door, under systemd 252 in the test-deb chroot
# booted with systemd-nspawn (as scripts/test-deb-service.sh does). amd64: the
# package's scripts, unit and conffile are the same for arm64, and the store
# and the binary's upgrade path do not depend on the architecture.
#
# The 0.2.0 package is built once from that release's commit
# (scripts/upgrade/old-deb.sh; OLD_DEB=FILE uses another, with migrations.txt
# beside it). The door runs it on the simulated board with an admin-edited
# gateway.toml; alice's and bob's stickers are issued under 0.2.0, alice's
# opens, bob's is revoked, and the store is backed up with docs/upgrade.md's
# "From 0.2.0" lines (run as the document writes them). Then
# `apt-get install ./NEW_DEB` with no terminal
# (a conffile prompt would fail it) and the checks: the package upgraded
# without a prompt, gateway.toml byte for byte the admin's (and again after a
# further upgrade whose stock gateway.toml changed), the old daemon
# locked the relay on SIGTERM and the new one set nothing but locked up to
# READY, the new unit (no network-online ordering), alice's 0.2.0 sticker
# still opens and bob's stays refused, the audit chain verifies across both
# versions with the MACs, and the store holds every migration of this tree
# (0.2.0's list a prefix of it: a shipped migration is never edited).
# Backup and restore under the running unit: the new gatewayctl backs up to
# /root, /tmp and standard output (the daemon streams, gatewayctl writes), and
# docs/upgrade.md's restore lines, run as written, bring the 0.2.0 backup back
# with a store gatewayd (User=doorgateway) opens: active, no restart, the
# stickers' verdicts and the chain as before. On the way, with the new version
# running: the broker's name not resolving yet is retried, not fatal, and the
# door decides meanwhile. Last, a broken gateway.toml: exit 78 and no restart
# loop (RestartPreventExitStatus).
set -eu
HARNESS_NAME=test-upgrade
# shellcheck source=scripts/deb-harness.sh
. "$(dirname "$0")/deb-harness.sh"

NEW_DEB=${1:?usage: scripts/test-upgrade.sh out/deb/doorgateway_VERSION_amd64.deb out/static/pn532-sim}
SIM=${2:?usage: scripts/test-upgrade.sh NEW_DEB PN532_SIM}
cd "$(dirname "$0")/.."
container_preflight
NEW_DEB=$(readlink -f "$NEW_DEB")
SIM=$(readlink -f "$SIM")
OLD_DEB=${OLD_DEB:-$(./scripts/upgrade/old-deb.sh)}
OLD_DEB=$(readlink -f "$OLD_DEB")
OLD_MIGRATIONS=$(dirname "$OLD_DEB")/migrations.txt
[ -s "$OLD_MIGRATIONS" ] || { echo "test-upgrade: no $OLD_MIGRATIONS" >&2; exit 2; }
OLD_VERSION=$(dpkg-deb -f "$OLD_DEB" Version)
NEW_VERSION=$(dpkg-deb -f "$NEW_DEB" Version)
container_base
echo "test-upgrade: $OLD_VERSION ($OLD_DEB) -> $NEW_VERSION ($NEW_DEB)"

# --- host: one version everywhere, the migration lists ------------------------------
if out=$(./scripts/check-version.sh 2>&1); then pass "$out"; else fail "versions disagree" "$(printf '%s' "$out" | tr '\n' '|')"; fi
[ "$NEW_VERSION" = "$(dpkg-parsechangelog -l board/debian/changelog -S Version)" ] \
    && pass "the package is this tree's version ($NEW_VERSION)" || fail "package version" "$NEW_VERSION"
NEW_MIGRATIONS_LIST=$(sed -n 's/^ *name: "\(v[0-9][^"]*\)",* *$/\1/p' Sources/GatewayStore/Migrations.swift)
OLD_MIGRATIONS_LIST=$(cat "$OLD_MIGRATIONS")
old_n=$(printf '%s\n' "$OLD_MIGRATIONS_LIST" | wc -l)
[ "$(printf '%s\n' "$NEW_MIGRATIONS_LIST" | head -n "$old_n")" = "$OLD_MIGRATIONS_LIST" ] \
    && pass "$OLD_VERSION's $old_n store migrations are the first $old_n of this tree's $(printf '%s\n' "$NEW_MIGRATIONS_LIST" | wc -l), unchanged and in order" \
    || fail "shipped migrations changed" "$OLD_VERSION: $(echo $OLD_MIGRATIONS_LIST) / now: $(echo $NEW_MIGRATIONS_LIST)"

# --- the container ------------------------------------------------------------------
BROKER_PID= PKI=
stop_broker() { [ -z "$BROKER_PID" ] || reap "$BROKER_PID"; BROKER_PID=; [ -z "$PKI" ] || rm -rf "$PKI"; }
cleanup() {
    stop_broker
    container_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
container_root upg "$SIM"
cp "$OLD_DEB" "$ROOT/root/doorgateway_${OLD_VERSION}_amd64.deb"
cp "$NEW_DEB" "$ROOT/root/doorgateway_${NEW_VERSION}_amd64.deb"
install -m 0755 scripts/upgrade/door.sh "$ROOT/usr/local/bin/door"

# Its PATH has /usr/local/bin first: scripts/upgrade/door.sh is installed there as `door`.
CONTAINER_PATH=/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
container_boot dgu
migrations() { # the store's applied migrations, in the order applied (read on the host)
    python3 -c 'import sqlite3,sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
print("\n".join(r[0] for r in db.execute("SELECT identifier FROM grdb_migrations ORDER BY rowid")))' \
        "$ROOT/var/lib/doorgateway/gateway.db"
}
verify_field() { printf '%s\n' "$1" | sed -n "s/^$2: //p"; }
chain_ok() { [ "$(verify_field "$1" intact)" = true ] && [ "$(verify_field "$1" macs_checked)" = true ]; } # gatewayctl log --verify's
# recipe NAME: the commands of docs/upgrade.md's block marked
# <!-- test-upgrade: NAME --> … <!-- end --> (its indented lines, comments
# dropped), run in the container as a user would type them, stopping at the
# first that fails; each is echoed.
recipe() {
    lines=$(awk -v name="$1" '$0 == "<!-- test-upgrade: " name " -->" { on = 1; next }
        on && /^<!-- end -->$/ { exit } on && /^    [^ ]/ { sub(/^    /, ""); sub(/[ ]+# .*$/, ""); print }' docs/upgrade.md)
    [ -n "$lines" ] || { echo "no block '$1' in docs/upgrade.md"; return 1; }
    inside sh -exc "$lines"
}

# --- a 0.2.0 door in service ---------------------------------------------------------
echo "== $OLD_VERSION"
check "apt-get install ./doorgateway_${OLD_VERSION}_amd64.deb" apt-get install -y -q "/root/doorgateway_${OLD_VERSION}_amd64.deb" < /dev/null
expect "$OLD_VERSION installed" "install ok installed $OLD_VERSION" dpkg-query -W -f='${Status} ${Version}' doorgateway
# The admin's edits: the simulated board (this test has no PN532), a device id
# and a comment of their own.
check "the admin edits /etc/doorgateway/gateway.toml" sh -c \
    '{ echo "# front door, edited by the site admin before the upgrade"; gatewayctl config example --board sim |
        sed "s/^id = \"front-door\"/id = \"upgrade-door\"/"; } > /root/admin.toml &&
    grep -c >/dev/null "^id = \"upgrade-door\"" /root/admin.toml && gatewayctl config check /root/admin.toml >/dev/null &&
    cp /root/admin.toml /etc/doorgateway/gateway.toml'
CONF_SUM=$(inside sha256sum /etc/doorgateway/gateway.toml | cut -d' ' -f1)
check "gatewayd $OLD_VERSION running (READY) on the edited configuration" sh -c \
    "systemctl reset-failed gatewayd; systemctl restart gatewayd && systemctl is-active gatewayd >/dev/null &&
    gatewayctl version | grep -c >/dev/null '^gateway ${OLD_VERSION%-*}\$' && gatewayctl status | grep -c >/dev/null '^device: upgrade-door'"
check "stickers issued under $OLD_VERSION: alice 04A11CE0000001, bob 04B0B000000002" sh -c \
    'door issue 04A11CE0000001 alice /root/alice.dump && door issue 04B0B000000002 bob /root/bob.dump'
# The door ignores a tag read again within same_tag_quiet_ms (1000 ms, stock)
# of its last read, here the write: the one wait on time, past that window, as
# the end-to-end suite waits it (2 s x DOORGATEWAY_E2E_TIME_SCALE; 1.2 s was short).
sleep "$(awk -v s="${DOORGATEWAY_E2E_TIME_SCALE:-1}" 'BEGIN { print 2 * (s + 0 > 1 ? s + 0 : 1) }')"
expect "alice's sticker opens under $OLD_VERSION" access_granted door tap /root/alice.dump
check "bob's sticker revoked under $OLD_VERSION" gatewayctl tags revoke 04B0B000000002
before=$(inside gatewayctl log --verify 2>&1 || true)
ROWS_BEFORE=$(verify_field "$before" rows)
HEAD_BEFORE=$(verify_field "$before" head_row)
chain_ok "$before" && pass "audit chain verifies under $OLD_VERSION with the key ($ROWS_BEFORE rows)" || fail "audit under $OLD_VERSION" "$before"
MIG_BEFORE=$(migrations)
[ "$MIG_BEFORE" = "$OLD_MIGRATIONS_LIST" ] && pass "the $OLD_VERSION store holds its release's migrations ($(echo $MIG_BEFORE | wc -w))" \
    || fail "store migrations under $OLD_VERSION" "$(echo $MIG_BEFORE)"
# The backup before the upgrade, as docs/upgrade.md tells a 0.2.0 door to take it.
out=$(recipe backup-0.2.0 2>&1) && inside test -s /root/door-before-0.3.0.backup \
    && pass "docs/upgrade.md's 0.2.0 backup lines under $OLD_VERSION's unit: /root/door-before-0.3.0.backup" \
    || fail "docs/upgrade.md's 0.2.0 backup lines" "$(tail_of "$out" 4)"
PID_BEFORE=$(inside systemctl show -P MainPID gatewayd)
JOURNAL_FROM=$(inside sh -c 'journalctl -u gatewayd -o cat --no-pager | wc -l')

# --- the upgrade -----------------------------------------------------------------------
echo "== apt install ./doorgateway_${NEW_VERSION}_amd64.deb over the running door"
# No terminal and nothing on standard input: a conffile question would end
# dpkg with an error (and the test with it); nothing forces the old or new file.
out=$(inside apt-get install -y -q "/root/doorgateway_${NEW_VERSION}_amd64.deb" < /dev/null 2>&1) \
    && pass "apt-get install ./doorgateway_${NEW_VERSION}_amd64.deb: no prompt, exit 0" || fail "upgrade" "$(tail_of "$out" 8)"
printf '%s\n' "$out" | sed 's/^/  apt: /'
conffile=$(printf '%s\n' "$out" | grep -i 'configuration file\|conffile' || true)
[ -z "$conffile" ] && pass "dpkg asked nothing about the configuration file" || fail "dpkg spoke of the conffile" "$conffile"
expect "$NEW_VERSION installed" "install ok installed $NEW_VERSION" dpkg-query -W -f='${Status} ${Version}' doorgateway
expect "gateway.toml kept byte for byte (the admin's edits)" "$CONF_SUM" sh -c 'sha256sum /etc/doorgateway/gateway.toml | cut -d" " -f1'
expect "no .dpkg-new / .dpkg-dist / .dpkg-old left beside it" "gateway.toml" sh -c 'ls /etc/doorgateway | grep -e "\.dpkg-" -e "^gateway\.toml$"'
PID_AFTER=$(inside systemctl show -P MainPID gatewayd)
NEW_UPSTREAM=${NEW_VERSION%-*}
[ "$(inside systemctl is-active gatewayd)" = active ] && [ "$PID_AFTER" != "$PID_BEFORE" ] && [ "$PID_AFTER" != 0 ] \
    && [ "$(inside gatewayctl version)" = "gateway $NEW_UPSTREAM" ] \
    && pass "gatewayd restarted by the package (pid $PID_BEFORE -> $PID_AFTER), active, gatewayctl version: gateway $NEW_UPSTREAM" \
    || fail "gatewayd after the upgrade" "$(inside systemctl status gatewayd --no-pager 2>&1 | tail -5)"
# The restart, as the journal tells it: the old daemon locks every output on
# SIGTERM; the new one sets each to locked first and nothing else up to READY.
restart=$(inside sh -c "journalctl -u gatewayd -o cat --no-pager | tail -n +$((JOURNAL_FROM + 1))")
printf '%s\n' "$restart" > "$RUN/restart.log"
old_part=$(printf '%s\n' "$restart" | sed -n "/starting gatewayd $NEW_UPSTREAM/q;p")
new_part=$(printf '%s\n' "$restart" | sed -n "/starting gatewayd $NEW_UPSTREAM/,/ready in /p")
has "$old_part" 'signal 15: stopping' 'stopped; outputs locked' \
    && pass "the $OLD_VERSION daemon locked the outputs on SIGTERM: $(printf '%s\n' "$old_part" | grep 'signal 15\|outputs locked' | tr '\n' '|')" \
    || fail "old daemon's stop" "$old_part"
has "$new_part" 'sim output strike → locked' 'ready in ' && ! has "$restart" '→ unlocked' \
    && pass "the $NEW_UPSTREAM daemon set the strike locked before READY; no output unlocked during the restart" \
    || fail "new daemon's start" "$new_part"
# The figure: old daemon's SIGTERM -> new daemon's READY (journal timestamps).
gap=$(inside sh -c "journalctl -u gatewayd -o short-unix --no-pager | tail -n +$((JOURNAL_FROM + 1))" |
    awk -v v="$NEW_UPSTREAM" '/signal 15: stopping/ && !t0 { t0 = $1 } index($0, "starting gatewayd " v) { s = 1 }
        s && /ready in / { printf "%d", ($1 - t0) * 1000; exit }')
echo "test-upgrade: restart during the upgrade: SIGTERM to the $OLD_VERSION daemon -> READY of the $NEW_UPSTREAM one: ${gap:-?} ms"
expect "strike locked after the upgrade" "\"strike\":\"locked\"" sh -c 'gatewayctl status --json | tr -d " \n" | grep -o "\"strike\":\"[a-z]*\"" | head -1'
after_unit=$(inside systemctl show -P After gatewayd)
case " $after_unit " in
*network-online.target* | *time-sync.target*) fail "the new unit still waits for the network or the clock" "$after_unit" ;;
*) pass "the new unit is loaded: gatewayd is not ordered after network-online.target or time-sync.target" ;;
esac
expect "RestartPreventExitStatus=78 in the new unit" "78" systemctl show -P RestartPreventExitStatus gatewayd

# --- the state under the new version ----------------------------------------------------
expect "alice's $OLD_VERSION sticker opens under $NEW_VERSION" access_granted door tap /root/alice.dump
expect "bob's sticker, revoked under $OLD_VERSION, stays refused" access_denied door tap /root/bob.dump
check "tags list: alice active, bob revoked (the registry kept)" sh -c \
    'gatewayctl tags list | grep -c >/dev/null "^04A11CE0000001 *active .*alice" && gatewayctl tags list | grep -c >/dev/null "^04B0B000000002 *revoked .*bob"'
after=$(inside gatewayctl log --verify 2>&1 || true)
chain_ok "$after" && [ "$(verify_field "$after" first)" = 1 ] && [ "$(verify_field "$after" rows)" -gt "$ROWS_BEFORE" ] \
    && pass "audit chain verifies with the key across both versions: rows 1..$(verify_field "$after" head_row) ($ROWS_BEFORE written by $OLD_VERSION, head was $HEAD_BEFORE)" \
    || fail "audit chain after the upgrade" "$after"
# --- backup and restore under the unit ---------------------------------------------------
echo "== backup and restore under the $NEW_UPSTREAM unit"
# gatewayd runs with ProtectHome=yes and PrivateTmp=yes: the daemon streams the
# snapshot over the control socket, gatewayctl (root, outside the sandbox) writes it.
check "gatewayctl backup /root/door-now.backup: a 0600 root file, a store" sh -c \
    'gatewayctl backup /root/door-now.backup && [ "$(stat -c "%a %U" /root/door-now.backup)" = "600 root" ] &&
    [ "$(head -c 15 /root/door-now.backup)" = "SQLite format 3" ]'
check "gatewayctl backup /tmp/door-now.backup: in the caller's /tmp, not the unit's private one" sh -c \
    'rm -f /tmp/door-now.backup; gatewayctl backup /tmp/door-now.backup && test -s /tmp/door-now.backup'
check "gatewayctl backup - > FILE (standard output): the same store, byte count and header" sh -c \
    'gatewayctl backup - > /root/door-stdout.backup && [ "$(head -c 15 /root/door-stdout.backup)" = "SQLite format 3" ] &&
    [ "$(stat -c %s /root/door-stdout.backup)" -gt 4096 ]'
check "gatewayctl backup refuses an existing file and leaves it as it was" sh -c \
    'echo keep > /root/exists.backup; ! gatewayctl backup /root/exists.backup 2>/dev/null && [ "$(cat /root/exists.backup)" = keep ]'
check "no snapshot left in the state directory" sh -c '! ls -A /var/lib/doorgateway | grep -c >/dev/null "backup"'
# The restore, as docs/upgrade.md writes it, with the backup the 0.2.0 door made.
RESTARTS_FROM=$(inside systemctl show -P NRestarts gatewayd)
out=$(recipe restore 2>&1) && pass "docs/upgrade.md's restore lines ran: $(printf '%s\n' "$out" | grep '^restored' | head -1)" \
    || fail "docs/upgrade.md's restore lines" "$(tail_of "$out" 4)"
expect "the restored store belongs to gatewayd's user, 0600" "600 doorgateway doorgateway" \
    stat -c '%a %U %G' /var/lib/doorgateway/gateway.db
# Type=notify: the recipe's `systemctl start` returned only after READY=1, which
# gatewayd sends once its store is open (one it cannot open fails the start).
[ "$(inside systemctl is-active gatewayd)" = active ] && [ "$(inside systemctl show -P NRestarts gatewayd)" = "$RESTARTS_FROM" ] \
    && pass "gatewayd active on the restored store, not restarted" || fail "gatewayd after the restore" \
    "$(inside sh -c 'systemctl show -P NRestarts gatewayd; journalctl -u gatewayd -o cat --no-pager | tail -4' | tr '\n' '|')"
expect "alice's sticker opens on the restored store" access_granted door tap /root/alice.dump
expect "bob's stays refused on the restored store" access_denied door tap /root/bob.dump
restored=$(inside gatewayctl log --verify 2>&1 || true)
chain_ok "$restored" && pass "audit chain of the restored store verifies with the key ($(verify_field "$restored" rows) rows)" \
    || fail "audit chain after the restore" "$restored"

# --- the broker's name does not resolve yet (power cut: DNS not up) ---------------------
# A mosquitto on the host's loopback (nspawn shares the network), mutual TLS,
# the shipped ACL, reached as broker.door.test, which the container's
# /etc/hosts lacks at first: gatewayd must start, decide taps, and connect once
# the name resolves, without a restart (the network thread's backoff retries).
PKI=$(mktemp -d "$CACHE/upg-pki.XXXXXX")
pki_ca "$PKI" upgrade-test-ca
for n in broker upgrade-door; do pki_cert "$PKI" $n DNS:broker.door.test; done
BROKER_PORT=$(free_port)
{ broker_conf "$(pwd)" "$BROKER_PORT" 127.0.0.1 "$PKI"; printf 'user root\nlog_dest file %s\n' "$PKI/mosquitto.log"; } > "$PKI/mosquitto.conf"
mosquitto -c "$PKI/mosquitto.conf" > /dev/null 2>&1 &
BROKER_PID=$!
install -m 0644 "$PKI/ca.crt" "$ROOT/etc/doorgateway/ca.crt"
install -m 0644 "$PKI/upgrade-door.crt" "$ROOT/etc/doorgateway/door.crt"
install -m 0600 "$PKI/upgrade-door.key" "$ROOT/etc/doorgateway/door.key"
# (Debian's minbase has no /etc/hosts: the name goes to DNS, where .test never resolves.)
[ -f "$ROOT/etc/hosts" ] && grep -c >/dev/null broker.door.test "$ROOT/etc/hosts" && fail "the container's /etc/hosts already names broker.door.test"
inside sh -c "sed -e '/^\[mqtt\]\$/,/^\[/ { s/^enabled = false/enabled = true/; s/^host = .*/host = \"broker.door.test\"\nport = $BROKER_PORT/ }' \
    -e 's|^\[mqtt.tls\]\$|[mqtt.tls]\nca_file = \"/etc/doorgateway/ca.crt\"\ncert_file = \"/etc/doorgateway/door.crt\"\nkey_file = \"/run/credentials/gatewayd.service/door.key\"|' \
    /etc/doorgateway/gateway.toml > /root/mqtt.toml && gatewayctl config check /root/mqtt.toml >/dev/null &&
    cp /root/mqtt.toml /etc/doorgateway/gateway.toml" || fail "gateway.toml with the broker" "$(inside gatewayctl config check /root/mqtt.toml 2>&1 | tail -3)"
broker_connected() { inside gatewayctl status --json 2>/dev/null | tr -d ' \n' | grep -o '"connected":[a-z]*' | head -1; }
check "broker.door.test does not resolve: gatewayd still starts (READY)" sh -c \
    'systemctl restart gatewayd && systemctl is-active gatewayd >/dev/null'
retry 300 0.1 inside sh -c 'journalctl -u gatewayd -b -o cat --no-pager | grep -c >/dev/null "connect to broker.door.test:"' || true
err=$(inside sh -c 'journalctl -u gatewayd -b -o cat --no-pager | grep -m1 "connect to broker.door.test:"' || true)
[ -n "$err" ] && [ "$(broker_connected)" = '"connected":false' ] \
    && pass "the unresolvable name is an error logged, not fatal: $err" || fail "no connect error logged for broker.door.test" "$(broker_connected)"
expect "the door decides while the broker is unreachable: alice opens" access_granted door tap /root/alice.dump
echo "127.0.0.1 broker.door.test" >> "$ROOT/etc/hosts"
# The backoff doubles from 1 s to 60 s: the next attempt is at most a minute away.
i=0
until [ "$(broker_connected)" = '"connected":true' ] || [ $i -ge 90 ]; do sleep 1; i=$((i + 1)); done
[ "$(broker_connected)" = '"connected":true' ] && [ "$(inside systemctl show -P NRestarts gatewayd)" = 0 ] \
    && pass "once the name resolves, gatewayd connects by itself (${i} s after /etc/hosts gained it; no restart)" \
    || fail "not connected after the name resolved" "$(inside sh -c 'journalctl -u gatewayd -b -o cat --no-pager | grep -i mqtt | tail -3')"
# config check --broker as the door sees the broker: inside the unit's sandbox
# (systemd-run with its user, filters and credentials). gateway.toml names the
# key by the unit's credential path, which exists only for the unit: with
# gatewayd stopped, a check from outside cannot read it. systemd-run --wait
# needs D-Bus, which a stock Debian 12 has (systemd recommends it) and this
# minbase container lacks: installed first, without it gatewayctl says so.
nodbus=$(inside sh -c 'systemctl stop gatewayd; gatewayctl config check --broker 2>&1; systemctl start gatewayd' || true)
has "$nodbus" 'no D-Bus system bus.*outside gatewayd.service' \
    && pass "without D-Bus, config check --broker says it checks outside the unit's sandbox: $(printf '%s\n' "$nodbus" | grep 'D-Bus')" \
    || fail "config check --broker without D-Bus" "$(tail_of "$nodbus")"
inside apt-get install -y -q --no-install-recommends dbus < /dev/null > "$RUN/dbus.log" 2>&1 \
    && inside sh -c 'systemctl start dbus.socket dbus.service && test -S /run/dbus/system_bus_socket' >> "$RUN/dbus.log" 2>&1 \
    && pass "D-Bus installed and running in the container (as on a stock Debian 12)" \
    || fail "D-Bus in the container" "$(tail -3 "$RUN/dbus.log" | tr '\n' '|')"
out=$(inside sh -c 'systemctl stop gatewayd && gatewayctl config check --broker 2>&1; rc=$?; systemctl start gatewayd; exit $rc') \
    && has "$out" "checking inside gatewayd.service's sandbox" \
    && pass "config check --broker ran in the unit's sandbox and passed (key from the unit's credential): $(printf '%s\n' "$out" | tail -1)" \
    || fail "config check --broker in the unit's sandbox" "$(tail_of "$(printf '%s\n' "$out" | grep -v '^  ')" 6)"
stop_broker
# The admin's file now, broker settings included, for the next upgrade.
CONF_SUM=$(inside sha256sum /etc/doorgateway/gateway.toml | cut -d' ' -f1)

# The next upgrade whose stock file changed (a repack of NEW_DEB with a line
# added to /usr/share/doorgateway/gateway.toml): still no question, the
# admin's file still untouched. (Since 0.2.0 gateway.toml is the admin's
# file, installed by the postinst only where absent.)
NEXT_VERSION="${NEW_VERSION}+example1"
dpkg-deb -R "$NEW_DEB" "$RUN/next"
echo "# a changed default in $NEXT_VERSION" >> "$RUN/next/usr/share/doorgateway/gateway.toml"
sed -i "s/^Version: .*/Version: $NEXT_VERSION/" "$RUN/next/DEBIAN/control"
(cd "$RUN/next" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | LC_ALL=C sort | xargs md5sum > DEBIAN/md5sums)
dpkg-deb -b --root-owner-group "$RUN/next" "$ROOT/root/doorgateway_${NEXT_VERSION}_amd64.deb" > /dev/null
out=$(inside apt-get install -y -q "/root/doorgateway_${NEXT_VERSION}_amd64.deb" < /dev/null 2>&1) \
    && ! printf '%s\n' "$out" | grep -c >/dev/null -i "configuration file\|conffile" \
    && pass "a next upgrade with a changed stock gateway.toml ($NEXT_VERSION): no question, exit 0" \
    || fail "upgrade with a changed stock file" "$(tail_of "$out" 8)"
expect "gateway.toml still the admin's, byte for byte" "$CONF_SUM" sh -c 'sha256sum /etc/doorgateway/gateway.toml | cut -d" " -f1'
check "the new stock file is in /usr/share/doorgateway for comparison" \
    sh -c "tail -1 /usr/share/doorgateway/gateway.toml | grep -c >/dev/null 'a changed default in $NEXT_VERSION'"
check_stop_locks "stop: the outputs locked"
MIG_AFTER=$(migrations)
[ "$MIG_AFTER" = "$NEW_MIGRATIONS_LIST" ] && pass "store migrated: $(echo "$MIG_AFTER" | wc -l) migrations, every one of this tree's, in order" \
    || fail "store migrations after the upgrade" "$(echo $MIG_AFTER) / want $(echo $NEW_MIGRATIONS_LIST)"

# --- a broken configuration is not restarted in a loop -------------------------------------
check "a broken gateway.toml: exit 78 (EX_CONFIG), the unit failed, not restarted" sh -c \
    'printf "[device\n" > /etc/doorgateway/gateway.toml; systemctl start gatewayd;
    i=0; while [ "$(systemctl show -P ActiveState gatewayd)" != failed ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    sleep 3
    [ "$(systemctl show -P ActiveState gatewayd)" = failed ] && [ "$(systemctl show -P ExecMainStatus gatewayd)" = 78 ] &&
    [ "$(systemctl show -P NRestarts gatewayd)" = 0 ]'

tally test-upgrade
