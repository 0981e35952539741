#!/usr/bin/env python3
"""no-leftovers.py [--xunit FILE[,FILE...]] [--allowed-skips FILE] [--label NAME] -- COMMAND...

Runs COMMAND as a child subreaper (PR_SET_CHILD_SUBREAPER): every process
COMMAND starts, however deep, that outlives its parent is reparented here
instead of to pid 1. When COMMAND has exited, any such process still alive
is a leftover: it is named, killed (SIGTERM, then SIGKILL) and reaped, and
the run fails even if COMMAND passed.

--xunit: after the run, count the test cases in these xUnit files (what
`swift test --xunit-output` writes) and print one closing line,
`N passed, N failed, N skipped`; a missing or empty file fails the run.

--allowed-skips: a skipped test case fails the run unless its
`Module.Class/testName` matches a line of FILE (fnmatch patterns; `#` starts
a comment, and every line must say which missing tool the skip stands for). A
skip is how a regression hides: a helper that skips instead of failing turns
a broken feature into a green run.

Exit status: COMMAND's, or 1 when it passed but left processes behind or
its test counts could not be read.
"""
import ctypes
import fnmatch
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

PR_SET_CHILD_SUBREAPER = 36
GRACE_S = 3.0  # a child's own SIGTERM-and-wait may still be in flight


def stat(pid):
    """(ppid, state) of pid, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except OSError:
        return None
    rest = raw[raw.rindex(")") + 2 :].split()
    return int(rest[1]), rest[0]


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode("utf-8", "replace").strip() or f"[pid {pid}]"
    except OSError:
        return f"[pid {pid}]"


def all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def reap_zombies():
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def leftovers():
    """Living processes whose parent is this reaper, with all their descendants."""
    me = os.getpid()
    table = {}
    for pid in all_pids():
        s = stat(pid)
        if s:
            table[pid] = s
    found = [pid for pid, (ppid, state) in table.items() if ppid == me and state != "Z"]
    frontier = list(found)
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, state) in table.items():
            if ppid == parent and state != "Z" and pid not in found:
                found.append(pid)
                frontier.append(pid)
    return found


def count_xunit(paths):
    """(passed, failed, names of the skipped cases as Module.Class/testName)"""
    passed = failed = 0
    skipped = []
    for path in paths:
        root = ET.parse(path).getroot()
        for case in root.iter("testcase"):
            if case.find("failure") is not None or case.find("error") is not None:
                failed += 1
            elif case.find("skipped") is not None:
                skipped.append(f"{case.get('classname', '?')}/{case.get('name', '?')}")
            else:
                passed += 1
    return passed, failed, skipped


def read_allowed_skips(path):
    """The patterns of an allow-list file; a line without a reason is refused."""
    patterns = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            pattern, _, reason = line.partition("#")
            if not reason.strip():
                raise ValueError(f"{path}:{n}: an allowed skip needs a '# reason' naming the missing tool")
            patterns.append(pattern.strip())
    return patterns


def unexpected_skips(skipped, patterns):
    return [name for name in skipped if not any(fnmatch.fnmatchcase(name, p) for p in patterns)]


def main(argv):
    xunit, label, allowed_skips = [], "command", None
    while argv and argv[0] != "--":
        opt = argv.pop(0)
        if opt == "--xunit" and argv:
            xunit = argv.pop(0).split(",")
        elif opt == "--allowed-skips" and argv:
            allowed_skips = argv.pop(0)
        elif opt == "--label" and argv:
            label = argv.pop(0)
        else:
            sys.exit(f"no-leftovers: unknown option {opt}\n{__doc__}")
    command = argv[1:]
    if not command:
        sys.exit(__doc__)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"no-leftovers: prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    for path in xunit:
        if os.path.exists(path):
            os.unlink(path)

    proc = subprocess.Popen(command)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    status = proc.wait()
    status = status if status >= 0 else 128 - status

    deadline = time.monotonic() + GRACE_S
    while True:
        reap_zombies()
        left = leftovers()
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.1)

    result = status
    if left:
        print(f"no-leftovers: {label} left {len(left)} process(es) running:", file=sys.stderr)
        for pid in left:
            print(f"  {pid} {cmdline(pid)}", file=sys.stderr)
        for sig, wait_s in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 2.0)):
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            end = time.monotonic() + wait_s
            while time.monotonic() < end and leftovers():
                reap_zombies()
                time.sleep(0.05)
            if not leftovers():
                break
        reap_zombies()
        result = status or 1
    else:
        print(f"no-leftovers: {label} left no process behind")

    if xunit:
        try:
            passed, failed, skipped = count_xunit(xunit)
        except (OSError, ET.ParseError) as e:
            print(f"no-leftovers: cannot count the test cases: {e}", file=sys.stderr)
            return status or 1
        if passed + failed + len(skipped) == 0:
            print(f"no-leftovers: {label}: no test case in {', '.join(xunit)}", file=sys.stderr)
            return status or 1
        print(f"{label}: {passed} passed, {failed} failed, {len(skipped)} skipped")
        if failed and not result:
            result = 1
        if allowed_skips is not None:
            try:
                patterns = read_allowed_skips(allowed_skips)
            except (OSError, ValueError) as e:
                print(f"no-leftovers: {e}", file=sys.stderr)
                return result or 1
            for name in skipped:
                print(f"  skipped: {name}")
            bad = unexpected_skips(skipped, patterns)
            if bad:
                print(f"no-leftovers: {label}: {len(bad)} skip(s) not on {allowed_skips} "
                      f"(a skip that hides a failure fails the run):", file=sys.stderr)
                for name in bad:
                    print(f"  {name}", file=sys.stderr)
                result = result or 1
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
