"""Disk full: the state directory on a small tmpfs, filled to the last byte
while gatewayd runs.

- the door keeps deciding taps from what it can read: a good sticker is
  granted and pulses the strike, which goes back to locked; a forged one is
  denied;
- the failure is visible: status `store.writable` false with the error, the
  waiting events counted, and once in the journal;
- when space returns the waiting events are written in order (audit rows
  with their original times), the chain verifies, integrity_check is ok, and
  status is writable again.
"""
import os
import subprocess

from lib import Gateway, Rig, check, wait_until

UID = "04D15CF0111111"


def unmount(state):
    """Nothing stays mounted, even if something still holds a file there."""
    if subprocess.run(["umount", state], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", state], check=False)


def run(bindir, report):
    with Rig("diskfull") as rig:
        work = rig.work
        state = os.path.join(work, "state")
        os.makedirs(state)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", state], check=True)
        rig.add(state, lambda: unmount(state))
        g = rig.add(Gateway(bindir, work, state_dir=state)).start()
        filler = os.path.join(state, "filler")
        dump = g.provision(UID, work)
        rows_before = g.count()

        # Fill the disk to the last byte.
        fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for size in (65536, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError:
                    pass
        finally:
            os.close(fd)
        free = os.statvfs(state)
        check(free.f_bavail == 0, f"tmpfs not full: {free.f_bavail} blocks free")

        decided = []
        for n in range(3):
            # The 3 s stock pulse ends and the strike is driven back to locked.
            g.granted_tap(dump, UID, f"full disk, tap {n}")
            decided.append("granted")
            forged = f"smp://action?idx=0&ts=1760000000&sig={os.urandom(32).hex()}"
            g.ctl("sim", "tap", forged, "--uid", "04" + os.urandom(6).hex().upper())
            wait_until(lambda: (g.status().get("last_tag") or {}).get("verdict", "").startswith("denied"), 10,
                       f"full disk, tap {n}: the forged sticker denied")
            decided.append("denied")
            g.ctl("sim", "remove")
            g.outlast()
        g.wait_locked("the strike back to locked")
        st = g.status()["store"]
        check(st["writable"] is False, f"status does not show the full store: {st}")
        check(st["unsaved_events"] >= 6, f"status counts {st['unsaved_events']} waiting events, expected >= 6")
        check("full" in (st.get("last_error") or "").lower(), f"status error does not say full: {st}")
        journal = g.log_text().count("cannot write the store")
        check(journal == 1, f"the journal names the outage {journal} times, expected once")
        waiting = st["unsaved_events"]

        os.unlink(filler)
        wait_until(lambda: g.status()["store"]["writable"], 15, "the store writable again (periodic retry)")
        st = g.status()["store"]
        check(st["unsaved_events"] == 0 and st["dropped_events"] == 0, f"after recovery: {st}")
        rows_after = g.count()
        check(rows_after - rows_before >= waiting, f"{rows_after - rows_before} rows written, {waiting} were waiting")
        kinds = [k for (k,) in g.query("SELECT kind FROM audit WHERE id > ? ORDER BY id", rows_before)]
        check(kinds.count("access_granted") == 3 and kinds.count("access_denied") == 3,
              f"rows written after the outage: {kinds}")
        g.verify_chain("after the outage")
        g.stop()
        g.check_integrity("after the outage")
        report["disk full"] = (
            f"3 MB tmpfs filled; {len(decided)} taps decided while full ({decided.count('granted')} granted with a "
            f"strike pulse, {decided.count('denied')} denied); {waiting} events waited in memory and were written "
            f"when space returned; chain intact, integrity ok")
