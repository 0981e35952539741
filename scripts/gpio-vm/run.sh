#!/usr/bin/env bash
# Real-kernel GPIO test: boot Debian 12's own kernel under QEMU (TCG; KVM hangs
# on this host) with gpio-sim built out of tree, and run gateway-checks.sh
# against the static gateway binary. Debian 12's 6.1 kernel ships without
# CONFIG_GPIO_SIM / CONFIG_IRQ_SIM, so gpio-sim.c and irq_sim.c from the
# matching linux-source-6.1 are built as one module (gpio-sim-ext.ko).
# Nothing is installed on the host kernel: packages are `apt-get download`ed
# and unpacked with dpkg-deb -x into a cache outside the tree.
# Usage: scripts/gpio-vm/run.sh [GATEWAY=path]   Ends with "N passed, N failed".
set -euo pipefail
for a in "$@"; do case $a in GATEWAY=*) GATEWAY=${a#GATEWAY=};; esac; done
HERE=$(cd "$(dirname "$0")" && pwd)
GATEWAY=${GATEWAY:-out/static/gateway}
CACHE=${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/gpio-vm
TIMEOUT=${GPIO_VM_TIMEOUT:-240}
CHECKS=10                                      # result lines gateway-checks.sh prints
log() { echo "gpio-vm: $*" >&2; }

# 1. Build tools (root, once).
need=()
for t in gcc:build-essential make:build-essential bc:bc flex:flex bison:bison \
         cpio:cpio xz:xz-utils qemu-system-x86_64:qemu-system-x86 strip:binutils \
         depmod:kmod timeout:coreutils; do
  command -v "${t%%:*}" >/dev/null || need+=("${t#*:}")
done
[ -e /usr/include/libelf.h ] || need+=(libelf-dev)
[ -e /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
[ -f "$GATEWAY" ] || { log "no gateway binary at $GATEWAY (run make static)"; exit 1; }

# 2. Packages matching linux-image-amd64's current ABI.
KREL=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
KREL=${KREL#linux-image-}                      # e.g. 6.1.0-56-amd64
ABI=${KREL%-amd64}                             # e.g. 6.1.0-56
KVER=$(apt-cache policy "linux-image-$KREL" | awk '/Candidate:/{print $2}')
SVER=$(apt-cache policy linux-source-6.1 | awk '/Candidate:/{print $2}')
[ "$KVER" = "$SVER" ] || { log "linux-source-6.1 $SVER does not match linux-image-$KREL $KVER"; exit 1; }
D=$CACHE/$KREL; mkdir -p "$D/deb"
pkgs=("linux-image-$KREL" "linux-headers-$KREL" "linux-headers-$ABI-common" linux-kbuild-6.1 linux-source-6.1 busybox-static)
missing=()
for p in "${pkgs[@]}"; do ls "$D/deb/${p}_"*.deb >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "downloading ${missing[*]}"
  (cd "$D/deb" && apt-get download -q "${missing[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  for p in "${missing[@]}"; do ls "$D/deb/${p}_"*.deb >/dev/null || { log "download of $p failed"; exit 1; }; done
fi

# 3. Unpack (no install) and build the module once per kernel release.
MOD=$D/gpio-sim-ext.ko
if [ ! -f "$MOD" ]; then
  rm -rf "$D/root" "$D/mod"; mkdir -p "$D/root" "$D/mod"
  for p in "${pkgs[@]}"; do [ "$p" = linux-source-6.1 ] || dpkg-deb -x "$D/deb/${p}_"*.deb "$D/root"; done
  # Debian's header Makefiles name the -common tree and kbuild by absolute path.
  grep -rlsZ -e /usr/src/ -e /usr/lib/linux-kbuild "$D/root/usr/src/linux-headers-$KREL" --include=Makefile \
    | xargs -0 -r sed -i -e "s#/usr/src/#$D/root/usr/src/#g" -e "s#/usr/lib/linux-kbuild#$D/root/usr/lib/linux-kbuild#g"
  log "extracting gpio-sim/irq_sim sources from linux-source-6.1"
  dpkg-deb --fsys-tarfile "$D/deb/linux-source-6.1_"*.deb | tar -x -C "$D/mod" --wildcards './usr/src/linux-source-6.1.tar.xz'
  tar -xJf "$D/mod/usr/src/linux-source-6.1.tar.xz" -C "$D/mod" --strip-components=1 \
    linux-source-6.1/drivers/gpio/gpio-sim.c linux-source-6.1/drivers/gpio/gpiolib.h \
    linux-source-6.1/kernel/irq/irq_sim.c linux-source-6.1/include/linux/irq_sim.h
  rm -rf "$D/mod/usr"
  B=$D/mod/build; mkdir -p "$B/linux"
  cp "$D/mod/drivers/gpio/gpio-sim.c" "$D/mod/drivers/gpio/gpiolib.h" "$D/mod/kernel/irq/irq_sim.c" "$B/"
  cp "$D/mod/include/linux/irq_sim.h" "$B/linux/"
  # handle_simple_irq() is not exported to modules; generic_handle_irq() is.
  sed -i 's/handle_simple_irq(irq_to_desc(\([^)]*\)))/generic_handle_irq(\1)/' "$B/irq_sim.c"
  grep -q generic_handle_irq "$B/irq_sim.c" || { log "irq_sim.c patch did not apply"; exit 1; }
  printf 'obj-m := gpio-sim-ext.o\ngpio-sim-ext-y := gpio-sim.o irq_sim.o\nccflags-y := -I$(src)\n' > "$B/Kbuild"
  log "building gpio-sim-ext.ko for $KREL"
  make -s -C "$D/root/usr/src/linux-headers-$KREL" M="$B" -j"$(nproc)" modules >&2
  cp "$B/gpio-sim-ext.ko" "$MOD.tmp" && mv "$MOD.tmp" "$MOD"
fi

# 4. Initramfs: busybox, configfs.ko, gpio-sim-ext.ko, stripped gateway, checks.
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
R=$W/root; mkdir -p "$R"/{bin,proc,sys,dev,tmp,lib/modules}
cp "$D/root/bin/busybox" "$R/bin/"
for a in $("$R/bin/busybox" --list); do [ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"; done
strip -o "$R/bin/gateway" "$GATEWAY"
cp "$HERE/gateway-checks.sh" "$R/gateway-checks.sh"
CFS=$(find "$D/root/lib/modules/$KREL" -name 'configfs.ko*' | head -1)
case $CFS in *.xz) xz -dc "$CFS" > "$R/lib/modules/configfs.ko";; *) cp "$CFS" "$R/lib/modules/configfs.ko";; esac
cp "$MOD" "$R/lib/modules/"
cat > "$R/init" <<'EOI'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev; mount -t tmpfs tmp /tmp
insmod /lib/modules/configfs.ko; insmod /lib/modules/gpio-sim-ext.ko
mount -t configfs none /sys/kernel/config
echo "=== gateway checks ($(uname -r))"
GATEWAY=/bin/gateway sh /gateway-checks.sh
echo "=== checks exit $?"
poweroff -f
EOI
chmod 755 "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 > "$W/initrd.gz")

# 5. Boot under TCG with a hard timeout; a hung VM is a failure.
log "booting $KREL under QEMU TCG (timeout ${TIMEOUT}s)"
set +e
timeout "$TIMEOUT" qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 512 -smp 2 \
  -kernel "$D/root/boot/vmlinuz-$KREL" -initrd "$W/initrd.gz" \
  -append "console=ttyS0 quiet loglevel=3 panic=-1" -nographic -no-reboot -monitor none \
  </dev/null > "$W/console.log" 2>&1
qrc=$?
set -e
tr -d '\r' < "$W/console.log" | grep -E '^(PASS|FAIL)' || true
pass=$(tr -d '\r' < "$W/console.log" | grep -c '^PASS' || true)
fail=$(tr -d '\r' < "$W/console.log" | grep -c '^FAIL' || true)
# Every check must report, and the checks script must exit 0: a VM that hangs
# or a script that stops early is a failure even with no FAIL line.
if [ "$qrc" = 124 ] || ! grep -q '=== checks exit 0' "$W/console.log" || [ $((pass + fail)) -lt "$CHECKS" ]; then
  log "checks incomplete (qemu rc $qrc, $((pass + fail)) of $CHECKS results); console tail:"
  tr -d '\r' < "$W/console.log" | tail -25 >&2
  cp "$W/console.log" "$CACHE/last-console.log"
  fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
