#!/bin/sh
# scripts/upgrade/old-deb.sh — print the path of the amd64 package of the
# previous release (0.2.0-1), building it once from that release's commit:
# `git archive` of OLD_COMMIT into the cache, its own scripts/static.sh and
# scripts/deb.sh there (so the binary, the unit, the conffile and the
# maintainer scripts are 0.2.0's, as on a door in the field). Cached in
# ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/upgrade/<commit>/; a cold build
# is one static release build of that tree (the static-deps cache is shared).
#
# OLD_STATIC=DIR: use DIR/gateway and DIR/pn532-sim instead of building them
# (a static build of OLD_COMMIT, e.g. out/static of a checkout of it).
# Beside the package: migrations.txt, the store migrations 0.2.0 ships.
# Needs the commit in this clone (not a shallow one).
set -eu
# 0.2.0: the last commit whose Sources/DoorCore/Version.swift says 0.2.0
# (tag it v0.2.0 when the history gets tags). 0.1.0 was 0b7107d.
OLD_COMMIT=${OLD_COMMIT:-0cee1d220a69efcdd43ef5e8f2cee6500586721c}
OLD_VERSION=0.2.0-1
cd "$(dirname "$0")/../.."
say() { echo "old-deb: $*" >&2; }
die() { echo "old-deb: $*" >&2; exit 1; }
CACHE=${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/upgrade/$OLD_COMMIT
DEB=$CACHE/doorgateway_${OLD_VERSION}_amd64.deb
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
if [ ! -f "$DEB" ] || [ ! -s "$CACHE/migrations.txt" ]; then
    git cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null \
        || die "commit $OLD_COMMIT (doorgateway ${OLD_VERSION%-*}) is not in this clone (a shallow checkout? git fetch --unshallow)"
    SRC=$CACHE/src
    rm -rf "$SRC"
    mkdir -p "$SRC"
    git archive "$OLD_COMMIT" | tar -x -C "$SRC"
    v=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' "$SRC/Sources/DoorCore/Version.swift")
    [ "$v-1" = "$OLD_VERSION" ] || die "$OLD_COMMIT is version $v, not $OLD_VERSION"
    if [ -n "${OLD_STATIC:-}" ]; then
        mkdir -p "$SRC/out/static"
        cp "$OLD_STATIC/gateway" "$OLD_STATIC/pn532-sim" "$SRC/out/static/"
        [ -f "$OLD_STATIC/BUILDINFO" ] && cp "$OLD_STATIC/BUILDINFO" "$SRC/out/static/"
        say "using $OLD_STATIC ($("$SRC/out/static/gateway" ctl version))"
    else
        say "building ${OLD_VERSION%-*}'s static binary from $OLD_COMMIT in $SRC (once)"
        (cd "$SRC" && ./scripts/static.sh out/static) >&2
    fi
    [ "$("$SRC/out/static/gateway" ctl version)" = "gateway ${OLD_VERSION%-*}" ] || die "$SRC/out/static/gateway is not ${OLD_VERSION%-*}"
    (cd "$SRC" && HOST_GATEWAY=out/static/gateway ./scripts/deb.sh amd64 out/static "$CACHE/deb") >&2
    # The store migrations ${OLD_VERSION%-*} ships, in order (test-upgrade compares).
    sed -n 's/^ *name: "\(v[0-9][^"]*\)",* *$/\1/p' "$SRC/Sources/GatewayStore/Migrations.swift" > "$CACHE/migrations.txt"
    [ -s "$CACHE/migrations.txt" ] || die "no migration names in $OLD_COMMIT's Migrations.swift"
    mv "$CACHE/deb/doorgateway_${OLD_VERSION}_amd64.deb" "$DEB"
    rm -rf "$SRC/.build-static" "$CACHE/deb"
fi
echo "$DEB"
