# scripts/image/lib.sh — shared by build.sh and test-vm.sh (sourced, bash).
#
# The cache: ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/image/
#   base-<key>/      the emulated part, done once per recipe: debootstrap arm64
#                    bookworm + kernel, initramfs (generated once), raspi-firmware,
#                    Wi-Fi firmware, openssh-server … (key = hash of the recipe)
#   base-<key>.log   its log
#   work/            the image being assembled (removed on every exit path)
#   vm/              the VM test's copy of the image (removed on every exit path)
# One build at a time: flock on .lock.

IMG_CACHE=${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/image
MIRROR=${DOORGATEWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm

# say, die and install_missing_packages (host packages, apt-get when missing).
BUILD_NAME=image
# shellcheck source=scripts/build-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../build-lib.sh"

# Jobs that mount binfmt_misc or register qemu-aarch64 for their own run (make
# test-e2e-arm64) undo it only while nobody holds this lock shared: hold it
# for the whole build (fd 8, inherited by the emulated children).
hold_binfmt_lock() {
    mkdir -p /run/lock
    exec 8> /run/lock/doorgateway-binfmt.lock
    flock -s 8
}

# aarch64 executables must run here (qemu-user through binfmt_misc, flag F so a
# chroot needs no copy of the emulator).
ensure_binfmt() {
    if ! mountpoint -q /proc/sys/fs/binfmt_misc; then
        mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc || die "cannot mount binfmt_misc"
    fi
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
    [ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || update-binfmts --import qemu-aarch64 >/dev/null 2>&1 || true
    grep -q '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null \
        || die "qemu-aarch64 is not registered with binfmt_misc (qemu-user-static, binfmt-support)"
    grep -q '^flags:.*F' /proc/sys/fs/binfmt_misc/qemu-aarch64 \
        || die "the qemu-aarch64 binfmt handler lacks flag F (fix-binary); chroots would need the emulator inside"
}

# emulated CMD...: run a step that executes arm64 binaries. binfmt_misc is
# global: another job on the machine may unmount it (or drop the handler)
# while a step runs, which shows as "Exec format error". Such a step is run
# again (once) after the handler is restored; any other failure is final.
emulated() {
    local rc=0
    ensure_binfmt
    "$@" || rc=$?
    [ "$rc" = 0 ] && return 0
    if ! grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
        say "the qemu-aarch64 binfmt handler vanished during the step (another job?); restoring it and running the step again"
        ensure_binfmt
        rc=0
        "$@" || rc=$?
    fi
    return "$rc"
}

# in_root ROOT CMD...: CMD inside the arm64 chroot ROOT, in fresh mount and PID
# namespaces with their own /proc and /sys, so no mount outlives the command.
# Always niced (2 shared cores). /boot/firmware is bind-mounted on itself: raspi-firmware's hooks want a mount
# point there.
in_root() {
    local root=$1
    shift
    nice -n 10 unshare --mount --pid --fork --propagation private /bin/sh -c '
        r=$1; shift
        mkdir -p "$r/boot/firmware" &&
        mount -t proc proc "$r/proc" && mount -t sysfs sysfs "$r/sys" &&
        mount --bind "$r/boot/firmware" "$r/boot/firmware" || exit 99
        exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
            HOME=/root DEBIAN_FRONTEND=noninteractive "$@"' sh "$root" "$@"
}

# The tools initramfs-tools runs thousands of times while it gathers the
# kernel modules (a shell, cp, realpath, find, sed …): under qemu-user each run
# pays the emulator's start, and the emulated update-initramfs took 6 to 20
# minutes. The host is the same Debian release (amd64), so its builds of these
# tools do the same; what the initramfs *contains* must stay arm64: kmod, ldd,
# ldconfig, busybox, udev and everything copy_exec copies stay the chroot's
# own (the kernel runs the host's binaries natively inside the chroot).
NATIVE_TOOLS="/usr/bin/dash /usr/bin/cp /usr/bin/realpath /usr/bin/dirname /usr/bin/basename /usr/bin/mkdir
    /usr/bin/ln /usr/bin/rm /usr/bin/find /usr/bin/sed /usr/bin/grep /usr/bin/sort /usr/bin/cat /usr/bin/readlink
    /usr/bin/touch /usr/bin/chmod /usr/bin/cpio /usr/bin/gzip /usr/bin/mv /usr/bin/tr /usr/bin/wc /usr/bin/head
    /usr/bin/tail /usr/bin/stat /usr/bin/xargs /usr/bin/uniq /usr/bin/mktemp /usr/bin/mawk /usr/bin/env
    /usr/bin/cut /usr/bin/ls /usr/bin/rmdir /usr/bin/sync"

# in_root_native_tools ROOT CMD...: in_root with NATIVE_TOOLS bind-mounted from
# this host over the chroot's own, for the length of CMD, in CMD's private
# mount namespace. The host's x86-64 libraries and loader are mounted where
# the tools look for them (/usr/lib/x86_64-linux-gnu, /lib64 -> usr/lib64);
# the two directories and the link are removed again afterwards. mkinitramfs
# mirrors every /lib* of the root into the initramfs, so it runs as a copy
# whose /lib* list is the chroot's own, taken before /lib64 is added.
in_root_native_tools() {
    local root=$1 t rc=0 libs
    shift
    for t in $NATIVE_TOOLS; do
        [ -e "$t" ] && [ -e "$root$t" ] || die "native tools: $t missing on the host or in $root"
    done
    [ -e /usr/lib64/ld-linux-x86-64.so.2 ] || die "native tools: no /usr/lib64/ld-linux-x86-64.so.2 on the host"
    [ ! -e "$root/lib64" ] && [ ! -L "$root/lib64" ] || die "native tools: $root/lib64 exists already"
    libs=$(cd "$root" && printf '/%s ' lib*)
    sed "s#^for d in /bin /lib\* /sbin; do\$#for d in /bin ${libs}/sbin; do#" "$root/usr/sbin/mkinitramfs" \
        > "$root/.mkinitramfs.native"
    chmod 0755 "$root/.mkinitramfs.native"
    grep -c >/dev/null "^for d in /bin ${libs}/sbin; do\$" "$root/.mkinitramfs.native" \
        || die "native tools: mkinitramfs no longer has the /lib* loop this relies on"
    mkdir -p "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib64"
    ln -s usr/lib64 "$root/lib64"
    nice -n 10 unshare --mount --pid --fork --propagation private /bin/sh -c '
        r=$1; tools=$2; shift 2
        mkdir -p "$r/boot/firmware" &&
        mount -t proc proc "$r/proc" && mount -t sysfs sysfs "$r/sys" &&
        mount --bind "$r/boot/firmware" "$r/boot/firmware" &&
        mount --bind /usr/lib/x86_64-linux-gnu "$r/usr/lib/x86_64-linux-gnu" &&
        mount --bind /usr/lib64 "$r/usr/lib64" &&
        mount --bind "$r/.mkinitramfs.native" "$r/usr/sbin/mkinitramfs" || exit 99
        for t in $tools; do mount --bind "$t" "$r$t" || exit 99; done
        exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 \
            HOME=/root DEBIAN_FRONTEND=noninteractive "$@"' sh "$root" "$NATIVE_TOOLS" "$@" || rc=$?
    rm -f "$root/lib64" "$root/.mkinitramfs.native"
    rmdir "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib64"
    return "$rc"
}

# check_initramfs_arch IMG: every ELF file in the (gzip) initramfs is aarch64,
# none x86-64 (in_root_native_tools must not leak a host binary into it).
check_initramfs_arch() {
    local img=$1 dir types x86 arm
    dir=$(mktemp -d)
    (cd "$dir" && zcat "$img" | cpio -idm --quiet --no-absolute-filenames) \
        || { rm -rf "$dir"; die "cannot unpack $img (not a gzip cpio?)"; }
    types=$(find "$dir" -type f -print0 | xargs -0 file -N -b)
    rm -rf "$dir"
    x86=$(grep -c 'x86-64' <<<"$types" || true)
    arm=$(grep -c 'ARM aarch64' <<<"$types" || true)
    [ "$x86" = 0 ] || die "the initramfs holds $x86 x86-64 file(s): a host tool leaked into it"
    [ "$arm" -gt 10 ] || die "the initramfs holds only $arm aarch64 ELF files"
    say "base: initramfs checked: $arm aarch64 ELF files, no x86-64"
}

# Mounts under DIR left by a killed run (should never happen: namespaces).
umount_under() {
    local m
    for m in $(awk -v r="$1" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}
