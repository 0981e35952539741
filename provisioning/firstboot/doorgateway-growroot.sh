#!/bin/sh
# /usr/lib/doorgateway/growroot — once, at first boot: grow the root partition
# (the image's last one) to the end of the SD card and the ext4 on it, online.
# The image is small (~1.5 GB) so that it flashes fast; the card is larger.
set -eu
MARK=/var/lib/doorgateway-image/root-grown
src=$(findmnt -no SOURCE /)
part=${src##*/}
sys=/sys/class/block/$part
[ -r "$sys/partition" ] || { echo "growroot: / is on $src, not a partition; nothing to do"; exit 0; }
disk=$(basename "$(readlink -f "$sys/..")")
n=$(cat "$sys/partition")
start=$(cat "$sys/start")
size=$(cat "$sys/size")
total=$(cat "/sys/class/block/$disk/size")
free=$((total - start - size))
mkdir -p "${MARK%/*}"
# Less than 16 MiB to gain (or a partition after ours): leave it.
if [ "$free" -lt 32768 ]; then
    echo "growroot: /dev/$disk has $((free / 2048)) MiB after partition $n; nothing to do"
    touch "$MARK"; exit 0
fi
echo "growroot: partition $n of /dev/$disk: $((size / 2048)) MiB -> $(((total - start) / 2048)) MiB"
echo ", +" | sfdisk --no-reread --no-tell-kernel -q -N "$n" "/dev/$disk"
# The kernel keeps a mounted disk's table; tell it about this one partition.
partx -u --nr "$n" "/dev/$disk"
resize2fs "$src"
touch "$MARK"
echo "growroot: / is now $(df -h --output=size / | tail -1 | tr -d ' ')"
