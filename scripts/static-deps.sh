#!/usr/bin/env bash
# static-deps.sh — the static C archives and pkg-config files for `make static`.
#
# Debian ships libcrypto.a, libssl.a, libsqlite3.a, libgpiod.a, libnfc.a and
# libusb.a (libusb-0.1, which Debian's libnfc links), but no libmosquitto.a and
# no libqrencode.a. This script builds those two from Debian's own source
# packages (the version of the installed -dev package, so headers and archive
# agree), once, into a cache outside the working tree. libnats (Debian source
# nats.c) likewise: libnats-dev ships only the shared library. It also builds libnfc
# from Debian's libnfc source with the project's patches/libnfc/*.patch (a
# malformed PN532 answer makes stock libnfc 1.8.0 abort() or memcpy SIZE_MAX
# bytes; see board/libnfc.md) and Debian's own configure flags, so the static
# binaries link the patched archive (libnfc-patched.a) instead of Debian's
# libnfc.a. It writes a private pkg-config directory whose .pc files name
# static archives and list their transitive static libraries in `Libs:`
# (SwiftPM reads `Libs:` only and a static link needs every dependency spelled
# out).
#
# Usage: scripts/static-deps.sh        (prints the pkg-config directory on stdout)
# Cache: ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/static-deps
#   apt/        private deb-src list and its package lists (the system's apt
#               sources are never touched)
#   src/        unpacked Debian sources and cmake build trees (scratch)
#   mosquitto/  include/ lib/libmosquitto.a  .stamp
#   qrencode/   include/ lib/libqrencode.a   .stamp
#   nats/       lib/libnats.a (headers stay Debian's /usr/include/nats)  .stamp
#   libnfc/     lib/libnfc-patched.a (headers stay Debian's /usr/include/nfc)  .stamp
#   pkgconfig/  the .pc files to put in PKG_CONFIG_PATH
# A library is rebuilt only when its .stamp (Debian source version + recipe)
# no longer matches. Progress goes to stderr; a warm cache prints one line.
set -euo pipefail

CACHE_ROOT="${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/static-deps"
REPO_UPSTREAM="$(cd "$(dirname "$0")/.." && pwd)/upstream"
MULTIARCH="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)"
SYSLIB="/usr/lib/$MULTIARCH"
# Build tools and the libraries whose Debian packages ship the static archives.
NEEDED_PACKAGES=(cmake dpkg-dev gcc make pkg-config file autoconf automake libtool
    libssl-dev libsqlite3-dev libnfc-dev libusb-dev libgpiod-dev
    libmosquitto-dev libqrencode-dev libnats-dev)

BUILD_NAME=static-deps
# shellcheck source=scripts/build-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/build-lib.sh"

# Build flags, part of each stamp: changing them forces a rebuild.
MOSQUITTO_CMAKE=(-DCMAKE_BUILD_TYPE=Release -DWITH_STATIC_LIBRARIES=ON -DWITH_PIC=ON
    -DWITH_BROKER=OFF -DWITH_APPS=OFF -DWITH_CLIENTS=OFF -DDOCUMENTATION=OFF
    -DWITH_PLUGINS=OFF -DWITH_CJSON=OFF -DWITH_TLS=ON -DWITH_THREADING=ON
    -DWITH_SRV=OFF -DWITH_WEBSOCKETS=OFF -DWITH_SOCKS=ON)
# libnats: TLS through OpenSSL on, NATS Streaming off (it needs protobuf-c),
# no examples, tests or shared library. The OpenSSL 1.1+ API as Debian's build
# uses it (its libnats.so imports SSL_set1_host): host verification then
# matches an IP address against the certificate's IP SAN, as the shared
# library does; without it a tls://127.0.0.1 URL failed "hostname mismatch".
NATS_CMAKE=(-DCMAKE_BUILD_TYPE=Release -DNATS_BUILD_STREAMING=OFF -DNATS_BUILD_WITH_TLS=ON
    -DNATS_BUILD_TLS_USE_OPENSSL_1_1_API=ON -DNATS_BUILD_TLS_FORCE_HOST_VERIFY=ON
    -DNATS_BUILD_LIB_STATIC=ON -DNATS_BUILD_LIB_SHARED=OFF -DNATS_BUILD_EXAMPLES=OFF
    -DBUILD_TESTING=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
QRENCODE_CMAKE=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DWITH_TOOLS=NO -DWITH_TESTS=NO -DWITHOUT_PNG=YES)

# apt options for a private deb-src list: own SourceList, no SourceParts, own
# lists directory, no binary caches; nothing under /etc/apt or /var/lib/apt changes.
APT_OPTS=()
private_apt() {
    [ ${#APT_OPTS[@]} -gt 0 ] && return
    local dir="$CACHE_ROOT/apt" codename keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    codename="$(. /etc/os-release && echo "$VERSION_CODENAME")"
    mkdir -p "$dir/lists/partial" "$dir/parts"
    cat >"$dir/sources.list" <<EOF
deb-src [signed-by=$keyring] http://deb.debian.org/debian $codename main
deb-src [signed-by=$keyring] http://deb.debian.org/debian $codename-updates main
deb-src [signed-by=$keyring] http://deb.debian.org/debian-security $codename-security main
EOF
    APT_OPTS=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=$dir/parts"
        -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache::pkgcache=" -o "Dir::Cache::srcpkgcache="
        -o "APT::Sandbox::User=root")
    say "updating the private deb-src list ($dir)"
    apt-get "${APT_OPTS[@]}" update -qq >/dev/null
}

# Where an upstream tarball may be fetched when the mirror has the signed .dsc
# but not the tarball itself (seen: nats.c 3.4.1-1, both files 404).
upstream_url() {
    case "$1" in
    nats.c_*.orig.tar.gz)
        local v="${1#nats.c_}"
        echo "https://github.com/nats-io/nats.c/archive/refs/tags/v${v%.orig.tar.gz}.tar.gz"
        ;;
    esac
}

# upstream_tarball SRCPKG WORK: the .orig tarball the .dsc in WORK names, taken
# from $CACHE_ROOT/upstream/ or the repository's upstream/ (put there by hand, e.g. for nats.c:
# `git archive --format=tar --prefix=nats.c-3.4.1/ v3.4.1 | gzip -n` of the
# upstream repository, which is byte for byte Debian's) or downloaded from
# upstream_url, and accepted only if its SHA-256 is the one the .dsc lists
# (apt checked the .dsc against the signed Sources index). Prints its path.
upstream_tarball() {
    local dsc name sum file url
    dsc="$(find "$2" -maxdepth 1 -name "$1_*.dsc" | head -n1)"
    [ -n "$dsc" ] || return 1
    read -r sum name < <(awk '/^Checksums-Sha256:/ { on = 1; next } /^[^ ]/ { on = 0 }
        on && $3 ~ /\.orig\.tar\./ { print $1, $3; exit }' "$dsc")
    [ -n "${name:-}" ] || return 1
    file="$CACHE_ROOT/upstream/$name"
    # The repository carries the tarballs the mirror lacks (upstream/), so a
    # fresh machine that reaches only Debian's mirror still builds.
    if [ ! -f "$file" ] && [ -f "$REPO_UPSTREAM/$name" ]; then
        mkdir -p "$CACHE_ROOT/upstream"
        cp "$REPO_UPSTREAM/$name" "$file"
    fi
    if [ ! -f "$file" ] && url="$(upstream_url "$name")" && [ -n "$url" ]; then
        say "fetching $name from $url"
        mkdir -p "$CACHE_ROOT/upstream"
        curl -fsSL -o "$file.part" "$url" >&2 && mv "$file.part" "$file" || rm -f "$file.part"
    fi
    [ -f "$file" ] || { say "no $name: put it in $CACHE_ROOT/upstream/"; return 1; }
    [ "$(sha256sum "$file" | cut -d' ' -f1)" = "$sum" ] ||
        { say "$file does not match the SHA-256 in $(basename "$dsc")"; return 1; }
    cp "$file" "$2/"
    echo "$2/$name"
}

# fetch_source SRCPKG VERSION DEST: unpack Debian's source package into DEST.
fetch_source() {
    local pkg="$1" version="$2" dest="$3" work="$CACHE_ROOT/src/$1"
    private_apt
    rm -rf "$work" && mkdir -p "$work"
    say "apt-get source $pkg=$version"
    local tree orig
    if ! (cd "$work" && apt-get "${APT_OPTS[@]}" source -qq --only-source "$pkg=$version" \
        >"$work.log" 2>&1); then
        # The mirror may lack the .debian.tar.* while it has the upstream
        # tarball; apt has already checked that tarball against the signed
        # Sources index, so build from it (without Debian's patches).
        orig="$(find "$work" -maxdepth 1 -name "${pkg}_*.orig.tar.*" | head -n1)"
        [ -n "$orig" ] || orig="$(upstream_tarball "$pkg" "$work")" ||
            die "Debian's mirror does not have source package $pkg=$version (the installed -dev package's version; apt-get source failed, see $work.log). If a newer version replaced it: apt-get update && apt-get install --only-upgrade the -dev package, then build again"
        say "the mirror lacks part of $pkg $version; using the upstream tarball $(basename "$orig")"
        tar -xf "$orig" -C "$work"
    fi
    tree="$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)"
    [ -n "$tree" ] || die "no unpacked source tree for $pkg in $work"
    mv "$tree" "$dest"
}

# build_lib NAME SRCPKG DEVPKG CMAKE_FLAGS... ; the per-library install step is
# install_NAME BUILD_TREE SOURCE_TREE PREFIX.
build_lib() {
    local name="$1" srcpkg="$2" devpkg="$3"
    shift 3
    local prefix="$CACHE_ROOT/$name" version stamp
    version="$(dpkg-query -W -f='${source:Version}' "$devpkg")"
    stamp="$srcpkg $version $*"
    if [ -f "$prefix/.stamp" ] && [ "$(cat "$prefix/.stamp")" = "$stamp" ]; then
        return
    fi
    say "building static $name from Debian source $srcpkg $version"
    local src="$CACHE_ROOT/src/$name-source" build="$CACHE_ROOT/src/$name-build"
    rm -rf "$src" "$build" "$prefix"
    fetch_source "$srcpkg" "$version" "$src"
    cmake -S "$src" -B "$build" "$@" >"$CACHE_ROOT/src/$name-cmake.log" 2>&1 ||
        die "cmake configure of $name failed, see $CACHE_ROOT/src/$name-cmake.log"
    cmake --build "$build" -j "$(nproc)" >>"$CACHE_ROOT/src/$name-cmake.log" 2>&1 ||
        die "cmake build of $name failed, see $CACHE_ROOT/src/$name-cmake.log"
    mkdir -p "$prefix/include" "$prefix/lib"
    "install_$name" "$build" "$src" "$prefix"
    rm -rf "$src" "$build" "$CACHE_ROOT/src/$srcpkg" "$CACHE_ROOT/src/$srcpkg.log"
    echo "$stamp" >"$prefix/.stamp"
    say "installed $(cd "$prefix" && echo lib/*.a) in $prefix"
}

# The archive is libmosquitto_static.a; it is installed as libmosquitto.a so
# that a plain -lmosquitto finds it.
install_mosquitto() {
    cp "$1/lib/libmosquitto_static.a" "$3/lib/libmosquitto.a"
    cp "$2"/include/mosquitto.h "$2"/include/mqtt_protocol.h "$3/include/"
}

# The archive is libnats_static.a; installed as libnats.a for a plain -lnats.
# Its headers are the installed libnats-dev's (same Debian version).
install_nats() {
    local a
    a="$(find "$1" -name libnats_static.a | head -n1)"
    [ -n "$a" ] || die "the nats.c build made no libnats_static.a"
    cp "$a" "$3/lib/libnats.a"
    rmdir "$3/include"
}

install_qrencode() {
    cp "$1/libqrencode.a" "$3/lib/libqrencode.a"
    cp "$2/qrencode.h" "$3/include/"
}

# libnfc: Debian's source package (the installed libnfc-dev's version), the
# project's patches on top, then what debian/rules does (dh --with autoreconf;
# --disable-silent-rules --prefix=/usr --libdir=/usr/lib/MULTIARCH plus
# dpkg-buildflags with DEB_BUILD_MAINT_OPTIONS="nocheck hardening=+all"), and
# --disable-shared: only the static archive is needed. The stamp names the
# patches' checksums, so editing a patch rebuilds.
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
LIBNFC_PATCHES="$SCRIPT_DIR/../patches/libnfc"
LIBNFC_DEB_MAINT_OPTIONS="nocheck hardening=+all"
build_libnfc() {
    local prefix="$CACHE_ROOT/libnfc" version stamp patches=() p
    version="$(dpkg-query -W -f='${source:Version}' libnfc-dev)"
    for p in "$LIBNFC_PATCHES"/*.patch; do [ -f "$p" ] && patches+=("$p"); done
    [ ${#patches[@]} -gt 0 ] || die "no patches in $LIBNFC_PATCHES"
    stamp="libnfc $version recipe 2 $(sha256sum "${patches[@]}" | awk '{print $1}' | tr '\n' ' ')"
    if [ -f "$prefix/.stamp" ] && [ "$(cat "$prefix/.stamp")" = "$stamp" ]; then
        return
    fi
    say "building static libnfc from Debian source libnfc $version + ${#patches[@]} patch(es)"
    local src="$CACHE_ROOT/src/libnfc-source" log="$CACHE_ROOT/src/libnfc-build.log"
    mkdir -p "$CACHE_ROOT/src" && : >"$log"
    rm -rf "$src" "$prefix"
    fetch_source libnfc "$version" "$src"
    for p in "${patches[@]}"; do
        patch -d "$src" -p1 --forward --batch <"$p" >>"$log" 2>&1 ||
            die "patch $(basename "$p") does not apply to libnfc $version, see $log"
    done
    (
        cd "$src"
        export DEB_BUILD_MAINT_OPTIONS="$LIBNFC_DEB_MAINT_OPTIONS"
        eval "export $(dpkg-buildflags --export=configure)"
        autoreconf -fi
        ./configure --disable-silent-rules --prefix=/usr --libdir="/usr/lib/$MULTIARCH" \
            --disable-shared --enable-static
        make -j "$(nproc)" -C libnfc
    ) >>"$log" 2>&1 || die "libnfc build failed, see $log"
    mkdir -p "$prefix/lib"
    cp "$src/libnfc/.libs/libnfc.a" "$prefix/lib/libnfc-patched.a"
    # The patched objects must be in: each one's new error message is in the archive.
    grep -aq "MI continuation without status byte" "$prefix/lib/libnfc-patched.a" ||
        die "the built libnfc-patched.a lacks the patched pn53x.o"
    grep -aq "Frame sent again after NACK differs from its header" "$prefix/lib/libnfc-patched.a" ||
        die "the built libnfc-patched.a lacks the patched pn532_i2c.o"
    grep -aq "Unable to receive data: frame too long" "$prefix/lib/libnfc-patched.a" ||
        die "the built libnfc-patched.a lacks the patched pn532_spi.o"
    rm -rf "$src" "$CACHE_ROOT/src/libnfc" "$CACHE_ROOT/src/libnfc.log" "$log"
    echo "$stamp" >"$prefix/.stamp"
    say "installed lib/libnfc-patched.a in $prefix"
}

# write_pc NAME VERSION CFLAGS LIBS: one .pc file, rewritten only when it changes.
write_pc() {
    local file="$CACHE_ROOT/pkgconfig/$1.pc" text
    text="$(printf 'Name: %s\nDescription: %s, static link (scripts/static-deps.sh)\nVersion: %s\nCflags: %s\nLibs: %s\n' \
        "$1" "$1" "$2" "$3" "$4")"
    if [ ! -f "$file" ] || [ "$(cat "$file")" != "$text" ]; then
        echo "$text" >"$file"
        say "wrote $file"
    fi
}

deb_version() { dpkg-query -W -f='${Version}' "$1" | sed 's/^[0-9]*://; s/[-+~].*//'; }

write_pkgconfig() {
    mkdir -p "$CACHE_ROOT/pkgconfig"
    local a
    for a in libcrypto.a libssl.a libsqlite3.a libgpiod.a libusb.a; do
        [ -f "$SYSLIB/$a" ] || die "$SYSLIB/$a is missing (its -dev package ships it)"
    done
    local ssl_version
    ssl_version="$(deb_version libssl-dev)"
    # glibc >= 2.34 has dl and pthread in libc; the -l flags stay for older ones.
    write_pc libcrypto "$ssl_version" "" "-L$SYSLIB -lcrypto -ldl -lpthread"
    write_pc libssl "$ssl_version" "" "-L$SYSLIB -lssl -lcrypto -ldl -lpthread"
    write_pc openssl "$ssl_version" "" "-L$SYSLIB -lssl -lcrypto -ldl -lpthread"
    write_pc sqlite3 "$(deb_version libsqlite3-dev)" "" "-L$SYSLIB -lsqlite3 -lm -ldl -lpthread"
    write_pc libgpiod "$(deb_version libgpiod-dev)" "" "-L$SYSLIB -lgpiod"
    write_pc libusb "$(deb_version libusb-dev)" "" "-L$SYSLIB -lusb"
    # The patched archive (build_libnfc). Its own name: the linker searches every
    # -L for each -l, and other .pc files put $SYSLIB (Debian's libnfc.a) first.
    write_pc libnfc "$(deb_version libnfc-dev)" "" "-L$CACHE_ROOT/libnfc/lib -lnfc-patched -L$SYSLIB -lusb"
    write_pc libmosquitto "$(deb_version libmosquitto-dev)" \
        "-I$CACHE_ROOT/mosquitto/include -DLIBMOSQ_STATIC" \
        "-L$CACHE_ROOT/mosquitto/lib -lmosquitto -L$SYSLIB -lssl -lcrypto -ldl -lpthread"
    write_pc libnats "$(deb_version libnats-dev)" "" \
        "-L$CACHE_ROOT/nats/lib -lnats -L$SYSLIB -lssl -lcrypto -ldl -lpthread"
    write_pc libqrencode "$(deb_version libqrencode-dev)" "-I$CACHE_ROOT/qrencode/include" \
        "-L$CACHE_ROOT/qrencode/lib -lqrencode -lpthread"
}

# The libraries the static link takes, for BUILDINFO (write_buildinfo_libs in
# scripts/build-lib.sh). The versions of the libraries built here are
# their stamps' (what was built), the others' the installed -dev package's
# source version (what ships the archive).
buildinfo_rows() {
    row mosquitto mosquitto "$(stampver mosquitto)" "$CACHE_ROOT/mosquitto/lib/libmosquitto.a" \
        "built from Debian's source package (scripts/static-deps.sh)"
    row nats.c nats.c "$(stampver nats)" "$CACHE_ROOT/nats/lib/libnats.a" \
        "built from Debian's source package (or its .dsc-checked upstream tarball)"
    row libnfc libnfc "$(stampver libnfc)" "$CACHE_ROOT/libnfc/lib/libnfc-patched.a" \
        "built from Debian's source package + patches/libnfc/*.patch"
    row libgpiod libgpiod "$(srcver libgpiod-dev)" "$SYSLIB/libgpiod.a" "the installed libgpiod-dev"
    row openssl-crypto openssl "$(srcver libssl-dev)" "$SYSLIB/libcrypto.a" "the installed libssl-dev"
    row openssl-ssl openssl "$(srcver libssl-dev)" "$SYSLIB/libssl.a" "the installed libssl-dev"
    row sqlite3 sqlite3 "$(srcver libsqlite3-dev)" "$SYSLIB/libsqlite3.a" "the installed libsqlite3-dev"
    row qrencode qrencode "$(stampver qrencode)" "$CACHE_ROOT/qrencode/lib/libqrencode.a" \
        "built from Debian's source package (scripts/static-deps.sh)"
    row libusb libusb "$(srcver libusb-dev)" "$SYSLIB/libusb.a" "the installed libusb-dev"
}

install_missing_packages "${NEEDED_PACKAGES[@]}"
mkdir -p "$CACHE_ROOT"
# Clones and worktrees share the cache: one run at a time.
exec 9>"$CACHE_ROOT/.lock"
flock 9
build_lib mosquitto mosquitto libmosquitto-dev "${MOSQUITTO_CMAKE[@]}"
build_lib qrencode qrencode libqrencode-dev "${QRENCODE_CMAKE[@]}"
build_lib nats nats.c libnats-dev "${NATS_CMAKE[@]}"
build_libnfc
write_pkgconfig
write_buildinfo_libs "$CACHE_ROOT" "" buildinfo_rows
say "ready: PKG_CONFIG_PATH=$CACHE_ROOT/pkgconfig"
echo "$CACHE_ROOT/pkgconfig"
