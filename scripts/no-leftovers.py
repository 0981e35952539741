#!/usr/bin/env python3
"""no-leftovers.py [--xunit FILE[,FILE...]] [--allowed-skips FILE] [--label NAME] -- COMMAND...

Runs COMMAND as a child subreaper (PR_SET_CHILD_SUBREAPER): every process
COMMAND starts, however deep, that outlives its parent is reparented here
instead of to pid 1. When COMMAND has exited, any such process still alive
is a leftover: it is named, killed (SIGTERM, then SIGKILL) and reaped, and
the run fails even if COMMAND passed.

--xunit: COMMAND is `swift test --parallel --verbose --xunit-output FILE`.
After the run, count the test cases in these xUnit files (and in the
Swift Testing file SwiftPM writes beside each, FILE-swift-testing.xml, when
there is one) and print one closing line, `N passed, N failed, N skipped`;
a missing or empty file fails the run.
SwiftPM's parallel xUnit file has no `<skipped>`: an XCTSkip'd test is a
plain `<testcase>` there. The skips are read from what the run prints:
with --verbose, `swift test --parallel` prints every test's XCTest output
(`Test Case 'Class.test' skipped (…)`), so COMMAND's standard output is
read here. The output of a test that passed is left out (the log stays
what it was without --verbose); a test that failed, skipped or printed no
result is shown in full. A test case the xUnit file has as not failed but
the output gives no result for fails the run (no --verbose: the skips
could not be seen).

--allowed-skips: a skipped test case fails the run unless its
`Module.Class/testName` matches a line of FILE (fnmatch patterns; `#` starts
a comment, and every line must say which missing tool the skip stands for). A
skip is how a regression hides: a helper that skips instead of failing turns
a broken feature into a green run.

Exit status: COMMAND's, or 1 when it passed but left processes behind, its
test counts could not be read, or a skip was not on the list.
"""
import ctypes
import fnmatch
import os
import re
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


def reap_zombies():
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass


def leftovers():
    """Living processes whose parent is this reaper, with all their descendants."""
    table = {pid: s for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()) if (s := stat(pid))}
    found = [os.getpid()]
    for parent in found:  # grows while it is walked: every descendant, breadth first
        found += [pid for pid, (ppid, state) in table.items() if ppid == parent and state != "Z" and pid not in found]
    return found[1:]


def settle(seconds, step):
    """Reaps until no leftover is alive or `seconds` have passed; the leftovers then."""
    deadline = time.monotonic() + seconds
    while True:
        reap_zombies()
        left = leftovers()
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(step)


# What `swift test --parallel --verbose` prints: the tests' names as they end
# ("[3/5] Testing Module.Class/test"), then each test's XCTest output in the
# same order, one "Selected tests" suite per test.
PROGRESS = re.compile(r"^\[\d+/\d+\] Testing (\S+)$")
SUITE_START = re.compile(r"^Test Suite 'Selected tests' started at ")
SUITE_END = re.compile(r"^Test Suite 'Selected tests' (passed|failed) at ")
CASE_START = re.compile(r"^Test Case '([^']+)' started at ")
CASE_END = re.compile(r"^Test Case '([^']+)' (passed|failed|skipped) \(")


class XCTestOutput:
    """Reads the run's standard output line by line: each test's result
    (`Class.test` and passed/failed/skipped, in order), what it shows."""

    def __init__(self, write):
        self.write = write
        self.progress = []  # Module.Class/test, in the order the tests ended
        self.results = []  # (Class.test or None, outcome or None), one per test output
        self.block = None  # the lines of the test output being read
        self.case = self.outcome = None
        self.ended = False  # its "Selected tests ... passed|failed" line was read
        self.drop_blank = False

    def feed(self, raw):
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if self.block is not None:
            # the end, or a new test whose last one ended without its suite lines (a crash)
            if (self.ended and not line.startswith("\t Executed ")) or SUITE_START.match(line):
                self.close()
            else:
                self.block.append(raw)
                if (m := CASE_START.match(line)) and self.case is None:
                    self.case = m.group(1)
                if (m := CASE_END.match(line)) and m.group(1) == self.case and self.outcome is None:
                    self.outcome = m.group(2)
                if self.ended:
                    self.close()
                elif SUITE_END.match(line):
                    self.ended = True
                return
        drop, self.drop_blank = self.drop_blank, False
        if SUITE_START.match(line):
            self.block, self.case, self.outcome, self.ended = [raw], None, None, False
        elif not (drop and line == ""):
            if m := PROGRESS.match(line):
                self.progress.append(m.group(1))
            self.write(raw)

    def close(self):
        self.results.append((self.case, self.outcome))
        if self.outcome == "passed":  # left out, as without --verbose
            self.drop_blank = True
        else:
            for raw in self.block:
                self.write(raw)
        self.block = None

    def finish(self):
        if self.block is not None:
            self.close()

    def outcomes(self, xctest_cases):
        """{Module.Class/test: outcome}. The module comes from the progress line
        of the same position; if that line names another test (or is missing),
        every test case of that class and name gets the outcome (two modules
        may have a class of the same name: a skip is then never missed)."""
        named = {}
        for k, (case, outcome) in enumerate(self.results):
            if case is None or outcome is None:
                continue
            cls, _, test = case.rpartition(".")
            candidates = [f"{c}/{n}" for c, n in xctest_cases if n == test and (c == cls or c.endswith("." + cls))]
            if k < len(self.progress) and self.progress[k] in candidates:
                candidates = [self.progress[k]]
            for name in candidates or [f"?.{cls}/{test}"]:
                if named.get(name) != "skipped":
                    named[name] = outcome
        return named


def swift_testing_file(path):
    """Where SwiftPM writes the Swift Testing results beside an xUnit file."""
    stem, ext = os.path.splitext(path)
    return f"{stem}-swift-testing{ext}"


def read_xunit(path):
    """[(classname, name, failed, skipped)] of one xUnit file."""
    return [(c.get("classname", "?"), c.get("name", "?"), c.find("failure") is not None or c.find("error") is not None,
             c.find("skipped") is not None) for c in ET.parse(path).getroot().iter("testcase")]


def count_xunit(paths, output=None):
    """(passed, failed, names of the skipped cases as Module.Class/testName,
    names of the XCTest cases the output gave no result for)"""
    xctest = [c for path in paths for c in read_xunit(path)]
    swift_testing = [c for path in paths if os.path.exists(swift_testing_file(path))
                     for c in read_xunit(swift_testing_file(path))]
    printed = output.outcomes([(c, n) for c, n, _, _ in xctest]) if output else {}
    passed = failed = 0
    skipped, silent = [], []
    for classname, name, is_failed, is_skipped in xctest + swift_testing:
        full = f"{classname}/{name}"
        if is_failed:
            failed += 1
        elif is_skipped or printed.get(full) == "skipped":
            skipped.append(full)
        else:
            passed += 1
            if output and (classname, name, is_failed, is_skipped) in xctest and full not in printed:
                silent.append(full)
    return passed, failed, skipped, silent


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


def err(msg):
    print(f"no-leftovers: {msg}", file=sys.stderr)


def main(argv):
    opts = {"--xunit": "", "--allowed-skips": None, "--label": "command"}
    while argv and argv[0] != "--":
        opt = argv.pop(0)
        if opt not in opts or not argv:
            sys.exit(f"no-leftovers: unknown option {opt}\n{__doc__}")
        opts[opt] = argv.pop(0)
    xunit = opts["--xunit"].split(",") if opts["--xunit"] else []
    label, allowed_skips = opts["--label"], opts["--allowed-skips"]
    command = argv[1:]
    if not command:
        sys.exit(__doc__)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit(f"no-leftovers: prctl(PR_SET_CHILD_SUBREAPER): {os.strerror(ctypes.get_errno())}")
    for path in xunit + [swift_testing_file(p) for p in xunit]:
        if os.path.exists(path):
            os.unlink(path)

    output = None
    proc = subprocess.Popen(command, stdout=subprocess.PIPE if xunit else None)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda s, _f: proc.send_signal(s))
    if xunit:
        sys.stdout.flush()

        def write(raw):
            sys.stdout.buffer.write(raw)
            sys.stdout.buffer.flush()

        output = XCTestOutput(write)
        for raw in proc.stdout:
            output.feed(raw)
        output.finish()
    status = proc.wait()
    status = status if status >= 0 else 128 - status

    left = settle(GRACE_S, 0.1)
    result = status
    if left:
        err(f"{label} left {len(left)} process(es) running:")
        for pid in left:
            print(f"  {pid} {cmdline(pid)}", file=sys.stderr)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in left:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            if not settle(2.0, 0.05):
                break
        reap_zombies()
        result = status or 1
    else:
        print(f"no-leftovers: {label} left no process behind")

    if xunit:
        try:
            passed, failed, skipped, silent = count_xunit(xunit, output)
        except (OSError, ET.ParseError) as e:
            err(f"cannot count the test cases: {e}")
            return status or 1
        if passed + failed + len(skipped) == 0:
            err(f"{label}: no test case in {', '.join(xunit)}")
            return status or 1
        print(f"{label}: {passed} passed, {failed} failed, {len(skipped)} skipped")
        if failed and not result:
            result = 1
        if silent:
            err(f"{label}: the run printed no result for {len(silent)} test case(s), e.g. "
                f"{silent[0]}: without `swift test --verbose` a skip cannot be seen")
            result = result or 1
        if allowed_skips is not None:
            try:
                patterns = read_allowed_skips(allowed_skips)
            except (OSError, ValueError) as e:
                err(e)
                return result or 1
            for name in skipped:
                print(f"  skipped: {name}")
            bad = [name for name in skipped if not any(fnmatch.fnmatchcase(name, p) for p in patterns)]
            if bad:
                err(f"{label}: {len(bad)} skip(s) not on {allowed_skips} (a skip that hides a failure fails the run):")
                for name in bad:
                    print(f"  {name}", file=sys.stderr)
                result = result or 1
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
