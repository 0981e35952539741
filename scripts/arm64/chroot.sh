#!/usr/bin/env bash
# chroot.sh ROOT CACHE CMD... — run CMD inside the trixie amd64 chroot ROOT with
# /proc, /sys, /dev and the arm64 cache directory CACHE (mounted at /cache).
#
# The mounts are made in a private mount namespace and the command runs in a
# private PID namespace (unshare --mount --pid --fork): when this script ends,
# however it ends (error, Ctrl-C, SIGKILL), the kernel drops every mount and
# kills every process left in the chroot. The EXIT trap unmounts as well, so
# nothing depends on the namespace alone. The host's mount table never sees
# these mounts. Needs root.
set -euo pipefail

ROOT="${1:?usage: chroot.sh ROOT CACHE CMD...}"
CACHE="${2:?usage: chroot.sh ROOT CACHE CMD...}"
shift 2
[ $# -gt 0 ] || { echo "chroot.sh: no command" >&2; exit 2; }

if [ "${DOORGATEWAY_ARM64_NS:-}" != "$$" ]; then
    # Re-run this script as PID 1 of new mount and PID namespaces. The child
    # reads its own PID ($$ = 1) to know it is inside.
    exec unshare --mount --pid --fork --propagation private \
        env DOORGATEWAY_ARM64_NS=1 "$0" "$ROOT" "$CACHE" "$@"
fi

mounted=()
cleanup() {
    local i
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount -R "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
    done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mnt() { # mnt TARGET mount-args...
    local target="$1"
    shift
    mkdir -p "$target"
    mount "$@" "$target"
    mounted+=("$target")
}
mnt "$ROOT/proc" -t proc proc
mnt "$ROOT/sys" -t sysfs -o ro sysfs
mnt "$ROOT/dev" --rbind /dev
mnt "$ROOT/cache" --bind "$CACHE"
# Name resolution for apt and git inside the chroot.
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true

# A clean environment: nothing of the host's PATH, SWIFT* or PKG_CONFIG* leaks in.
chroot "$ROOT" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
    PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin DEBIAN_FRONTEND=noninteractive \
    "$@"
