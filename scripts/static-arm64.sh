#!/usr/bin/env bash
# static-arm64.sh OUT — the fully static aarch64 (Raspberry Pi) binaries,
# built on this x86_64 machine: OUT/gateway (with the gatewayd / gatewayctl
# multi-call links) and OUT/pn532-sim, for aarch64-unknown-linux-gnu.
#
# Route (the only one that Debian's registry allows; the x86_64 toolchain here
# has no aarch64 runtime): Debian trixie's swiftlang 6.0.3 — the amd64 compiler
# in a trixie amd64 chroot made with debootstrap, plus the aarch64 runtime,
# Foundation and static archives unpacked from swiftlang:arm64 — and aarch64
# static C libraries (see scripts/arm64/inside.sh). Everything comes from
# deb.debian.org; the host's /etc/apt is never touched. See DEVELOPERS.md
# "Static aarch64 binary".
#
# Cache: ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/arm64/ (outside the tree,
# shared by clones; one run at a time via flock on .lock):
#   root/        the trixie amd64 chroot            (root.stamp)
#   sdk/         aarch64 Swift resource dirs         (.stamp: swiftlang version)
#   cdeps/       aarch64 static C archives, pkgconfig/ (.stamp per library)
#   swift-deps/  dependency checkouts patched for Swift 6.0 (.doorgateway-stamp)
#   src/         copy of the working tree (rsync; Package.swift names swift-deps/)
#   build/       the Swift scratch path (never the project's .build)
#   out/         last built binaries (+ .stripped copies for the size report)
#   debs/, apt-bookworm/   downloaded .debs and the private bookworm arm64 apt config
# Cold (measured on 2 shared cores): ~9 min — debootstrap 1.5 min, chroot packages
# and swiftlang:arm64 (~0.8 GB) 2 min, C libraries 20 s, Swift build 5 min.
# Warm with no source change: ~5 s; after an edit, only the incremental build.
set -euo pipefail

OUT="${1:?usage: scripts/static-arm64.sh OUT}"
cd "$(dirname "$0")/.."
REPO="$(pwd)"
C="${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/arm64"
ROOT="$C/root"
MIRROR="${DOORGATEWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
SUITE=trixie
# qemu-user-static for the smoke test (called directly: no binfmt_misc needed;
# scripts/arm64/test-e2e.sh installs binfmt-support when it needs the kernel
# to run aarch64 binaries by themselves).
HOST_PACKAGES=(debootstrap qemu-user-static rsync file)
PRODUCTS=(gateway pn532-sim)
T0=$SECONDS

BUILD_NAME=static-arm64
# shellcheck source=scripts/build-lib.sh
. "$REPO/scripts/build-lib.sh"
[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, apt-get)"
case "$OUT" in /*) ;; *) OUT="$REPO/$OUT" ;; esac

# The chroot: minbase trixie amd64, native (no emulation). Recreated only when
# the recipe stamp changes; packages are added by `inside.sh packages`.
make_chroot() {
    local stamp="debootstrap --variant=minbase --arch=amd64 $SUITE $MIRROR recipe 1"
    if [ -f "$C/root.stamp" ] && [ "$(cat "$C/root.stamp")" = "$stamp" ] && [ -x "$ROOT/usr/bin/apt-get" ]; then
        return
    fi
    say "debootstrap $SUITE amd64 into $ROOT"
    rm -rf "$ROOT" "$C/root.stamp"
    debootstrap --variant=minbase --arch=amd64 "$SUITE" "$ROOT" "$MIRROR" >"$C/debootstrap.log" 2>&1 ||
        die "debootstrap failed, see $C/debootstrap.log"
    # Keep the chroot's apt lean: no recommends, no docs.
    printf 'APT::Install-Recommends "false";\nAPT::Install-Suggests "false";\n' \
        >"$ROOT/etc/apt/apt.conf.d/90doorgateway"
    echo "$stamp" >"$C/root.stamp"
}

# The project as the chroot builds it: the working tree (what `make static`
# builds too) without build output or VCS data, copied by content, so
# unchanged files stay unchanged for SwiftPM's incremental build. Package.swift
# is rewritten to take the four dependencies as local path packages from
# /cache/swift-deps (patched for Swift 6.0 there); it is replaced only when its
# text changes, so a warm build does not re-resolve.
sync_tree() {
    mkdir -p "$C/src"
    # By content, and without -t: a file whose bytes did not change keeps the
    # copy's old mtime, so a fresh clone (every mtime new) rebuilds only what
    # differs from the last build instead of the whole package.
    rsync -rlpgoD --checksum --delete --exclude='/.build*' --exclude=/out --exclude=/.git --exclude=/.swiftpm \
        --exclude=/Package.resolved --exclude=/Package.swift ./ "$C/src/"
    local tmp="$C/src/.Package.swift.new"
    sed -E 's#\.package\(url: "https://github\.com/[^/"]+/([^/"]+)", from: "[^"]+"\)#.package(path: "/cache/swift-deps/\1")#' \
        Package.swift >"$tmp"
    if grep -q '\.package(url:' "$tmp"; then
        rm -f "$tmp"
        die "Package.swift has a dependency this script does not know (add it to SWIFT_DEPS in scripts/arm64/inside.sh)"
    fi
    if cmp -s "$tmp" "$C/src/Package.swift"; then rm -f "$tmp"; else mv "$tmp" "$C/src/Package.swift"; fi
}

in_chroot() { "$REPO/scripts/arm64/chroot.sh" "$ROOT" "$C" "$@"; }

install_missing_packages "${HOST_PACKAGES[@]}"
mkdir -p "$C"
exec 9>"$C/.lock"
flock 9
make_chroot
sync_tree
# Dependencies are cloned on the host (its git configuration knows the package
# mirror; the chroot has no route to it) into the cache the chroot sees.
ARM64_CACHE="$C" bash scripts/arm64/inside.sh swiftdeps
# libnats' upstream tarball: the one scripts/static-deps.sh checked against
# bookworm's .dsc for the x86_64 build (Debian's mirror has the .dsc, not the
# tarball); the chroot builds the same version from it.
nats_tarball="${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/static-deps/upstream/nats.c_3.4.1.orig.tar.gz"
if [ ! -f "$nats_tarball" ]; then
    ./scripts/static-deps.sh >/dev/null || die "scripts/static-deps.sh failed (it fetches libnats' source)"
fi
[ -f "$nats_tarball" ] || die "no $nats_tarball (see scripts/static-deps.sh upstream_tarball)"
mkdir -p "$C/upstream"
cmp -s "$nats_tarball" "$C/upstream/$(basename "$nats_tarball")" || cp "$nats_tarball" "$C/upstream/"
for step in packages sdk cdeps build; do
    in_chroot env JOBS="${JOBS:-$(nproc)}" bash /cache/src/scripts/arm64/inside.sh "$step"
done

mkdir -p "$OUT"
for product in "${PRODUCTS[@]}"; do
    cp "$C/out/$product" "$OUT/$product.tmp" && mv "$OUT/$product.tmp" "$OUT/$product"
    desc="$(file -b "$OUT/$product")"
    case "$desc" in
    *"ARM aarch64"*"statically linked"*) ;;
    *) die "$OUT/$product is not a static aarch64 executable: $desc" ;;
    esac
done
(cd "$OUT" && ln -sf gateway gatewayd && ln -sf gateway gatewayctl)
# BUILDINFO (scripts/buildinfo.sh): the chroot's compiler and the aarch64 archives.
scripts/buildinfo.sh "$OUT" aarch64-unknown-linux-gnu "$(cat "$C/out/compiler-version")" "$C/cdeps/buildinfo.libs"

# Smoke test under qemu-user, called explicitly (works without binfmt_misc).
version="$(qemu-aarch64-static "$OUT/gateway" ctl version)" ||
    die "'qemu-aarch64-static $OUT/gateway ctl version' failed"
[ -n "$version" ] || die "'gateway ctl version' printed nothing under qemu-aarch64-static"
say "smoke test: qemu-aarch64-static gateway ctl version -> $version"
verbose="$(qemu-aarch64-static "$OUT/gateway" ctl version --verbose)" || die "gateway ctl version --verbose failed"
grep -c >/dev/null 'its gateway line matches this binary' <<<"$verbose" ||
    { echo "$verbose" >&2; die "gateway ctl version --verbose does not find its BUILDINFO"; }
for product in "${PRODUCTS[@]}"; do
    print_size "$product" "$OUT/$product" "$C/out/$product.stripped" "ELF aarch64, statically linked"
done
say "done in $((SECONDS - T0)) s: $OUT/gateway $OUT/gatewayd $OUT/gatewayctl $OUT/pn532-sim"
