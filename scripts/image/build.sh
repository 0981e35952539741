#!/usr/bin/env bash
# scripts/image/build.sh OUT_DIR — the Raspberry Pi SD-card image
# OUT_DIR/doorgateway-<version>-arm64.img (Pi 3, 4, Zero 2 W; arm64), plus a
# .bmap beside it. No loop devices, no mounts of the image: the root file
# system is made with `mkfs.ext4 -d` from a directory, the firmware partition
# with mkfs.vfat + mcopy on a plain file, and both are placed with dd into a
# file partitioned by sfdisk.
#
# Environment:
#   DEB      the arm64 package to install (default: the newest out/deb/doorgateway_*_arm64.deb)
#   SSH_KEY  an ssh public key file authorised for root (required unless
#            ALLOW_NO_SSH_KEY=1: then the key goes in the boot partition's
#            doorgateway/authorized_keys before first boot; docs/pi-image.md)
#   HOSTNAME_PI  the image's host name (default doorgateway)
#   DOORGATEWAY_CACHE, DOORGATEWAY_DEBIAN_MIRROR
#
# Two stages (docs/pi-image.md, "Build"):
#   base  (cold, emulated, cached): debootstrap --arch=arm64 bookworm (second
#         stage under qemu-user), then Debian's kernel, raspi-firmware, Wi-Fi
#         firmware, openssh-server … with update-initramfs diverted to a no-op so
#         the initramfs is generated once, at the end, not once per trigger.
#         Cached in $IMG_CACHE/base-<key>/ (key: suite, mirror, package list,
#         recipe revision).
#   image (warm): copy the base, install the .deb (emulated dpkg), the first-boot
#         units, the ssh key, fstab, network, raspi-firmware's settings (its own
#         hook then writes config.txt and cmdline.txt), and assemble.
set -euo pipefail

OUT=${1:?usage: scripts/image/build.sh OUT_DIR   (or: --base-only)}
cd "$(dirname "$0")/../.."
REPO=$(pwd)
# shellcheck source=lib.sh
. scripts/image/lib.sh
T0=$SECONDS

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, apt-get)"
install_missing_packages debootstrap qemu-user-static binfmt-support dosfstools mtools fdisk e2fsprogs \
    bmap-tools device-tree-compiler
hold_binfmt_lock
ensure_binfmt
mkdir -p "$IMG_CACHE"
exec 9>"$IMG_CACHE/.lock"
flock -n 9 || { say "another image build holds $IMG_CACHE/.lock; waiting"; flock 9; }

# ---------------------------------------------------------------------------
# Stage 1: the base root file system (emulated, slow, cached)
# ---------------------------------------------------------------------------
BASE_RECIPE=3
DEBOOTSTRAP_INCLUDE=ca-certificates
BASE_PACKAGES=(
    systemd-sysv udev kmod dbus systemd-timesyncd systemd-resolved libnss-resolve
    iproute2 iputils-ping netbase openssh-server sudo less nano procps
    initramfs-tools linux-image-arm64 raspi-firmware
    firmware-brcm80211 wpasupplicant wireless-regdb iw
    dosfstools e2fsprogs fdisk adduser
)
BASE_KEY=$(printf '%s\n' "$BASE_RECIPE" "$SUITE" "$MIRROR" "$DEBOOTSTRAP_INCLUDE" "${BASE_PACKAGES[@]}" \
    | sha256sum | cut -c1-16)
BASE=$IMG_CACHE/base-$BASE_KEY

make_base() {
    local tmp=$BASE.tmp log=$BASE.log t=$SECONDS boot=$BASE.debootstrap kver
    umount_under "$tmp"
    # Resumable: the debootstrap result is kept apart, and a root whose
    # packages are in (.stage-packages) resumes at the initramfs, so a failure
    # late in the base does not cost the earlier emulated minutes again.
    if [ ! -f "$tmp/.stage-packages" ]; then
        rm -rf "$tmp"
        if [ ! -f "$boot/.doorgateway-debootstrap" ]; then
            rm -rf "$boot"
            say "base $BASE_KEY: debootstrap --arch=arm64 $SUITE (second stage under qemu-user; log $log)"
            : > "$log"
            emulated nice -n 10 debootstrap --arch=arm64 --variant=minbase --include="$DEBOOTSTRAP_INCLUDE" \
                --components=main,non-free-firmware "$SUITE" "$boot" "$MIRROR" >> "$log" 2>&1 \
                || { tail -20 "$log" >&2; die "debootstrap failed (log $log)"; }
            touch "$boot/.doorgateway-debootstrap"
            say "base: debootstrap done in $((SECONDS - t)) s"
        fi
        cp -a "$boot" "$tmp"
        rm -f "$tmp/.doorgateway-debootstrap"
        cat > "$tmp/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main non-free-firmware
deb $MIRROR $SUITE-updates main non-free-firmware
deb ${MIRROR%/debian}/debian-security $SUITE-security main non-free-firmware
EOF
        # No daemon starts inside the chroot.
        printf '#!/bin/sh\nexit 101\n' > "$tmp/usr/sbin/policy-rc.d"
        chmod 0755 "$tmp/usr/sbin/policy-rc.d"
        # Emulated initramfs generation takes minutes; the kernel's postinst and
        # the initramfs-tools trigger would each run it. Divert update-initramfs
        # to a no-op for the installs and run the real one once below.
        emulated in_root "$tmp" dpkg-divert --local --rename --divert /usr/sbin/update-initramfs.real \
            --add /usr/sbin/update-initramfs >> "$log" 2>&1
        printf '#!/bin/sh\necho "update-initramfs: deferred by the image build ($*)"\nexit 0\n' \
            > "$tmp/usr/sbin/update-initramfs"
        chmod 0755 "$tmp/usr/sbin/update-initramfs"
        mkdir -p "$tmp/boot/firmware" "$tmp/etc/default"
        t=$SECONDS
        say "base: apt-get install ${#BASE_PACKAGES[@]} packages (emulated dpkg; minutes)"
        emulated in_root "$tmp" apt-get update -q >> "$log" 2>&1 || { tail -20 "$log" >&2; die "apt-get update failed"; }
        emulated in_root "$tmp" apt-get install -y -q --no-install-recommends "${BASE_PACKAGES[@]}" >> "$log" 2>&1 \
            || { tail -30 "$log" >&2; die "apt-get install failed (log $log)"; }
        say "base: packages installed in $((SECONDS - t)) s"
        rm "$tmp/usr/sbin/update-initramfs"
        emulated in_root "$tmp" dpkg-divert --local --rename --divert /usr/sbin/update-initramfs.real \
            --remove /usr/sbin/update-initramfs >> "$log" 2>&1
        touch "$tmp/.stage-packages"
    fi
    kver=$(cd "$tmp/lib/modules" && ls | sort -V | tail -1)
    [ -n "$kver" ] || die "no kernel modules in the base"
    t=$SECONDS
    say "base: update-initramfs -c -k $kver (once; the file tools native, the contents arm64)"
    # (A failed earlier attempt leaves its work directories in /var/tmp.)
    rm -rf "$tmp/boot/initrd.img-$kver" "$tmp/boot/initrd.img-$kver.new" "$tmp"/var/tmp/mkinitramfs*
    emulated in_root_native_tools "$tmp" update-initramfs -c -k "$kver" >> "$log" 2>&1 \
        || { tail -20 "$log" >&2; die "update-initramfs failed"; }
    # Nothing of the host's may be inside: every ELF file in it is arm64.
    check_initramfs_arch "$tmp/boot/initrd.img-$kver"
    say "base: initramfs in $((SECONDS - t)) s"
    in_root "$tmp" apt-get clean >> "$log" 2>&1
    rm -rf "$tmp"/var/lib/apt/lists/* "$tmp"/var/cache/apt/*.bin "$tmp"/var/log/*.log \
        "$tmp"/var/log/apt/* "$tmp"/etc/ssh/ssh_host_* "$tmp/.stage-packages" "$tmp"/var/tmp/* "$tmp"/tmp/*
    echo "$kver" > "$tmp/.doorgateway-kernel"
    printf '%s\n' "$BASE_RECIPE $SUITE $MIRROR" "${BASE_PACKAGES[@]}" > "$tmp/.doorgateway-base"
    mv "$tmp" "$BASE"
    rm -rf "$boot"
    local d
    for d in "$IMG_CACHE"/base-*; do   # bases of older recipes
        case "$d" in "$BASE" | "$BASE".*) ;; *) rm -rf "$d" ;; esac
    done
    say "base $BASE_KEY ready in $((SECONDS - T0)) s ($(du -sh "$BASE" | cut -f1))"
}

if [ ! -f "$BASE/.doorgateway-base" ]; then
    make_base
else
    say "base $BASE_KEY cached ($BASE)"
fi
[ "$OUT" = --base-only ] && exit 0

# ---------------------------------------------------------------------------
# Stage 2: the image (warm path: copy the base, install the package, assemble)
# ---------------------------------------------------------------------------
case "$OUT" in /*) ;; *) OUT="$REPO/$OUT" ;; esac
DEB=${DEB:-$(ls -t "$REPO"/out/deb/doorgateway_*_arm64.deb 2>/dev/null | head -1 || true)}
[ -n "$DEB" ] && [ -f "$DEB" ] || die "no arm64 package (out/deb/doorgateway_*_arm64.deb): make deb (after make static-arm64), or DEB=FILE"
DEB=$(readlink -f "$DEB")
[ "$(dpkg-deb -f "$DEB" Architecture)" = arm64 ] || die "$DEB is not an arm64 package"
PKG_VERSION=$(dpkg-deb -f "$DEB" Version)
VERSION=${PKG_VERSION%-*}
if [ -n "${SSH_KEY:-}" ]; then
    SSH_KEY=${SSH_KEY/#\~/$HOME}
    [ -r "$SSH_KEY" ] || die "SSH_KEY=$SSH_KEY: no such file"
    grep -Eq '^(ssh-|ecdsa-|sk-)' "$SSH_KEY" || die "SSH_KEY=$SSH_KEY does not look like an ssh public key (ssh-ed25519 AAAA…)"
    case "$SSH_KEY" in *.pub) ;; *) grep -q 'PRIVATE KEY' "$SSH_KEY" && die "SSH_KEY=$SSH_KEY is a private key: give the .pub" ;; esac
elif [ "${ALLOW_NO_SSH_KEY:-0}" != 1 ]; then
    die "no ssh key: make image SSH_KEY=~/.ssh/id_ed25519.pub (authorised for root), or ALLOW_NO_SSH_KEY=1 and put authorized_keys in the boot partition's doorgateway/ folder before first boot (docs/pi-image.md)"
fi
HOSTNAME_PI=${HOSTNAME_PI:-doorgateway}
IMG=$OUT/doorgateway-$VERSION-arm64.img
KVER=$(cat "$BASE/.doorgateway-kernel")
FW_MIB=256          # FAT firmware partition (kernel + initrd ~ 40 MB each; room for an upgrade)
FW_START_MIB=4

WORK=$IMG_CACHE/work
R=$WORK/root
cleanup() {
    umount_under "$WORK"
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP
cleanup
mkdir -p "$WORK" "$OUT"
t=$SECONDS
cp -a "$BASE" "$R"
rm -f "$R/.doorgateway-base" "$R/.doorgateway-kernel"
say "copied the base ($((SECONDS - t)) s)"

# --- the package ------------------------------------------------------------------
t=$SECONDS
cp "$DEB" "$R/tmp/doorgateway.deb"
in_root "$R" dpkg -i /tmp/doorgateway.deb > "$WORK/dpkg.log" 2>&1 \
    || { cat "$WORK/dpkg.log" >&2; die "dpkg -i ${DEB##*/} failed in the arm64 root"; }
rm -f "$R/tmp/doorgateway.deb"
in_root "$R" dpkg-query -W -f='${Status}\n' doorgateway | grep -c >/dev/null 'install ok installed' || die "doorgateway not installed"
[ -L "$R/etc/systemd/system/multi-user.target.wants/gatewayd.service" ] || die "the package did not enable gatewayd.service"
say "installed ${DEB##*/} ($((SECONDS - t)) s, emulated dpkg)"

# --- first boot, ssh, network, host ---------------------------------------------
F=provisioning/firstboot
install -d -m 0755 "$R/usr/lib/doorgateway"
install -m 0755 "$F/doorgateway-firstboot.sh" "$R/usr/lib/doorgateway/firstboot"
install -m 0755 "$F/doorgateway-growroot.sh" "$R/usr/lib/doorgateway/growroot"
for u in doorgateway-firstboot.service doorgateway-ssh-hostkeys.service doorgateway-growroot.service; do
    install -m 0644 "$F/$u" "$R/lib/systemd/system/$u"
done
install -d -m 0755 "$R/usr/share/doc/doorgateway/docs"
install -m 0644 docs/pi-image.md "$R/usr/share/doc/doorgateway/docs/pi-image.md" 2>/dev/null || true

echo "$HOSTNAME_PI" > "$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' "$HOSTNAME_PI" > "$R/etc/hosts"
cat > "$R/etc/fstab" <<'EOF'
# The image's partitions, by label (docs/pi-image.md).
LABEL=RASPIROOT  /              ext4  rw,noatime,errors=remount-ro  0 1
# umask=0077: files a user puts in doorgateway/ are root-only until consumed.
LABEL=RASPIFIRM  /boot/firmware vfat  rw,noatime,umask=0077          0 2
EOF
install -d -m 0755 "$R/etc/systemd/network" "$R/etc/systemd/resolved.conf.d" \
    "$R/etc/systemd/system/systemd-networkd-wait-online.service.d"
cat > "$R/etc/systemd/network/20-wired.network" <<'EOF'
[Match]
Name=eth* en*

[Network]
DHCP=yes
MulticastDNS=yes
EOF
cat > "$R/etc/systemd/network/25-wireless.network" <<'EOF'
[Match]
Name=wlan*

[Network]
DHCP=yes
MulticastDNS=yes
EOF
# <hostname>.local answers on the LAN (systemd-resolved's mDNS responder).
printf '[Resolve]\nMulticastDNS=yes\n' > "$R/etc/systemd/resolved.conf.d/doorgateway-mdns.conf"
# gatewayd does not wait for the network (board/gatewayd.service); anything
# else that wants network-online.target must not wait the default two minutes
# for it on a door without network: any one link, at most 20 s.
cat > "$R/etc/systemd/system/systemd-networkd-wait-online.service.d/doorgateway.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=/lib/systemd/systemd-networkd-wait-online --any --timeout=20
EOF
ln -sf ../run/systemd/resolve/stub-resolv.conf "$R/etc/resolv.conf"
in_root "$R" systemctl enable doorgateway-firstboot.service doorgateway-ssh-hostkeys.service \
    doorgateway-growroot.service systemd-networkd.service systemd-resolved.service \
    systemd-timesyncd.service ssh.service > "$WORK/enable.log" 2>&1 \
    || { cat "$WORK/enable.log" >&2; die "systemctl enable failed"; }

install -d -m 0700 "$R/root/.ssh"
if [ -n "${SSH_KEY:-}" ]; then
    grep -E '^(ssh-|ecdsa-|sk-)' "$SSH_KEY" > "$R/root/.ssh/authorized_keys"
    chmod 0600 "$R/root/.ssh/authorized_keys"
    say "ssh: root's authorized_keys from $SSH_KEY ($(wc -l < "$R/root/.ssh/authorized_keys") key)"
else
    say "ssh: no key in the image (ALLOW_NO_SSH_KEY=1): put authorized_keys in doorgateway/ on the boot partition"
fi
# Per-device identity is made on the Pi: machine id (empty = first boot),
# ssh host keys (doorgateway-ssh-hostkeys.service), systemd's random seed.
: > "$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id" "$R/var/lib/systemd/random-seed" "$R"/etc/ssh/ssh_host_*
rm -f "$R/usr/sbin/policy-rc.d"

# --- the firmware partition: raspi-firmware's own hooks write it -----------------
cat > "$R/etc/default/raspi-firmware" <<'EOF'
# raspi-firmware settings for the DoorGateway image (its hooks regenerate
# /boot/firmware/config.txt and cmdline.txt on every kernel upgrade).
ROOTPART=LABEL=RASPIROOT
# HDMI, and the header's UART (ttyS1 under Debian's kernel on Pi 3/4/Zero 2 W;
# the last console gets the boot log). "auto" would probe the build machine.
CONSOLES="tty0 ttyS1,115200"
# One image for Pi 3, 4 and Zero 2 W: no cma= (a Pi 4 may not boot with it;
# a door has no display to feed).
CMA=0
KERNEL_ARCH="arm64"
EOF
# Debian's kernel has i2c-dev as a module: /dev/i2c-1 for the PN532.
echo i2c-dev > "$R/etc/modules-load.d/doorgateway-i2c.conf"
install -m 0644 "$F/config.txt.custom" "$R/etc/default/raspi-firmware-custom"
# The boot firmware (bootcode.bin, start*.elf, fixup*.dat) is there from the
# package's postinst; its kernel hook (as update-initramfs's post-update hook
# calls it) copies the newest kernel, initrd and bcm*.dtb and writes config.txt
# (with raspi-firmware-custom appended) and cmdline.txt from the settings above.
in_root "$R" /usr/bin/env DEB_MAINT_PARAMS=configure /etc/kernel/postinst.d/z50-raspi-firmware > "$WORK/hooks.log" 2>&1 \
    || { cat "$WORK/hooks.log" >&2; die "raspi-firmware's kernel hook failed"; }
FW=$R/boot/firmware
for f in bootcode.bin start4.elf fixup4.dat start.elf fixup.dat config.txt cmdline.txt \
    bcm2711-rpi-4-b.dtb bcm2837-rpi-3-b.dtb bcm2837-rpi-3-b-plus.dtb bcm2837-rpi-zero-2-w.dtb; do
    [ -s "$FW/$f" ] || die "raspi-firmware's hooks left no $f in /boot/firmware (log $WORK/hooks.log)"
done
grep -q '^arm_64bit=1' "$FW/config.txt" || die "config.txt lacks arm_64bit=1"
# The relay's hold: not chosen in the image (its polarity is the door's, set at
# first boot from the card's relay and lock files), so GPIO17 is left as the
# SoC resets it; never driven to a level that energises one kind of module.
grep -c >/dev/null '^# >>> doorgateway relay hold' "$FW/config.txt" && grep -c >/dev/null '^gpio=17=ip,pd$' "$FW/config.txt" \
    || die "config.txt lacks the relay's undecided hold block (gpio=17=ip,pd): $(grep '^gpio=' "$FW/config.txt" | tr '\n' ' ')"
if grep -c >/dev/null '^gpio=17=op' "$FW/config.txt"; then die "config.txt drives the relay line before its polarity is chosen"; fi
# SPI0 for a PN532 on SPI: Debian's device trees leave it disabled and have no
# __overrides__ for dtparam=spi=on, so the image ships its own overlay
# (board/dt/doorgateway-spi0.dts), checked here on the very .dtb files the card gets.
install -d -m 0755 "$FW/overlays"
./scripts/check-spi-overlay.sh -o "$FW/overlays/doorgateway-spi0.dtbo" "$FW"/bcm*.dtb \
    || die "the SPI overlay does not apply to the image's device trees"
grep -c >/dev/null '^dtoverlay=doorgateway-spi0$' "$FW/config.txt" || die "config.txt lacks dtoverlay=doorgateway-spi0"
grep -q 'root=LABEL=RASPIROOT' "$FW/cmdline.txt" || die "cmdline.txt does not name the root partition: $(cat "$FW/cmdline.txt")"
install -d -m 0755 "$FW/doorgateway"
install -m 0644 "$F/README.txt" "$FW/doorgateway/README.txt"

# --- assemble: FAT + ext4 in plain files, sfdisk, dd -------------------------------
t=$SECONDS
FAT=$WORK/firmware.vfat
ROOTFS=$WORK/root.ext4
rm -f "$FAT" "$ROOTFS"
mkfs.vfat -F 32 -n RASPIFIRM -C "$FAT" $((FW_MIB * 1024)) > /dev/null
(cd "$FW" && mcopy -s -p -m -i "$FAT" ./* ::/)
fw_used=$(du -sm "$FW" | cut -f1)
rm -rf "${FW:?}"/*
# Root: what is there + a quarter + 256 MiB, in whole MiB (growroot fills the card).
used_mib=$(du -sm --apparent-size "$R" | cut -f1)
ROOT_MIB=$(((used_mib * 5 / 4 + 256 + 3) / 4 * 4))
nice -n 10 mkfs.ext4 -q -F -L RASPIROOT -d "$R" -E root_owner=0:0 "$ROOTFS" "${ROOT_MIB}M"
ROOT_START_MIB=$((FW_START_MIB + FW_MIB))
TOTAL_MIB=$((ROOT_START_MIB + ROOT_MIB))
rm -f "$IMG.tmp"
truncate -s "${TOTAL_MIB}M" "$IMG.tmp"
sfdisk -q "$IMG.tmp" <<EOF
label: dos
unit: sectors

start=$((FW_START_MIB * 2048)), size=$((FW_MIB * 2048)), type=c, bootable
start=$((ROOT_START_MIB * 2048)), size=$((ROOT_MIB * 2048)), type=83
EOF
dd if="$FAT" of="$IMG.tmp" bs=1M seek=$FW_START_MIB conv=notrunc,sparse status=none
dd if="$ROOTFS" of="$IMG.tmp" bs=1M seek=$ROOT_START_MIB conv=notrunc,sparse status=none
mv "$IMG.tmp" "$IMG"
bmaptool -q create -o "$IMG.bmap" "$IMG"
say "assembled in $((SECONDS - t)) s: firmware ${fw_used} MiB used of $FW_MIB, root ${used_mib} MiB in $ROOT_MIB"
(cd "$OUT" && sha256sum "${IMG##*/}" > "${IMG##*/}.sha256")
mapped=$(sed -n 's:.*<MappedBlocksCount> *\([0-9]*\).*:\1:p' "$IMG.bmap")
bs=$(sed -n 's:.*<BlockSize> *\([0-9]*\).*:\1:p' "$IMG.bmap")
say "$IMG: $((TOTAL_MIB)) MiB ($(du -m "$IMG" | cut -f1) MiB allocated, $((mapped * bs / 1048576)) MiB mapped), kernel $KVER, package $PKG_VERSION, $((SECONDS - T0)) s in all"
