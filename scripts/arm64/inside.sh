#!/usr/bin/env bash
# inside.sh STEP — the steps of `make static-arm64` that run INSIDE the trixie
# amd64 chroot (scripts/arm64/chroot.sh puts the arm64 cache at /cache and the
# project copy at /cache/src). Called by scripts/static-arm64.sh; each step is
# stamped and returns at once when its stamp matches.
#
#   packages   Debian trixie's swiftlang 6.0.3 (amd64 compiler) and the :arm64
#              -dev packages whose static archives the link uses
#   sdk        the aarch64 Swift resource dirs (lib/swift, lib/swift_static,
#              lib/clang) unpacked from swiftlang:arm64 into /cache/sdk
#   cdeps      aarch64 static C archives and .pc files in /cache/cdeps
#   swiftdeps  the Swift package dependencies, patched for Swift 6.0, as local
#              path packages in /cache/swift-deps (run on the HOST: it clones
#              with the host's git configuration, whose url.insteadOf points
#              github.com at the machine's package mirror)
#   build      swift build of gateway and pn532-sim for aarch64 into /cache/build
#
# Why a chroot: trixie's swiftlang needs glibc >= 2.38 and libpython3.13, the
# host is bookworm. Why no cross gcc here: libc6-dev-arm64-cross adds
# /usr/aarch64-linux-gnu/include, which Swift 6.0's glibc module-map lookup
# then picks ("header 'assert.h' not found"); the C libraries are compiled with
# swiftlang's own clang instead, and only binutils-aarch64-linux-gnu (ar,
# strip; no headers) is installed.
set -euo pipefail

STEP="${1:?usage: inside.sh packages|sdk|cdeps|swiftdeps|build}"
# The cache as the chroot sees it; the swiftdeps step runs on the host (the
# package mirror git knows is configured there) with ARM64_CACHE set.
C="${ARM64_CACHE:-/cache}"
TRIPLE=aarch64-unknown-linux-gnu
MULTIARCH=aarch64-linux-gnu
SYSLIB=/usr/lib/$MULTIARCH
SDK=$C/sdk
CDEPS=$C/cdeps
PCDIR=$CDEPS/pkgconfig
SWIFTDEPS=$C/swift-deps
SCRATCH=$C/build
JOBS="${JOBS:-$(nproc)}"

BUILD_NAME=static-arm64
# shellcheck source=scripts/build-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../build-lib.sh"
stamp_ok() { [ -f "$1" ] && [ "$(cat "$1")" = "$2" ]; }
pkgver() { dpkg-query -W -f='${Version}' "$1"; }

# --- packages ---------------------------------------------------------------
# Host-arch tools first, then the :arm64 libraries (their .a files and headers
# land in /usr/lib/aarch64-linux-gnu and /usr/include/aarch64-linux-gnu).
PACKAGES=(swiftlang libc6-dev libstdc++-14-dev pkg-config git ca-certificates
    cmake make dpkg-dev file binutils-aarch64-linux-gnu autoconf automake libtool
    libc6-dev:arm64 libgcc-14-dev:arm64 libstdc++-14-dev:arm64 libssl-dev:arm64
    libsqlite3-dev:arm64 libnfc-dev:arm64 libusb-dev:arm64 libmosquitto-dev:arm64
    libqrencode-dev:arm64 libzstd-dev:arm64 zlib1g-dev:arm64)

step_packages() {
    local stamp=/var/lib/doorgateway-packages.stamp want="${PACKAGES[*]}"
    stamp_ok "$stamp" "$want" && return
    dpkg --print-foreign-architectures | grep -cx >/dev/null arm64 || dpkg --add-architecture arm64
    say "chroot: apt-get update + install swiftlang and the :arm64 -dev packages"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
    # The cross-gcc headers break Swift's glibc module map (see the top).
    ! dpkg-query -W -f='${Status}' libc6-dev-arm64-cross 2>/dev/null | grep -c >/dev/null 'ok installed' ||
        die "libc6-dev-arm64-cross is installed in the chroot; Swift's SwiftGlibc module would not build"
    echo "$want" >"$stamp"
}

# --- sdk --------------------------------------------------------------------
# The same swiftlang version for arm64 as the amd64 compiler installed: its
# runtime, Foundation and static archives for aarch64. The .deb is kept in
# /cache/debs so a rebuilt sdk needs no download.
step_sdk() {
    local ver recipe=1 stamp
    ver="$(pkgver swiftlang)"
    stamp="swiftlang:arm64 $ver recipe $recipe"
    stamp_ok "$SDK/.stamp" "$stamp" && return
    mkdir -p $C/debs
    local deb
    deb="$(ls $C/debs/swiftlang_"${ver#*:}"_arm64.deb 2>/dev/null || true)"
    if [ -z "$deb" ]; then
        say "apt-get download swiftlang:arm64=$ver (~400 MB)"
        (cd $C/debs && apt-get -o APT::Sandbox::User=root download -qq "swiftlang:arm64=$ver")
        deb="$(ls $C/debs/swiftlang_"${ver#*:}"_arm64.deb)"
    fi
    say "unpacking the aarch64 Swift resource dirs from $(basename "$deb")"
    rm -rf "$SDK" "$SDK.tmp" && mkdir -p "$SDK.tmp/usr/lib"
    dpkg-deb --fsys-tarfile "$deb" |
        tar -x -C "$SDK.tmp" ./usr/libexec/swift/lib/swift ./usr/libexec/swift/lib/swift_static \
            ./usr/libexec/swift/lib/clang
    mv "$SDK.tmp"/usr/libexec/swift/lib/* "$SDK.tmp/usr/lib/"
    rm -rf "$SDK.tmp/usr/libexec"
    # Debian's static-executable-args.lnk still names the ICU libraries of
    # Swift 5.x (-licui18nswift ...); 6.0 links lib_FoundationICU.a instead, so
    # lld fails with "unable to find library -licui18nswift". Drop those lines.
    local lnk="$SDK.tmp/usr/lib/swift_static/linux/static-executable-args.lnk"
    [ -f "$lnk" ] || die "no $lnk in swiftlang:arm64"
    sed -i '/-licu.*swift/d' "$lnk"
    [ -f "$SDK.tmp/usr/lib/swift_static/linux/libswiftCore.a" ] || die "swiftlang:arm64 has no static libswiftCore.a"
    mv "$SDK.tmp" "$SDK"
    echo "$stamp" >"$SDK/.stamp"
    rm -f $C/debs/swiftlang_*_arm64.deb.old
    say "aarch64 resource dir ready: $SDK/usr/lib/swift_static"
}

# --- cdeps ------------------------------------------------------------------
# The aarch64 analogue of scripts/static-deps.sh. libcrypto/libssl/libsqlite3/
# libusb .a come from trixie's -dev:arm64 packages. libnfc.a is built from
# trixie's libnfc source with the project's patches/libnfc/*.patch (see
# build_libnfc below; the headers stay libnfc-dev:arm64's). libgpiod must be v1
# (the project's API; trixie has v2), so libgpiod.a + gpiod.h come from
# bookworm's libgpiod-dev:arm64, fetched with a private apt configuration.
# libmosquitto.a and libqrencode.a are not shipped by Debian: built from
# trixie's source packages with clang --target=aarch64-linux-gnu and the same
# cmake flags as static-deps.sh.
MOSQUITTO_CMAKE=(-DCMAKE_BUILD_TYPE=Release -DWITH_STATIC_LIBRARIES=ON -DWITH_PIC=ON
    -DWITH_BROKER=OFF -DWITH_APPS=OFF -DWITH_CLIENTS=OFF -DDOCUMENTATION=OFF
    -DWITH_PLUGINS=OFF -DWITH_CJSON=OFF -DWITH_TLS=ON -DWITH_THREADING=ON
    -DWITH_SRV=OFF -DWITH_WEBSOCKETS=OFF -DWITH_SOCKS=ON)
QRENCODE_CMAKE=(-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF
    -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DWITH_TOOLS=NO -DWITH_TESTS=NO -DWITHOUT_PNG=YES)
# libnats: the x86_64 build's version (bookworm's libnats-dev 3.4.1) and flags
# (scripts/static-deps.sh NATS_CMAKE), so both architectures speak the same client.
NATS_VERSION=3.4.1
NATS_CMAKE=(-DCMAKE_BUILD_TYPE=Release -DNATS_BUILD_STREAMING=OFF -DNATS_BUILD_WITH_TLS=ON
    -DNATS_BUILD_TLS_USE_OPENSSL_1_1_API=ON -DNATS_BUILD_TLS_FORCE_HOST_VERIFY=ON
    -DNATS_BUILD_LIB_STATIC=ON -DNATS_BUILD_LIB_SHARED=OFF -DNATS_BUILD_EXAMPLES=OFF
    -DBUILD_TESTING=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON)

swift_clang() {
    local c
    for c in /usr/libexec/swift/bin/clang /usr/bin/clang; do [ -x "$c" ] && { echo "$c"; return; }; done
    die "no clang from swiftlang found"
}

# cmake cross settings: the compile runs for aarch64 with the arm64 headers of
# the multiarch tree; cmake's probes build static libraries (no link needed).
cross_cmake() {
    local cc
    cc="$(swift_clang)"
    echo -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_COMPILER_TARGET=$MULTIARCH \
        -DCMAKE_CXX_COMPILER="$cc++" -DCMAKE_CXX_COMPILER_TARGET=$MULTIARCH \
        -DCMAKE_AR=/usr/bin/$MULTIARCH-ar -DCMAKE_RANLIB=/usr/bin/$MULTIARCH-ranlib \
        -DCMAKE_LIBRARY_ARCHITECTURE=$MULTIARCH -DCMAKE_TRY_COMPILE_TARGET_TYPE=STATIC_LIBRARY \
        -DCMAKE_FIND_ROOT_PATH=/ -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER \
        -DOPENSSL_ROOT_DIR=/usr -DOPENSSL_INCLUDE_DIR=/usr/include \
        -DOPENSSL_CRYPTO_LIBRARY=$SYSLIB/libcrypto.a -DOPENSSL_SSL_LIBRARY=$SYSLIB/libssl.a
}

ensure_deb_src() {
    [ -f /etc/apt/sources.list.d/doorgateway-src.list ] && return
    echo "deb-src http://deb.debian.org/debian trixie main" >/etc/apt/sources.list.d/doorgateway-src.list
    apt-get update -qq
}

# build_clib NAME SRCPKG DEVPKG TARGET CMAKE_FLAGS...; install_NAME BUILD SRC PREFIX
build_clib() {
    local name="$1" srcpkg="$2" devpkg="$3" target="$4"
    shift 4
    local prefix="$CDEPS/$name" version stamp
    version="$(dpkg-query -W -f='${source:Version}' "$devpkg:arm64")"
    stamp="$srcpkg $version aarch64 $* $(cross_cmake)"
    stamp_ok "$prefix/.stamp" "$stamp" && return
    say "building static aarch64 $name from Debian source $srcpkg $version"
    ensure_deb_src
    local work=$C/src-c/$name
    rm -rf "$work" "$prefix" && mkdir -p "$work"
    (cd "$work" && apt-get source -qq --only-source "$srcpkg=$version" >"$work.log" 2>&1) ||
        die "Debian's mirror does not have source package $srcpkg=$version (trixie's $devpkg:arm64 names it; apt-get source failed, see $work.log). trixie has moved on since this chroot was made: delete root.stamp in the arm64 cache to rebuild the chroot from today's trixie"
    local src
    src="$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)"
    # shellcheck disable=SC2046 # cross_cmake prints separate -D words
    cmake -S "$src" -B "$work/build" $(cross_cmake) "$@" >"$work.cmake.log" 2>&1 ||
        die "cmake configure of $name failed, see $work.cmake.log"
    cmake --build "$work/build" --target "$target" -j "$JOBS" >>"$work.cmake.log" 2>&1 ||
        die "cmake build of $name failed, see $work.cmake.log"
    mkdir -p "$prefix/include" "$prefix/lib"
    "install_$name" "$work/build" "$src" "$prefix"
    file -L "$prefix"/lib/*.a | grep -c >/dev/null . # archive present
    $MULTIARCH-objdump -a "$prefix"/lib/*.a | grep -c >/dev/null 'file format elf64-littleaarch64' ||
        die "$name archive is not aarch64"
    rm -rf "$work" "$work.log"
    echo "$stamp" >"$prefix/.stamp"
}
# libnfc for aarch64: trixie's source package (libnfc-dev:arm64's version),
# the project's patches/libnfc/*.patch, then debian/rules' configure flags
# (--disable-silent-rules --prefix=/usr --libdir=/usr/lib/MULTIARCH and
# dpkg-buildflags for arm64 with DEB_BUILD_MAINT_OPTIONS="nocheck
# hardening=+all", as scripts/static-deps.sh does for x86_64), cross-compiled
# with swiftlang's clang, static archive only. Stamped with the patches'
# checksums.
LIBNFC_PATCHES="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/patches/libnfc"
build_libnfc() {
    local prefix="$CDEPS/libnfc" version stamp patches=() p cc
    version="$(dpkg-query -W -f='${source:Version}' libnfc-dev:arm64)"
    for p in "$LIBNFC_PATCHES"/*.patch; do [ -f "$p" ] && patches+=("$p"); done
    [ ${#patches[@]} -gt 0 ] || die "no patches in $LIBNFC_PATCHES"
    cc="$(swift_clang)"
    stamp="libnfc $version aarch64 recipe 2 $cc $(sha256sum "${patches[@]}" | awk '{print $1}' | tr '\n' ' ')"
    stamp_ok "$prefix/.stamp" "$stamp" && return
    say "building static aarch64 libnfc from Debian source libnfc $version + ${#patches[@]} patch(es)"
    ensure_deb_src
    local work=$C/src-c/libnfc
    rm -rf "$work" "$prefix" && mkdir -p "$work"
    local src orig
    if ! (cd "$work" && apt-get source -qq --only-source "libnfc=$version" >"$work.log" 2>&1); then
        # The mirror may lack the .dsc/.debian.tar.* while it has the upstream
        # tarball (it does for trixie's 1.8.0-3.1); apt has checked that
        # tarball against the signed Sources index, so build from it without
        # Debian's patches, as scripts/static-deps.sh does.
        orig="$(find "$work" -maxdepth 1 -name 'libnfc_*.orig.tar.*' | head -n1)"
        [ -n "$orig" ] || die "apt-get source libnfc=$version failed, see $work.log"
        say "the mirror lacks part of libnfc $version; using the upstream tarball $(basename "$orig")"
        tar -xf "$orig" -C "$work"
    fi
    src="$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)"
    [ -n "$src" ] || die "no unpacked libnfc source in $work"
    for p in "${patches[@]}"; do
        patch -d "$src" -p1 --forward --batch <"$p" >>"$work.log" 2>&1 ||
            die "patch $(basename "$p") does not apply to libnfc $version, see $work.log"
    done
    (
        cd "$src"
        export DEB_BUILD_MAINT_OPTIONS="nocheck hardening=+all" DEB_HOST_ARCH=arm64
        eval "export $(dpkg-buildflags --export=configure)"
        export PKG_CONFIG_LIBDIR=$SYSLIB/pkgconfig:/usr/share/pkgconfig
        autoreconf -fi
        ./configure --host=$MULTIARCH --build="$(dpkg-architecture -qDEB_BUILD_GNU_TYPE)" \
            CC="$cc --target=$MULTIARCH" AR=/usr/bin/$MULTIARCH-ar RANLIB=/usr/bin/$MULTIARCH-ranlib \
            --disable-silent-rules --prefix=/usr --libdir=/usr/lib/$MULTIARCH \
            --disable-shared --enable-static
        make -j "$JOBS" -C libnfc
    ) >>"$work.log" 2>&1 || die "libnfc build failed, see $work.log"
    mkdir -p "$prefix/lib"
    cp "$src/libnfc/.libs/libnfc.a" "$prefix/lib/libnfc-patched.a"
    grep -q "file format elf64-littleaarch64" < <($MULTIARCH-objdump -a "$prefix/lib/libnfc-patched.a") ||
        die "libnfc archive is not aarch64"
    grep -aq "MI continuation without status byte" "$prefix/lib/libnfc-patched.a" ||
        die "the built libnfc-patched.a lacks the patched pn53x.o"
    grep -aq "Frame sent again after NACK differs from its header" "$prefix/lib/libnfc-patched.a" ||
        die "the built libnfc-patched.a lacks the patched pn532_i2c.o"
    grep -aq "Unable to receive data: frame too long" "$prefix/lib/libnfc-patched.a" ||
        die "the built libnfc-patched.a lacks the patched pn532_spi.o"
    rm -rf "$work" "$work.log"
    echo "$stamp" >"$prefix/.stamp"
}
# libnats for aarch64 from the upstream tarball scripts/static-arm64.sh copies
# into /cache/upstream: the one scripts/static-deps.sh accepted for x86_64 (its
# SHA-256 is bookworm's .dsc's). Headers from the same tree, as <nats/nats.h>.
build_nats() {
    local prefix="$CDEPS/nats" tarball="/cache/upstream/nats.c_${NATS_VERSION}.orig.tar.gz" stamp src
    [ -f "$tarball" ] || die "no $tarball: scripts/static-arm64.sh copies it from the static-deps cache"
    stamp="nats.c $NATS_VERSION $(sha256sum "$tarball" | cut -c1-16) aarch64 ${NATS_CMAKE[*]} $(cross_cmake)"
    stamp_ok "$prefix/.stamp" "$stamp" && return
    say "building static aarch64 libnats $NATS_VERSION from $(basename "$tarball")"
    local work=$C/src-c/nats
    rm -rf "$work" "$prefix" && mkdir -p "$work"
    tar -xzf "$tarball" -C "$work"
    src="$(find "$work" -mindepth 1 -maxdepth 1 -type d | head -n1)"
    # shellcheck disable=SC2046 # cross_cmake prints separate -D words
    cmake -S "$src" -B "$work/build" $(cross_cmake) "${NATS_CMAKE[@]}" >"$work.cmake.log" 2>&1 ||
        die "cmake configure of libnats failed, see $work.cmake.log"
    cmake --build "$work/build" --target nats_static -j "$JOBS" >>"$work.cmake.log" 2>&1 ||
        die "cmake build of libnats failed, see $work.cmake.log"
    mkdir -p "$prefix/lib" "$prefix/include/nats"
    cp "$(find "$work/build" -name libnats_static.a | head -n1)" "$prefix/lib/libnats.a"
    cp "$src/src/nats.h" "$src/src/status.h" "$src/src/version.h" "$prefix/include/nats/"
    $MULTIARCH-objdump -a "$prefix/lib/libnats.a" | grep -c >/dev/null 'file format elf64-littleaarch64' ||
        die "libnats archive is not aarch64"
    rm -rf "$work" "$work.cmake.log"
    echo "$stamp" >"$prefix/.stamp"
}
install_mosquitto() {
    cp "$1/lib/libmosquitto_static.a" "$3/lib/libmosquitto.a"
    cp "$2"/include/mosquitto.h "$2"/include/mqtt_protocol.h "$3/include/"
}
install_qrencode() {
    cp "$1/libqrencode.a" "$3/lib/libqrencode.a"
    cp "$2/qrencode.h" "$3/include/"
}

# libgpiod v1 from bookworm's arm64 archive, through a private apt
# configuration in /cache/apt-bookworm (own sources, lists, status, archives):
# the chroot's own apt state (trixie) is not touched.
fetch_gpiod_v1() {
    local prefix=$CDEPS/gpiod dir=$C/apt-bookworm recipe=1
    local conf=$dir/apt.conf
    mkdir -p "$dir/lists/partial" "$dir/archives/partial" "$dir/parts" "$dir/prefs"
    : >"$dir/status"
    cat >"$dir/sources.list" <<'EOF'
deb [arch=arm64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
EOF
    cat >"$conf" <<EOF
Dir::Etc::SourceList "$dir/sources.list";
Dir::Etc::SourceParts "$dir/parts";
Dir::Etc::Preferences "$dir/prefs/none";
Dir::Etc::PreferencesParts "$dir/prefs";
Dir::State::Lists "$dir/lists";
Dir::State::status "$dir/status";
Dir::Cache "$dir/cache";
Dir::Cache::Archives "$dir/archives";
APT::Architecture "arm64";
APT::Architectures { "arm64"; };
APT::Sandbox::User "root";
EOF
    if [ -f "$prefix/.stamp" ] && grep -q "recipe $recipe\$" "$prefix/.stamp" &&
        [ -z "${DOORGATEWAY_ARM64_REFRESH:-}" ]; then
        return
    fi
    say "fetching libgpiod-dev:arm64 (v1) from bookworm (private apt config $conf)"
    APT_CONFIG=$conf apt-get update -qq
    local ver stamp
    ver="$(APT_CONFIG=$conf apt-cache policy libgpiod-dev | awk '/Candidate:/{print $2}')"
    case "$ver" in 1.*) ;; *) die "bookworm's libgpiod-dev is $ver, want 1.x" ;; esac
    stamp="libgpiod-dev:arm64 $ver recipe $recipe"
    stamp_ok "$prefix/.stamp" "$stamp" && return
    rm -rf "$prefix" "$dir/x" && mkdir -p "$prefix/include" "$prefix/lib" "$dir/x"
    (cd "$dir" && APT_CONFIG=$conf apt-get download -qq "libgpiod-dev:arm64=$ver")
    dpkg-deb -x "$dir"/libgpiod-dev_*"${ver#*:}"_arm64.deb "$dir/x" 2>/dev/null ||
        dpkg-deb -x "$(ls "$dir"/libgpiod-dev_*_arm64.deb | tail -n1)" "$dir/x"
    cp "$dir/x/usr/include/gpiod.h" "$prefix/include/"
    cp "$dir/x/usr/lib/$MULTIARCH/libgpiod.a" "$prefix/lib/"
    rm -rf "$dir/x" "$dir"/*.deb
    echo "$stamp" >"$prefix/.stamp"
}

write_pc() { # NAME VERSION CFLAGS LIBS; rewritten only when the text changes
    local file="$PCDIR/$1.pc" text
    text="$(printf 'Name: %s\nDescription: %s, static aarch64 link (scripts/arm64/inside.sh)\nVersion: %s\nCflags: %s\nLibs: %s\n' \
        "$1" "$1" "$2" "$3" "$4")"
    [ -f "$file" ] && [ "$(cat "$file")" = "$text" ] && return
    echo "$text" >"$file"
}
debv() { pkgver "$1" | sed 's/^[0-9]*://; s/[-+~].*//'; }

step_cdeps() {
    mkdir -p "$CDEPS" "$PCDIR"
    fetch_gpiod_v1
    build_clib mosquitto mosquitto libmosquitto-dev libmosquitto_static "${MOSQUITTO_CMAKE[@]}"
    build_clib qrencode qrencode libqrencode-dev qrencode "${QRENCODE_CMAKE[@]}"
    build_libnfc
    build_nats
    local a
    for a in libcrypto.a libssl.a libsqlite3.a libusb.a libz.a libzstd.a; do
        [ -f "$SYSLIB/$a" ] || die "$SYSLIB/$a is missing (its :arm64 -dev package ships it)"
    done
    # trixie's OpenSSL 3.5 libcrypto.a calls zlib and zstd (ZSTD_compress,
    # deflate), so -lz -lzstd follow every -lcrypto.
    local crypto="-lcrypto -lz -lzstd -ldl -lpthread" v
    v="$(debv libssl-dev:arm64)"
    write_pc libcrypto "$v" "" "-L$SYSLIB $crypto"
    write_pc libssl "$v" "" "-L$SYSLIB -lssl $crypto"
    write_pc openssl "$v" "" "-L$SYSLIB -lssl $crypto"
    write_pc sqlite3 "$(debv libsqlite3-dev:arm64)" "" "-L$SYSLIB -lsqlite3 -lm -ldl -lpthread"
    write_pc libgpiod "$(sed 's/.* \([0-9.]*\)-.*/\1/' "$CDEPS/gpiod/.stamp")" \
        "-I$CDEPS/gpiod/include" "-L$CDEPS/gpiod/lib -lgpiod"
    write_pc libusb "$(debv libusb-dev:arm64)" "" "-L$SYSLIB -lusb"
    # The patched archive (build_libnfc). Its own name: the linker searches every
    # -L for each -l, and other .pc files put $SYSLIB (Debian's libnfc.a) first.
    write_pc libnfc "$(debv libnfc-dev:arm64)" "" "-L$CDEPS/libnfc/lib -lnfc-patched -L$SYSLIB -lusb"
    write_pc libmosquitto "$(debv libmosquitto-dev:arm64)" \
        "-I$CDEPS/mosquitto/include -DLIBMOSQ_STATIC" \
        "-L$CDEPS/mosquitto/lib -lmosquitto -L$SYSLIB -lssl $crypto"
    write_pc libqrencode "$(debv libqrencode-dev:arm64)" "-I$CDEPS/qrencode/include" \
        "-L$CDEPS/qrencode/lib -lqrencode -lpthread"
    write_pc libnats "$NATS_VERSION" "-I$CDEPS/nats/include" \
        "-L$CDEPS/nats/lib -lnats -L$SYSLIB -lssl $crypto"
    write_buildinfo_libs "$CDEPS" arm64 buildinfo_rows
}

# The libraries the static link takes, for BUILDINFO (write_buildinfo_libs in
# scripts/build-lib.sh; the same rows as scripts/static-deps.sh writes
# for x86_64, and the zlib and zstd trixie's libcrypto needs).
buildinfo_rows() {
    row mosquitto mosquitto "$(stampver mosquitto)" "$CDEPS/mosquitto/lib/libmosquitto.a" \
        "built from Debian trixie's source package (scripts/arm64/inside.sh)"
    row nats.c nats.c "$(stampver nats)" "$CDEPS/nats/lib/libnats.a" \
        "built from the upstream tarball bookworm's .dsc names"
    row libnfc libnfc "$(stampver libnfc)" "$CDEPS/libnfc/lib/libnfc-patched.a" \
        "built from Debian trixie's source package + patches/libnfc/*.patch"
    row libgpiod libgpiod "$(stampver gpiod)" "$CDEPS/gpiod/lib/libgpiod.a" "bookworm's libgpiod-dev:arm64 (v1 API)"
    row openssl-crypto openssl "$(srcver libssl-dev)" "$SYSLIB/libcrypto.a" "trixie's libssl-dev:arm64"
    row openssl-ssl openssl "$(srcver libssl-dev)" "$SYSLIB/libssl.a" "trixie's libssl-dev:arm64"
    row sqlite3 sqlite3 "$(srcver libsqlite3-dev)" "$SYSLIB/libsqlite3.a" "trixie's libsqlite3-dev:arm64"
    row qrencode qrencode "$(stampver qrencode)" "$CDEPS/qrencode/lib/libqrencode.a" \
        "built from Debian trixie's source package (scripts/arm64/inside.sh)"
    row libusb libusb "$(srcver libusb-dev)" "$SYSLIB/libusb.a" "trixie's libusb-dev:arm64"
    row zlib zlib "$(srcver zlib1g-dev)" "$SYSLIB/libz.a" "trixie's zlib1g-dev:arm64 (trixie's libcrypto needs it)"
    row zstd libzstd "$(srcver libzstd-dev)" "$SYSLIB/libzstd.a" "trixie's libzstd-dev:arm64 (trixie's libcrypto needs it)"
}

# --- swiftdeps --------------------------------------------------------------
# The versions the project resolves today (Package.swift `from:` floors). One
# of them (swift-log) needs Swift 6.2, so its checkout is patched here (never in the
# project): the project's copy of Package.swift names these directories as
# path packages, so SwiftPM neither resolves nor re-checks them out.
SWIFT_DEPS=(
    "swift-log https://github.com/apple/swift-log 1.16.2"
)
PATCH_RECIPE=2 # bump when a patch below changes

# swift-log 1.16.2 is swift-tools-version 6.2 and uses 6.1/6.2 syntax.
patch_swift-log() {
    # Manifest: `traits:` (6.1 API, "extra argument 'traits' in call") and the
    # upcoming-feature loop go; the two libraries stay as they were.
    cat >Package.swift <<'EOF'
// swift-tools-version:6.0
// Patched by DoorGateway's scripts/arm64/inside.sh for Swift 6.0 (no traits).
import PackageDescription

let package = Package(
    name: "swift-log",
    products: [
        .library(name: "Logging", targets: ["Logging"]),
        .library(name: "InMemoryLogging", targets: ["InMemoryLogging"]),
    ],
    targets: [
        .target(name: "Logging", dependencies: [], exclude: ["CMakeLists.txt"]),
        .target(name: "InMemoryLogging", dependencies: ["Logging"], exclude: ["CMakeLists.txt"]),
    ]
)
EOF
    # `nonisolated(nonsending)` is Swift 6.2 syntax; 6.0's default for these
    # async functions is the old (nonisolated) behaviour.
    grep -rl 'nonisolated(nonsending)' Sources --include='*.swift' | xargs -r sed -i 's/nonisolated(nonsending) //g'
    # `_runtime(_multithreaded)` is unknown to 6.0 ("unexpected argument for
    # the '_runtime' condition"); it only distinguishes single-threaded WASI.
    sed -i 's/#elseif _runtime(_multithreaded)/#elseif !os(WASI)/' Sources/Logging/Locks.swift
    grep -q '#elseif !os(WASI)' Sources/Logging/Locks.swift || die "swift-log Locks.swift patch did not apply"
    # Trailing commas in parameter and argument lists are Swift 6.1 syntax.
    # A comma that ends a line and is followed by a closing parenthesis is
    # exactly that (6.0 accepts trailing commas only in collection literals).
    grep -rlE ',[[:space:]]*$' Sources --include='*.swift' | xargs -r perl -0pi -e 's/,([ \t]*\n\s*\))/$1/g'
}

step_swiftdeps() {
    mkdir -p "$SWIFTDEPS"
    local line name url tag stamp dir
    for line in "${SWIFT_DEPS[@]}"; do
        read -r name url tag <<<"$line"
        dir="$SWIFTDEPS/$name"
        stamp="$name $url $tag patch-recipe $PATCH_RECIPE $(declare -f "patch_$name" | md5sum | cut -c1-12)"
        stamp_ok "$dir/.doorgateway-stamp" "$stamp" && continue
        say "fetching $name $tag and patching it for Swift 6.0"
        rm -rf "$dir" "$dir.tmp"
        # (git warns that --depth is ignored when url.insteadOf maps the URL
        # to a local mirror; the log is shown only when the clone fails)
        git -c advice.detachedHead=false clone -q --depth 1 --branch "$tag" "$url" "$dir.tmp" 2>"$dir.log" ||
            { cat "$dir.log" >&2; die "git clone $url $tag failed"; }
        rm -f "$dir.log"
        rm -rf "$dir.tmp/.git"
        (cd "$dir.tmp" && "patch_$name")
        echo "$stamp" >"$dir.tmp/.doorgateway-stamp"
        mv "$dir.tmp" "$dir"
    done
}

# --- build ------------------------------------------------------------------
step_build() {
    cd $C/src
    export PKG_CONFIG_PATH=$PCDIR PKG_CONFIG_LIBDIR=$PCDIR
    # -resource-dir must be lib/swift_static (it holds the modules too): with
    # lib/swift the driver looks for static-executable-args.lnk there and dies.
    # shellcheck disable=SC2206 # $TRIPLE is one word
    local build=(swift build -c release --scratch-path "$SCRATCH" -j "$JOBS"
        --triple $TRIPLE --sdk / --static-swift-stdlib
        -Xswiftc -static-executable -Xswiftc -resource-dir -Xswiftc "$SDK/usr/lib/swift_static"
        -Xswiftc -use-ld=lld -Xswiftc -sdk -Xswiftc /)
    # The host's 6.3.1 build is where warnings are read and fixed; here only
    # errors (with their context) and the result line are shown, warnings are
    # counted. 6.0 warns about things 6.3 does not (deprecations in the
    # dependencies, "module … loaded from SDK" because the scratch path lies
    # under --sdk /). lld, unlike GNU ld, prints no glibc static-NSS warnings.
    local product log rc
    for product in gateway pn532-sim; do
        say "swift build -c release --product $product (aarch64, static, Swift $(pkgver swiftlang))"
        log="$SCRATCH/static-arm64-$product.log"
        mkdir -p "$SCRATCH"
        rc=0
        "${build[@]}" --product "$product" >"$log" 2>&1 || rc=$?
        if [ "$rc" != 0 ]; then
            grep -E -A6 'error:' "$log" | head -80 >&2 || tail -40 "$log" >&2
            die "swift build --product $product failed (full log: $log in the chroot, ${log#/cache/} in the arm64 cache)"
        fi
        say "$(grep -E '^Build of product|^Build complete' "$log" | tail -1); $(grep -c 'warning:' "$log" || true) warning lines (full log: arm64 cache ${log#/cache/})"
    done
    local bin
    bin="$("${build[@]}" --show-bin-path)"
    mkdir -p $C/out
    # For BUILDINFO: the compiler, as it names itself, and Debian's package version.
    printf '%s (Debian trixie swiftlang %s)\n' "$(swift --version 2>&1 | awk '/Swift version/ && !n++')" \
        "$(pkgver swiftlang)" >$C/out/compiler-version
    for product in gateway pn532-sim; do
        cp "$bin/$product" "$C/out/$product.tmp"
        mv "$C/out/$product.tmp" "$C/out/$product"
        $MULTIARCH-strip -o "$C/out/$product.stripped" "$C/out/$product"
    done
}

case "$STEP" in
packages) step_packages ;;
sdk) step_sdk ;;
cdeps) step_cdeps ;;
swiftdeps) step_swiftdeps ;;
build) step_build ;;
*) die "unknown step $STEP" ;;
esac
