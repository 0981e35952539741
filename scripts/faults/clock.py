"""Clock: gatewayd started on a kernel clock that is not synchronised (a Pi
without a real-time clock after boot, before NTP), with the stock
`declare_synchronised = false`.

docs/formats.md §3: compat commands are refused while the system clock is not
synchronised; stickers and the exit button keep working. Checked: status
reports the clock unsynchronised; a freshly made phone command (right key,
timestamp now) is refused with reason `clock_unsynchronised` and opens
nothing; a provisioned sticker is granted and pulses the strike; the exit
button pulses it too; the audit chain verifies.

The kernel's state is read as gatewayd reads it (adjtimex: TIME_ERROR or
STA_UNSYNC). The host's clock cannot be unsynchronised by a test; where it is
synchronised the scenario says so and checks nothing. Clock jumps of
CLOCK_REALTIME while gatewayd runs: clockjump.py, in the gpio-vm guest.
"""
import ctypes
import os
import struct
import time

from churn import provision, strike_pulses
from lib import Broker, Gateway, check, outlast_quiet_window, remove, wait_until, work_dir

TIME_ERROR = 5
STA_UNSYNC = 0x0040


def kernel_clock_synchronised():
    """adjtimex(2) with modes 0, as door_clock_synchronised() in CClockSync."""
    buf = ctypes.create_string_buffer(512)
    state = ctypes.CDLL(None, use_errno=True).adjtimex(buf)
    (status,) = struct.unpack_from("i", buf, 40)  # struct timex: modes, pad, offset, freq, maxerror, esterror, status
    return state not in (TIME_ERROR, -1) and status & STA_UNSYNC == 0


def run_unsynchronised(bindir, report):
    if kernel_clock_synchronised():
        report["clock"] = "not run: this host's kernel clock is synchronised (needs an unsynchronised one)"
        return
    work = work_dir("clock")
    broker = Broker(work)
    broker.start()
    # The stock setting: lib.Gateway declares the clock synchronised for the other scenarios.
    g = Gateway(bindir, work, broker=broker,
                edits=[("declare_synchronised = true", "declare_synchronised = false")])
    uid = "04C10C00000001"
    try:
        g.start()
        wait_until(lambda: g.status().get("broker", {}).get("connected") is True, 20, "connected")
        status = g.status()
        clock = {k: v for k, v in status.items() if "clock" in k}
        check(clock and not any(v is True or (isinstance(v, dict) and v.get("synchronised") is True)
                                for v in clock.values()), f"status does not show the clock unsynchronised: {clock}")
        g.ctl("keys", "otp", "new")
        key_file = os.path.join(work, "otp.key")
        with open(key_file, "w") as f:
            f.write(g.ctl("keys", "otp", "export").stdout)
        pulses0 = strike_pulses(g)
        message = g.ctl("otp", "make", "--key-file", key_file, "--command", "1").stdout.strip()
        broker.publish("phone/front-door", message)
        rows = wait_until(lambda: g.query("SELECT kind, reason FROM audit WHERE kind LIKE 'remote_%'"), 10,
                          "the phone command judged")
        check(rows == [("remote_rejected", "clock_unsynchronised")], f"phone command with the clock unsynchronised: {rows}")
        time.sleep(1)
        check(strike_pulses(g) == pulses0, "the strike opened for a phone command with an unsynchronised clock")

        dump = provision(g, uid, work)
        g.ctl("sim", "tap", "--dump", dump, "--uid", uid)
        wait_until(lambda: strike_pulses(g) > pulses0, 10, "a sticker opens with the clock unsynchronised")
        g.ctl("sim", "remove")
        wait_until(lambda: g.status()["outputs"]["strike"] == "locked", 10, "locked after the sticker")
        outlast_quiet_window(g.gateway)
        pulses1 = strike_pulses(g)
        g.ctl("sim", "press")
        wait_until(lambda: strike_pulses(g) > pulses1, 10, "the exit button opens with the clock unsynchronised")
        verify = g.ctl("log", "--verify", check_rc=False)
        check(verify.returncode == 0, f"audit chain: {verify.stdout} {verify.stderr}")
        report["clock"] = (f"kernel clock unsynchronised (adjtimex), stock declare_synchronised = false: status {clock}; "
                           "a fresh phone command refused (clock_unsynchronised), strike untouched; a sticker and the "
                           "exit button opened; chain verified")
    finally:
        if g.alive():
            g.stop()
        broker.stop()
        if os.environ.get("FAULTS_KEEP") != "1":
            remove(work)
