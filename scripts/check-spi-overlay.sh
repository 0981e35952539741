#!/usr/bin/env bash
# scripts/check-spi-overlay.sh [-o OUT.dtbo] DTB...
# Compile board/dt/doorgateway-spi0.dts with dtc and prove, on each of Debian's
# Raspberry Pi device trees given, that the overlay turns SPI0 on: before it,
# spi@7e204000 is not "okay"; after `fdtoverlay`, it is "okay", has a spidev
# child at chip select 0 (/dev/spidev0.0) and a pin group muxing GPIO7-11 to
# ALT0. -o keeps the compiled overlay (the image build installs it).
# make test runs it on Tests/Fixtures/dtb; scripts/image/build.sh on the .dtb
# files it ships. Needs device-tree-compiler (dtc, fdtoverlay, fdtget).
set -euo pipefail
cd "$(dirname "$0")/.."
out=""
if [ "${1:-}" = -o ]; then out=$2; shift 2; fi
[ $# -gt 0 ] || { echo "usage: $0 [-o OUT.dtbo] DTB..." >&2; exit 64; }
for t in dtc fdtoverlay fdtget; do
    command -v "$t" > /dev/null || { echo "check-spi-overlay: $t missing (apt-get install device-tree-compiler)" >&2; exit 1; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dtc -q -I dts -O dtb -o "$tmp/doorgateway-spi0.dtbo" board/dt/doorgateway-spi0.dts
SPI=/soc/spi@7e204000
PINS=/soc/gpio@7e200000/doorgateway-spi0-pins
fail=0
bad() { echo "check-spi-overlay: $1: $2" >&2; fail=1; this=1; }
for dtb in "$@"; do
    name=${dtb##*/}
    this=0
    before=$(fdtget "$dtb" "$SPI" status 2>/dev/null || echo "(no node)")
    [ "$before" != okay ] || bad "$name" "spi0 is already okay without the overlay: the check proves nothing"
    fdtoverlay -i "$dtb" -o "$tmp/out.dtb" "$tmp/doorgateway-spi0.dtbo" 2> "$tmp/err" \
        || { bad "$name" "fdtoverlay failed: $(cat "$tmp/err")"; continue; }
    after=$(fdtget "$tmp/out.dtb" "$SPI" status)
    [ "$after" = okay ] || bad "$name" "spi0 status after the overlay: $after"
    [ "$(fdtget "$tmp/out.dtb" "$SPI/spidev@0" compatible)" = rohm,dh2228fv ] || bad "$name" "no spidev child"
    [ "$(fdtget "$tmp/out.dtb" "$SPI/spidev@0" reg)" = 0 ] || bad "$name" "spidev not on chip select 0"
    [ "$(fdtget "$tmp/out.dtb" "$PINS" brcm,pins)" = "7 8 9 10 11" ] || bad "$name" "pin group is not GPIO7-11"
    [ "$(fdtget "$tmp/out.dtb" "$PINS" brcm,function)" = 4 ] || bad "$name" "pin group is not ALT0"
    [ "$(fdtget "$tmp/out.dtb" "$SPI" pinctrl-0)" = "$(fdtget "$tmp/out.dtb" "$PINS" phandle)" ] \
        || bad "$name" "spi0's pinctrl-0 does not point at the pin group"
    [ "$this" = 1 ] || echo "check-spi-overlay: $name: spi0 $before -> $after, spidev0.0, GPIO7-11 ALT0"
done
[ -z "$out" ] || cp "$tmp/doorgateway-spi0.dtbo" "$out"
exit "$fail"
