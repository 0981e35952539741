#!/usr/bin/env bash
# buildinfo-libs.sh — sourced, never run: write_buildinfo_libs, which
# scripts/static-deps.sh (x86_64) and scripts/arm64/inside.sh (aarch64) use to
# write the rows of the libraries the static link takes, for BUILDINFO
# (scripts/buildinfo.sh). The sourcing script defines `die`.

# write_buildinfo_libs CACHE ARCH ROWS — CACHE/buildinfo.libs: one
# tab-separated row a library — library, Debian source package, version, the
# archive linked in, its SHA-256, where it came from — as the function ROWS
# names them, one `row NAME SRCPKG VERSION ARCHIVE FROM` each. For ROWS:
# `stampver LIB` is the version CACHE/LIB/.stamp says was built, `srcver PKG`
# the source version of the installed -dev package PKG (PKG:ARCH when ARCH is
# not empty). A missing archive is an error; the file is replaced whole.
write_buildinfo_libs() {
    local cache="$1" arch="$2" rows_fn="$3"
    local rows="$cache/buildinfo.libs" tmp="$cache/buildinfo.libs.tmp"
    : >"$tmp"
    row() { # NAME SRCPKG VERSION ARCHIVE FROM
        [ -f "$4" ] || die "BUILDINFO: $4 is missing"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$(sha256sum "$4" | cut -d' ' -f1)" "$5" >>"$tmp"
    }
    srcver() { dpkg-query -W -f='${source:Version}' "$1${arch:+:$arch}"; }
    stampver() { awk '{ print $2 }' "$cache/$1/.stamp"; }
    "$rows_fn"
    mv "$tmp" "$rows"
}
