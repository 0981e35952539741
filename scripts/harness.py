"""What the Python harnesses share: children that die with their parent
(popen), Failure/check/wait_until, /proc figures, a free port and the shipped
broker configuration relocated (the fault suite's lib.py,
scripts/ha/ha_acceptance.py); for the benches (scripts/bench-daemon.py,
bench-osdp.py, bench-storage.py) and the clock-jump fault scenario
(scripts/faults/clockjump.py): the percentile their figures use, gatewayd's
control socket, a pn532-sim of their own, the benches' gatewayd configuration,
and the gpio-vm guest's additions (the work directory, host binaries with their
shared libraries, /etc basics) that run.sh PREPARE=… EXTRA=… packs into the
initramfs. Imported, never run.
"""
import base64
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the harness dies."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def popen(args, **kw):
    """subprocess.Popen of a child that dies with the harness (PR_SET_PDEATHSIG)."""
    return subprocess.Popen(args, preexec_fn=die_with_parent, **kw)


def stop(process, timeout=10):
    """SIGTERM, then SIGKILL if it has not exited after `timeout` s; reaped either way."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def wait_until(predicate, timeout, what, interval=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise Failure(f"timed out after {timeout} s: {what}")


def proc_status(pid, field="VmRSS"):
    """A number of /proc/PID/status (kB for the memory fields), 0 if it is not there."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def proc_cpu_s(pid):
    """User + system CPU seconds of pid."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shipped_broker_conf(port, ca, cert, key, extra):
    """(text, missing): provisioning/mosquitto-doorgateway.conf listening on
    127.0.0.1:port with these certificate files and the tree's ACL, then the
    lines extra; missing, the keys of the lines it relocates that the shipped
    file lacks (the caller's check)."""
    replace = {"listener": f"{port} 127.0.0.1", "cafile": ca, "certfile": cert, "keyfile": key,
               "acl_file": os.path.join(ROOT, "provisioning", "doorgateway.acl")}
    lines = []
    with open(os.path.join(ROOT, "provisioning", "mosquitto-doorgateway.conf")) as f:
        for line in f.read().splitlines():
            key_ = line.split(" ", 1)[0]
            lines.append(f"{key_} {replace.pop(key_)}" if key_ in replace else line)
    return "\n".join(lines + list(extra)) + "\n", sorted(replace)

# The guest's /etc: root only (gatewayd and the tools look names up in files).
GUEST_ETC = {"passwd": "root:x:0:0:root:/root:/bin/sh\n", "group": "root:x:0:\n"}


def percentile(xs, p):
    """The p-th percentile of xs, nearest rank (no interpolation)."""
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Control:
    """gatewayd's control socket (one JSON request a line), for the benches."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.connect(path)
        self.f = self.s.makefile("rwb")
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.f.write((json.dumps({"id": self.n, "method": method, "params": params}) + "\n").encode())
        self.f.flush()
        answer = json.loads(self.f.readline())
        if not answer.get("ok"):
            raise RuntimeError(f"{method}: {answer.get('error')}")
        return answer["result"]

    def unlock_stamp(self):
        """status' last_unlock_monotonic_ns once the strike is locked: the previous tap's pulse
        must be over, a grant while the strike is still unlocked extends nothing visible."""
        while self.call("status")["outputs"]["strike"] != "locked":
            time.sleep(0.005)
        return self.call("status").get("last_unlock_monotonic_ns")

    def next_unlock(self, before, timeout=5):
        """The first last_unlock_monotonic_ns other than `before`; None after `timeout` s."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            stamp = self.call("status").get("last_unlock_monotonic_ns")
            if stamp != before:
                return stamp
            time.sleep(0.001)
        return None


def start_sim(bindir, run, *flags):
    """The bench's own pn532-sim (its pty and control socket in `run`, as bench_config names them),
    once both exist."""
    sim = popen([f"{bindir}/pn532-sim", "--link", f"{run}/pty", "--control", f"{run}/sim.sock", *flags],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_until(lambda: os.path.exists(f"{run}/pty") and os.path.exists(f"{run}/sim.sock"), 10, "pn532-sim", 0.01)
    return sim


def bench_config(state, run):
    """gatewayd on the simulated board with the pn532-sim the bench starts
    (its pty and control socket in `run`), action 0 a 50 ms strike pulse,
    lockout off, the clock declared synchronised."""
    return f"""[device]
id = "bench"
[board]
kind = "sim"
[reader]
connstring = "pn532_uart:{run}/pty"
simulator = "{run}/sim.sock"
[door]
same_tag_quiet_ms = 1000
[[actions]]
index = 0
name = "bench"
steps = [{{ pulse = "strike", ms = 50 }}]
[lockout]
enabled = false
[clock]
declare_synchronised = true
[paths]
state_dir = "{state}"
runtime_dir = "{run}"
"""


def guest_extra(extra, work, executables, etc=GUEST_ETC, files=()):
    """Fills `extra` (run.sh's EXTRA tree) with: the work directory at its own
    path (less the VM's files), each of `executables` (host paths) with the
    shared libraries ldd names, and `files`, at their host paths, and the files
    of `etc` ({name: text}) in /etc. Returns how many executables and libraries."""
    shutil.copytree(work, extra + work, ignore=shutil.ignore_patterns("vm", "extra", "agent.sock", "console.log"))
    binaries = set(executables)
    for exe in executables:
        out = subprocess.run(["ldd", exe], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                binaries.add(parts[2])
            elif parts and parts[0].startswith("/"):
                binaries.add(parts[0])
    for path in binaries | set(files):
        dest = extra + path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.realpath(path), dest)
        os.chmod(dest, 0o755 if path in binaries else 0o644)
    os.makedirs(os.path.join(extra, "etc"), exist_ok=True)
    for name, text in etc.items():
        with open(os.path.join(extra, "etc", name), "w") as f:
            f.write(text)
    return len(binaries)


class Guest:
    """The gpio-vm guest booted with `door_agent` (scripts/gpio-vm/agent.sh on
    its second serial port, a Unix socket here): sh(command) runs a shell
    command in it and returns (exit status, output). boot() prepares and boots
    it; stop() keeps the tails of the guest files in `keep` when FAULTS_KEEP=1."""

    def __init__(self, work, kernel, initrd):
        self.work = work
        self.keep = []
        self.sock_path = os.path.join(work, "agent.sock")
        self.console = os.path.join(work, "console.log")
        self.started = time.monotonic()
        self.process = popen([
            "qemu-system-x86_64", "-accel", "tcg,thread=multi", "-cpu", "max", "-m", "768", "-smp", "2",
            "-kernel", kernel, "-initrd", initrd,
            "-append", "console=ttyS0 quiet loglevel=3 panic=-1 door_agent",
            "-display", "none", "-no-reboot", "-monitor", "none",
            "-serial", f"file:{self.console}",
            "-serial", f"unix:{self.sock_path},server=on,wait=on",
        ], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.conn = None
        self.buffer = b""
        wait_until(lambda: os.path.exists(self.sock_path) or self.process.poll() is not None, 30, "QEMU listening")
        check(self.process.poll() is None, "QEMU exited at start")
        self.conn = socket.socket(socket.AF_UNIX)
        self.conn.connect(self.sock_path)
        line = self._line(120)
        check(line.endswith("@@READY"), f"guest agent: {line!r}")
        self.boot_s = time.monotonic() - self.started

    @classmethod
    def boot(cls, work, gateway, extra):
        """scripts/gpio-vm/run.sh PREPARE=work/vm with this gateway binary and the EXTRA tree (removed
        afterwards), then the guest booted from it; initrd_mb, the initramfs' size."""
        vm = os.path.join(work, "vm")
        prep = subprocess.run([os.path.join(ROOT, "scripts", "gpio-vm", "run.sh"), f"GATEWAY={gateway}",
                               f"PREPARE={vm}", f"EXTRA={extra}"], capture_output=True, text=True)
        check(prep.returncode == 0, f"gpio-vm PREPARE: {prep.stderr.strip()[-600:]}")
        shutil.rmtree(extra, ignore_errors=True)
        guest = cls(work, os.path.join(vm, "vmlinuz"), os.path.join(vm, "initrd.gz"))
        guest.initrd_mb = os.path.getsize(os.path.join(vm, "initrd.gz")) / 1e6
        return guest

    def _line(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or self.process.poll() is not None:
                raise Failure(f"guest: no answer within {timeout} s (QEMU {self.process.poll()}); "
                              f"console tail: {self.console_tail()}")
            self.conn.settimeout(min(left, 1))
            try:
                chunk = self.conn.recv(65536)
            except socket.timeout:
                continue
            if not chunk:
                raise Failure("guest: the agent's serial port closed")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode(errors="replace").strip()

    def sh(self, command, timeout=60, check_rc=True):
        self.conn.sendall(base64.b64encode(command.encode()) + b"\n")
        line = self._line(timeout)
        payload, sep, rc = line.rpartition("@@RC ")
        check(sep, f"guest: unexpected answer {line[:200]!r}")
        out = base64.b64decode(payload.strip()).decode(errors="replace") if payload.strip() else ""
        if check_rc and int(rc) != 0:
            raise Failure(f"guest: `{command[:120]}` exit {rc}: {out.strip()[-400:]}")
        return int(rc), out

    def console_tail(self):
        try:
            with open(self.console, errors="replace") as f:
                return " | ".join(f.read().replace("\r", "").splitlines()[-8:])
        except OSError:
            return "(none)"

    def stop(self):
        """Power off (the agent ends, init runs poweroff -f); QEMU killed if it
        does not exit by itself. First, with FAULTS_KEEP=1, the tails of the
        guest's files in `keep`, for a post-mortem (work/guest-NAME)."""
        for path in self.keep if os.environ.get("FAULTS_KEEP") == "1" else ():
            try:
                out = self.sh(f"tail -c 20000 {path}", timeout=20, check_rc=False)[1]
                with open(os.path.join(self.work, "guest-" + os.path.basename(path)), "w") as f:
                    f.write(out)
            except (Failure, OSError):
                pass
        if self.process.poll() is None and self.conn:
            try:
                self.conn.sendall(b"@@QUIT\n")
                self.process.wait(30)
            except (OSError, subprocess.TimeoutExpired):
                pass
        if self.conn:
            self.conn.close()
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
