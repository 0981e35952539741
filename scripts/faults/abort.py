"""libnfc's abort(): the reader answers so that libnfc 1.8.0 calls abort()
inside gatewayd, which is then restarted as the shipped unit says.

Where libnfc 1.8.0 aborts (libnfc/chips/pn53x.c, `pn53x_transceive`): after
PowerDown, InDataExchange, InCommunicateThru, InJumpForPSL, InPSL, InATR,
InSelect, InJumpForDEP and the target commands, `if (pbtRx[0] & 0x80) {
abort(); } // NAD detected` — a status byte with bit 7 set. gatewayd's reader
sends InDataExchange through `pn53x_transceive` for every tag read, and
nfc_close sends PowerDown (pn53x_idle), so a chip (or line noise that keeps
the frame checksums right) reaches it on the first read of a tap. The other
abort sites are not on our path: LOG_HEX's abort on a negative length
(buses/uart.c, i2c.c, spi.c: the lengths are bounded by the frame's LEN and
our 300-byte buffer), arygon.c (another driver), and nfc.c's two asserts
(nfc_device_validate_modulation, reached from nfc_initiator_select/list
calls the reader does not make).

pn532-sim's `nad` fault mode sets that bit on the next such answer.

Found reading the same function (not an abort, worse): an answer with MI
(bit 6, more information) makes libnfc send a continuation and append its
answer with `memcpy(pbtRx + res, abtRx2 + 1, res2 - 1)`; a continuation
answer without a status byte (LEN 2: TFI and response code only) gives
res2 = 0 and a copy of SIZE_MAX bytes: SIGSEGV. pn532-sim's `mi-empty` sends
that; the scenario runs it once, with the same checks (the fatal-signal
handler covers SIGSEGV too). The
scenario runs gatewayd on the stock sim example (spawned pn532-sim, MQTT on),
under a supervisor that applies the shipped unit's Restart= and RestartSec=
(board/gatewayd.service; systemd is not pid 1 here, so no systemd-run) and
systemd's default start limit (5 starts in 10 s; the unit sets none), and
checks after each abort:

- gatewayd died of SIGABRT during the tap's read: the sticker's tap was not
  decided (no audit row, no strike pulse) and the strike's last state before
  death was locked; the fatal-signal handler (CDoorSafety) ran on the way
  (first abort, when gdb can attach: a breakpoint on door_safety_lock_all is
  hit from on_fatal_signal over libnfc's abort). On the sim
  board the strike is a logged state, not a line: the line level while a
  process dies of SIGABRT is checked on a real GPIO line by the gpio VM
  (`make test-gpio-vm`, check `sigabrt`, same handler);
- the spawned pn532-sim went with it (no orphan);
- restarted RestartSec after the exit; `PRAGMA integrity_check` ok; the
  audit chain verifies; the registry (the sticker, active) and the secrets
  (the OTP key) are what they were; every audit row written before the abort
  is still there;
- no event lost from the outbox: events queued while the broker was down
  before the abort reach the broker after the restart, and at the end every
  audit row has reached the broker;
- a good tap afterwards opens the door.

Then `nad` once more and SIGTERM: nfc_close's PowerDown gets the answer, the
outputs are locked before it (logged), the exit status is reported (SIGABRT
today), and the next start finds the state intact and opens for a good tap.
"""
import collections
import configparser
import os
import shutil
import signal
import socket
import subprocess
import time

from churn import granted_tap, provision
from lib import ROOT, Broker, Failure, Gateway, Subscriber, check, popen, remove, wait_until, work_dir

UID = "04ABAB00000001"


def unit_restart_policy(path=os.path.join(ROOT, "board", "gatewayd.service")):
    """Restart= and RestartSec= of the shipped unit, and its start limit
    (systemd's defaults when the unit sets none: 10 s, 5 starts)."""
    parser = configparser.ConfigParser(strict=False, interpolation=None, delimiters=("=",))
    parser.optionxform = str
    with open(path) as f:
        parser.read_string(f.read())
    service, unit = parser["Service"], parser["Unit"]
    restart = service.get("Restart", "no")
    sec = _seconds(service.get("RestartSec", "100ms"))
    interval = _seconds(unit.get("StartLimitIntervalSec", "10s"))
    burst = int(unit.get("StartLimitBurst", "5"))
    return restart, sec, interval, burst


def _seconds(value):
    value = value.strip()
    for suffix, factor in (("ms", 0.001), ("min", 60), ("s", 1)):
        if value.endswith(suffix):
            return float(value[: -len(suffix)]) * factor
    return float(value)


def restarts_after(restart, returncode):
    """systemd.service(5) Restart= table: does this exit restart the unit?"""
    by_signal = returncode < 0
    clean = returncode == 0 or (by_signal and -returncode in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM,
                                                               signal.SIGPIPE))
    return {
        "no": False,
        "always": True,
        "on-success": clean,
        "on-failure": not clean,
        "on-abnormal": by_signal and not clean,
        "on-abort": by_signal and not clean,
        "on-watchdog": False,
    }[restart]


class Supervisor:
    """systemd's part for one unit: start, and on exit restart after
    RestartSec when Restart= says so, refusing past the start limit."""

    def __init__(self, g):
        self.g = g
        self.restart, self.sec, self.interval, self.burst = unit_restart_policy()
        self.starts = []
        self.delays = []

    def start(self):
        now = time.monotonic()
        recent = [t for t in self.starts if now - t < self.interval]
        check(len(recent) < self.burst, f"start limit hit: {len(recent)} starts in {self.interval:.0f} s")
        self.starts.append(now)
        self.g.start()

    def wait_exit(self, timeout):
        p = self.g.process
        try:
            code = p.wait(timeout)
        except subprocess.TimeoutExpired:
            raise Failure(f"gatewayd still running {timeout} s after the fault")
        exited = time.monotonic()
        self.g.process = None
        self.g.logfile.close()
        return code, exited

    def restart_after(self, code, exited):
        check(restarts_after(self.restart, code), f"Restart={self.restart} does not restart after exit {code}")
        time.sleep(max(0.0, exited + self.sec - time.monotonic()))
        self.delays.append(time.monotonic() - exited)
        self.start()


class HandlerWatch:
    """gdb (when there is one and it may attach) on gatewayd with a
    breakpoint on door_safety_lock_all, the fatal-signal handler's work:
    shows that the handler runs on libnfc's abort, and from where."""

    def __init__(self, pid):
        self.process = None
        if not shutil.which("gdb"):
            return
        self.process = popen(
            ["gdb", "-p", str(pid), "-batch", "-ex", "handle SIGABRT nostop noprint pass",
             "-ex", "handle SIGPIPE nostop noprint pass", "-ex", "break door_safety_lock_all",
             "-ex", "echo ATTACHED\\n", "-ex", "continue", "-ex", "bt 8", "-ex", "continue"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines = []
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("ATTACHED") or "ptrace" in line:
                break

    def result(self):
        if not self.process:
            return "no gdb"
        try:
            out, _ = self.process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            out, _ = self.process.communicate()
        text = "".join(self.lines) + out
        if "ATTACHED" not in text:
            return "gdb could not attach"
        frames = [line for line in text.splitlines() if line.startswith("#")]
        if not any("door_safety_lock_all" in f for f in frames):
            return "not called"
        called = any("pn53x_transceive" in f for f in frames) and any("on_fatal_signal" in f for f in frames)
        return "called from on_fatal_signal over pn53x_transceive's abort" if called else "called"


def sim_control(g, line):
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(os.path.join(g.run_dir, "pn532-sim.sock"))
        s.sendall(line.encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.decode().strip()


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def integrity(g):
    import sqlite3

    con = sqlite3.connect(os.path.join(g.state, "gateway.db"))
    try:
        return con.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        con.close()


def snapshot(g):
    con = g.db()
    try:
        audit = con.execute("SELECT id, time, kind, reason, action, source, uid FROM audit ORDER BY id").fetchall()
        tags = con.execute("SELECT uid, state FROM issued_tag ORDER BY uid").fetchall()
    finally:
        con.close()
    return audit, tags


def iso(t):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def run(bindir, report, aborts=3):
    work = work_dir("abort")
    broker = Broker(work)
    broker.start()
    sub = Subscriber(broker, "doorgateway/front-door/event")
    g = Gateway(bindir, work, broker=broker)
    sup = Supervisor(g)
    outcomes = collections.Counter()
    watcher = None
    try:
        sup.start()
        g.ctl("keys", "otp", "new")
        otp_key = g.ctl("keys", "otp", "export").stdout
        dump = provision(g, UID, work)
        granted_tap(g, dump, UID, "before the faults")
        wait_until(lambda: g.status().get("broker", {}).get("outbox", 1) == 0, 30, "outbox drained at start")

        faults = [("nad", signal.SIGABRT)] * aborts + [("mi-empty", signal.SIGSEGV)]
        for i, (fault, expected) in enumerate(faults):
            # Events waiting in the outbox when the daemon dies: the broker is
            # away, two forged stickers are denied.
            broker.stop()
            wait_until(lambda: g.status().get("broker", {}).get("connected") is False, 20, f"abort {i}: broker down")
            for _ in range(2):
                g.ctl("sim", "tap", f"smp://action?idx=0&ts=1760000000&sig={os.urandom(32).hex()}", "--uid",
                      "04" + os.urandom(6).hex().upper())
                time.sleep(0.6)
                g.ctl("sim", "remove")
                time.sleep(1.2)
            wait_until(lambda: g.status().get("broker", {}).get("outbox", 0) >= 2, 10, f"abort {i}: events queued")
            queued = g.status()["broker"]["outbox"]
            audit0, tags0 = snapshot(g)
            pid = g.process.pid
            sims = children(pid)
            check(sims, f"abort {i}: gatewayd has no pn532-sim child")
            log0 = len(g.log_text())

            watcher = HandlerWatch(pid) if i == 0 else None
            answer = sim_control(g, fault)
            check(answer.startswith("ok"), f"abort {i}: {fault}: {answer}")
            g.ctl("sim", "tap", "--dump", dump, "--uid", UID)
            code, exited = sup.wait_exit(15)
            check(code == -expected, f"abort {i} ({fault}): gatewayd exit {code}, not {expected.name}")
            outcomes[expected.name] += 1
            if watcher:
                handler = watcher.result()
                report["fatal-signal handler (gdb)"] = handler
                check(handler != "not called", f"abort {i}: the fatal-signal handler did not run")
            after = g.log_text()[log0:]
            check("strike → unlocked" not in after, f"abort {i}: the strike opened on the aborted read")
            strikes = [line for line in g.log_text().splitlines() if "sim output strike →" in line]
            check(strikes and "→ locked" in strikes[-1], f"abort {i}: the strike's last state was {strikes[-1:]}")
            wait_until(lambda: not any(pid_alive(s) for s in sims), 5, f"abort {i}: the spawned pn532-sim exited")

            result = integrity(g)
            check(result == "ok", f"abort {i}: integrity_check: {result}")
            broker.start()
            sup.restart_after(code, exited)
            verify = g.ctl("log", "--verify", check_rc=False)
            check(verify.returncode == 0, f"abort {i}: audit chain: {verify.stdout} {verify.stderr}")
            check(g.ctl("keys", "otp", "export").stdout == otp_key, f"abort {i}: the OTP key changed")
            audit1, tags1 = snapshot(g)
            check(audit1[: len(audit0)] == audit0, f"abort {i}: audit rows written before the abort changed")
            check(tags1 == tags0 and (UID, "active") in tags1, f"abort {i}: registry {tags0} → {tags1}")
            # The earlier good taps are audited with this UID, so this can fail.
            check(any(r[6] == UID for r in audit0), f"abort {i}: no audit row names {UID}")
            check(not any(r[6] == UID for r in audit1[len(audit0):]), f"abort {i}: the aborted tap was decided")
            wait_until(lambda: g.status().get("broker", {}).get("outbox", 1) == 0, 30,
                       f"abort {i}: the {queued} queued events sent after the restart")
            g.ctl("sim", "remove", check_rc=False)
            granted_tap(g, dump, UID, f"abort {i}: a good tap after the restart")

        # The same answer to the PowerDown that nfc_close sends (pn53x_idle)
        # when gatewayd stops: the outputs are locked first, then the
        # reader's close aborts. systemd does not restart a unit it stopped;
        # the next `systemctl start` finds the state intact.
        wait_until(lambda: g.status().get("broker", {}).get("outbox", 1) == 0, 30, "outbox drained")
        audit0, tags0 = snapshot(g)
        log0 = len(g.log_text())
        check(sim_control(g, "nad").startswith("ok"), "stop: nad")
        g.process.terminate()
        stop_code, _ = sup.wait_exit(20)
        after = g.log_text()[log0:]
        check("sim all outputs locked" in after and "strike → unlocked" not in after,
              f"stop: the outputs were not locked before the exit: {after[-400:]}")
        check(stop_code in (0, -signal.SIGABRT), f"stop: gatewayd exit {stop_code}")
        result = integrity(g)
        check(result == "ok", f"stop: integrity_check: {result}")
        sup.start()
        verify = g.ctl("log", "--verify", check_rc=False)
        check(verify.returncode == 0, f"stop: audit chain: {verify.stdout} {verify.stderr}")
        audit1, tags1 = snapshot(g)
        check(audit1[: len(audit0)] == audit0 and tags1 == tags0, "stop: audit or registry changed across the stop")
        check(g.ctl("keys", "otp", "export").stdout == otp_key, "stop: the OTP key changed")
        granted_tap(g, dump, UID, "a good tap after the stop")

        wait_until(lambda: g.status().get("broker", {}).get("outbox", 1) == 0, 30, "outbox drained")
        time.sleep(1)
        g.stop()
        audit, tags = snapshot(g)
        events = {}
        for e in sub.messages("/event"):
            events.setdefault(e.get("seq"), e)
        got = collections.Counter(
            (e.get("time"), e.get("kind"), e.get("reason"), e.get("action"), e.get("source")) for e in events.values())
        want = collections.Counter((iso(t), k, r, a, s) for _, t, k, r, a, s, _ in audit)
        lost = want - got
        restart, sec, interval, burst = unit_restart_policy()
        report["libnfc abort"] = (
            f"{aborts} taps answered with a NAD status byte, 1 with MI and an empty continuation: gatewayd died of "
            f"SIGABRT {outcomes['SIGABRT']}/{aborts}, SIGSEGV {outcomes['SIGSEGV']}/1, "
            f"strike locked, tap not decided, pn532-sim gone; restarted by Restart={restart} RestartSec={sec:g}s "
            f"after {', '.join(f'{d:.2f}' for d in sup.delays)} s (start limit {burst} in {interval:g} s not hit); "
            f"integrity ok, chain verified, OTP key and sticker intact; {len(audit)} audit rows, {len(events)} "
            f"distinct events at the broker; a good tap opened after each restart. SIGTERM with the same answer "
            f"to nfc_close's PowerDown: outputs locked, then exit "
            f"{'SIGABRT' if stop_code == -signal.SIGABRT else stop_code}; state intact, a good tap opened after start")
        check(not lost, f"{sum(lost.values())} audited events never reached the broker: {sorted(lost)[:10]}")
    finally:
        if watcher and watcher.process and watcher.process.poll() is None:
            watcher.process.kill()
            watcher.process.wait(10)
        if g.alive():
            g.stop()
        sub.stop()
        broker.stop()
        if os.environ.get("FAULTS_KEEP") != "1":
            remove(work)
