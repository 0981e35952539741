#!/usr/bin/env python3
"""The fault suite (make test-faults): run.py BINDIR [SCENARIO...]

Scenarios: powercut, diskfull, reader, broker, flood, abort, clock, clockjump, dst (all by default; clockjump
and dst boot the gpio-vm guest). FAULTS_SEED fixes the random choices; FAULTS_CUTS the
number of power cuts (default 200); FAULTS_KEEP=1 keeps the work directories.
Prints one line per scenario and `test-faults: N passed, N failed`.
"""
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import abort  # noqa: E402
import churn  # noqa: E402
import clock  # noqa: E402
import clockjump  # noqa: E402
import diskfull  # noqa: E402
import dst  # noqa: E402
import powercut  # noqa: E402
from lib import Failure  # noqa: E402


def main(argv):
    if not argv:
        sys.exit(__doc__)
    bindir = os.path.abspath(argv[0])
    seed = int(os.environ.get("FAULTS_SEED", str(int(time.time()))))
    scenarios = {
        "powercut": lambda report: powercut.run(bindir, int(os.environ.get("FAULTS_CUTS", "200")), seed, report),
        "diskfull": lambda report: diskfull.run(bindir, report),
        "reader": lambda report: churn.run_reader(bindir, report),
        "broker": lambda report: churn.run_broker(bindir, report, int(os.environ.get("FAULTS_FLAPS", "100"))),
        "flood": lambda report: churn.run_flood(bindir, report),
        "abort": lambda report: abort.run(bindir, report, int(os.environ.get("FAULTS_ABORTS", "3"))),
        "clock": lambda report: clock.run_unsynchronised(bindir, report),
        "clockjump": lambda report: clockjump.run(bindir, report),
        "dst": lambda report: dst.run(bindir, report),
    }
    chosen = argv[1:] or list(scenarios)
    passed = failed = 0
    for name in chosen:
        report = {}
        start = time.monotonic()
        try:
            scenarios[name](report)
            passed += 1
            outcome = "PASS"
        except Failure as e:
            failed += 1
            outcome = f"FAIL: {e}"
        except Exception:
            failed += 1
            outcome = "ERROR:\n" + traceback.format_exc()
        for k, v in report.items():
            print(f"  {k}: {v}")
        print(f"{name}: {outcome} ({time.monotonic() - start:.0f} s)", flush=True)
    print(f"test-faults: {passed} passed, {failed} failed (seed {seed})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
