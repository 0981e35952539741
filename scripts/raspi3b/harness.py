#!/usr/bin/env python3
"""The raspi3b boot's host side (scripts/raspi3b/run.sh runs it, once per relay
polarity): QEMU 10's `raspi3b` machine with the image's kernel and device tree,
GPIO17's every edge recorded from power-on through the qtest protocol, the PN532
(pn532-sim on a pty) on the Pi's mini UART — the header's GPIO14/15, the
documented HSU path, /dev/ttyS1 under Debian's kernel — and the guest's /init
(scripts/raspi3b/init.sh) driven by its "=== " console lines.

  harness.py --qemu Q --kernel K --dtb D --initrd I --pn532-sim P --polarity low|high
             --workdir W [--buses] [--glitch] [--timeout S]

QEMU starts paused (-S). Through qtest the harness intercepts the GPIO block's
outputs (irq_intercept_out: one "IRQ raise|lower N" line per edge of any output
pin, stamped here on arrival), then emulates the firmware's `gpio=17=op,dh`
(active-low relay) or `op,dl` hold by writing GPSET0/GPCLR0 and GPFSEL1, then
resumes the CPUs through QMP. Checks (PASS/FAIL lines, exit 1 on any FAIL):
the hold's level before the kernel; no edge on GPIO17 from there through the
kernel's boot and gatewayd's start until the fob is put on the reader; the tap
through PL011-less HSU (mini UART -> ttyS1 -> libnfc) grants; the grant's pulse
(one edge to the unlocked level and one back, its length against the
configured 500 ms); GPFSEL1/GPLEV0 read from outside after SIGTERM and after
SIGKILL (the model has no pulls: the pin becomes an input, which is why the
relay needs the bias that gatewayd requests); the guest's own bus checks.
The edge record is printed. QEMU and pn532-sim are killed on every exit path.
"""

import argparse
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time

GPFSEL1, GPSET0, GPCLR0, GPLEV0 = 0x3F200004, 0x3F20001C, 0x3F200028, 0x3F200034
PIN = 17
UID = "04a1b2c3d4e5f6"
PULSE_MS = 500

passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    passed, failed = passed + bool(ok), failed + (not ok)
    print(f"PASS {what}" if ok else f"FAIL {what}{': ' + detail if detail else ''}", flush=True)


class QTest:
    """The qtest protocol on a socket QEMU connects to: commands answered by
    "OK ..." lines, interleaved with asynchronous "IRQ raise|lower N" lines."""

    def __init__(self, conn, t0):
        self.f = conn.makefile("rwb", buffering=0)
        self.t0 = t0
        self.answers = queue.Queue()
        self.edges = []  # (seconds since t0, pin, level)
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for raw in self.f:
            line = raw.decode(errors="replace").strip()
            if line.startswith("IRQ "):
                _, what, pin = line.split()
                with self.lock:
                    self.edges.append((time.monotonic() - self.t0, int(pin), 1 if what == "raise" else 0))
            elif line:
                self.answers.put(line)

    def cmd(self, text):
        self.f.write((text + "\n").encode())
        answer = self.answers.get(timeout=30)
        if not answer.startswith("OK"):
            raise RuntimeError(f"qtest {text!r}: {answer}")
        return answer

    def readl(self, addr):
        return int(self.cmd(f"readl 0x{addr:x}").split()[1], 16)

    def writel(self, addr, value):
        self.cmd(f"writel 0x{addr:x} 0x{value:x}")

    def pin_edges(self, since=0.0, until=None):
        with self.lock:
            return [(t, lvl) for t, pin, lvl in self.edges if pin == PIN and t >= since and (until is None or t < until)]

    def pin_state(self):
        fsel = (self.readl(GPFSEL1) >> ((PIN - 10) * 3)) & 7
        level = (self.readl(GPLEV0) >> PIN) & 1
        return fsel, level


def qmp(path, command):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    f = s.makefile("rwb", buffering=0)
    json.loads(f.readline())  # greeting
    for c in ({"execute": "qmp_capabilities"}, {"execute": command}):
        f.write((json.dumps(c) + "\n").encode())
        while True:
            r = json.loads(f.readline())
            if "return" in r or "error" in r:
                break
    s.close()


def start_paused(o, append, machine_args, log):
    """QEMU's raspi3b with the kernel, device tree and initrd, its CPUs
    paused (-S), QMP on a socket, and connected to us over qtest with the GPIO
    block's outputs intercepted. Returns (QEMU, its qtest, its start time)."""
    w = o.workdir
    qsock = f"{w}/qtest.sock"
    if os.path.exists(qsock):
        os.unlink(qsock)
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(qsock)
    listener.listen(1)
    cmd = [o.qemu, "-M", "raspi3b", "-m", "1G", "-accel", "tcg", "-audio", "none", "-display", "none",
           "-monitor", "none", "-no-reboot", "-S", "-kernel", o.kernel, "-dtb", o.dtb, "-initrd", o.initrd,
           "-append", append, *machine_args,
           "-qtest", f"unix:{qsock}", "-qmp", f"unix:{w}/qmp.sock,server=on,wait=off"]
    t0 = time.monotonic()
    qemu = subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    listener.settimeout(30)
    try:
        conn, _ = listener.accept()
    except OSError:
        qemu.kill()
        qemu.wait()
        raise
    qt = QTest(conn, t0)
    qt.cmd("irq_intercept_out /machine/soc/peripherals/gpio")
    return qemu, qt, t0


def hold(qt, locked):
    """The firmware's `gpio=17=op,dh`/`op,dl`: the pin an output, then its
    level (the model sends an edge only for a pin that is an output; at
    power-on the pin is an input at 0, GPIO17's pull-down on a Pi)."""
    fsel = qt.readl(GPFSEL1) & ~(7 << ((PIN - 10) * 3))
    qt.writel(GPFSEL1, fsel | (1 << ((PIN - 10) * 3)))
    qt.writel(GPSET0 if locked else GPCLR0, 1 << PIN)


def resume(w):
    """The CPUs run (QMP `cont`)."""
    for _ in range(50):
        if os.path.exists(f"{w}/qmp.sock"):
            break
        time.sleep(0.1)
    qmp(f"{w}/qmp.sock", "cont")


def sd_boot(o):
    """The whole image under systemd: console on the mini UART (the image's
    cmdline), no PN532; GPIO17's edges from power-on until gatewayd.service
    has started and 10 s more."""
    w = o.workdir
    locked = 1 if o.polarity == "low" else 0
    name = f"image, active-{o.polarity}, hold {o.hold}"
    console = f"{w}/console-sd-{o.hold}.log"
    open(console, "w").close()
    append = open(f"{w}/cmdline.txt").read().strip()
    qemu, qt, t0 = start_paused(o, append, ["-drive", f"file={o.sd},if=sd,format=raw",
                                            "-serial", "null", "-serial", f"file:{console}"], f"{w}/qemu-sd.log")
    try:
        if o.hold == "op":
            hold(qt, locked)
        t_cont = time.monotonic() - t0
        resume(w)
        started = None
        deadline = time.monotonic() + o.timeout
        while time.monotonic() < deadline and qemu.poll() is None:
            text = open(console, errors="replace").read()
            if started is None and ("Started \x1b[0;1;39mgatewayd" in text or "Started gatewayd" in text):
                started = time.monotonic() - t0
                deadline = time.monotonic() + 10
            if "Failed to start \x1b[0;1;39mgatewayd" in text or "Failed to start gatewayd" in text:
                break
            time.sleep(0.5)
        check(started is not None, f"{name}: gatewayd.service started under systemd"
              f"{f', {started - t_cont:.0f} s after the CPUs started' if started else ''}",
              " | ".join(l for l in open(console, errors="replace").read().splitlines() if "gatewayd" in l)[-300:])
        state = qt.pin_state()
        edges = qt.pin_edges(t_cont)
        if o.hold == "op":
            check(not edges and state == (1, locked), f"{name}: no edge on GPIO17 from the hold through the whole boot to"
                  f" gatewayd's start and 10 s after; GPIO17 an output at {state[1]}", f"edges {edges}, state {state}")
        else:
            check(state == (1, locked), f"{name}: gatewayd made GPIO17 an output at {state[1]} (edges seen: {edges})",
                  f"state {state}")
        print(f"--- {name}: GPIO17's edges (CPUs resumed at {t_cont:.2f} s): {edges or 'none'}; gatewayd started at"
              f" {started and round(started, 1)} s")
    finally:
        if qemu.poll() is None:
            qemu.kill()
            qemu.wait()
    print(f"raspi3b {name}: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


def main():
    a = argparse.ArgumentParser()
    for name in ("--qemu", "--kernel", "--dtb", "--initrd", "--pn532-sim", "--workdir"):
        a.add_argument(name, required=True)
    a.add_argument("--polarity", choices=["low", "high"], required=True)
    a.add_argument("--buses", action="store_true")
    a.add_argument("--glitch", action="store_true")
    a.add_argument("--timeout", type=int, default=240)
    a.add_argument("--sd", help="boot this whole SD image under systemd instead (make test-raspi3b-image)")
    a.add_argument("--hold", choices=["input", "op"], default="op",
                   help="--sd: the firmware's hold to emulate: input (the image's first boot, gpio=17=ip,pd) or op")
    o = a.parse_args()
    if o.sd:
        return sd_boot(o)
    w = o.workdir
    locked = 1 if o.polarity == "low" else 0  # active-low: the coil is off while the line is high
    name = f"active-{o.polarity}"
    procs = []
    try:
        # The PN532 on a pty; it dies with this process (--parent-pid).
        sim = subprocess.Popen([o.pn532_sim, "--link", f"{w}/pn532.pty", "--control", f"{w}/pn532.sock",
                                "--parent-pid", str(os.getpid())], stdout=subprocess.PIPE,
                               stderr=open(f"{w}/pn532-sim.log", "w"))
        procs.append(sim)
        sim.stdout.readline()
        append = (f"console=ttyAMA0,115200 rdinit=/init dg.polarity={o.polarity}"
                  f"{' dg.buses=1' if o.buses else ''}{' dg.glitch=1' if o.glitch else ''}")
        console = f"{w}/console-{name}.log"
        open(console, "w").close()
        # -serial: the PL011 first (the console here; Bluetooth's UART on a
        # Pi 3), the mini UART second (the header's pins 8/10: the PN532).
        machine = ["-serial", f"file:{console}",
                   "-chardev", f"serial,id=pn532,path={w}/pn532.pty", "-serial", "chardev:pn532"]
        if o.buses:
            machine += ["-device", "at24c-eeprom,bus=i2c-bus.1,address=0x50,rom-size=256", "-device", "w25q64,bus=spi"]
        qemu, qt, t0 = start_paused(o, append, machine, f"{w}/qemu-{name}.log")
        procs.append(qemu)
        power_on = qt.pin_state()
        hold(qt, locked)
        held = qt.pin_state()
        check(held == (1, locked), f"{name}: firmware hold emulated before the kernel: GPIO17 an output at {held[1]} "
              f"(power-on: function {power_on[0]}, level {power_on[1]})", f"function {held[0]}, level {held[1]}")
        t_cont = time.monotonic() - t0
        resume(w)

        marks = {}
        after = {}
        seen = 0
        deadline = time.monotonic() + o.timeout
        while time.monotonic() < deadline and qemu.poll() is None:
            with open(console, errors="replace") as f:
                text = f.read()
            # Whole lines only: the guest may be half-way through one.
            lines = text[: text.rfind("\n") + 1].splitlines()
            for line in lines[seen:]:
                if "=== " not in line:
                    continue
                text = line.split("=== ", 1)[1].strip()
                now = time.monotonic() - t0
                print(f"  guest +{now:6.2f}s: {text}", flush=True)
                key = text.split()[0]
                marks.setdefault(key, (now, text))
                if key in ("PASS", "FAIL"):
                    check(key == "PASS", f"{name}: {text[5:]}")
                elif key == "enrolled":
                    subprocess.run([o.pn532_sim, "--control", f"{w}/pn532.sock", "--send", f"insert {UID}"],
                                   capture_output=True, timeout=20)
                    marks["insert"] = (time.monotonic() - t0, UID)
                elif key == "granted":
                    # Off the reader: a fob still in the field would open
                    # again as soon as the restarted gatewayd polls.
                    subprocess.run([o.pn532_sim, "--control", f"{w}/pn532.sock", "--send", "remove"],
                                   capture_output=True, timeout=20)
                elif key in ("sigterm", "sigkill"):
                    after[key] = qt.pin_state()
            seen = len(lines)
            if "done" in marks:
                break
            time.sleep(0.1)
        if "done" not in marks:
            check(False, f"{name}: the guest did not finish within {o.timeout} s",
                  " | ".join(open(console, errors="replace").read().splitlines()[-8:]))

        t_insert = marks.get("insert", (None,))[0]
        t_ready = marks.get("ready", (None,))[0]
        t_term = marks.get("sigterm", (None,))[0]
        before = qt.pin_edges(t_cont, t_insert)
        check(t_insert is not None and not before,
              f"{name}: no edge on GPIO17 from the hold through the kernel's boot and gatewayd's start"
              f" (ready {t_ready and t_ready - t_cont:.1f} s after the CPUs started) until the fob was put on the reader",
              f"edges {before}" if before else "the fob was never put on the reader")
        check("granted" in marks and "FAIL" not in marks.get("granted", ("", ""))[1],
              f"{name}: the fob on the PN532 (mini UART -> ttyS1 -> libnfc) granted: {marks.get('granted', (0, '-'))[1][8:]}")
        pulse = qt.pin_edges(t_insert or 0, t_term)
        levels = [lvl for _, lvl in pulse]
        if levels == [1 - locked, locked]:
            ms = (pulse[1][0] - pulse[0][0]) * 1000
            check(abs(ms - PULSE_MS) <= 150, f"{name}: the grant pulsed GPIO17 once, {ms:.0f} ms (configured {PULSE_MS};"
                  f" the edges' arrival here, under TCG)", f"{ms:.0f} ms")
        else:
            check(False, f"{name}: the grant's pulse", f"edges after the tap: {pulse}")
        t_done = marks.get("done", (None,))[0]
        later = qt.pin_edges(pulse[-1][0] + 0.001 if pulse else (t_insert or 0), t_done)
        check(bool(pulse) and not later, f"{name}: no edge on GPIO17 after the pulse, through SIGTERM, a restart and SIGKILL",
              f"edges {later}")
        for key in ("sigterm", "sigkill"):
            state = after.get(key)
            check(state is not None and state[0] == 0,
                  f"{name}: after {key.upper()} GPIO17 is an input (GPFSEL1 function {state and state[0]}), level {state and state[1]}"
                  " — the model has no pulls; on a Pi the pull gatewayd requested holds the line",
                  f"state {state}")
        print(f"--- {name}: GPIO17's edges (s since QEMU started; CPUs resumed at {t_cont:.2f} s)")
        for t, lvl in qt.pin_edges():
            print(f"  {t:8.3f}  {'raise' if lvl else 'lower'}")
        for key in ("ready", "insert", "granted", "sigterm", "restarted", "sigkill", "done"):
            if key in marks:
                print(f"  {marks[key][0]:8.3f}  ({key})")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
    print(f"raspi3b {name}: {passed} passed, {failed} failed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
