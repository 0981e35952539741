"""Shared pieces of the fault suite: a broker on the shipped provisioning/
files, gatewayd on the stock example configuration (sim board), gatewayctl,
and a subscriber that records everything the door publishes.

Every process started here is started with PR_SET_PDEATHSIG (it dies with
the suite) and is stopped as its scenario's Rig closes; run.py runs under
scripts/no-leftovers.py, which fails the run if anything survives.
"""
import collections
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROVISIONING = os.path.join(ROOT, "provisioning")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
# The scenarios import these from here.
from harness import (Failure, Guest, check, free_port, popen, proc_cpu_s, proc_status, shipped_broker_conf,  # noqa: E402,F401
                     stop, wait_until)

KEEP = os.environ.get("FAULTS_KEEP") == "1"


class Rig:
    """A scenario's work directory and what it started: `with Rig(name) as rig`;
    on the way out (a failure too) every thing added is stopped, the last first,
    then the directory is removed unless FAULTS_KEEP=1. With `report`, its
    NAME_total is the scenario's time."""

    def __init__(self, name, report=None):
        self.work = tempfile.mkdtemp(prefix=f"faults-{name}-")
        self.stops = []
        if report is not None:  # how long the scenario took, passed or not
            t0 = time.monotonic()
            self.add(report, lambda: report.__setitem__(f"{name}_total", f"{time.monotonic() - t0:.0f} s"))

    def add(self, thing, stop_it=None):
        """thing, stopped with stop_it() (else thing.stop()) on the way out."""
        self.stops.append(stop_it or thing.stop)
        return thing

    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        errors = []
        for fn in reversed(self.stops):
            try:
                fn()
            except Exception as e:  # the others are stopped all the same
                errors.append(e)
        if not KEEP:
            shutil.rmtree(self.work, ignore_errors=True)
        if errors and kind is None:
            raise errors[0]


def _elf_machine(path):
    """e_machine of an ELF file (bytes 18-19, little endian), None if unreadable."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return int.from_bytes(head[18:20], "little")


def time_scale(binary=None):
    """The end-to-end suite's factor for waits on time (Tests/TestSupport/Wait.swift,
    TestTiming.scale): DOORGATEWAY_E2E_TIME_SCALE when set (>= 1), else 3 when `binary`
    is for another CPU than this machine (it runs through qemu-user), else 1."""
    try:
        scale = float(os.environ.get("DOORGATEWAY_E2E_TIME_SCALE", ""))
        if scale >= 1:
            return scale
    except ValueError:
        pass
    if binary:
        theirs, ours = _elf_machine(binary), _elf_machine("/proc/self/exe")
        if theirs is not None and ours is not None and theirs != ours:
            return 3.0
    return 1.0


def outlast_quiet_window(binary=None):
    """Waits out the door's same-tag quiet window (same_tag_quiet_ms = 1000, stock) after a
    `sim remove`, so the next tap of that tag is judged again: the end-to-end suite's
    E2ETiming.outlastQuietWindow, 2 s x time_scale(). The window runs from when the
    daemon's reader notices the removal, which on a loaded machine came up to ~1 s after
    gatewayctl returned (a 1.2 s sleep then let a reinsert count as the same tap); the
    daemon does not say when it noticed, so this is a bound on time, not a condition."""
    time.sleep(2.0 * time_scale(binary))


def unix(value):
    """Seconds since the epoch of an event's time (ISO 8601, or a number of s or ms)."""
    if isinstance(value, (int, float)):
        return value / 1000 if value > 10**11 else value
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


class Broker:
    """mosquitto on the shipped configuration and ACL (certificates by CN)."""

    NAMES = ("front-door", "homeassistant", "phone-alice")

    def __init__(self, work):
        self.dir = os.path.join(work, "pki")
        os.makedirs(self.dir, exist_ok=True)
        self.port = free_port()
        self.ca("ca", "fault-ca")
        for name in ("broker",) + self.NAMES:
            self.issue(name, "localhost" if name == "broker" else name)
        self.conf = self.conf_text("broker")
        with open(self.path("mosquitto.conf"), "w") as f:
            f.write(self.conf)
        self.process = None

    def path(self, name):
        return os.path.join(self.dir, name)

    def _openssl(self, *args):
        subprocess.run(("openssl",) + args, check=True, capture_output=True)

    def ca(self, name, cn):
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                      "-subj", f"/CN={cn}", "-keyout", self.path(f"{name}.key"), "-out", self.path(f"{name}.crt"))

    def issue(self, name, cn, ca="ca"):
        """name.crt and name.key: CN cn, for localhost and 127.0.0.1, signed by the CA `ca`."""
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={cn}",
                      "-keyout", self.path(f"{name}.key"), "-out", self.path(f"{name}.csr"))
        with open(self.path("san.ext"), "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        self._openssl("x509", "-req", "-in", self.path(f"{name}.csr"), "-CA", self.path(f"{ca}.crt"), "-CAkey",
                      self.path(f"{ca}.key"), "-CAcreateserial", "-days", "2", "-extfile", self.path("san.ext"),
                      "-out", self.path(f"{name}.crt"))
        os.chmod(self.path(f"{name}.key"), 0o600)

    def conf_text(self, server):
        """The shipped configuration with the server certificate `server`."""
        text, missing = shipped_broker_conf(self.port, self.path("ca.crt"), self.path(f"{server}.crt"),
                                            self.path(f"{server}.key"),
                                            ["persistence false", "user root", f"log_dest file {self.path('mosquitto.log')}"])
        check(not missing, f"shipped broker configuration lacks {missing}")
        return text

    def start(self, conf=None):
        if conf:
            with open(self.path("mosquitto.conf"), "w") as f:
                f.write(conf)
        self.process = popen(["mosquitto", "-c", self.path("mosquitto.conf")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        wait_until(self._listening, 10, "mosquitto listening")
        return self

    def _listening(self):
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def stop(self):
        if self.process:
            stop(self.process)
        self.process = None

    def client_args(self, name="phone-alice"):
        return ["-h", "localhost", "-p", str(self.port), "--cafile", self.path("ca.crt"), "--cert",
                self.path(f"{name}.crt"), "--key", self.path(f"{name}.key")]

    def publish(self, topic, message, name="phone-alice"):
        subprocess.run(["mosquitto_pub"] + self.client_args(name) + ["-q", "1", "-t", topic, "-m", message],
                       check=True, capture_output=True, timeout=20)


def messages(lines, suffix):
    """The JSON payloads of mosquitto_sub's `%t|%p` lines whose topic ends with suffix."""
    out = []
    for line in lines:
        topic, _, payload = line.partition("|")
        if topic.endswith(suffix):
            try:
                out.append(json.loads(payload))
            except ValueError:
                pass
    return out


class Subscriber:
    """mosquitto_sub on the door's events, as homeassistant (it may read every
    door's events), with a persistent session (QoS 1, -c): messages published
    while it reconnects are kept for it by the broker."""

    def __init__(self, broker, topic="doorgateway/front-door/event"):
        self.lines = []
        self.lock = threading.Lock()
        self.process = popen(
            ["mosquitto_sub"] + broker.client_args("homeassistant") +
            ["-q", "1", "-c", "-i", f"faults-{os.getpid()}", "-t", topic, "-F", "%t|%p"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        time.sleep(0.3)

    def _read(self):
        for line in self.process.stdout:
            with self.lock:
                self.lines.append(line.rstrip("\n"))

    def messages(self, suffix):
        with self.lock:
            return messages(self.lines, suffix)

    def stop(self):
        stop(self.process)

    def events(self):
        """The door's events by seq, the first copy of each."""
        events = {}
        for e in self.messages("/event"):
            events.setdefault(e.get("seq"), e)
        return events

    def check_nothing_lost(self, audit):
        """Every audited event (Gateway.audit() rows) reached the broker, at least once."""
        got = collections.Counter((e.get("time"), e.get("kind"), e.get("reason"), e.get("action"), e.get("source"))
                                  for e in self.events().values())
        iso = lambda t: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))  # noqa: E731
        lost = collections.Counter((iso(t), k, r, a, s) for _, t, k, r, a, s, _ in audit) - got
        check(not lost, f"{sum(lost.values())} audited events never reached the broker: {sorted(lost)[:10]}")


class DoorControls:
    """What a scenario does at a door through gatewayctl, on the host (Gateway) or in the
    gpio-vm guest (clockjump.Door): the class gives ctl() (a CompletedProcess), pulses()
    (how often the sim strike was unlocked) and gateway (the binary, for the time scale)."""

    def status(self):
        return json.loads(self.ctl("status", "--json").stdout)

    def wait_locked(self, what, timeout=10, interval=0.05):
        wait_until(lambda: self.status()["outputs"]["strike"] == "locked", timeout, f"{what}: locked again", interval)

    def outlast(self):
        outlast_quiet_window(self.gateway)

    def provision(self, uid, work, arm=("provision", "arm", "--action", "0")):
        """A sticker of `uid` written (or issued, `arm`) by the door; its dump."""
        self.ctl(*arm)
        self.ctl("sim", "tap", "--blank", "--uid", uid)
        wait_until(lambda: any(e.get("kind") == "provisioning_written" and uid in json.dumps(e)
                               for e in self.status().get("last_events", [])), 30, f"sticker {uid} written", 0.1)
        dump = os.path.join(work, f"sticker-{uid}.dump")
        self.ctl("sim", "dump", dump)
        self.ctl("sim", "remove")
        self.outlast()
        return dump

    def verify_chain(self, what):
        r = self.ctl("log", "--verify", check_rc=False)
        check(r.returncode == 0, f"{what}: audit chain: {r.stdout.strip()} {r.stderr.strip()}")

    def otp_key_file(self, work):
        """A new timestamp (OTP) key for phone commands, exported to work/otp.key."""
        self.ctl("keys", "otp", "new")
        path = os.path.join(work, "otp.key")
        with open(path, "w") as f:
            f.write(self.ctl("keys", "otp", "export").stdout)
        return path


class Gateway(DoorControls):
    """gatewayd on the stock sim example, with only paths and the broker
    connection changed (plus `edits`)."""

    def __init__(self, bindir, work, broker=None, state_dir=None, edits=()):
        self.bindir = bindir
        self.gateway = os.path.join(bindir, "gateway")
        self.work = work
        self.state = state_dir or os.path.join(work, "state")
        self.run_dir = os.path.join(work, "run")
        self.socket = os.path.join(self.run_dir, "control.sock")
        self.log_path = os.path.join(work, "gatewayd.log")
        self.config = os.path.join(work, "gateway.toml")
        example = subprocess.run([self.gateway, "ctl", "config", "example", "--board", "sim"], check=True,
                                 capture_output=True, text=True).stdout
        toml = self._edit(example, [
            ('state_dir = "/var/lib/doorgateway"', f'state_dir = "{self.state}"'),
            ('runtime_dir = "/run/doorgateway"', f'runtime_dir = "{self.run_dir}"'),
            # The tests' clock is the host's (it may not be NTP-synchronised in a VM or container).
            ("declare_synchronised = false", "declare_synchronised = true"),
        ])
        if broker:
            toml = self._edit(toml, [
                ("[mqtt]\nenabled = false", "[mqtt]\nenabled = true"),
                ("# port = 8883", f"port = {broker.port}"),
                ('# ca_file = "/etc/doorgateway/ca.crt"', f'ca_file = "{broker.path("ca.crt")}"'),
                ('# cert_file = "/etc/doorgateway/door.crt"', f'cert_file = "{broker.path("front-door.crt")}"'),
                ('# key_file = "/run/credentials/gatewayd.service/door.key"', f'key_file = "{broker.path("front-door.key")}"'),
                ("compat_topics = []", 'compat_topics = ["phone/front-door"]'),
            ])
        toml = self._edit(toml, list(edits))
        with open(self.config, "w") as f:
            f.write(toml)
        self.process = None
        self.env = dict(os.environ, DOORGATEWAY_SOCKET=self.socket)

    @staticmethod
    def _edit(text, edits):
        for old, new in edits:
            check(text.count(old) == 1, f"the stock example changed: {old!r} is not there once")
            text = text.replace(old, new)
        return text

    def start(self, ready=True):
        self.logfile = open(self.log_path, "a")
        self.process = popen([self.gateway, "daemon", "--config", self.config], stdout=self.logfile,
                             stderr=self.logfile)
        if ready:
            wait_until(lambda: self.ctl_ok("status"), 20, "gatewayd answering status")
        return self

    def alive(self):
        return self.process is not None and self.process.poll() is None

    def kill(self):
        """A power cut as the process sees it: SIGKILL, nothing runs after."""
        if self.process:
            self.process.kill()
            self.process.wait(10)
            self.process = None
            self.logfile.close()

    def stop(self):
        if self.process:
            if self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(20)
                except subprocess.TimeoutExpired:
                    self._stacks()
                    self.process.kill()
                    self.process.wait(10)
                    raise Failure("gatewayd did not stop on SIGTERM within 20 s")
            self.process = None
            self.logfile.close()

    def _stacks(self):
        """Where a hung gatewayd is (into the work directory, for the report)."""
        if shutil.which("gdb"):
            with open(os.path.join(self.work, "hung-stacks.txt"), "w") as f:
                subprocess.run(["gdb", "-p", str(self.process.pid), "-batch", "-ex", "thread apply all bt"],
                               stdout=f, stderr=subprocess.STDOUT, timeout=60)

    def ctl(self, *args, check_rc=True, timeout=20):
        r = subprocess.run([self.gateway, "ctl"] + list(args), capture_output=True, text=True, env=self.env,
                           timeout=timeout)
        if check_rc and r.returncode != 0:
            raise Failure(f"gatewayctl {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return r

    def ctl_ok(self, *args):
        try:
            return self.ctl(*args, check_rc=False, timeout=5).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def connected(self):
        return self.status().get("broker", {}).get("connected") is True

    def wait_outbox_drained(self, what="outbox drained"):
        """Until every event the broker should have is acknowledged (status' outbox 0)."""
        wait_until(lambda: self.status().get("broker", {}).get("outbox", 1) == 0, 30, what)

    def pulses(self, line="sim output strike → unlocked"):
        """The sim strike's unlocks gatewayd logged (its log spans every restart); locks with
        line="sim output strike → locked"."""
        return self.log_text().count(line)

    def granted_tap(self, dump, uid, what):
        """A tap of the sticker that pulses the strike; then taken away, locked again."""
        pulses = self.pulses()
        self.ctl("sim", "tap", "--dump", dump, "--uid", uid)
        wait_until(lambda: self.pulses() > pulses, 10, f"{what}: the strike pulses")
        self.ctl("sim", "remove")
        self.wait_locked(what)
        self.outlast()

    def query(self, sql, *args):
        """The rows of one read-only query of the store."""
        con = sqlite3.connect(f"file:{os.path.join(self.state, 'gateway.db')}?mode=ro", uri=True)
        try:
            return con.execute(sql, args).fetchall()
        finally:
            con.close()

    def count(self, kind=None, uid=None):
        """Audit rows (of one kind, for one UID)."""
        where = " AND ".join(w for w, v in (("kind = ?", kind), ("uid = ?", uid)) if v is not None)
        args = [v for v in (kind, uid) if v is not None]
        return self.query("SELECT COUNT(*) FROM audit" + (" WHERE " + where if where else ""), *args)[0][0]

    def audit(self):
        """Every audit row: (id, time, kind, reason, action, source, uid), in order."""
        return self.query("SELECT id, time, kind, reason, action, source, uid FROM audit ORDER BY id")

    def check_integrity(self, what):
        """SQLite's PRAGMA integrity_check of the store is "ok", opened read-write as gatewayd does."""
        con = sqlite3.connect(os.path.join(self.state, "gateway.db"))
        try:
            result = con.execute("PRAGMA integrity_check").fetchone()[0]
        finally:
            con.close()
        check(result == "ok", f"{what}: integrity_check: {result}")

    def log_text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()


def sim_control(sock, line):
    """One line to pn532-sim's control socket; its answer."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(5)
        s.connect(sock)
        s.sendall(line.encode() + b"\n")
        answer = b""
        while not answer.endswith(b"\n"):
            chunk = s.recv(4096)
            if not chunk:
                break
            answer += chunk
    return answer.decode().strip()


def pid_alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def proc_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def proc_sample(pid):
    """(fds, threads, VmRSS kB) of pid."""
    return proc_fds(pid), len(os.listdir(f"/proc/{pid}/task")), proc_status(pid)
