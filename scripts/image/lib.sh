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

say() { echo "image: $*" >&2; }
die() { say "error: $*"; exit 1; }

# Host packages, installed with apt-get when missing (apt-get update first).
ensure_host_packages() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -c >/dev/null '^install ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" = 0 ] || die "need root to apt-get install ${missing[*]}"
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

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

# Mounts under DIR left by a killed run (should never happen: namespaces).
umount_under() {
    local m
    for m in $(awk -v r="$1" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r); do
        umount -l "$m" 2>/dev/null || true
    done
}
