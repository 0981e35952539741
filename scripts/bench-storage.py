#!/usr/bin/env python3
"""make bench-storage (issue 25 §5): tap → relay through gatewayd with its
state directory on a slow disk, beside the same on tmpfs, in the gpio-vm guest
(Debian 12's 6.1 kernel under QEMU TCG, the guest make test-gpio-vm and make
bench-bus boot; scripts/gpio-vm/run.sh PREPARE=…, driven through agent.sh as
the clock-jump fault scenario is).

Where gatewayd reports it (status `last_event_durable_monotonic_ns`), also
relay → the tap's audit row durable: how long after the relay a power cut
can still lose that row (docs/reliability.md, "What a power cut keeps").

The slow disk: a loop device on a file (in the guest's RAM) under a
device-mapper `delay` target, 0 ms on reads and BENCH_DELAY_MS (default 50) on
writes and on flushes (`dmsetup create … delay LOOP 0 0 LOOP 0 50 LOOP 0 50`),
ext4 on top with its default options (ordered data, barriers on): every fsync
SQLite does with synchronous=FULL pays the delay at least twice (the write,
then the flush). The fast disk: the guest's tmpfs.

For each disk a fresh gatewayd (static binary, simulated board, its own
pn532-sim at 115200 baud with RF timing, action 0 a 50 ms strike pulse) gets
provisioned v2 stickers (registry rows with last_seen) and as many guest
passes with 100 000 uses; then BENCH_TAPS taps (default 60) of the stickers
in turn, and as many of the guest passes. A tap: sim.remove, a BENCH_SETTLE_MS pause (300) so
the reader sees the tag leave, CLOCK_MONOTONIC read, sim.tap; the latency
ends at gatewayd's own stamp taken right after it drove the relay
(status `last_unlock_monotonic_ns`, the same clock: scripts/gpio-vm/tapbench.c).

Prints p50/p99 per disk and kind of tag, and the slow/fast ratios; figures,
not tests (the goal, p50 ≤ 1.2 × tmpfs and p99 ≤ 100 ms for stickers, is
printed beside them). Environment: BIN (default out/static), BENCH_TAPS,
BENCH_SETTLE_MS, BENCH_DELAY_MS, FAULTS_KEEP=1 keeps the work directory.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from harness import ROOT, Failure, Guest, bench_config, check, guest_extra, percentile, wait_until

BIN = os.path.abspath(os.environ.get("BIN", os.path.join(ROOT, "out", "static")))
TAPS = int(os.environ.get("BENCH_TAPS", "60"))
SETTLE_MS = float(os.environ.get("BENCH_SETTLE_MS", "300"))
DELAY_MS = int(os.environ.get("BENCH_DELAY_MS", "50"))
STICKERS = 4  # in turn: each is back after the 1 s same-tag quiet window
GOAL_RATIO, GOAL_P99 = 1.2, 100.0
# Host tools the guest needs, copied with their shared libraries.
GUEST_TOOLS = ("/usr/sbin/dmsetup", "/usr/sbin/mkfs.ext4", "/usr/sbin/losetup")
# Kernel modules, in load order (dependencies first); ext4 asks the crypto API for crc32c.
MODULES = ("drivers/md/dm-mod", "drivers/md/dm-delay", "drivers/block/loop", "lib/crc16", "fs/mbcache",
           "fs/jbd2/jbd2", "crypto/crc32c_generic", "fs/ext4/ext4")


def kernel_modules_dir():
    """The modules of the amd64 kernel run.sh unpacked (the guest is x86_64; the cache also holds
    arm64 kernels, which sort after it)."""
    cache = os.path.join(os.environ.get("DOORGATEWAY_CACHE", "/var/cache/doorgateway"), "gpio-vm")
    found = sorted(d for d in (os.path.join(cache, k, "root", "lib", "modules") for k in os.listdir(cache)
                               if k.endswith("-amd64")) if os.path.isdir(d))
    check(found, f"no unpacked kernel in {cache} (run.sh PREPARE unpacks it)")
    top = found[-1]
    return os.path.join(top, sorted(os.listdir(top))[-1])


def extra_tree(extra, work):
    """The guest's additions: the work directory at its own path, the tools
    and their libraries, the modules, tapbench."""
    guest_extra(extra, work, GUEST_TOOLS)
    mods = kernel_modules_dir()
    os.makedirs(os.path.join(extra, "lib", "modules", "bench"), exist_ok=True)
    for m in MODULES:
        src = next((os.path.join(mods, "kernel", m + s) for s in (".ko", ".ko.xz")
                    if os.path.exists(os.path.join(mods, "kernel", m + s))), None)
        check(src, f"no {m}.ko in {mods}")
        dest = os.path.join(extra, "lib", "modules", "bench", os.path.basename(m) + ".ko")
        if src.endswith(".xz"):
            with open(dest, "wb") as f:
                subprocess.run(["xz", "-dc", src], check=True, stdout=f)
        else:
            shutil.copyfile(src, dest)
    os.makedirs(os.path.join(extra, "bin"), exist_ok=True)
    subprocess.run(["gcc", "-static", "-O2", "-Wall", "-o", os.path.join(extra, "bin", "tapbench"),
                    os.path.join(ROOT, "scripts", "gpio-vm", "tapbench.c")], check=True)


class Door:
    def __init__(self, guest, work, name, state):
        self.guest, self.name = guest, name
        self.run = f"/tmp/bench-{name}-run"
        self.sock = f"{self.run}/control.sock"
        self.config = os.path.join(work, f"gateway-{name}.toml")
        self.log = f"/tmp/gatewayd-{name}.log"
        self.state = state
        with open(self.config, "w") as f:
            f.write(bench_config(state, self.run))

    def call(self, method, params=None):
        out = self.guest.sh(f"tapbench {self.sock} call {method} '{json.dumps(params or {})}'")[1]
        return json.loads(out)["result"]

    def start(self):
        g = self.guest
        g.sh(f"mkdir -p {self.run} {self.state}")
        g.sh(f"/bin/pn532-sim --link {self.run}/pty --control {self.run}/sim.sock --baud 115200 --rf-timing "
             f">/dev/null 2>&1 & echo $! > {self.run}/sim.pid")
        g.sh(f"for i in $(seq 100); do [ -e {self.run}/pty ] && [ -e {self.run}/sim.sock ] && exit 0; sleep 0.1; "
             "done; exit 1")
        g.sh(f"/bin/gateway daemon --config {self.config} > {self.log} 2>&1 & echo $! > {self.run}/gw.pid")
        wait_until(lambda: g.sh(f"tapbench {self.sock} call status '{{}}'", check_rc=False)[0] == 0, 60,
                   f"{self.name}: gatewayd answering", 0.5)

    def provision(self, uid, uses=None):
        params = {"action": 0} | ({"uses": uses} if uses else {})
        self.call("provision", params)
        self.call("sim.tap", {"blank": True, "uid": uid})
        wait_until(lambda: any(e.get("kind") == "provisioning_written" and e.get("uid") == uid
                               for e in self.call("status").get("last_events", [])), 60,
                   f"{self.name}: sticker {uid} written", 0.3)
        dump = self.call("sim.dump")["dump"]
        self.call("sim.remove")
        time.sleep(1.2)
        return dump

    def taps(self, tags, count):
        """tags: [(uid, dump)] in turn; the latencies in ms."""
        path = f"{self.run}/taps.txt"
        lines = "\n".join(f"{tags[i % len(tags)][0]} dump {tags[i % len(tags)][1]}" for i in range(count))
        # Written in pieces: each agent command is one base64 line.
        self.guest.sh(f": > {path}")
        rows = lines.splitlines()
        for i in range(0, len(rows), 8):
            self.guest.sh(f"cat >> {path} <<'EOT'\n" + "\n".join(rows[i:i + 8]) + "\nEOT")
        out = self.guest.sh(f"tapbench {self.sock} taps {path} {SETTLE_MS}", timeout=60 + count * 8)[1]
        rows = [line.split() for line in out.splitlines() if line.startswith("tap ")]
        lat = [float(r[2]) for r in rows]
        durable = [float(r[3]) for r in rows if len(r) > 3]
        missed = sum(1 for line in out.splitlines() if line.startswith("missed"))
        return lat, durable, missed

    def stop(self):
        self.guest.sh(f"kill $(cat {self.run}/gw.pid) 2>/dev/null; for i in $(seq 100); do "
                      f"kill -0 $(cat {self.run}/gw.pid) 2>/dev/null || break; sleep 0.1; done; "
                      f"kill $(cat {self.run}/sim.pid) 2>/dev/null; true")


def main():
    check(os.path.exists(os.path.join(BIN, "gateway")), f"no {BIN}/gateway (make static)")
    work = tempfile.mkdtemp(prefix="faults-bench-storage-")
    guest = None
    try:
        extra = os.path.join(work, "extra")
        doors = {name: Door(None, work, name, state) for name, state in (("tmpfs", "/tmp/fast/state"),
                                                                          ("delay", "/slow/state"))}
        extra_tree(extra, work)
        guest = Guest.boot(work, f"{BIN}/gateway", extra)
        for d in doors.values():
            d.guest = guest
        mods = " ".join(f"insmod /lib/modules/bench/{os.path.basename(m)}.ko &&" for m in MODULES)
        guest.sh(f"{mods} true")
        # 256 MiB sparse file in the guest's RAM (tmpfs /tmp), a loop device on it, the delay target on that.
        guest.sh("truncate -s 256M /tmp/disk.img && losetup /dev/loop0 /tmp/disk.img")
        sectors = 256 * 1024 * 1024 // 512
        table = f"0 {sectors} delay /dev/loop0 0 0 /dev/loop0 0 {DELAY_MS} /dev/loop0 0 {DELAY_MS}"
        guest.sh(f"mkdir -p /dev/mapper /slow /tmp/fast && dmsetup create --noudevsync slowdisk --table '{table}'")
        table_out = guest.sh("dmsetup table slowdisk")[1]
        dev = "/dev/mapper/slowdisk"
        if guest.sh(f"[ -b {dev} ]", check_rc=False)[0] != 0:
            dev = "/dev/dm-0"
        guest.sh(f"mkfs.ext4 -q -F {dev} && mount -t ext4 {dev} /slow")
        mount = guest.sh("grep ' /slow ' /proc/mounts")[1].strip()
        print(f"slow disk: dm delay ({table_out.strip()}); {mount}", flush=True)
        results = {}
        for name, d in doors.items():
            d.start()
            stickers = [(f"04B1000000{i:04d}", d.provision(f"04B1000000{i:04d}")) for i in range(STICKERS)]
            guest_pass = [(f"04C2000000{i:04d}", d.provision(f"04C2000000{i:04d}", uses=100000))
                          for i in range(STICKERS)]
            for kind, tags in (("sticker", stickers), ("guest pass", guest_pass)):
                lat, durable, missed = d.taps(tags, TAPS)
                results[(name, kind)] = (lat, durable, missed)
                after = (f"; relay → audit row durable p50 {percentile(durable, 50):.1f} ms, "
                         f"p99 {percentile(durable, 99):.1f} ms, max {max(durable):.1f} ms" if durable else "")
                print(f"{name:6} {kind:10} {len(lat)} taps, {missed} without an unlock: "
                      f"tap → relay p50 {percentile(lat, 50):.1f} ms, p99 {percentile(lat, 99):.1f} ms, "
                      f"max {max(lat):.1f} ms{after}", flush=True)
            d.stop()
        print()
        print(f"tap → relay, state directory on dm-delay ({DELAY_MS} ms writes and flushes) vs tmpfs, "
              f"gpio-vm guest (TCG):")
        for kind in ("sticker", "guest pass"):
            fast, slow = results[("tmpfs", kind)][0], results[("delay", kind)][0]
            f50, f99, s50, s99 = (percentile(fast, 50), percentile(fast, 99), percentile(slow, 50),
                                  percentile(slow, 99))
            goal = ""
            if kind == "sticker":
                # Two goals, judged apart: the ratio is the disk's cost; p99 also holds the guest's own
                # (TCG) tail, which tmpfs's p99 shows.
                goal = (f"; goal p50 ≤ {GOAL_RATIO} × tmpfs: {'met' if s50 <= GOAL_RATIO * f50 else 'MISSED'}, "
                        f"p99 ≤ {GOAL_P99:.0f} ms: {'met' if s99 <= GOAL_P99 else 'MISSED'}"
                        f"{' (tmpfs too: ' + format(f99, '.0f') + ' ms)' if f99 > GOAL_P99 else ''}")
            print(f"  {kind:10} tmpfs p50 {f50:.1f} / p99 {f99:.1f} ms; delay p50 {s50:.1f} / p99 {s99:.1f} ms; "
                  f"ratio p50 {s50 / f50:.2f}, p99 {s99 / f99:.2f}{goal}")
    except Failure as e:
        print(f"bench-storage: {e}", file=sys.stderr)
        if guest:
            print(f"console: {guest.console_tail()}", file=sys.stderr)
        return 1
    finally:
        if guest:
            guest.stop()
        if os.environ.get("FAULTS_KEEP") != "1":
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
