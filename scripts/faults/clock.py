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
import struct
import time

from lib import Broker, Gateway, Rig, check, wait_until

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
    uid = "04C10C00000001"
    with Rig("clock") as rig:
        broker = rig.add(Broker(rig.work)).start()
        # The stock setting: lib.Gateway declares the clock synchronised for the other scenarios.
        g = rig.add(Gateway(bindir, rig.work, broker=broker,
                            edits=[("declare_synchronised = true", "declare_synchronised = false")])).start()
        wait_until(g.connected, 20, "connected")
        status = g.status()
        clock = {k: v for k, v in status.items() if "clock" in k}
        check(clock and not any(v is True or (isinstance(v, dict) and v.get("synchronised") is True)
                                for v in clock.values()), f"status does not show the clock unsynchronised: {clock}")
        key_file = g.otp_key_file(rig.work)
        pulses0 = g.pulses()
        message = g.ctl("otp", "make", "--key-file", key_file, "--command", "1").stdout.strip()
        broker.publish("phone/front-door", message)
        rows = wait_until(lambda: g.query("SELECT kind, reason FROM audit WHERE kind LIKE 'remote_%'"), 10,
                          "the phone command judged")
        check(rows == [("remote_rejected", "clock_unsynchronised")], f"phone command with the clock unsynchronised: {rows}")
        time.sleep(1)
        check(g.pulses() == pulses0, "the strike opened for a phone command with an unsynchronised clock")

        g.granted_tap(g.provision(uid, rig.work), uid, "a sticker opens with the clock unsynchronised")
        pulses1 = g.pulses()
        g.ctl("sim", "press")
        wait_until(lambda: g.pulses() > pulses1, 10, "the exit button opens with the clock unsynchronised")
        g.verify_chain("clock unsynchronised")
        report["clock"] = (f"kernel clock unsynchronised (adjtimex), stock declare_synchronised = false: status {clock}; "
                           "a fresh phone command refused (clock_unsynchronised), strike untouched; a sticker and the "
                           "exit button opened; chain verified")
