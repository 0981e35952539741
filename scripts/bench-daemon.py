#!/usr/bin/env python3
"""make bench (daemon): start→READY, idle CPU over 60 s with the reader
polling, tap→output p50/p99 through the whole daemon at 115200 baud with RF
timing, and RSS at the first tap and after N taps of distinct stickers, flat or
not, against the ≤ 12 MB goal. Runs the static gatewayd on the simulated board
with its own pn532-sim; prints figures, asserts nothing. Environment: BIN
(default out/static), BENCH_TAPS (1000; make bench BENCH_FULL=1: 10000),
BENCH_IDLE_S (20; 60), BENCH_LATENCY_TAPS (100; 200), BENCH_KEEP=1 keeps the work
directory (gatewayd.log) under /tmp, BENCH_SETTLE_S (0.3: the
pause after taking a tag away, so the next tap meets a poll in flight, for the
latency taps; the others put the next tag on at once: the reader sees the UID
change at its next presence check, BENCH_FAST_SETTLE_S, default 0)."""
import hashlib, hmac, os, re, shutil, socket, sys, tempfile, time

from harness import Control, bench_config, percentile, popen, proc_cpu_s, proc_status, start_sim, stop

BIN = os.path.abspath(os.environ.get("BIN", "out/static"))
TAPS = int(os.environ.get("BENCH_TAPS", "1000"))
IDLE_S = float(os.environ.get("BENCH_IDLE_S", "20"))
LAT_TAPS = int(os.environ.get("BENCH_LATENCY_TAPS", "100"))
SETTLE_S = float(os.environ.get("BENCH_SETTLE_S", "0.3"))
FAST_SETTLE_S = float(os.environ.get("BENCH_FAST_SETTLE_S", "0"))
RSS_GOAL_MB = 12
SECRET = bytes(range(32))


def sticker(i):
    ts = 1_700_000_000 + i
    sig = hmac.new(SECRET, f"idx=0&ts={ts}".encode(), hashlib.sha256).hexdigest()
    return f"smp://action?idx=0&ts={ts}&sig={sig}"


def rss_text(pid):
    """VmRSS in MB, and what it is made of (file-backed pages of the binary, anonymous)."""
    return (f"{proc_status(pid) / 1024:.1f} MB (file-backed {proc_status(pid, 'RssFile') / 1024:.1f} MB, "
            f"anonymous {proc_status(pid, 'RssAnon') / 1024:.1f} MB)")


def rss_breakdown(pid):
    """Where VmRSS is, from /proc/PID/smaps: the binary's mappings by permission
    (text r-x, read-only data r--, data rw-), the heap, the other anonymous
    mappings (malloc's per-thread arenas, thread stacks), the rest. MB."""
    exe = os.readlink(f"/proc/{pid}/exe")
    parts, count, key = {}, {}, None
    for line in open(f"/proc/{pid}/smaps"):
        fields = line.split()
        if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
            path = fields[5] if len(fields) > 5 else ""
            if path == exe:
                key = f"binary {fields[1][:3]}"
            elif path == "[heap]":
                key = "heap"
            elif path == "":
                key = "other anonymous (arenas, thread stacks)"
            else:
                key = path if path.startswith("[") else "other files"
            count[key] = count.get(key, 0) + 1
        elif fields and fields[0] == "Rss:" and key:
            parts[key] = parts.get(key, 0) + int(fields[1])
    return f"{proc_status(pid, 'Threads')} threads; " + ", ".join(f"{k} {v / 1024:.2f}" + (f" ({count[k]} mappings)" if k.startswith("other anon") else "")
                     for k, v in sorted(parts.items(), key=lambda kv: -kv[1]) if v)


def main():
    work = tempfile.mkdtemp(prefix="bench-daemon.")
    run = f"{work}/run"
    os.makedirs(run)
    # The emulator with wire and RF timing, started here so its flags can be chosen.
    sim = start_sim(BIN, run, "--baud", "115200", "--rf-timing")
    with open(f"{work}/gateway.toml", "w") as f:
        f.write(bench_config(f"{work}/state", run))
    notify_path = f"{work}/notify"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(notify_path)
    env = dict(os.environ, NOTIFY_SOCKET=notify_path)
    t0 = time.monotonic()
    daemon = popen([f"{BIN}/gateway", "daemon", "--config", f"{work}/gateway.toml"], env=env,
                   stderr=open(f"{work}/gatewayd.log", "w"))
    try:
        notify.settimeout(10)
        while b"READY=1" not in notify.recv(4096):
            pass
        ready_ms = (time.monotonic() - t0) * 1000
        print(f"start → READY=1: {ready_ms:.0f} ms (target ≤ 300 ms)")
        ctl = Control(f"{run}/control.sock")
        ctl.call("secrets.import", link=f"smpshare://secret?idx=0&key={SECRET.hex()}&label=bench")

        time.sleep(1)
        c0, w0 = proc_cpu_s(daemon.pid), time.monotonic()
        time.sleep(IDLE_S)
        idle = (proc_cpu_s(daemon.pid) - c0) / (time.monotonic() - w0) * 100
        print(f"idle CPU of gatewayd over {IDLE_S:.0f} s, reader polling: {idle:.2f} % of a core (target ≤ 0.5 %)")
        # gatewayd closes a control connection idle for 10 s: a new one for the taps.
        ctl = Control(f"{run}/control.sock")

        latencies = []
        requests = []  # the sim.tap request itself: gatewayd's control socket → pn532-sim has the tag
        from_insert = []  # from gatewayd sending pn532-sim the insert, as reader-bench times its taps
        rss = {}  # taps → VmRSS kB
        taps = max(TAPS, LAT_TAPS, 1)
        checkpoints = {1, max(1, taps // 10), taps // 2, taps} | {n for n in (1000, 5000, 10000) if n <= taps}
        missed = 0
        t_taps = time.monotonic()
        for i in range(taps):
            uid = "04" + (i + 1).to_bytes(6, "big").hex().upper()
            before = ctl.unlock_stamp()
            # Take the last tag away and let the reader see it leave (it checks
            # presence every 100 ms), so the next tap meets a poll in flight.
            ctl.call("sim.remove")
            time.sleep(SETTLE_S if i < LAT_TAPS else FAST_SETTLE_S)
            start = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
            sent = ctl.call("sim.tap", url=sticker(i), uid=uid).get("insert_sent_monotonic_ns")
            if i < LAT_TAPS:
                requests.append((time.clock_gettime_ns(time.CLOCK_MONOTONIC) - start) / 1e6)
            status_unlock = ctl.next_unlock(before)
            if status_unlock is None:
                missed += 1
                print(f"tap {i}: no unlock within 5 s", file=sys.stderr)
            elif i < LAT_TAPS:
                latencies.append((status_unlock - start) / 1e6)
                if sent is not None:
                    from_insert.append((status_unlock - sent) / 1e6)
            if i + 1 in checkpoints:
                rss[i + 1] = proc_status(daemon.pid)
                print(f"RSS after {i + 1} taps: {rss_text(daemon.pid)}", flush=True)
                if i + 1 in (1, taps):
                    print(f"  where (MB): {rss_breakdown(daemon.pid)}", flush=True)
        elapsed = time.monotonic() - t_taps
        print(f"{taps} taps in {elapsed:.0f} s, {missed} without an unlock")
        # Flat: from a tenth of the run (warm: caches, the store's pages) to
        # the end, less than 0.1 MB more per 1 000 taps.
        warm = max(1, taps // 10)
        growth_kb = rss[taps] - rss[warm]
        per_1000 = growth_kb / 1024 / max(1, taps - warm) * 1000
        flat = "flat" if per_1000 < 0.1 else "**growing**"
        goal = "met" if rss[taps] <= RSS_GOAL_MB * 1024 and per_1000 < 0.1 else "**missed**"
        print(f"RSS at the first tap {rss[1] / 1024:.1f} MB, after {taps} taps {rss[taps] / 1024:.1f} MB: "
              f"{flat} ({growth_kb / 1024:+.1f} MB from tap {warm} to {taps}, {per_1000:+.2f} MB per 1 000 taps); "
              f"goal ≤ {RSS_GOAL_MB} MB after 10 000 taps and flat: {goal}"
              + ("" if taps >= 10000 else f" at {taps} taps (BENCH_FULL=1 for 10 000)"))
        # What gatewayd gave back a few seconds after READY (StartupPages): its own
        # log line, RSS before and after, so both figures are on record.
        for line in open(f"{work}/gatewayd.log", errors="replace"):
            if "memory: gave back" in line:
                print("gatewayd: " + line.split("memory: ", 1)[1].strip())
        if from_insert:
            print(f"tap → output through gatewayd at 115200 baud + RF timing, {len(from_insert)} taps, from the "
                  f"insert to the relay (as reader-bench's rows, from the insert to the NDEF): "
                  f"p50 {percentile(from_insert, 50):.1f} ms, p99 {percentile(from_insert, 99):.1f} ms")
        if latencies:
            print(f"tap → output through gatewayd at 115200 baud + RF timing, {len(latencies)} taps, from the "
                  f"sim.tap request: p50 {percentile(latencies, 50):.1f} ms, p99 {percentile(latencies, 99):.1f} ms")
            print(f"  of which the sim.tap request (gatewayd's control socket, the tag image written, pn532-sim's "
                  f"remove and insert; the reader's poll runs meanwhile): p50 {percentile(requests, 50):.1f} ms, "
                  f"p99 {percentile(requests, 99):.1f} ms")
    finally:
        stop(daemon)
        stop(sim)
        if os.environ.get("BENCH_KEEP") != "1":  # as bench-osdp.py: the work directory (gatewayd.log) kept on request
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
