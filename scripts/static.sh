#!/usr/bin/env bash
# static.sh OUT — one fully static release binary: OUT/gateway (with the
# gatewayd / gatewayctl multi-call links) and OUT/pn532-sim.
#
# The static C archives and the pkg-config files naming them come from
# scripts/static-deps.sh (cached outside the tree). The Swift build uses its
# own scratch path, .build-static, so it never invalidates the debug build in
# .build. See DEVELOPERS.md "Static release binary".
set -euo pipefail

OUT="${1:?usage: scripts/static.sh OUT}"
cd "$(dirname "$0")/.."
SWIFT="${SWIFT:-swift}"
SCRATCH=.build-static
PRODUCTS=(gateway pn532-sim)

BUILD_NAME=static
# shellcheck source=scripts/build-lib.sh
. scripts/build-lib.sh

# Two makes may run this at once (.ci/run's lanes both depend on `static`):
# one at a time, so neither copies a binary or BUILDINFO the other is writing.
mkdir -p "$SCRATCH"
exec 9>"$SCRATCH/static.lock"
flock 9

PKG_CONFIG_PATH="$(scripts/static-deps.sh)"
export PKG_CONFIG_PATH

# SwiftPM reads the .pc files when it plans a build and does not notice when
# they change (a patched libnfc, a new mosquitto): the old link lines would
# stay. Drop the plan when the .pc files differ from the ones it was made with.
stamp="$SCRATCH/pkgconfig.sha256"
sum="$(cat "$PKG_CONFIG_PATH"/*.pc | sha256sum | cut -d' ' -f1)"
if [ -d "$SCRATCH" ] && [ "$(cat "$stamp" 2>/dev/null)" != "$sum" ]; then
    say "pkg-config files changed: re-planning the build"
    rm -f "$SCRATCH/release.yaml" "$SCRATCH/release/description.json"
fi
# Nor does it relink when an archive they name is rebuilt under the same name
# (libnfc-patched.a after a change in patches/libnfc): the binaries would keep
# the old library. Drop them when the archives differ from the last link's.
archives="$SCRATCH/archives.sha256"
asum="$(find "$(dirname "$PKG_CONFIG_PATH")" -path '*/lib/*.a' -type f -print0 | sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$archives" 2>/dev/null)" != "$asum" ]; then
    say "static archives changed: relinking"
    for product in "${PRODUCTS[@]}"; do rm -f "$SCRATCH/release/$product"; done
fi
mkdir -p "$SCRATCH"
echo "$sum" >"$stamp"
echo "$asum" >"$archives"

# --static-swift-stdlib links the Swift runtime and Foundation statically;
# -static-executable makes the final link `-static`, so every -l resolves to an
# archive and glibc is linked in too.
build=("$SWIFT" build -c release --scratch-path "$SCRATCH" -j "$(nproc)"
    --static-swift-stdlib -Xswiftc -static-executable)
# glibc warns at link time for every NSS / dlopen call (getaddrinfo, getpwuid,
# dlopen in libcrypto and the Swift runtime); those are expected, see
# DEVELOPERS.md "glibc in a static binary", so only their count is shown.
benign='in statically linked applications requires at runtime|the use of `mktemp. is dangerous'
for product in "${PRODUCTS[@]}"; do
    say "swift build -c release --product $product (static)"
    log="$SCRATCH/static-$product.log"
    mkdir -p "$SCRATCH"
    "${build[@]}" --product "$product" 2>&1 | tee "$log" | { grep -Ev "$benign" || true; }
    say "$(grep -Ec "$benign" "$log" || true) expected glibc static-link warnings (full log: $log)"
done
bin="$("${build[@]}" --show-bin-path)"

mkdir -p "$OUT"
for product in "${PRODUCTS[@]}"; do
    # Copy, then rename over: a running binary (a test's pn532-sim) cannot
    # be written in place (ETXTBSY), but it can be replaced.
    # Unchanged: left alone (a test may be running it).
    if ! cmp -s "$bin/$product" "$OUT/$product"; then
        cp "$bin/$product" "$OUT/$product.new"
        mv -f "$OUT/$product.new" "$OUT/$product"
    fi
    # ldd exits non-zero on a static binary; its message is the check.
    deps="$(ldd "$OUT/$product" 2>&1 || true)"
    if ! grep -q 'not a dynamic executable' <<<"$deps"; then
        say "error: $OUT/$product is dynamically linked:"
        echo "$deps" >&2
        exit 1
    fi
done
(cd "$OUT" && ln -sf gateway gatewayd && ln -sf gateway gatewayctl)
# BUILDINFO: the compiler, every C library linked in (version, archive SHA-256)
# and the binaries' SHA-256 (scripts/buildinfo.sh).
scripts/buildinfo.sh "$OUT" "$(uname -m)-unknown-linux-gnu" \
    "$("$SWIFT" --version 2>&1 | awk '/Swift version/ && !n++')" "$(dirname "$PKG_CONFIG_PATH")/buildinfo.libs"
verbose="$("$OUT/gateway" ctl version --verbose)" || { say "error: '$OUT/gateway ctl version --verbose' failed"; exit 1; }
grep -c >/dev/null 'its gateway line matches this binary' <<<"$verbose" ||
    { say "error: gateway ctl version --verbose does not find its BUILDINFO:"; echo "$verbose" >&2; exit 1; }

version="$("$OUT/gateway" ctl version)" || { say "error: '$OUT/gateway ctl version' failed"; exit 1; }
say "smoke test: gateway ctl version -> $version"
# The footprint rule (DEVELOPERS.md "Sizes"): no Foundation layer in the static
# binaries. One reference to FoundationEssentials pulls ~4 MB, the umbrella
# ICU's 34 MB; the build refuses either instead of shipping it silently.
for product in "${PRODUCTS[@]}"; do
    linked=$(nm "$OUT/$product" 2>/dev/null | grep -cE 'Foundation(Essentials|Internationalization)|_FoundationICU|icudt' || true)
    if [[ "$linked" -gt 0 ]]; then
        say "error: $OUT/$product links Foundation ($linked symbols); see DEVELOPERS.md \"Keeping Foundation out\""
        nm "$OUT/$product" | grep -E 'Foundation(Essentials|Internationalization)|_FoundationICU' | head -3 >&2
        exit 1
    fi
    # Nor Swift's regex engine: one String.contains(String) (it is _StringProcessing's)
    # links it and _RegexParser, 0.76 MB of text; DoorCore's `includes` does the job.
    regex=$(nm "$OUT/$product" 2>/dev/null | grep -cE '17_StringProcessing|12_RegexParser' || true)
    if [[ "$regex" -gt 0 ]]; then
        say "error: $OUT/$product links Swift's regex libraries ($regex symbols); see DEVELOPERS.md \"Keeping Foundation out\""
        nm -u "$bin"/*.build/*.o 2>/dev/null |
            grep -E '17_StringProcessing|12_RegexParser' | sort | uniq -c | head -5 >&2 || true
        exit 1
    fi
done
for product in "${PRODUCTS[@]}"; do
    strip -o "$SCRATCH/$product.stripped" "$OUT/$product"
    print_size "$product" "$OUT/$product" "$SCRATCH/$product.stripped" "not a dynamic executable"
done
say "done: $OUT/gateway $OUT/gatewayd $OUT/gatewayctl $OUT/pn532-sim"
