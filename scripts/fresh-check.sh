#!/usr/bin/env bash
# fresh-check.sh — `make fresh-check`: the cold path a new machine takes.
# `make static`, `make static-arm64` and `make deb` in a copy of this working
# tree (tracked and untracked files, no .build*/ or out/) with DOORGATEWAY_CACHE
# pointing at an empty directory, then each step's wall time. Run it before
# closing any change to the build scripts: a warm cache hides what a cold one
# meets (an aarch64 build once failed on every new machine while every warm
# run passed). Needs root, like the builds; ~20 min on 2 cores.
#
#   FRESH_DIR   where the copy and the cache go (default: a new directory under /var/tmp)
#   FRESH_KEEP  1: keep them afterwards (default: removed, on failure too)
#
# What stays warm: Debian's installed packages (the builds install what they
# lack) and SwiftPM's own dependency cache (~/.cache/org.swift.swiftpm; the
# packages come from this machine's local mirror).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
say() { echo "fresh-check: $*" >&2; }
[ "$(id -u)" = 0 ] || { say "needs root (the builds debootstrap and apt-get)"; exit 1; }

DIR=${FRESH_DIR:-$(mktemp -d /var/tmp/doorgateway-fresh.XXXXXX)}
mkdir -p "$DIR"
[ -z "$(ls -A "$DIR")" ] || { say "$DIR is not empty"; exit 1; }
cleanup() {
    if [ "${FRESH_KEEP:-0}" = 1 ]; then say "kept $DIR"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$DIR/tree" "$DIR/cache"
(cd "$REPO" && git ls-files -z --cached --others --exclude-standard |
    rsync -a --from0 --files-from=- ./ "$DIR/tree/")
# buildinfo.sh names the commit; the copy keeps the repository's history.
git clone -q --no-checkout "$REPO" "$DIR/git" && mv "$DIR/git/.git" "$DIR/tree/.git" && rmdir "$DIR/git"
git -C "$DIR/tree" reset -q
say "copy of $REPO in $DIR/tree; DOORGATEWAY_CACHE=$DIR/cache (empty)"

export DOORGATEWAY_CACHE="$DIR/cache"
rows=()
status=0
for target in static static-arm64 deb; do
    t=$SECONDS
    say "make $target (log $DIR/$target.log)"
    if make -C "$DIR/tree" --no-print-directory "$target" >"$DIR/$target.log" 2>&1; then
        rows+=("$target $((SECONDS - t)) ok")
    else
        rows+=("$target $((SECONDS - t)) FAILED")
        tail -n 40 "$DIR/$target.log" >&2
        status=1
        break
    fi
done
echo
echo "fresh-check: cold builds (empty DOORGATEWAY_CACHE, fresh tree) on $(nproc) cores:"
for r in "${rows[@]}"; do
    read -r name secs result <<<"$r"
    printf '  make %-13s %3dm%02ds  %s\n' "$name" $((secs / 60)) $((secs % 60)) "$result"
done
if [ "$status" = 0 ]; then
    for f in "$DIR/tree/out/static/BUILDINFO" "$DIR/tree/out/static-arm64/BUILDINFO"; do
        echo
        echo "== ${f#"$DIR/tree/"}"
        cat "$f"
    done
    echo
    ls -l "$DIR"/tree/out/deb/*.deb
fi
exit "$status"
