#!/bin/sh
# scripts/test-deb.sh DEB — install the amd64 package in a Debian 12 chroot and
# check it: user and groups, file modes, the conffile, the enabled unit,
# gatewayctl on the stock configuration, systemd-analyze verify/security on the
# installed root, then remove (state and configuration kept) and purge (state,
# configuration and user gone), and install once more.
#
# The chroot is debootstrap --variant=minbase bookworm plus adduser, systemd,
# libnss-systemd and procps (so nsswitch.conf says "files systemd", as on a
# stock Debian 12, and systemd-analyze finds the system units and /bin/kill),
# cached in ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/deb-test/ and copied
# afresh for every run. Every command in the chroot runs in its own mount and
# PID namespace (unshare) with its own /proc, so no mount outlives it; the trap
# checks anyway and removes the copy on every exit path.
# PID 1 here is not systemd: the service is not started (the arm64 image test
# boots it).
set -eu
HARNESS_NAME=test-deb
# shellcheck source=scripts/deb-harness.sh
. "$(dirname "$0")/deb-harness.sh"

DEB=${1:?usage: scripts/test-deb.sh out/deb/doorgateway_VERSION_amd64.deb}
[ -f "$DEB" ] || { echo "test-deb: no $DEB (make deb-amd64)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "test-deb: needs root (debootstrap, chroot)" >&2; exit 2; }
DEB=$(readlink -f "$DEB")
CACHE=${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/deb-test
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
INCLUDE=adduser,systemd,libnss-systemd,procps
BASE=$CACHE/bookworm-amd64
STAMP="bookworm minbase $INCLUDE"
mkdir -p "$CACHE"

# --- the cached base, built once (runs take turns on the lock) ----------------
exec 9>"$CACHE/.lock"
flock 9
if [ "$(cat "$BASE/.doorgateway-stamp" 2>/dev/null || true)" != "$STAMP" ]; then
    echo "test-deb: debootstrap $STAMP into $BASE (once)"
    rm -rf "$BASE" "$BASE.tmp"
    debootstrap --variant=minbase --include="$INCLUDE" bookworm "$BASE.tmp" "$MIRROR" > "$CACHE/debootstrap.log" 2>&1 \
        || { tail -20 "$CACHE/debootstrap.log" >&2; rm -rf "$BASE.tmp"; exit 1; }
    echo "$STAMP" > "$BASE.tmp/.doorgateway-stamp"
    mv "$BASE.tmp" "$BASE"
fi

# No container here (NSPAWN unset): the cleanup undoes RUN's mounts (they live in
# the per-command namespaces; this only catches the impossible) and removes RUN.
trap container_cleanup EXIT
trap 'exit 130' INT TERM HUP
container_root run
exec 9>&-   # the copy is ours; let other runs use the base

# Run a command inside the chroot, in fresh mount + PID namespaces with /proc.
inside() {
    unshare --mount --pid --fork --mount-proc="$ROOT/proc" \
        chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 HOME=/root "$@"
}

grep -Eq '^(passwd|group):.*systemd' "$ROOT/etc/nsswitch.conf" \
    || { echo "test-deb: the chroot's nsswitch.conf does not list systemd" >&2; exit 1; }
cp "$DEB" "$ROOT/tmp/doorgateway.deb"
VERSION=$(dpkg-deb -f "$DEB" Version)

echo "== install $(basename "$DEB")"
if out=$(inside dpkg -i /tmp/doorgateway.deb 2>&1); then pass "dpkg -i"; else fail "dpkg -i" "$(printf '%s' "$out" | tail -3)"; fi
# The stock configuration leaves the relay's polarity to the user: the
# postinst says that gatewayd waits for it, and what to choose.
has "$out" 'gatewayd will not start until /etc/doorgateway/gateway.toml is complete' 'opto-isolated relay' \
    'outputs\[0\]\.active_low: output "strike": is required on a real board' \
    && pass "postinst: gatewayd waits for the relay's active_low and locked_level, both choices named" || fail "postinst message" "$out"
expect "package installed" "install ok installed $VERSION" dpkg-query -W -f='${Status} ${Version}' doorgateway

echo "== user and groups"
check "doorgateway user: system uid, home /var/lib/doorgateway, nologin" sh -c '
    IFS=: read -r name _ uid gid _ home shell <<EOF
$(getent passwd doorgateway)
EOF
    [ "$name" = doorgateway ] && [ "$uid" -lt 1000 ] && [ "$home" = /var/lib/doorgateway ] \
        && [ "$shell" = /usr/sbin/nologin ] && [ "$gid" = "$(getent group doorgateway | cut -d: -f3)" ]'
check "doorgateway group: system gid" sh -c '[ "$(getent group doorgateway | cut -d: -f3)" -lt 1000 ]'
for g in gpio i2c spi; do
    check "group $g created (system gid)" sh -c "[ \"\$(getent group $g | cut -d: -f3)\" -lt 1000 ]"
done
expect "doorgateway in gpio i2c spi dialout" "dialout doorgateway gpio i2c spi" \
    sh -c 'id -nG doorgateway | tr " " "\n" | sort | tr "\n" " " | sed "s/ $//"'

echo "== files"
for spec in \
    "/usr/bin/gateway 755 root:root" \
    "/lib/systemd/system/gatewayd.service 644 root:root" \
    "/lib/udev/rules.d/99-doorgateway.rules 644 root:root" \
    "/etc/doorgateway 755 root:root" \
    "/etc/doorgateway/gateway.toml 644 root:root" \
    "/usr/share/doorgateway/gateway.toml 644 root:root" \
    "/etc/doorgateway/audit.key 400 root:root" \
    "/var/lib/doorgateway 700 doorgateway:doorgateway" \
    "/usr/share/bash-completion/completions/gatewayctl 644 root:root" \
    "/usr/share/zsh/vendor-completions/_gatewayctl 644 root:root" \
    "/usr/share/fish/vendor_completions.d/gatewayctl.fish 644 root:root" \
    "/usr/share/man/man8/gatewayd.8.gz 644 root:root" \
    "/usr/share/doc/doorgateway/copyright 644 root:root" \
    "/usr/share/doc/doorgateway/changelog.Debian.gz 644 root:root" \
    "/usr/share/doc/doorgateway/BUILDINFO 644 root:root"; do
    set -- $spec
    expect "mode $1" "$2 $3" stat -c '%a %U:%G' "$1"
done
expect "gatewayd -> gateway" gateway readlink /usr/bin/gatewayd
check "gatewayctl version --verbose: the package's BUILDINFO, matching the installed binary" sh -c '
    out=$(gatewayctl version --verbose) &&
    printf "%s\n" "$out" | grep -c >/dev/null "^BUILDINFO: /usr/share/doc/doorgateway/BUILDINFO (its gateway line matches this binary)" &&
    printf "%s\n" "$out" | grep -c >/dev/null "^compiler: Swift version" &&
    for lib in mosquitto nats.c libnfc libgpiod openssl-crypto sqlite3 qrencode libusb; do
        printf "%s\n" "$out" | grep -cE >/dev/null "^$lib +[^ ]+ +[^ ]+ +[^ ]+\.a +[0-9a-f]{64}\$" || exit 1
    done'
expect "gatewayctl -> gateway" gateway readlink /usr/bin/gatewayctl
# gateway.toml is the admin's file, installed by the postinst (not a conffile:
# dpkg never asks about it on an upgrade; scripts/test-upgrade.sh).
expect "no conffiles (gateway.toml is the postinst's)" "" \
    sh -c 'dpkg-query -W -f="\${Conffiles}\n" doorgateway | awk "NF { print \$1 }"'
check "/etc/doorgateway/gateway.toml = the shipped stock file = gatewayctl config example --board pi" \
    sh -c 'gatewayctl config example --board pi | cmp -s - /etc/doorgateway/gateway.toml &&
        cmp -s /usr/share/doorgateway/gateway.toml /etc/doorgateway/gateway.toml'
check "unit enabled (multi-user.target.wants)" \
    test -L /etc/systemd/system/multi-user.target.wants/gatewayd.service
check "bash completion parses" bash -n /usr/share/bash-completion/completions/gatewayctl

echo "== gatewayctl on the installed system"
check "gatewayctl --help" gatewayctl --help
expect "gatewayctl version" "gateway ${VERSION%-*}" gatewayctl version
# The stock configuration, checked as root and as the service user, with
# nsswitch.conf listing systemd: the static binary must give its verdict, not
# die of a signal (it must never reach glibc's NSS).
AS_USER="setpriv --reuid=doorgateway --regid=doorgateway --init-groups"
for who in root doorgateway; do
    as=; [ $who = root ] || as=$AS_USER
    rc=0
    out=$(inside $as gatewayctl config check 2>&1) || rc=$?
    # The stock file is refused for the relay's polarity (no default on a real board): exit 1
    # naming it, for both users. Any other outcome — a signal, another error — fails.
    [ "$rc" = 1 ] && has "$out" 'outputs\[0\]\.active_low' \
        && pass "config check as $who refuses the stock file for the relay's polarity (exit 1, no signal)" \
        || fail "config check as $who" "exit $rc: $(tail_of "$out" 2)"
done

# The stock file is refused for the relay's two choices and nothing else;
# with one of each chosen it passes, and the firmware hold follows from it.
expect "stock config refused: the relay's active_low and locked_level, no default" \
    "1 outputs[0].active_low outputs[0].locked_level 2" \
    sh -c 'gatewayctl config check 2>/tmp/err >/dev/null; rc=$?;
        echo $rc $(sed -n "s/^[^ ]*: \(outputs\[0\]\.[a-z_]*\): .*/\1/p" /tmp/err) $(wc -l < /tmp/err)'
cp "$(dirname "$0")/../provisioning/firstboot/config.txt.custom" "$ROOT/tmp/config.txt"
expect "relay chosen (active-low strike): config check ok, firmware hold gpio=17=op,dh,pu written" "ok gpio=17=op,dh,pu" \
    sh -c 'sed -e "0,/^# active_low = /s/^# \(active_low = \)/\1/" -e "0,/^# locked_level = /s/^# \(locked_level = \)/\1/" \
            /etc/doorgateway/gateway.toml > /tmp/chosen.toml &&
        gatewayctl config check /tmp/chosen.toml >/dev/null &&
        gatewayctl config firmware --write --config-txt /tmp/config.txt --custom /nonexistent /tmp/chosen.toml >/dev/null 2>&1 &&
        echo ok $(grep "^gpio=17=" /tmp/config.txt)'

# ... and it must not even try: no libnss_* is opened (strace from the host).
if command -v strace >/dev/null; then
    for cmd in "config check" "status" "version"; do
        rc=0
        strace -f -qq -e trace=execve,open,openat -o "$RUN/strace.log" \
            unshare --mount --pid --fork --mount-proc="$ROOT/proc" chroot "$ROOT" /usr/bin/env -i PATH=/usr/bin:/bin \
            $AS_USER gatewayctl $cmd >/dev/null 2>&1 || rc=$?
        # Only what gatewayctl itself opened (after its execve), not setpriv's own lookups.
        nss=$(awk '/execve\("\/usr\/bin\/gatewayctl"/ { seen = 1 } seen && /libnss_/' "$RUN/strace.log" | head -3)
        grep -q 'execve("/usr/bin/gatewayctl"' "$RUN/strace.log" || nss="gatewayctl not traced"
        [ -z "$nss" ] && [ "$rc" -lt 128 ] && pass "gatewayctl $cmd opens no NSS module (exit $rc)" || fail "gatewayctl $cmd" "exit $rc; $nss"
    done
else
    echo "SKIP NSS trace: strace not installed"
fi

echo "== the unit on the installed root"
out=$(systemd-analyze verify --man=no --root="$ROOT" gatewayd.service 2>&1) && [ -z "$out" ] \
    && pass "systemd-analyze verify --root" || fail "systemd-analyze verify --root" "$out"
exposure=$(systemd-analyze security --offline=true --root="$ROOT" gatewayd.service 2>/dev/null \
    | sed -n 's/.*Overall exposure level for gatewayd.service: \([0-9.]*\).*/\1/p')
[ -n "$exposure" ] && awk -v e="$exposure" 'BEGIN { exit !(e <= 3.0) }' \
    && pass "systemd-analyze security exposure $exposure <= 3.0" || fail "systemd-analyze security" "exposure '$exposure'"

echo "== remove keeps state, configuration and user"
# State as the daemon would leave it, and a file the admin added.
check "state written as doorgateway" $AS_USER sh -c 'echo state > /var/lib/doorgateway/gateway.db'
check "admin file in /etc/doorgateway" sh -c 'umask 077; echo key > /etc/doorgateway/door.key'
check "dpkg -r" dpkg -r doorgateway
expect "status after remove" "deinstall ok config-files" dpkg-query -W -f='${Status}' doorgateway
check "binary gone" sh -c '! test -e /usr/bin/gateway && ! test -e /usr/bin/gatewayctl'
check "state kept" grep -qx state /var/lib/doorgateway/gateway.db
check "configuration kept" test -f /etc/doorgateway/gateway.toml
check "user kept" getent passwd doorgateway

echo "== purge removes state, configuration and user"
check "dpkg -P" dpkg -P doorgateway
expect "status after purge" "" sh -c 'dpkg-query -W -f="\${Status}" doorgateway 2>/dev/null || true'
check "state gone" sh -c '! test -e /var/lib/doorgateway'
check "configuration gone" sh -c '! test -e /etc/doorgateway'
check "user gone" sh -c '! getent passwd doorgateway'
check "group gone" sh -c '! getent group doorgateway'
check "gpio i2c spi groups stay" sh -c 'getent group gpio && getent group i2c && getent group spi'
check "unit links gone" sh -c '! test -e /etc/systemd/system/multi-user.target.wants/gatewayd.service'

echo "== install again, then reinstall over it (the upgrade path)"
check "dpkg -i after purge" dpkg -i /tmp/doorgateway.deb
check "an edited gateway.toml" sh -c 'echo "# edited" >> /etc/doorgateway/gateway.toml'
check "dpkg -i over itself" dpkg -i /tmp/doorgateway.deb
check "the edited gateway.toml kept by the reinstall" sh -c 'tail -1 /etc/doorgateway/gateway.toml | grep -c >/dev/null "^# edited$"'
check "user back" getent passwd doorgateway
check "dpkg -P again" dpkg -P doorgateway

tally test-deb
