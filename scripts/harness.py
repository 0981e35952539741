"""What the Python harnesses share: children that die with their parent
(popen), a free port and the shipped broker configuration relocated (the
fault suite's lib.py, scripts/ha/ha_acceptance.py);
for the benches (scripts/bench-daemon.py, scripts/bench-storage.py) and the
clock-jump fault scenario (scripts/faults/clockjump.py): the
percentile their figures use, the benches' gatewayd configuration, and the
gpio-vm guest's additions (the work directory, host binaries with their
shared libraries, /etc basics) that run.sh PREPARE=… EXTRA=… packs into the
initramfs. Imported, never run.
"""
import ctypes
import os
import shutil
import signal
import socket
import subprocess

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: the child gets SIGKILL when the harness dies."""
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def popen(args, **kw):
    """subprocess.Popen of a child that dies with the harness (PR_SET_PDEATHSIG)."""
    return subprocess.Popen(args, preexec_fn=die_with_parent, **kw)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def shipped_broker_conf(port, ca, cert, key, extra):
    """(text, missing): provisioning/mosquitto-doorgateway.conf listening on
    127.0.0.1:port with these certificate files and the tree's ACL, then the
    lines extra; missing, the keys of the lines it relocates that the shipped
    file lacks (the caller's check)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    replace = {"listener": f"{port} 127.0.0.1", "cafile": ca, "certfile": cert, "keyfile": key,
               "acl_file": os.path.join(root, "provisioning", "doorgateway.acl")}
    lines = []
    with open(os.path.join(root, "provisioning", "mosquitto-doorgateway.conf")) as f:
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


def guest_extra(extra, work, executables, etc=GUEST_ETC):
    """Fills `extra` (run.sh's EXTRA tree) with: the work directory at its own
    path (less the VM's files), each of `executables` (host paths) with the
    shared libraries ldd names, at their host paths, and the files of `etc`
    ({name: text}) in /etc. Returns how many executables and libraries."""
    shutil.copytree(work, extra + work, ignore=shutil.ignore_patterns("vm", "extra", "agent.sock", "console.log"))
    files = set(executables)
    for exe in executables:
        out = subprocess.run(["ldd", exe], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
                files.add(parts[2])
            elif parts and parts[0].startswith("/"):
                files.add(parts[0])
    for path in files:
        dest = extra + path
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(os.path.realpath(path), dest)
        os.chmod(dest, 0o755)
    os.makedirs(os.path.join(extra, "etc"), exist_ok=True)
    for name, text in etc.items():
        with open(os.path.join(extra, "etc", name), "w") as f:
            f.write(text)
    return len(files)
