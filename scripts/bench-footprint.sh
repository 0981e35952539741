#!/usr/bin/env bash
# bench-footprint.sh GATEWAY — the static binary's footprint figures (make bench):
# size and stripped size against the ≤ 20 MB goal, whether ICU's data is
# linked in (`strings | grep icudt` empty is the goal) and how large it is,
# and which modules' Swift sources still import Foundation proper (Foundation
# brings ICU; FoundationEssentials does not). Prints figures, asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
GATEWAY="${1:?usage: scripts/bench-footprint.sh GATEWAY}"
[ -x "$GATEWAY" ] || { echo "bench-footprint: no $GATEWAY (make static)" >&2; exit 1; }

mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1048576 }'; }
goal() { if [ "$1" = 1 ]; then echo "met"; else echo "**missed**"; fi; }

stripped="$(mktemp)"
trap 'rm -f "$stripped"' EXIT
strip -o "$stripped" "$GATEWAY"
size=$(stat -c %s "$GATEWAY")
small=$(stat -c %s "$stripped")
echo "static gateway: $(mb "$size"), stripped $(mb "$small") (goal ≤ 20 MB stripped: $(goal $((small <= 20 * 1048576))))"

icu=$(strings -a "$stripped" | grep -c icudt || true)
if [ "$icu" -gt 0 ]; then
    # The data is one symbol (icudtNN_dat) in the unstripped binary.
    hex=$(nm -S "$GATEWAY" 2>/dev/null | awk '$4 ~ /^icudt[0-9]+_dat$/ { print $2 }' | head -n 1 || true)
    data=$([ -n "$hex" ] && echo $((16#$hex)) || true)
    echo "ICU in the binary: yes, strings | grep icudt finds $icu lines$([ -n "$data" ] && echo ", ICU data $(mb "$data")" || true) (goal: none: $(goal 0))"
else
    echo "ICU in the binary: none (strings | grep icudt is empty) (goal: none: $(goal 1))"
fi

essentials=$(nm "$GATEWAY" 2>/dev/null | grep -c 'FoundationEssentials' || true)
echo "FoundationEssentials in the binary: $essentials symbols (none since the own CLI parser; ~4 MB when linked)"
regex=$(nm "$GATEWAY" 2>/dev/null | grep -cE '17_StringProcessing|12_RegexParser' || true)
echo "Swift regex libraries (_StringProcessing, _RegexParser) in the binary: $regex symbols (none since DoorCore includes; 1.2 MB stripped when linked)"

# Which modules still import Foundation proper: a file with `import Foundation`
# and no `import FoundationEssentials` (the guarded `#if canImport(
# FoundationEssentials) … #else import Foundation` form does not count); the
# project's own sources and the packages built into the binary (their tests,
# examples and docs aside).
importers() {
    grep -rlE '^[[:space:]]*(@_exported |public |internal |@preconcurrency )*import Foundation$' \
        --include='*.swift' --exclude-dir=Tests --exclude-dir=Documentation --exclude-dir='*.docc' \
        --exclude-dir=Examples --exclude-dir=Benchmarks --exclude-dir=Plugins --exclude-dir=Tools "$@" 2>/dev/null |
        xargs -r grep -LE '^[[:space:]]*(@_exported |public |internal )*import FoundationEssentials$' || true
}
count() { sort | uniq -c | sort -rn | awk '{ printf "%s%s (%d files)", sep, $2, $1; sep = ", " }'; }
own=$(importers Sources | sed -E 's#^Sources/([^/]+)/.*#\1#' | count)
# Only the packages Package.swift names today (a checkout can outlive its dependency).
named=()
for name in $(sed -nE 's#.*\.package\(url: "https://github\.com/[^/]+/([^"]+)".*#\1#p' Package.swift); do
    [ -d ".build-static/checkouts/$name" ] && named+=(".build-static/checkouts/$name")
done
deps=$([ ${#named[@]} -gt 0 ] && importers "${named[@]}" | sed -E 's#^\.build-static/checkouts/([^/]+)/.*#\1#' | count || true)
echo "import Foundation (not FoundationEssentials), project: ${own:-none}"
echo "import Foundation (not FoundationEssentials), packages: ${deps:-none}"
