# DoorGateway — entry points. `make test` is the CI test command.
# Every target that needs a Debian package installs it first (apt-get, as root).

SWIFT        ?= swift
CONFIG       ?= debug
BIN_DIR       = $(shell $(SWIFT) build -c $(CONFIG) --show-bin-path 2>/dev/null)
STATIC_OUT   ?= out/static
# Build-time and test-time Debian packages. Keep in step with Package.swift providers.
DEB_PACKAGES  = pkg-config libssl-dev libsqlite3-dev libnfc-dev libnfc-bin libusb-dev \
                libgpiod-dev gpiod libmosquitto-dev mosquitto mosquitto-clients \
                libqrencode-dev openssl python3 procps nats-server libnats-dev python3-cryptography sqlite3 \
                device-tree-compiler iproute2 python3-zeroconf tzdata

.PHONY: all build deps test unit-test static lint links clean bench test-gpio-vm run ci-deps

# Every host package any target installs for itself (the scripts still install their own when
# run alone). .ci/run installs them all once, before its lanes run side by side, so two lanes
# never race for dpkg's lock.
CI_PACKAGES = $(DEB_PACKAGES) $(DEB_TOOLS) shellcheck cmake gcc make autoconf automake libtool \
              rsync qemu-user-static binfmt-support dosfstools mtools fdisk e2fsprogs bmap-tools \
              qemu-system-arm qemu-system-x86 openssh-client python3-venv build-essential bc flex \
              bison cpio binutils kmod coreutils libelf-dev gcc-aarch64-linux-gnu \
              binutils-aarch64-linux-gnu libc6-dev-arm64-cross

all: build

## deps: install the Debian packages the build and the tests use (once; needs root)
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -c >/dev/null '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## build: debug build of gateway (+ gatewayd/gatewayctl links) and pn532-sim
build: deps
	$(SWIFT) build -c $(CONFIG)
	@$(MAKE) --no-print-directory links

links:
	@cd "$(BIN_DIR)" && ln -sf gateway gatewayd && ln -sf gateway gatewayctl
	@echo "binaries in $(BIN_DIR): gateway gatewayd gatewayctl pn532-sim"

## test: the whole suite (unit, interop vectors, fuzz, CLI black-box, real libraries,
## end-to-end on the static binary, the docs against the binary (scripts/check-docs.py), the SPI
## overlay on Debian's device trees, real-kernel GPIO in a VM). Each part runs under
## scripts/no-leftovers.py: a process it leaves running fails the run; the XCTest part
## closes with "XCTest: N passed, N failed, N skipped", and a skip not on
## Tests/allowed-skips.txt fails it. --verbose: the parallel xUnit file has no skips, so
## no-leftovers.py reads them from each test's printed result (scripts/check-skip-gate.sh
## proves that gate on a fixture package first).
test: deps static
	$(SWIFT) build --build-tests
	@$(MAKE) --no-print-directory links
	@mkdir -p out
	SWIFT="$(SWIFT)" ./scripts/check-skip-gate.sh
	DOORGATEWAY_E2E_BIN="$(STATIC_OUT)" python3 scripts/no-leftovers.py --label XCTest --xunit out/xunit.xml --allowed-skips Tests/allowed-skips.txt -- \
	  $(SWIFT) test --skip-build --parallel --verbose --xunit-output out/xunit.xml
	./scripts/check-spi-overlay.sh Tests/Fixtures/dtb/*.dtb
	python3 scripts/check-docs.py --gatewayctl "$(STATIC_OUT)/gatewayctl"
	python3 scripts/no-leftovers.py --label test-gpio-vm -- $(MAKE) --no-print-directory test-gpio-vm

## run: the whole gateway on a simulated board with a local TLS broker, telling a short story
run: deps static
	./scripts/run-demo.sh

## static: one fully static release binary at $(STATIC_OUT)/gateway
static: deps
	./scripts/static.sh "$(STATIC_OUT)"

## test-gpio-vm: boot Debian's 6.1 kernel in QEMU (TCG) with gpio-sim and run the gateway GPIO checks
# on the project's own static binary (make static is ~3 s when nothing changed).
test-gpio-vm: static
	./scripts/gpio-vm/run.sh GATEWAY="$(STATIC_OUT)/gateway"

## lint: formatting check with the toolchain's swift-format; shellcheck on every shell script and
## a refusal of `cmd | grep -q` (a SIGPIPE race under pipefail; scripts/lint-shell.sh); one version
## everywhere (Version.swift, the package's changelog, the file names documents quote: check-version.sh)
lint:
	@dpkg-query -W -f='$${Status}\n' shellcheck 2>/dev/null | grep -c >/dev/null '^install ok installed' || \
	  { [ "$$(id -u)" = 0 ] || { echo "need root to apt-get install shellcheck" >&2; exit 1; }; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends shellcheck; }
	./scripts/lint-shell.sh
	./scripts/check-version.sh
	$(SWIFT) format lint --strict --recursive Sources Tests Package.swift

## bench: figures, not tests (scripts/bench.sh): the static binary's footprint (stripped
## size, ICU or not, who still imports Foundation), the reader (libnfc → pn532-sim at
## 115200 baud with RF timing), the MQTT outbox, and the daemon (READY, idle CPU,
## tap→output, RSS at the first tap and after N taps, flat or not), and an OSDP card → relay at
## 115200 and 9600 baud beside libosdp's own control panel (scripts/bench-osdp.py). A few minutes by
## default (1 000 daemon taps); BENCH_FULL=1 for the long run (10 000 taps, ~30 min).
bench: deps static
	BIN="$(STATIC_OUT)" BENCH_FULL="$(BENCH_FULL)" SWIFT="$(SWIFT)" ./scripts/bench.sh

clean:
	rm -rf .build out

## deb: Debian packages out/deb/doorgateway_<version>_amd64.deb and _arm64.deb from the static
## builds (dpkg-deb; lintian, systemd-analyze verify and exposure <= 3.0 must pass; board/debian/)
## test-deb: install, check, remove and purge the amd64 package in a Debian 12 chroot (debootstrap,
## cached in ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/deb-test)
## test-deb-service: the unit really running under systemd 252 (systemd-nspawn boot of that chroot,
## simulated board): READY, sandbox, socket modes and admission, the audit key (no local user opens it;
## gatewayd holds no descriptor on it), clock read, reload, stop
DEB_TOOLS   = dpkg-dev lintian file xz-utils debootstrap systemd-container strace
.PHONY: deb deb-tools deb-amd64 deb-arm64 test-deb test-deb-service
deb-tools:
	@missing=$$(for p in $(DEB_TOOLS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -c >/dev/null '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi
deb-amd64: deb-tools static
	HOST_GATEWAY="$(STATIC_OUT)/gateway" ./scripts/deb.sh amd64 "$(STATIC_OUT)"
deb-arm64: deb-tools static static-arm64
	HOST_GATEWAY="$(STATIC_OUT)/gateway" ./scripts/deb.sh arm64 "$(STATIC_ARM64_OUT)"
deb: deb-tools static static-arm64
	HOST_GATEWAY="$(STATIC_OUT)/gateway" ./scripts/deb.sh amd64 "$(STATIC_OUT)"
	HOST_GATEWAY="$(STATIC_OUT)/gateway" ./scripts/deb.sh arm64 "$(STATIC_ARM64_OUT)"
test-deb: deb-amd64
	./scripts/test-deb.sh out/deb/doorgateway_*_amd64.deb
test-deb-service: test-deb
	./scripts/test-deb-service.sh out/deb/doorgateway_*_amd64.deb "$(STATIC_OUT)/pn532-sim"

## test-upgrade: `apt install` of this amd64 package over a running 0.2.0 door (systemd-nspawn boot of
## the test-deb chroot, simulated board; run make test-deb once first): no conffile prompt, the admin's
## gateway.toml kept, the relay locked through the restart, 0.2.0's stickers, revocations and audit
## chain kept, the store migrated, docs/upgrade.md's backup and restore lines under the unit, exit 78
## not restarted. The 0.2.0 package is built once from its
## commit (scripts/upgrade/old-deb.sh; cached in ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/upgrade)
.PHONY: test-upgrade
test-upgrade: deb-amd64
	./scripts/test-upgrade.sh "out/deb/doorgateway_$$(dpkg-parsechangelog -l board/debian/changelog -S Version)_amd64.deb" \
	  "$(STATIC_OUT)/pn532-sim"

## static-arm64: fully static aarch64 (Raspberry Pi) binaries in $(STATIC_ARM64_OUT): gateway
## (+ gatewayd, gatewayctl links) and pn532-sim, cross-built with Debian trixie's swiftlang 6.0.3
## in a cached trixie chroot (root; cache ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/arm64)
## test-e2e-arm64: the end-to-end tests named in Tests/aarch64-e2e.txt (E2E_ALL=1: all) against those aarch64
## binaries through qemu-user
## test-gpio-vm-arm64: the gpio-vm checks on Debian 12's arm64 kernel in qemu-system-aarch64 (TCG)
## with gpio-sim cross-built out of tree, on the aarch64 static binary
STATIC_ARM64_OUT ?= out/static-arm64
.PHONY: static-arm64 test-e2e-arm64 test-gpio-vm-arm64
static-arm64:
	./scripts/static-arm64.sh "$(STATIC_ARM64_OUT)"
test-e2e-arm64: deps static-arm64
	./scripts/arm64/test-e2e.sh "$(STATIC_ARM64_OUT)"
test-gpio-vm-arm64: static-arm64
	./scripts/gpio-vm/run.sh ARCH=arm64 GATEWAY="$(STATIC_ARM64_OUT)/gateway"

## test-ha: a real Home Assistant (2024.3.3 from PyPI, venv cached outside the tree) against
## mosquitto on the shipped provisioning/ config and ACL and the static gatewayd: entities and
## device classes, granted/denied taps as events, HA unlock refused by default and accepted when
## enabled (audited), stop → unavailable, broker and HA restarts, removed entities leave HA
.PHONY: test-ha
test-ha: deps static
	./scripts/ha/test-ha.sh "$(STATIC_OUT)/gateway"

## image: the Raspberry Pi SD-card image out/image/doorgateway-<version>-arm64.img (+ .bmap,
## .sha256) for Pi 3/4/Zero 2 W: Debian bookworm arm64, Debian's kernel + raspi-firmware, the
## arm64 package, first-boot provisioning from the FAT partition (docs/pi-image.md). No loop
## devices. SSH_KEY=~/.ssh/id_ed25519.pub authorises root (or ALLOW_NO_SSH_KEY=1). The emulated
## base is cached in ${DOORGATEWAY_CACHE:-/var/cache/doorgateway}/image.
## test-arm64-vm: boot a copy of the image in qemu-system-aarch64 (virt, TCG) with its own kernel
## and initrd; first boot, gatewayd READY on the simulated board, gatewayctl over ssh, stop locks;
## a .local broker through a real mDNS responder under the shipped unit; later first-boot files removed;
## the relay line on gpio-sim (built for the image's kernel) sampled through systemctl stop/restart,
## SIGKILL, exit 78 and `apt install` of the next version, active-low and active-high: always locked.
IMAGE_OUT ?= out/image
.PHONY: image image-base test-arm64-vm
image: deb
	SSH_KEY="$(SSH_KEY)" ./scripts/image/build.sh "$(IMAGE_OUT)"
image-base:
	./scripts/image/build.sh --base-only
# (the VM test logs in with a key of its own, given through first boot: no SSH_KEY needed)
test-arm64-vm:
	$(MAKE) --no-print-directory image $(if $(SSH_KEY),,ALLOW_NO_SSH_KEY=1)
	./scripts/image/test-vm.sh "$$(ls -t $(IMAGE_OUT)/doorgateway-*-arm64.img | head -1)"

## test-raspi3b: the image's kernel and device tree (+ the SPI0 overlay) on QEMU 10's raspi3b machine
## (unpacked from bookworm-backports, not installed): gatewayd from a small initramfs on pinctrl-bcm2835's
## GPIO17, the PN532 (pn532-sim) on the mini UART (ttyS1), GPIO17's edges recorded from power-on through
## qtest with the firmware hold emulated, both polarities; I2C/SPI nodes against an EEPROM and a flash
## model; a control boot with a deliberate glitch that must be caught
## test-raspi3b-image (not in CI): the whole SD image booted twice on raspi3b under systemd (first boot
## with an active-low strike on its card, then a power cycle with the hold it wrote), GPIO17's edges
.PHONY: test-raspi3b test-raspi3b-image
test-raspi3b-image:
	$(MAKE) --no-print-directory image $(if $(SSH_KEY),,ALLOW_NO_SSH_KEY=1)
	IMAGE_BOOT=1 ./scripts/raspi3b/run.sh "$$(ls -t $(IMAGE_OUT)/doorgateway-*-arm64.img | head -1)"
test-raspi3b:
	$(MAKE) --no-print-directory image $(if $(SSH_KEY),,ALLOW_NO_SSH_KEY=1)
	./scripts/raspi3b/run.sh "$$(ls -t $(IMAGE_OUT)/doorgateway-*-arm64.img | head -1)"

## bench-bus: insertion → decoded NDEF through libnfc on each transport — pn532_i2c at 100 and
## 400 kHz, pn532_spi at 1 MHz (pn532-sim's CUSE fronts) and pn532_uart at 115200 — in the
## gpio-vm guest (TCG), beside each wire's minimal exchange; figures, not tests
.PHONY: bench-bus
bench-bus: static
	GPIO_VM_BENCH=1 ./scripts/gpio-vm/run.sh GATEWAY="$(STATIC_OUT)/gateway"

## bench-storage: tap → relay through gatewayd with its state directory on a device-mapper `delay`
## target (50 ms writes and flushes, BENCH_DELAY_MS) beside tmpfs, in the gpio-vm guest (TCG);
## p50/p99 and their ratio for stickers and a guest pass; figures, not tests (docs/reliability.md)
.PHONY: bench-storage
bench-storage: static
	python3 scripts/no-leftovers.py --label bench-storage -- python3 scripts/bench-storage.py

## fuzz: coverage-guided fuzzing (libFuzzer, swiftc -sanitize=fuzzer,address) of every parser the
## door feeds with outside bytes; FUZZ_S seconds per target (default 30); seed corpora in Fuzz/corpus,
## dictionaries in Fuzz/dict; prints executions, exec/s and findings per target
FUZZ_S ?= 30
.PHONY: fuzz test-faults
fuzz: deps
	FUZZ_S="$(FUZZ_S)" ./scripts/fuzz.sh

## test-faults: the fault suite on the static binary — power cut during store writes, disk full,
## clock jumps and taps across DST changes (in the gpio-vm guest), reader and broker pulled
## repeatedly, control-socket floods
test-faults: deps static
	python3 scripts/no-leftovers.py --label test-faults -- python3 scripts/faults/run.py "$(STATIC_OUT)"

## ci-deps: every host package of every target, installed once (.ci/run's first step)
ci-deps:
	@missing=$$(for p in $(CI_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -c >/dev/null '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  if [ "$$(id -u)" != 0 ]; then echo "need root to apt-get install:$$missing" >&2; exit 1; fi; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

## fresh-check: the cold path a new machine takes — make static, static-arm64 and deb in a copy of
## the tree with DOORGATEWAY_CACHE empty, then the times and both BUILDINFOs (scripts/fresh-check.sh;
## run it before closing any change to build scripts)
.PHONY: fresh-check
fresh-check:
	./scripts/fresh-check.sh
