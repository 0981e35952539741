#!/usr/bin/env bash
# Real-kernel GPIO test: boot Debian 12's own kernel under QEMU (TCG; KVM hangs
# on this host) with gpio-sim built out of tree, and run gateway-checks.sh
# against the static gateway binary. Debian 12's 6.1 kernel ships without
# CONFIG_GPIO_SIM / CONFIG_IRQ_SIM, so gpio-sim.c and irq_sim.c from the
# matching linux-source-6.1 are built as one module (gpio-sim-ext.ko).
# Nothing is installed on the host kernel: packages are `apt-get download`ed
# and unpacked with dpkg-deb -x into a cache outside the tree.
# reader-checks.sh then runs libnfc's pn532_i2c and pn532_spi drivers in the
# same guest against pn532-sim's CUSE bus fronts (fuse.ko + cuse.ko from the
# same kernel package).
# ARCH=arm64 boots Debian 12's arm64 kernel in qemu-system-aarch64 (virt, TCG)
# instead, with gpio-sim cross-built by the host's gcc-aarch64-linux-gnu (the
# compiler version Debian built that kernel with) and the aarch64 static
# binaries (make test-gpio-vm-arm64). The arm64 packages come through a private
# apt configuration in the cache; the host's apt state is not touched.
# PREPARE=dir (amd64) boots nothing: it leaves the kernel (vmlinuz) and an
# initramfs (initrd.gz) with EXTRA=dir's tree added in dir, for a caller that
# boots the guest itself and drives it through agent.sh on the second serial
# port (the clock-jump fault scenario, scripts/faults/clockjump.py, with
# `door_agent` on the kernel command line). clockctl (clockctl.c, built
# static here) sets the guest's CLOCK_REALTIME and its NTP status.
# MODULE=file boots nothing either: it builds gpio-sim-ext.ko for ARCH's kernel
# (KREL=release picks one, e.g. the Pi image's own 6.1.0-57-arm64; default:
# linux-image-ARCH's current one) and copies it to file (scripts/image/test-vm.sh
# loads it in the booted image to watch the relay line under systemd).
# Usage: scripts/gpio-vm/run.sh [ARCH=amd64|arm64] [GATEWAY=path] [PN532SIM=path] [PREPARE=dir [EXTRA=dir]]
#        scripts/gpio-vm/run.sh ARCH=arm64 MODULE=file [KREL=release]
#   Ends with "N passed, N failed" (PREPARE: with the two paths).
set -euo pipefail
PREPARE= EXTRA= MODULE= KREL=
for a in "$@"; do case $a in ARCH=*) ARCH=${a#ARCH=};; GATEWAY=*) GATEWAY=${a#GATEWAY=};; PN532SIM=*) PN532SIM=${a#PN532SIM=};;
  PREPARE=*) PREPARE=${a#PREPARE=};; EXTRA=*) EXTRA=${a#EXTRA=};; MODULE=*) MODULE=${a#MODULE=};; KREL=*) KREL=${a#KREL=};; esac; done
HERE=$(cd "$(dirname "$0")" && pwd)
ARCH=${ARCH:-amd64}
case $ARCH in amd64) DEFAULT_OUT=out/static;; arm64) DEFAULT_OUT=out/static-arm64;; *) echo "gpio-vm: ARCH is amd64 or arm64" >&2; exit 2;; esac
GATEWAY=${GATEWAY:-$DEFAULT_OUT/gateway}
PN532SIM=${PN532SIM:-$(dirname "$GATEWAY")/pn532-sim}
CACHE=${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/gpio-vm
TIMEOUT=${GPIO_VM_TIMEOUT:-2400}              # all checks: 10–17 min warm on a loaded host (the torn writes most, SPI's above all)
BENCH=${GPIO_VM_BENCH:-}                       # set: the I2C/SPI/UART reader benchmark instead (make bench-bus)
CHECKS=42                                      # result lines: gateway-checks.sh 17, fire-checks.sh 4, reader-checks.sh 21
ONLY=${GPIO_VM_ONLY:-}                         # "gateway": gateway-checks.sh and fire-checks.sh alone (21 results); "fire": fire-checks.sh alone (4)
case $ONLY in "") ONLY_ARG= ;; gateway) CHECKS=21 ONLY_ARG=" GATEWAY_ONLY" ;; fire) CHECKS=4 ONLY_ARG=" FIRE_ONLY" ;;
  *) echo "gpio-vm: GPIO_VM_ONLY is empty, gateway or fire" >&2; exit 2 ;; esac
log() { echo "gpio-vm: $*" >&2; }

# What differs per architecture: emulator and machine, console, strip and the
# compiler of the guest's C tools, the kernel build's cross settings, and gateway-checks.sh's time bounds: how long
# it waits for a dying process (under TCG on arm64 the stack-overflow case
# took 15-40 s to die with SIGSEGV; 10 s is plenty on amd64) and TIME_SCALE
# for its other waits and its line samplers' windows (each aarch64 gateway
# process takes seconds to start under TCG on a loaded host).
APT=(apt-get) APT_CACHE=(apt-cache) KMAKE=() STRIP=strip GUEST_CC=gcc
case $ARCH in
amd64)
  QEMU=(qemu-system-x86_64 -accel tcg,thread=multi -cpu max -m 512 -smp 2) CONSOLE=ttyS0 STATUS_WAIT_S=10 TIME_SCALE=1
  TOOLS=(qemu-system-x86) ;;
arm64)
  QEMU=(qemu-system-aarch64 -M virt -accel tcg,thread=multi -cpu max -m 1024 -smp 2) CONSOLE=ttyAMA0 STATUS_WAIT_S=90 TIME_SCALE=3
  TOOLS=(qemu-system-arm gcc-aarch64-linux-gnu)
  KMAKE=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-) STRIP=aarch64-linux-gnu-strip GUEST_CC=aarch64-linux-gnu-gcc
  [ -n "${GPIO_VM_TIMEOUT:-}" ] || TIMEOUT=5400 ;;  # GPIO checks 3.5 min loaded; the reader checks ×3 of amd64's (not re-measured since the tear checks)
esac

# 1. Build tools (root, once).
BUILD_NAME=gpio-vm
# shellcheck source=scripts/build-lib.sh
. "$HERE/../build-lib.sh"
install_missing_packages build-essential bc flex bison cpio xz-utils binutils kmod coreutils libelf-dev libssl-dev "${TOOLS[@]}"
if [ -z "$MODULE" ]; then
  [ -f "$GATEWAY" ] || { log "no gateway binary at $GATEWAY (run make static)"; exit 1; }
  [ -f "$PN532SIM" ] || { log "no pn532-sim binary at $PN532SIM (run make static)"; exit 1; }
fi

# The cache (kernel packages, the built module) is shared by concurrent runs
# (.ci/run's lanes boot this guest from make test and from the fault suite):
# one run prepares it at a time; the guests themselves run side by side.
mkdir -p "$CACHE"
exec 7>"$CACHE/.lock"
flock 7

# arm64: a private apt configuration (own sources, lists, status) for Debian 12
# with arm64 native and amd64 foreign: kernel, headers and busybox are arm64,
# linux-kbuild-6.1 (the build tools, run here) is amd64. Lists refresh daily.
if [ "$ARCH" = arm64 ]; then
  A=$CACHE/apt-arm64
  private_apt "$A" arm64 amd64 -- bookworm bookworm-updates bookworm-security
  APT=(env APT_CONFIG="$A/apt.conf" apt-get) APT_CACHE=(env APT_CONFIG="$A/apt.conf" apt-cache)
  if [ -z "$(find "$A/lists" -name '*_Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
    log "updating the private bookworm arm64 apt lists ($A)"
    "${APT[@]}" update -qq
  fi
fi

# 2. Packages matching linux-image-$ARCH's current ABI.
[ -n "$KREL" ] || KREL=$("${APT_CACHE[@]}" depends "linux-image-$ARCH" | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
KREL=${KREL#linux-image-}                      # e.g. 6.1.0-56-amd64
ABI=${KREL%-"$ARCH"}                           # e.g. 6.1.0-56
KVER=$("${APT_CACHE[@]}" policy "linux-image-$KREL" | awk '/Candidate:/{print $2}')
[ -n "$KVER" ] && [ "$KVER" != "(none)" ] || { log "Debian 12 no longer has linux-image-$KREL (an image built on an older kernel: rebuild it)"; exit 1; }
SVER=$("${APT_CACHE[@]}" policy linux-source-6.1 | awk '/Candidate:/{print $2}')
[ "$KVER" = "$SVER" ] || { log "linux-source-6.1 $SVER does not match linux-image-$KREL $KVER"; exit 1; }
D=$CACHE/$KREL; mkdir -p "$D/deb"
KBUILD=linux-kbuild-6.1; [ "$ARCH" = amd64 ] || KBUILD=linux-kbuild-6.1:amd64   # runs on this host
pkgs=("linux-image-$KREL" "linux-headers-$KREL" "linux-headers-$ABI-common" "$KBUILD" linux-source-6.1 busybox-static)
missing=()
for p in "${pkgs[@]}"; do ls "$D/deb/${p%%:*}_"*.deb >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "downloading ${missing[*]}"
  (cd "$D/deb" && "${APT[@]}" download -q "${missing[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' >&2 || true)
  for p in "${missing[@]}"; do ls "$D/deb/${p%%:*}_"*.deb >/dev/null || { log "download of $p failed"; exit 1; }; done
fi

# 3. Unpack (no install) and build the module once per kernel release.
MOD=$D/gpio-sim-ext.ko
if [ ! -f "$MOD" ]; then
  rm -rf "$D/root" "$D/mod"; mkdir -p "$D/root" "$D/mod"
  for p in "${pkgs[@]}"; do [ "$p" = linux-source-6.1 ] || dpkg-deb -x "$D/deb/${p%%:*}_"*.deb "$D/root"; done
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
  make -s -C "$D/root/usr/src/linux-headers-$KREL" M="$B" "${KMAKE[@]}" -j"$(nproc)" modules >&2
  cp "$B/gpio-sim-ext.ko" "$MOD.tmp" && mv "$MOD.tmp" "$MOD"
fi

if [ -n "$MODULE" ]; then
  cp "$MOD" "$MODULE.tmp" && mv "$MODULE.tmp" "$MODULE"
  log "gpio-sim-ext.ko for $KREL: $MODULE"
  exit 0
fi

# 4. Initramfs: busybox, configfs.ko, gpio-sim-ext.ko, stripped gateway, checks.
# (The cache is only read from here on, and the initramfs is this run's own:
# the lock goes, so another run can boot its guest beside this one.)
flock -u 7
exec 7>&-
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
R=$W/root; mkdir -p "$R"/{bin,proc,sys,dev,tmp,lib/modules}
cp "$D/root/bin/busybox" "$R/bin/"
for a in $("$R/bin/busybox" --list); do [ -e "$R/bin/$a" ] || ln -s busybox "$R/bin/$a"; done
$STRIP -o "$R/bin/gateway" "$GATEWAY"
printf 'STATUS_WAIT_S=%s\nTIME_SCALE=%s\n' "$STATUS_WAIT_S" "$TIME_SCALE" > "$R/checks.env"
cp "$HERE/gateway-checks.sh" "$HERE/fire-checks.sh" "$HERE/reader-checks.sh" "$HERE/checks-lib.sh" "$R/"
# firebench: fire-checks.sh's edge → release timer; wiegandtx: check_wiegand's
# reader. Static, for the guest's architecture.
for t in firebench wiegandtx; do "$GUEST_CC" -static -O2 -Wall -o "$R/bin/$t" "$HERE/$t.c"; done
$STRIP -o "$R/bin/pn532-sim" "$PN532SIM"
for m in fuse cuse configfs; do
  K=$(find "$D/root/lib/modules/$KREL" -name "$m.ko*" | head -1)
  [ -n "$K" ] || { log "no $m.ko in linux-image-$KREL"; exit 1; }
  case $K in *.xz) xz -dc "$K" > "$R/lib/modules/$m.ko";; *) cp "$K" "$R/lib/modules/$m.ko";; esac
done
cp "$MOD" "$R/lib/modules/"
if [ -n "$PREPARE" ]; then
  cp "$HERE/agent.sh" "$R/agent.sh"
  gcc -static -O2 -Wall -o "$R/bin/clockctl" "$HERE/clockctl.c"
  if [ -n "$EXTRA" ]; then cp -a "$EXTRA/." "$R/"; fi
fi
cat > "$R/init" <<'EOI'
#!/bin/sh
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
# door_agent: the caller's files may live under /tmp (kept in the initramfs).
grep -q door_agent /proc/cmdline || mount -t tmpfs tmp /tmp
insmod /lib/modules/configfs.ko; insmod /lib/modules/gpio-sim-ext.ko
mount -t configfs none /sys/kernel/config
if grep -q door_agent /proc/cmdline; then
  sh /agent.sh /dev/ttyS1; echo "=== agent exit $?"; poweroff -f
fi
if grep -q READER_BENCH /proc/cmdline; then
  insmod /lib/modules/fuse.ko; insmod /lib/modules/cuse.ko
  sh /reader-checks.sh bench; echo "=== bench exit $?"; poweroff -f
fi
set -a; . /checks.env; set +a
if grep -q FIRE_ONLY /proc/cmdline; then
  echo "=== fire checks ($(uname -r))"
  GATEWAY=/bin/gateway sh /fire-checks.sh; echo "=== checks exit $?"; poweroff -f
fi
echo "=== gateway checks ($(uname -r))"
GATEWAY=/bin/gateway sh /gateway-checks.sh
rc=$?
GATEWAY=/bin/gateway sh /fire-checks.sh || rc=1
echo "=== checks exit $rc"
if grep -q GATEWAY_ONLY /proc/cmdline; then poweroff -f; fi
insmod /lib/modules/fuse.ko; insmod /lib/modules/cuse.ko
GATEWAY=/bin/gateway PN532SIM=/bin/pn532-sim sh /reader-checks.sh
echo "=== reader checks exit $?"
poweroff -f
EOI
chmod 755 "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 > "$W/initrd.gz")
if [ -n "$PREPARE" ]; then
  [ "$ARCH" = amd64 ] || { log "PREPARE is amd64 only"; exit 2; }
  mkdir -p "$PREPARE"
  cp "$D/root/boot/vmlinuz-$KREL" "$PREPARE/vmlinuz"; cp "$W/initrd.gz" "$PREPARE/initrd.gz"
  echo "$PREPARE/vmlinuz $PREPARE/initrd.gz"; exit 0
fi

# 5. Boot under TCG with a hard timeout; a hung VM is a failure.
log "booting $KREL under QEMU TCG (timeout ${TIMEOUT}s)"
set +e
timeout "$TIMEOUT" "${QEMU[@]}" \
  -kernel "$D/root/boot/vmlinuz-$KREL" -initrd "$W/initrd.gz" \
  -append "console=$CONSOLE quiet loglevel=3 panic=-1${BENCH:+ READER_BENCH}$ONLY_ARG" -nographic -no-reboot -monitor none \
  </dev/null > "$W/console.log" 2>&1
qrc=$?
set -e
if [ -n "$BENCH" ]; then
  cp "$W/console.log" "$CACHE/last-bench-console.log"
  # The guest's first line follows the firmware's terminal reset (ESC c, ESC [?7l, ESC [2J).
  tr -d '\r' < "$W/console.log" | sed 's/\x1b\[[0-9;?]*[A-Za-z]//g; s/\x1bc//g' | grep -E '^(reader bench|  |bench )' || true
  grep -q '=== bench exit 0' "$W/console.log"; exit
fi
tr -d '\r' < "$W/console.log" > "$W/console.txt"
grep -E '^(PASS|FAIL|#)' "$W/console.txt" || true
pass=$(grep -c '^PASS' "$W/console.txt" || true)
fail=$(grep -c '^FAIL' "$W/console.txt" || true)
# Every check must report, and the checks script must exit 0: a VM that hangs
# or a script that stops early is a failure even with no FAIL line.
if [ "$qrc" = 124 ] || ! grep -c >/dev/null '=== checks exit 0' "$W/console.log" \
  || { [ -z "$ONLY" ] && ! grep -c >/dev/null '=== reader checks exit 0' "$W/console.log"; } \
  || [ $((pass + fail)) -lt "$CHECKS" ]; then
  log "checks incomplete (qemu rc $qrc, $((pass + fail)) of $CHECKS results); console tail:"
  tail -25 "$W/console.txt" >&2
  cp "$W/console.log" "$CACHE/last-console.log"
  fail=$((fail + 1))
fi
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] && [ "$pass" -gt 0 ]
