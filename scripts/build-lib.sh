#!/usr/bin/env bash
# build-lib.sh — sourced, never run: what the static builds share.
# scripts/static.sh, scripts/static-deps.sh (x86_64), scripts/static-arm64.sh
# and scripts/arm64/inside.sh (aarch64); the host packages and private apt
# configurations of the image and VM scripts too (scripts/image/lib.sh,
# scripts/gpio-vm/run.sh, scripts/raspi3b/run.sh). Set BUILD_NAME (the
# script's name in its messages) before sourcing.

say() { echo "$BUILD_NAME: $*" >&2; }
die() { say "error: $*"; exit 1; }

# install_missing_packages PKG...: apt-get install of those not installed (root).
install_missing_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -c >/dev/null '^install ok installed' ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return
    [ "$(id -u)" = 0 ] || die "need root to apt-get install: ${missing[*]}"
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
}

# private_apt DIR ARCH... -- SUITE...: an apt configuration of its own in DIR
# (sources, lists, status, archives; nothing of the host's apt state changes)
# for Debian's SUITEs (main; *-security from debian-security), the first ARCH
# native. Use it as `env APT_CONFIG="DIR/apt.conf" apt-get …`.
private_apt() {
    local dir=$1 arch archs=() k=/usr/share/keyrings/debian-archive-keyring.gpg suite
    shift
    while [ "$1" != -- ]; do archs+=("$1") && shift; done
    shift
    mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/parts" "$dir/prefs"
    touch "$dir/status"
    for suite in "$@"; do
        case $suite in *-security) echo "deb [signed-by=$k] http://deb.debian.org/debian-security $suite main" ;;
        *) echo "deb [signed-by=$k] http://deb.debian.org/debian $suite main" ;; esac
    done >"$dir/sources.list"
    printf '%s\n' "Dir::Etc::SourceList \"$dir/sources.list\"; Dir::Etc::SourceParts \"$dir/parts\";" \
        "Dir::Etc::Preferences \"$dir/prefs/none\"; Dir::Etc::PreferencesParts \"$dir/prefs\";" \
        "Dir::State::Lists \"$dir/lists\"; Dir::State::status \"$dir/status\"; Dir::Cache \"$dir/cache\";" \
        "Dir::Cache::Archives \"$dir/archives\"; APT::Sandbox::User \"root\";" \
        "APT::Architecture \"${archs[0]}\"; APT::Architectures { $(for arch in "${archs[@]}"; do printf '"%s"; ' "$arch"; done)};" \
        >"$dir/apt.conf"
}

# print_size PRODUCT BINARY STRIPPED WHAT: BINARY's size and its stripped
# copy's, and WHAT it is, on one line.
print_size() {
    awk -v n="$BUILD_NAME" -v p="$1" -v s="$(stat -c %s "$2")" -v t="$(stat -c %s "$3")" -v w="$4" \
        'BEGIN { printf "%s: %-10s %5.1f MB (%.1f MB stripped), %s\n", n, p, s / 1048576, t / 1048576, w }' >&2
}

# The C libraries in BUILDINFO (scripts/buildinfo.sh): static-deps.sh and inside.sh
# write their rows with write_buildinfo_libs.

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
