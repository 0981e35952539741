#!/bin/sh
# scripts/deb.sh ARCH [STATIC_DIR] [OUT_DIR]
#
# Builds out/deb/doorgateway_<version>_<ARCH>.deb (ARCH: amd64 or arm64) from
# the static binary in STATIC_DIR (default out/static for amd64,
# out/static-arm64 for arm64) with dpkg-deb, then checks it with lintian and
# `systemd-analyze verify` on a staged root.
#
# Version: the package version is the top entry of board/debian/changelog; its
# upstream part must equal DoorCore's Version.string (Sources/DoorCore/Version.swift),
# which the binary itself reports (`gateway ctl version`) and is checked against.
#
# Things generated at build time from the host's (amd64) binary, so that the
# Swift sources stay their only source: the stock configuration
# /usr/share/doorgateway/gateway.toml (`gateway ctl config example --board pi`;
# the postinst copies it to /etc/doorgateway/gateway.toml when that is absent)
# and the bash/zsh/fish completions.
# HOST_GATEWAY names that binary (default out/static/gateway).
#
# Needs: dpkg-deb, dpkg-parsechangelog (dpkg-dev), file, gzip, lintian,
# systemd-analyze, and llvm-objcopy (the Swift toolchain's) or binutils for
# the target. The Makefile's deb target installs the Debian packages.
set -eu

ARCH=${1:?usage: scripts/deb.sh amd64|arm64 [STATIC_DIR] [OUT_DIR]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
case "$ARCH" in
amd64) STATIC=${2:-out/static};       FILE_ARCH='x86-64' ;;
arm64) STATIC=${2:-out/static-arm64}; FILE_ARCH='ARM aarch64' ;;
*) echo "deb: unknown architecture $ARCH (amd64 or arm64)" >&2; exit 2 ;;
esac
OUT=${3:-out/deb}
HOST_GATEWAY=${HOST_GATEWAY:-out/static/gateway}
say() { echo "deb[$ARCH]: $*"; }
die() { echo "deb[$ARCH]: $*" >&2; exit 1; }

# Two makes may build the same package at once (.ci/run's lanes: the image's
# `make deb` and test-deb's `make deb-amd64`): one at a time per architecture,
# and the package is replaced by a rename, so a reader never sees half of one.
mkdir -p "$OUT"
exec 9>"$OUT/.deb-$ARCH.lock"
flock 9

BIN="$STATIC/gateway"
[ -x "$BIN" ] || die "no $BIN (make static / make static-arm64 first)"
[ -x "$HOST_GATEWAY" ] || die "no $HOST_GATEWAY to generate the configuration and completions (make static)"
what=$(file -b "$BIN")
case "$what" in
*"$FILE_ARCH"*"statically linked"*) ;;
*) die "$BIN is not a static $FILE_ARCH executable: $what" ;;
esac

# --- version ---------------------------------------------------------------
CHANGELOG=board/debian/changelog
VERSION=$(dpkg-parsechangelog -l "$CHANGELOG" -S Version)
UPSTREAM=${VERSION%-*}
SOURCE_VERSION=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/DoorCore/Version.swift)
[ "$UPSTREAM" = "$SOURCE_VERSION" ] \
    || die "board/debian/changelog is at $VERSION but Sources/DoorCore/Version.swift says $SOURCE_VERSION: add a changelog entry"
# The binary must be the one built from this version (not a stale build).
run_target() {
    if [ "$ARCH" = amd64 ]; then "$BIN" "$@"
    elif command -v qemu-aarch64-static >/dev/null; then qemu-aarch64-static "$BIN" "$@"
    elif command -v qemu-aarch64 >/dev/null; then qemu-aarch64 "$BIN" "$@"
    else return 127
    fi
}
if reported=$(run_target ctl version 2>/dev/null); then
    [ "$reported" = "gateway $UPSTREAM" ] || die "$BIN reports '$reported', expected 'gateway $UPSTREAM': rebuild it"
else
    grep -aq "$UPSTREAM" "$BIN" || die "$BIN does not contain version $UPSTREAM and cannot be run here to ask it"
    say "cannot run $BIN here (no qemu-user); version string found in it"
fi
host_reported=$("$HOST_GATEWAY" ctl version)
[ "$host_reported" = "gateway $UPSTREAM" ] || die "$HOST_GATEWAY reports '$host_reported', expected 'gateway $UPSTREAM'"
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(dpkg-parsechangelog -l "$CHANGELOG" -S Timestamp)}
export SOURCE_DATE_EPOCH

# --- objcopy that knows the target ------------------------------------------
OBJCOPY=
swift_dir=$(dirname "$(readlink -f "$(command -v swift 2>/dev/null || echo /nonexistent)")")
for c in "$swift_dir/llvm-objcopy" "$(command -v llvm-objcopy || true)"; do
    if [ -n "$c" ] && [ -x "$c" ]; then OBJCOPY=$c; break; fi
done
if [ -z "$OBJCOPY" ]; then
    case "$ARCH" in
    amd64) OBJCOPY=objcopy ;;
    arm64) OBJCOPY=aarch64-linux-gnu-objcopy ;;
    esac
    command -v "$OBJCOPY" >/dev/null || die "no llvm-objcopy (Swift toolchain) nor $OBJCOPY to strip the binary"
fi

# --- stage -------------------------------------------------------------------
WORK="$OUT/build-$ARCH"
STAGE="$WORK/root"
rm -rf "$WORK"
mkdir -p "$STAGE/DEBIAN" "$OUT/debug"
d() { install -d -m 0755 "$STAGE/$1"; }
f() { install -m "$1" "$2" "$STAGE/$3"; }   # mode source destination

d usr/bin
# Stripped in the package (98 -> 67 MB); the symbols go to out/deb/debug/ with
# a debuglink, for reading a crash's addresses (the unstripped binary in
# STATIC_DIR has them too).
DEBUG="$OUT/debug/gateway_${VERSION}_$ARCH.debug"
"$OBJCOPY" --only-keep-debug "$BIN" "$DEBUG"
"$OBJCOPY" --strip-all --add-gnu-debuglink="$DEBUG" "$BIN" "$STAGE/usr/bin/gateway"
chmod 0755 "$STAGE/usr/bin/gateway"
ln -s gateway "$STAGE/usr/bin/gatewayd"
ln -s gateway "$STAGE/usr/bin/gatewayctl"

d lib/systemd/system
f 0644 board/gatewayd.service lib/systemd/system/gatewayd.service
d lib/udev/rules.d
f 0644 board/99-doorgateway.rules lib/udev/rules.d/99-doorgateway.rules

# The configuration: the Raspberry Pi example, checked before it is shipped.
# The relay's polarity is the door's, never a default (issue 23): the shipped
# file leaves active_low and locked_level commented out with both choices
# shown, so `config check` (and gatewayd, which then touches no GPIO line)
# refuses it naming exactly those two keys; with one line of each chosen it
# must pass. The postinst and the image's first boot say how to choose.
# Not a conffile: every door edits it (the relay, at least; first boot on the
# image), so any later change to the example would make dpkg ask every one of
# them, and fail a non-interactive upgrade (docs/upgrade.md). The postinst
# installs it where /etc/doorgateway/gateway.toml is absent and never touches
# an existing one; postrm purge removes it (Debian policy 10.7.3).
d etc/doorgateway
d usr/share/doorgateway
CONF="$STAGE/usr/share/doorgateway/gateway.toml"
"$HOST_GATEWAY" ctl config example --board pi > "$CONF"
chmod 0644 "$CONF"
if "$HOST_GATEWAY" ctl config check "$CONF" >/dev/null 2>"$WORK/check.err"; then
    die "the generated Pi configuration passes config check: it must leave the relay's active_low and locked_level to the user"
fi
refused=$(sed -n 's/^[^ ]*: \(outputs\[0\]\.[a-z_]*\): .*/\1/p' "$WORK/check.err" | tr '\n' ' ')
[ "$refused" = "outputs[0].active_low outputs[0].locked_level " ] && [ "$(wc -l < "$WORK/check.err")" = 2 ] \
    || die "the generated Pi configuration fails config check for more than the relay's two choices: $(cat "$WORK/check.err")"
sed -e '0,/^# active_low = /s/^# \(active_low = \)/\1/' -e '0,/^# locked_level = /s/^# \(locked_level = \)/\1/' \
    "$CONF" > "$WORK/chosen.toml"
"$HOST_GATEWAY" ctl config check "$WORK/chosen.toml" >/dev/null \
    || die "the generated Pi configuration with the relay chosen does not pass config check"

d usr/share/bash-completion/completions
d usr/share/zsh/vendor-completions
d usr/share/fish/vendor_completions.d
# Completions are named after the command the user types: run the binary as
# gatewayctl (through a link) so the scripts are named for it (Sources/Arguments/Completion.swift).
ln -sf "$(readlink -f "$HOST_GATEWAY")" "$WORK/gatewayctl"
# (bash completions are sourced, not run: no #! line)
"$WORK/gatewayctl" --generate-completion-script bash | sed '1{/^#!/d}' > "$STAGE/usr/share/bash-completion/completions/gatewayctl"
"$WORK/gatewayctl" --generate-completion-script zsh > "$STAGE/usr/share/zsh/vendor-completions/_gatewayctl"
"$WORK/gatewayctl" --generate-completion-script fish > "$STAGE/usr/share/fish/vendor_completions.d/gatewayctl.fish"
rm "$WORK/gatewayctl"
chmod 0644 "$STAGE"/usr/share/bash-completion/completions/* "$STAGE"/usr/share/zsh/vendor-completions/* \
    "$STAGE"/usr/share/fish/vendor_completions.d/*

d usr/share/man/man1
d usr/share/man/man8
gzip -9n < board/debian/gatewayctl.1 > "$STAGE/usr/share/man/man1/gatewayctl.1.gz"
gzip -9n < board/debian/gatewayd.8 > "$STAGE/usr/share/man/man8/gatewayd.8.gz"
ln -s gatewayctl.1.gz "$STAGE/usr/share/man/man1/gateway.1.gz"
chmod 0644 "$STAGE"/usr/share/man/man1/gatewayctl.1.gz "$STAGE"/usr/share/man/man8/gatewayd.8.gz

# Documentation, in the tree's layout so README's relative links still work.
DOC=usr/share/doc/doorgateway
d "$DOC"
d "$DOC/docs"
d "$DOC/board"
d "$DOC/provisioning"
f 0644 README.md "$DOC/README.md"
f 0644 docs/mqtt.md "$DOC/docs/mqtt.md"
f 0644 docs/troubleshooting.md "$DOC/docs/troubleshooting.md"
for m in README.md wiring.md libnfc.md; do f 0644 "board/$m" "$DOC/board/$m"; done
f 0644 provisioning/README.md "$DOC/provisioning/README.md"
f 0644 board/debian/copyright "$DOC/copyright"
# BUILDINFO (scripts/buildinfo.sh): what the binary was built from. The packaged
# gateway is the stripped copy, so its own SHA-256 is added: `gatewayctl version
# --verbose` finds the line that matches the running binary.
[ -f "$STATIC/BUILDINFO" ] || die "no $STATIC/BUILDINFO: build with make static / make static-arm64"
grep -c >/dev/null "^binary gateway  *sha256 $(sha256sum "$BIN" | cut -d' ' -f1)\$" "$STATIC/BUILDINFO" ||
    die "$STATIC/BUILDINFO was not written for $BIN (rebuild: make static / make static-arm64)"
{
    cat "$STATIC/BUILDINFO"
    echo "# /usr/bin/gateway in this package is that binary stripped (debug symbols: out/deb/debug/):"
    printf 'binary %-10s sha256 %s\n' gateway "$(sha256sum "$STAGE/usr/bin/gateway" | cut -d' ' -f1)"
} > "$STAGE/$DOC/BUILDINFO"
chmod 0644 "$STAGE/$DOC/BUILDINFO"
gzip -9n < "$CHANGELOG" > "$STAGE/$DOC/changelog.Debian.gz"
chmod 0644 "$STAGE/$DOC/changelog.Debian.gz"

d usr/share/lintian/overrides
f 0644 board/debian/lintian-overrides usr/share/lintian/overrides/doorgateway

# --- control files -------------------------------------------------------------
for s in postinst prerm postrm; do install -m 0755 "board/debian/$s" "$STAGE/DEBIAN/$s"; done
(cd "$STAGE" && find . -path ./DEBIAN -prune -o -type f -printf '%P\n' | LC_ALL=C sort \
    | grep -v '^etc/' | xargs md5sum) > "$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/md5sums"
SIZE=$(du -k -s --apparent-size --exclude=DEBIAN "$STAGE" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$SIZE/" board/debian/control.in \
    > "$STAGE/DEBIAN/control"
chmod 0644 "$STAGE/DEBIAN/control"

# Reproducible: every mtime is the changelog's date.
find "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

DEB="$OUT/doorgateway_${VERSION}_$ARCH.deb"
dpkg-deb --root-owner-group -Zxz --build "$STAGE" "$DEB.new" >/dev/null
if cmp -s "$DEB.new" "$DEB"; then rm -f "$DEB.new"; else mv -f "$DEB.new" "$DEB"; fi
say "built $DEB ($(du -h "$DEB" | cut -f1))"

# --- checks --------------------------------------------------------------------
# systemd-analyze verify on a staged root: the package's files over this
# machine's systemd units (sysinit.target & co.) and /bin/kill (ExecReload=).
VROOT="$WORK/verify-root"
mkdir -p "$VROOT/lib/systemd" "$VROOT/bin"
cp -a /lib/systemd/system "$VROOT/lib/systemd/"
cp /bin/kill "$VROOT/bin/kill"
dpkg-deb -x "$DEB" "$VROOT"
if ! out=$(systemd-analyze verify --man=no --root="$VROOT" gatewayd.service 2>&1) || [ -n "$out" ]; then
    printf '%s\n' "$out" >&2
    die "systemd-analyze verify is not clean"
fi
say "systemd-analyze verify: clean"
exposure=$(systemd-analyze security --offline=true --root="$VROOT" gatewayd.service 2>/dev/null \
    | sed -n 's/.*Overall exposure level for gatewayd.service: \([0-9.]*\).*/\1/p')
awk -v e="$exposure" 'BEGIN { exit !(e != "" && e <= 3.0) }' \
    || die "systemd-analyze security --offline=true: exposure '$exposure', more than 3.0"
say "systemd-analyze security --offline=true: exposure $exposure (<= 3.0)"
rm -rf "$VROOT"

if command -v lintian >/dev/null; then
    # --fail-on error: warnings are printed (and overridden where they cannot be fixed).
    status=0
    report=$(lintian --fail-on error --tag-display-limit 0 --info --pedantic "$DEB" 2>&1) || status=$?
    printf '%s\n' "$report" | grep -v 'running with root privileges' | sed "s/^/deb[$ARCH]: lintian: /"
    [ "$status" = 0 ] || die "lintian found errors"
    say "lintian: no errors"
else
    say "lintian not installed: skipped"
fi
rm -rf "$WORK"   # the staged tree; the package and out/deb/debug/ stay
