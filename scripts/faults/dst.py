"""Daylight saving time at the door, through taps (docs/policy.md "Daylight
saving time: what the door does").

gatewayd reads the wall clock itself, so a tap at a DST change needs a clock
the test owns: the gpio-vm guest's, set with `clockctl` as in clockjump.py.
The door runs the stock sim example with `[clock] time_zone =
"Europe/Berlin"` (the host's tzdata file copied into the guest, the only zone
file there) and two Sunday schedules: "spring" 02:30–04:00 and "autumn"
02:00–03:00. A sticker is issued with each (`tags issue --schedule`). The
clock then moves forward only (as a clock floor would want) through 2027's
changes (from 2027-03-27, where the stickers are issued), and at each
instant the sticker is tapped and the daemon's `policy
explain --at` asked:

- Sunday 2027-03-28, 02:00 CET becomes 03:00 CEST; 02:30 does not happen:
  01:59:30 CET denied `outside_schedule`; 03:00:30 CEST granted (the window
  opens when the clocks reach 03:00); 04:00:30 CEST denied;
- Sunday 2027-10-31, 03:00 CEST becomes 02:00 CET; 02:00–02:59 happens twice:
  the first 02:30 (CEST) granted, the second 02:30 (CET) granted, 03:00:30
  CET denied.

A strike pulse for each grant and none for a denial; `policy explain` gives
the tap's own verdict at that instant.
"""
import json
import os

from clockjump import Door
from harness import GUEST_ETC, guest_extra
from lib import Gateway, Guest, Rig, check, unix

ZONE = "Europe/Berlin"
SUNDAY = '["sun"]'

# (UTC instant, sticker, expected verdict, what it is locally)
INSTANTS = [
    ("2027-03-28T00:59:30Z", "spring", "outside_schedule", "01:59:30 CET, the minute before the change"),
    ("2027-03-28T01:00:30Z", "spring", "granted", "03:00:30 CEST: 02:30 never came, the window opened at 03:00"),
    ("2027-03-28T02:00:30Z", "spring", "outside_schedule", "04:00:30 CEST, after the window"),
    ("2027-10-31T00:30:00Z", "autumn", "granted", "the first 02:30 (CEST)"),
    ("2027-10-31T01:30:00Z", "autumn", "granted", "the second 02:30 (CET)"),
    ("2027-10-31T02:00:30Z", "autumn", "outside_schedule", "03:00:30 CET, after the repeated hour"),
]


def run(bindir, report):
    with Rig("dst", report) as rig:
        work = rig.work
        schedules = (
            f'[[schedules]]\nname = "spring"\nwindows = [{{ days = {SUNDAY}, from = "02:30", to = "04:00" }}]\n'
            f'[[schedules]]\nname = "autumn"\nwindows = [{{ days = {SUNDAY}, from = "02:00", to = "03:00" }}]\n'
            "# [[schedules]]\n")
        g = Gateway(bindir, work, edits=[
            ("# [[schedules]]\n", schedules),
            ('# time_zone = "Europe/Berlin"', f'time_zone = "{ZONE}"'),
        ])
        extra = os.path.join(work, "extra")
        zone_file = os.path.join("/usr/share/zoneinfo", ZONE)
        guest_extra(extra, work, (), GUEST_ETC, files=[zone_file])
        guest = rig.add(Guest.boot(work, g.gateway, extra))
        guest.keep = [g.log_path]
        door = Door(guest, g, None)
        check(guest.sh(f"test -f {zone_file}", check_rc=False)[0] == 0, f"the guest has no {zone_file}")
        localtime = guest.sh("test -e /etc/localtime", check_rc=False)[0] == 0

        # A fixed start before the first instant (not the host's now, which passes 2027 one day).
        guest.sh(f"clockctl set {int(unix('2027-03-27T12:00:00Z'))}")
        guest.sh("clockctl sync")
        door.start()
        dumps = {}
        for n, name in enumerate(("spring", "autumn")):
            uid = f"04D57000000{n + 1:03d}"
            dumps[name] = (door.provision(uid, work, ("tags", "issue", "--action", "0", "--schedule", name)), uid)

        seen = []
        for iso, name, expected, local in INSTANTS:
            guest.sh(f"clockctl set {int(unix(iso))}")
            guest.sh("clockctl sync")
            dump, uid = dumps[name]
            explained = json.loads(door.ctl("policy", "explain", "--action", "0", "--tag", uid, "--at", iso,
                                            "--json").stdout)
            before, after = door.tap(dump, uid, f"{name} at {iso}")
            kind, reason = door.last_access()
            verdict = "granted" if kind == "access_granted" else reason
            check(verdict == expected,
                  f"{name} sticker at {iso} ({local}): {kind} {reason}, expected {expected}")
            check(after - before == (1 if expected == "granted" else 0),
                  f"{name} at {iso}: {after - before} strike pulses for {verdict}")
            check(explained.get("reason") == expected and explained.get("allowed") == (expected == "granted"),
                  f"policy explain at {iso}: {explained}, the tap was {verdict}")
            seen.append(f"{iso} {name} {verdict}")
        check(door.ctl("status", check_rc=False).returncode == 0, "gatewayd still answering")
        report["dst"] = (f"{ZONE} from the configuration (guest /etc/localtime: {'yes' if localtime else 'none'}), forward through 2027's "
                         f"changes: {'; '.join(seen)}; a pulse per grant, policy explain agreed at each")
