#!/bin/sh
# scripts/check-version.sh — every place that states DoorGateway's version
# agrees with Sources/DoorCore/Version.swift (what the binary reports):
#   board/debian/changelog's top entry (the package version, whose upstream
#     part scripts/deb.sh also checks against the binary; the image's name
#     doorgateway-<version>-arm64.img is made from the package's version),
#   and every file name or version a document or script quotes:
#     doorgateway-X.Y.Z-arm64.img, doorgateway_X.Y.Z-N_ARCH.deb,
#     "gateway X.Y.Z" (`gatewayctl version`), "doorgateway-X.Y.Z" (firmware_version).
# Prints each disagreement with its file and line; exit 1 if any.
set -eu
cd "$(dirname "$0")/.."
V=$(sed -n 's/.*static let string = "\(.*\)".*/\1/p' Sources/DoorCore/Version.swift)
[ -n "$V" ] || { echo "check-version: no version in Sources/DoorCore/Version.swift" >&2; exit 1; }
bad=0
top=$(sed -n '1s/^doorgateway (\([^)]*\)).*/\1/p' board/debian/changelog)
[ "${top%-*}" = "$V" ] || { echo "check-version: board/debian/changelog's top entry is $top, Version.swift says $V"; bad=1; }
# Quoted versions in the tree's text (not upstream/, patches/ or the changelog's history).
hits=$(git ls-files -- '*.md' '*.txt' '*.sh' '*.toml' '*.service' '*.in' Makefile .ci/run board/debian/postinst 2>/dev/null |
    grep -v '^upstream/\|^patches/' |
    xargs grep -nHoE 'doorgateway-[0-9]+\.[0-9]+\.[0-9]+-arm64\.img|doorgateway_[0-9]+\.[0-9]+\.[0-9]+-[0-9]+_(amd64|arm64)\.deb|gateway [0-9]+\.[0-9]+\.[0-9]+\b|doorgateway-[0-9]+\.[0-9]+\.[0-9]+"' 2>/dev/null || true)
# The upgrade machinery names the previous release on purpose.
hits=$(printf '%s\n' "$hits" | grep -v '^scripts/upgrade/\|^scripts/test-upgrade\.sh:\|^docs/upgrade\.md:' || true)
while IFS= read -r h; do
    case $h in
    "" | *"$V"-arm64.img | *"_$V"-[0-9]*_amd64.deb | *"_$V"-[0-9]*_arm64.deb | *"gateway $V" | *"doorgateway-$V\"") ;;
    *) echo "check-version: $h (the version is $V)"; bad=1 ;;
    esac
done <<EOF
$hits
EOF
[ "$bad" = 0 ] && echo "check-version: $V everywhere (Version.swift, board/debian/changelog $top, the documents)"
exit "$bad"
