#!/usr/bin/env bash
# scripts/raspi3b/run.sh [IMG] — make test-raspi3b: the Pi image's own kernel
# and device tree on QEMU's `raspi3b` machine (the BCM2837's pin controller,
# its UARTs, I2C and SPI blocks), with the relay pin watched from outside.
#
# - QEMU 10.0 from bookworm-backports (Debian 12's 7.2 has no I2C or SPI
#   model on raspi3b), downloaded through a private apt configuration and
#   unpacked into the cache, never installed: the host's QEMU stays as it is.
# - From the image IMG (default: the newest out/image/*.img): the kernel, the
#   Pi 3 B device tree and the project's SPI0 overlay from its FAT partition
#   (merged here with fdtoverlay: no firmware runs under QEMU; spi0's DMA
#   properties removed, as QEMU's SPI model has no DMA), and the I2C/SPI
#   modules from its root file system (debugfs, no mount).
# - A small initramfs: busybox (Debian 12's busybox-static, arm64), those
#   modules, the aarch64 gateway (GATEWAY, default out/static-arm64/gateway),
#   spi-jedec-id.c built static, scripts/raspi3b/init.sh as /init, and a
#   gateway.toml per relay polarity: the relay on GPIO17 of pinctrl-bcm2835 by
#   its line name, the PN532 on pn532_uart:/dev/ttyS1.
# - scripts/raspi3b/harness.py boots it twice, an active-low and an
#   active-high relay (the first with a 24c02 EEPROM on i2c-bus.1 and a
#   w25q64 flash on SPI0 for the bus checks), with pn532-sim (PN532_SIM,
#   default out/static/pn532-sim, a host binary) on the mini UART.
# IMAGE_BOOT=1 (make test-raspi3b-image, outside CI): the whole SD image
# booted twice under systemd instead, GPIO17's edges across each boot.
# GLITCH=1: the guest first requests GPIO17 at the wrong level for 50 ms
# (a deliberate glitch: the run must then fail). Cache:
# ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/raspi3b.
set -euo pipefail
cd "$(dirname "$0")/../.."
IMG=${1:-$(ls -t out/image/doorgateway-*-arm64.img 2>/dev/null | head -1)}
GATEWAY=${GATEWAY:-out/static-arm64/gateway}
PN532_SIM=${PN532_SIM:-out/static/pn532-sim}
CACHE=${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/raspi3b
T0=$SECONDS
BUILD_NAME=test-raspi3b
# shellcheck source=scripts/build-lib.sh
. scripts/build-lib.sh
# shellcheck source=scripts/lib/harness.sh
. scripts/lib/harness.sh
[ "$(id -u)" = 0 ] || die "needs root (apt-get)"
[ -f "$IMG" ] || die "no image (make image)"
[ -x "$GATEWAY" ] || die "no $GATEWAY (make static-arm64)"
[ -x "$PN532_SIM" ] || die "no $PN532_SIM (make static)"
install_missing_packages device-tree-compiler mtools e2fsprogs cpio fdisk gcc-aarch64-linux-gnu \
    binutils-aarch64-linux-gnu libc6-dev-arm64-cross

# --- QEMU 10 and busybox, from a private apt configuration (lists refresh daily) ---------
mkdir -p "$CACHE"
exec 7> "$CACHE/.lock"
flock 7
mkdir -p "$CACHE/debs"
A=$CACHE/apt
private_apt "$A" amd64 arm64 -- bookworm bookworm-updates bookworm-backports
APT=(env APT_CONFIG="$A/apt.conf")
if [ -z "$(find "$A/lists" -name '*backports*amd64_Packages*' -mtime -1 2> /dev/null | head -1)" ] ||
    [ -z "$(find "$A/lists" -name '*bookworm_main_binary-arm64_Packages*' -mtime -1 2> /dev/null | head -1)" ]; then
    say "updating the private apt lists (bookworm, bookworm-backports)"
    "${APT[@]}" apt-get update -qq
fi
QV=$("${APT[@]}" apt-cache policy qemu-system-arm | awk '/bookworm-backports/ { print prev } { prev = $1 }' | head -1)
[ -n "$QV" ] || die "bookworm-backports has no qemu-system-arm"
case $QV in 1:1[0-9].* | 1:[2-9][0-9].*) ;; *) die "bookworm-backports' qemu-system-arm is $QV, not 10 or later" ;; esac
Q=$CACHE/qemu-${QV#1:}
if [ ! -x "$Q/usr/bin/qemu-system-aarch64" ]; then
    say "qemu-system-arm $QV from bookworm-backports (unpacked, not installed)"
    rm -rf "$CACHE/debs"/qemu-* "$Q.tmp" && mkdir -p "$Q.tmp"
    (cd "$CACHE/debs" && "${APT[@]}" apt-get download -q "qemu-system-arm=$QV" "qemu-system-common=$QV" "qemu-system-data=$QV" 2>&1 |
        grep -v '^W: Download is performed unsandboxed' >&2 || true)
    for d in "$CACHE/debs"/qemu-system-*.deb; do dpkg-deb -x "$d" "$Q.tmp"; done
    mv "$Q.tmp" "$Q"
fi
if ! ls "$CACHE/debs"/busybox-static_*_arm64.deb > /dev/null 2>&1; then
    (cd "$CACHE/debs" && "${APT[@]}" apt-get download -q busybox-static:arm64 2>&1 | grep -v '^W: Download' >&2 || true)
fi
flock -u 7
exec 7>&-
QEMU=$Q/usr/bin/qemu-system-aarch64
# Its own modules, never the host QEMU 7.2's (a mix aborts at start).
export QEMU_MODULE_DIR=$Q/usr/lib/x86_64-linux-gnu/qemu
"$QEMU" --version | head -1 >&2
"$QEMU" -M help | grep -c > /dev/null '^raspi3b ' || die "$QEMU has no raspi3b machine"

# --- the image's kernel, device tree, overlay and modules --------------------------------
W=$(mktemp -d /tmp/raspi3b.XXXXXX)
trap 'rm -rf "$W"' EXIT
read -r FAT_START _ <<< "$(image_part "$IMG" 0)"
read -r ROOT_START ROOT_SIZE <<< "$(image_part "$IMG" 1)"
export MTOOLS_SKIP_CHECK=1
FAT="$IMG@@$((FAT_START * 512))"
mtype -i "$FAT" ::/config.txt | tr -d '\r' > "$W/config.txt"
KERNEL=$(sed -n 's/^kernel=//p' "$W/config.txt" | tail -1)
KREL=${KERNEL#vmlinuz-}
mcopy -n -i "$FAT" "::/$KERNEL" "$W/vmlinuz"
mcopy -n -i "$FAT" ::/bcm2837-rpi-3-b.dtb "$W/base.dtb"
grep -c > /dev/null '^dtoverlay=doorgateway-spi0$' "$W/config.txt" || die "the image's config.txt does not load doorgateway-spi0"
mcopy -n -i "$FAT" ::/overlays/doorgateway-spi0.dtbo "$W/spi0.dtbo"
fdtoverlay -i "$W/base.dtb" -o "$W/pi3b.dtb" "$W/spi0.dtbo"
for p in dmas dma-names; do fdtput -d "$W/pi3b.dtb" /soc/spi@7e204000 $p; done
# boot ARGS...: one boot of the harness with the image's kernel and device tree.
boot() {
    python3 scripts/raspi3b/harness.py --qemu "$QEMU" --kernel "$W/vmlinuz" --dtb "$W/pi3b.dtb" --pn532-sim "$PN532_SIM" \
        --workdir "$W" "$@"
}
if [ "${IMAGE_BOOT:-0}" = 1 ]; then
    # make test-raspi3b-image: the whole image on the machine's SD card (a
    # power-of-two size), an active-low strike on its first-boot folder. The
    # first boot runs under the image's undecided hold (gpio=17=ip,pd: an
    # input); its first-boot script writes op,dh,pu to config.txt, which the
    # second boot (a power cycle) emulates.
    cp --sparse=always "$IMG" "$W/sd.img"
    size=1
    while [ $size -lt "$(stat -c %s "$IMG")" ]; do size=$((size * 2)); done
    truncate -s $size "$W/sd.img"
    SD_FAT="$W/sd.img@@$((FAT_START * 512))"
    printf 'active-low\r\n' > "$W/relay"
    echo strike > "$W/lock"
    echo raspi3b-image > "$W/device-id"
    for f in relay lock device-id; do mcopy -o -i "$SD_FAT" "$W/$f" ::/doorgateway/; done
    mcopy -n -i "$FAT" "::/$(sed -n 's/^initramfs \([^ ]*\).*/\1/p' "$W/config.txt" | tail -1)" "$W/initrd.img"
    mtype -i "$FAT" ::/cmdline.txt | tr -d '\r\n' > "$W/cmdline.txt"
    rc=0
    for hold in input op; do
        t=$SECONDS
        [ $hold = op ] && say "config.txt after the first boot: $(mtype -i "$SD_FAT" ::/config.txt | tr -d '\r' | grep '^gpio=17')"
        boot --initrd "$W/initrd.img" --polarity low --sd "$W/sd.img" --hold $hold --timeout 900 || rc=1
        say "boot with hold $hold: $((SECONDS - t)) s"
    done
    exit $rc
fi
dd if="$IMG" of="$W/root.ext4" bs=512 skip="$ROOT_START" count="$ROOT_SIZE" status=none
R=$W/initramfs
mkdir -p "$R"/{bin,proc,sys,dev,tmp,etc,lib/modules}
for m in kernel/drivers/i2c/i2c-dev.ko kernel/drivers/i2c/busses/i2c-bcm2835.ko kernel/drivers/spi/spi-bcm2835.ko; do
    debugfs -R "dump /usr/lib/modules/$KREL/$m $R/lib/modules/${m##*/}" "$W/root.ext4" 2> /dev/null
    [ -s "$R/lib/modules/${m##*/}" ] || die "no $m for $KREL in the image"
done
rm -f "$W/root.ext4"

# --- the initramfs ----------------------------------------------------------------------------
dpkg-deb --fsys-tarfile "$(ls "$CACHE/debs"/busybox-static_*_arm64.deb | head -1)" | tar -x -C "$W" ./bin/busybox
mv "$W/bin/busybox" "$R/bin/"
for a in sh mount cat ls echo grep sed tr cut sleep kill mkdir poweroff insmod uname i2cset i2cget; do ln -s busybox "$R/bin/$a"; done
aarch64-linux-gnu-strip -o "$R/bin/gateway" "$GATEWAY"
aarch64-linux-gnu-gcc -static -O2 -Wall -o "$R/bin/spi-jedec-id" scripts/raspi3b/spi-jedec-id.c
cp scripts/raspi3b/init.sh "$R/init"
# gatewayd reads the admin group from /etc/group (never NSS).
echo "root:x:0:" > "$R/etc/group"
echo "root:x:0:0:root:/:/bin/sh" > "$R/etc/passwd"
# shellcheck source=scripts/gpio-vm/checks-lib.sh
. scripts/gpio-vm/checks-lib.sh
for p in low high; do
    { pi_door_toml raspi3b pinctrl-bcm2835 pn532_uart:/dev/ttyS1 "$([ $p = low ] && echo true || echo false)" /tmp/state /tmp/run
        printf '[[actions]]\nindex = 0\nname = "front"\nsteps = [{ pulse = "strike", ms = 500 }]\ncredentials = ["uid"]\n'
    } > "$R/etc/gateway-$p.toml"
done
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 > "$W/initrd.gz")
say "kernel $KREL, pi3b.dtb (+ doorgateway-spi0), initramfs $(($(stat -c %s "$W/initrd.gz") / 1024)) KiB, prepared in $((SECONDS - T0)) s"

# --- the boots ------------------------------------------------------------------------------
rc=0
extra=()
[ "${GLITCH:-0}" = 1 ] && extra+=(--glitch)
for p in low high; do
    buses=()
    [ $p = low ] && buses=(--buses)
    t=$SECONDS
    boot --initrd "$W/initrd.gz" --polarity $p "${buses[@]}" "${extra[@]}" || rc=1
    say "active-$p boot: $((SECONDS - t)) s"
done
# The record can fail: one more boot with the deliberate glitch, which the
# edge check must catch (GLITCH=1 instead shows it on every boot).
if [ "${GLITCH:-0}" != 1 ]; then
    t=$SECONDS
    boot --initrd "$W/initrd.gz" --polarity low --glitch > "$W/glitch.log" 2>&1 || true
    caught=$(grep '^FAIL active-low: no edge on GPIO17 from the hold' "$W/glitch.log" || true)
    # (echo, not pass/fail: checks-lib.sh, sourced above for the guest's files, has its own.)
    [ -n "$caught" ] \
        && echo "PASS the control: GPIO17 requested at the wrong level for 50 ms before gatewayd is caught by the edge record (${caught##*: })" \
        || { echo "FAIL the control: a deliberate glitch before gatewayd went unseen"; sed 's/^/  glitch boot: /' "$W/glitch.log"; rc=1; }
    say "control boot (deliberate glitch): $((SECONDS - t)) s"
fi
say "done in $((SECONDS - T0)) s"
exit $rc
