#!/usr/bin/env bash
# buildinfo.sh OUT TARGET COMPILER LIBS — write OUT/BUILDINFO: what the static
# binaries in OUT were built from. Called by scripts/static.sh (x86_64) and
# scripts/static-arm64.sh (aarch64); scripts/deb.sh ships it in the package's
# doc directory, and `gatewayctl version --verbose` prints it (and says whether
# its gateway line matches the running binary).
#
#   TARGET    the target triple
#   COMPILER  the compiler as it names itself (swift --version's first line)
#   LIBS      tab-separated rows, one per C library linked in: library, Debian
#             source package, version, archive, SHA-256 of the archive, origin
#             (written by scripts/static-deps.sh / scripts/arm64/inside.sh)
#
# Both dependency sets move under us (bookworm security updates, trixie point
# releases); a new version rebuilds the library (its stamp changes) and shows
# up here, so two builds can be told apart by their BUILDINFO.
set -euo pipefail
OUT=${1:?usage: buildinfo.sh OUT TARGET COMPILER LIBS}
TARGET=${2:?} COMPILER=${3:?} LIBS=${4:?}
[ -s "$LIBS" ] || { echo "buildinfo: $LIBS is missing or empty" >&2; exit 1; }
version="$(grep -o '"[0-9][0-9.]*"' "$(dirname "$0")/../Sources/DoorCore/Version.swift" | tr -d '"')"
commit="$(git -C "$(dirname "$0")/.." rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$(dirname "$0")/.." status --porcelain --untracked-files=no 2>/dev/null)" ]; then
    commit="$commit+changes"
fi
tmp="$OUT/BUILDINFO.tmp.$$"
{
    echo "doorgateway $version (source $commit)"
    echo "target: $TARGET, fully static"
    echo "compiler: $COMPILER"
    echo
    printf '%-15s %-10s %-22s %-22s %s\n' library source version archive sha256
    while IFS=$'\t' read -r name src ver archive sum from; do
        printf '%-15s %-10s %-22s %-22s %s\n' "$name" "$src" "$ver" "$(basename "$archive")" "$sum"
        printf '%-15s   %s\n' "" "$from"
    done <"$LIBS"
    echo
    for b in gateway pn532-sim; do
        [ -f "$OUT/$b" ] || continue
        printf 'binary %-10s sha256 %s\n' "$b" "$(sha256sum "$OUT/$b" | cut -d' ' -f1)"
    done
} >"$tmp"
if cmp -s "$tmp" "$OUT/BUILDINFO"; then
    rm -f "$tmp"
    echo "buildinfo: $OUT/BUILDINFO unchanged ($(wc -l <"$LIBS") libraries)" >&2
else
    mv "$tmp" "$OUT/BUILDINFO"
    echo "buildinfo: wrote $OUT/BUILDINFO ($(wc -l <"$LIBS") libraries)" >&2
fi
