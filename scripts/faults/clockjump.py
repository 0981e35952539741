"""Clock jumps: CLOCK_REALTIME stepped back 3 h and forward 5 h while
gatewayd runs (docs/formats.md §3, §4, §5).

The host's clock is never touched. The door runs in the gpio-vm guest
(Debian 12's 6.1 kernel under QEMU TCG, scripts/gpio-vm/run.sh PREPARE=…),
where the wall clock is ours: `clockctl` (scripts/gpio-vm/clockctl.c) sets
CLOCK_REALTIME with clock_settime and, as an NTP daemon does once locked,
clears STA_UNSYNC with adjtimex. The suite drives the guest through
scripts/gpio-vm/agent.sh on the second serial port (a Unix socket here).

In the guest: the static gateway on the stock sim example (stock
`declare_synchronised = false`: the kernel's word is taken), mosquitto on the
shipped provisioning/ configuration and ACL with TLS (the host's mosquitto
and its shared libraries copied into the initramfs; certificates made here),
mosquitto_pub as the phone, and mosquitto_sub as Home Assistant recording
every event. The certificates are valid from the host's "now"; the guest's
clock starts 4 h ahead so that every wall time the door visits (+4 h, +1 h,
+6 h) lies inside their validity.

Checked, each a failure when it does not hold; compat (§3) and native (§5)
commands alike:
- synchronised: a fresh command is accepted and pulses the strike once; the
  same message again at once is refused (`replay`);
- right after every step the kernel says unsynchronised (status too) and a
  fresh command is refused (`clock_unsynchronised`); the checks below run
  once the clock is synchronised again;
- stepped back a few seconds, so that the accepted block is fresh again: it
  is refused (`replay`: the replay record);
- stepped back 3 h: the logged block and message are refused (they are 3 h in
  the future: `future`), and ones made for the new, earlier wall time are
  refused by the highest-accepted rule (`older_than_highest`:
  ts + tolerance < highest);
- stepped forward 5 h: the old ones refused as `stale`, fresh ones accepted;
- right after every step of hours, while the kernel says unsynchronised, a sticker
  issued with a schedule (`tags issue --schedule shop`, a window over the
  whole week) is denied `clock_unsynchronised` without a pulse, and the
  sticker without limits still opens (docs/policy.md "An unsynchronised
  clock"); synchronised, the scheduled sticker opens in every phase;
- 3 h back, a v2 sticker whose registry expiry lies between the wall clock
  and the latest synchronised time the door saw is denied (its clock floor);
  one whose expiry lies after that floor and before the wall time of the
  forward step is granted before the step and denied (`expired`) after it; a sticker
  without expiry and the exit button open in every phase;
- gatewayd keeps its pid through these steps;
- then stepped back 5 h and gatewayd restarted: fresh messages are refused
  (`older_than_highest`: the highest timestamps come from the store), and the
  sticker that had expired stays denied (`expired`): expiry is judged no
  earlier than the latest synchronised time the door saw (its clock floor,
  kept in the store), so setting the clock back does not revive it;
- the strike pulses exactly once per grant (never on a refusal); the audit
  chain verifies; the outbox drains and the events Home Assistant received,
  in seq order, are the audit rows (kind and time); the audit rows' times
  follow the guest's clock; telemetry is stamped with its phase's wall time.
"""
import base64
import collections
import hashlib
import hmac
import json
import os
import sqlite3
import subprocess
import time

from harness import GUEST_ETC, guest_extra
from lib import PROVISIONING, Broker, DoorControls, Gateway, Guest, Rig, check, messages, unix, wait_until

HOUR = 3600
GUEST_LIBS = ("/usr/sbin/mosquitto", "/usr/bin/mosquitto_pub", "/usr/bin/mosquitto_sub")


class Door(DoorControls):
    """gatewayd, its broker and Home Assistant's subscriber in the guest."""

    gateway = None  # the guest's own CPU: no other time scale

    def __init__(self, guest, g, broker):
        self.guest, self.g, self.broker = guest, g, broker
        self.env = f"DOORGATEWAY_SOCKET={g.socket}"
        self.pid = None

    def ctl(self, *args, check_rc=True):
        quoted = " ".join("'" + a.replace("'", "'\\''") + "'" for a in args)
        rc, out = self.guest.sh(f"{self.env} /bin/gateway ctl {quoted}", check_rc=check_rc)
        return subprocess.CompletedProcess(args, rc, out, "")

    def start(self, what=""):
        """gatewayd started in the guest (its pid kept), answering, and connected when it has a broker."""
        self.pid = int(self.guest.sh(f"/bin/gateway daemon --config {self.g.config} >> {self.g.log_path} 2>&1 "
                                     "& echo $!")[1])
        wait_until(lambda: self.ctl("status", check_rc=False).returncode == 0, 60, f"gatewayd answering status{what}",
                   0.5)
        if self.broker:
            wait_until(lambda: self.status().get("broker", {}).get("connected") is True, 60,
                       f"connected to the broker{what}", 0.5)

    def clock(self):
        """The guest's wall clock and the kernel's synchronisation flag."""
        out = self.guest.sh("clockctl show")[1].split()
        return int(out[0]), out[1] == "1"

    def pulses(self):
        return int(self.guest.sh(f"grep -c 'sim output strike → unlocked' {self.g.log_path}", check_rc=False)[1]
                   .strip() or 0)

    def log_rows(self, keep):
        """The audit rows of `gatewayctl log --json --limit 200` whose kind `keep` accepts, oldest first."""
        rows = json.loads(self.ctl("log", "--json", "--limit", "200").stdout)
        rows = [r for r in (rows.get("rows", rows) if isinstance(rows, dict) else rows) if keep(str(r.get("kind")))]
        key = "seq" if all("seq" in r for r in rows) else "id"
        return sorted(rows, key=lambda r: r.get(key, 0))

    def last_access(self):
        """The newest tap decision in the audit log: (kind, reason)."""
        taps = self.log_rows(lambda k: k in ("access_granted", "access_denied"))
        return (taps[-1].get("kind"), taps[-1].get("reason")) if taps else (None, None)

    def command(self, message, what, copies=1):
        """Publish a compat or native command (`copies` times, back to back: inside the freshness window); wait
        for its audit rows; ([(kind, reason)] oldest first, strike pulses before, after)."""
        remote = lambda: self.log_rows(lambda k: k.startswith("remote_"))  # noqa: E731
        seen = len(remote())
        before = self.pulses()
        topic = "doorgateway/front-door/command" if message.startswith('{"action"') else "phone/front-door"
        for _ in range(copies):
            self.guest.sh(f"/usr/bin/mosquitto_pub {' '.join(self.broker.client_args('phone-alice'))} -q 1 "
                          f"-t {topic} -m '{message}'")
        rows = wait_until(lambda: (lambda r: r if len(r) >= seen + copies else None)(remote()), 20,
                          f"{what}: the command judged")
        check(len(rows) == seen + copies, f"{what}: {len(rows) - seen} audit rows for {copies} messages")
        verdicts = [(r.get("kind"), r.get("reason")) for r in rows[-copies:]]
        if any(kind == "remote_accepted" for kind, _ in verdicts):
            wait_until(lambda: self.pulses() > before, 10, f"{what}: the strike pulses")
            self.wait_locked(what, 15, 0.2)
        time.sleep(1)
        return verdicts, before, self.pulses()

    def make(self, now=None):
        extra = ["--now", str(now)] if now is not None else []
        return self.ctl("otp", "make", "--key-file", self.key_file, "--command", "1", *extra).stdout.strip()

    def native(self, ts=None, action=0):
        """A native command (docs/formats.md §5) signed here with the exported command key; ts: the guest's now."""
        ts = self.clock()[0] if ts is None else ts
        nonce = os.urandom(16).hex()
        mac = hmac.new(self.command_key, f"cmd1|front-door|{action}|{ts}|{nonce}".encode(), hashlib.sha256).hexdigest()
        return json.dumps({"action": action, "ts": ts, "nonce": nonce, "device": "front-door", "mac": mac},
                          separators=(",", ":"))

    def tap(self, dump, uid, what):
        before = self.pulses()
        self.ctl("sim", "tap", "--dump", dump, "--uid", uid)
        time.sleep(1.5)
        self.ctl("sim", "remove")
        self.wait_locked(what, 15, 0.2)
        self.outlast()
        return before, self.pulses()

    def press(self, what):
        before = self.pulses()
        self.ctl("sim", "press")
        wait_until(lambda: self.pulses() > before, 10, f"{what}: the exit button opens")
        self.wait_locked(what, 15, 0.2)
        self.outlast()
        return self.pulses() - before


def run(bindir, report):
    with Rig("clockjump", report) as rig:
        work = rig.work
        broker = Broker(work)
        g = Gateway(bindir, work, broker=broker,
                    # The stock setting: the kernel says whether the clock is synchronised.
                    edits=[("declare_synchronised = true", "declare_synchronised = false"),
                           # A schedule open all week: only the clock's state can shut it.
                           ('# [[schedules]]\n# name = "shop"\n# windows = [', '[[schedules]]\nname = "shop"\n'
                            'windows = [{ days = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"], from = "00:00", '
                            'to = "24:00" }]\n# windows = [')])
        # What the initramfs carries besides run.sh's own: the work directory at the same path (certificates,
        # broker and gateway configuration), the host's mosquitto binaries with their shared libraries, the
        # ACL the broker's configuration names by path, /etc basics.
        extra = os.path.join(work, "extra")
        libs = guest_extra(extra, work, GUEST_LIBS,
                           GUEST_ETC | {"hosts": "127.0.0.1 localhost\n",
                                        "nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n"},
                           files=[os.path.join(PROVISIONING, "doorgateway.acl")])
        guest = rig.add(Guest.boot(work, g.gateway, extra))
        guest.keep = [g.log_path, f"{work}/mosquitto.out"]
        door = Door(guest, g, broker)

        # Wall clock: host now + 4 h, synchronised (the kernel's flag cleared as NTP would).
        host_now = int(time.time())
        w0 = host_now + 4 * HOUR
        guest.sh(f"clockctl set {w0}")
        check(door.clock()[1] is False, "clock_settime left the kernel clock synchronised (expected STA_UNSYNC)")
        guest.sh("clockctl sync")
        check(door.clock()[1] is True, "adjtimex did not clear STA_UNSYNC")

        guest.sh(f"/usr/sbin/mosquitto -c {broker.path('mosquitto.conf')} > {work}/mosquitto.out 2>&1 &")
        guest.sh(f"for i in $(seq 100); do grep -q 'mosquitto version.*running' {broker.path('mosquitto.log')} "
                 f"2>/dev/null && exit 0; sleep 0.1; done; cat {work}/mosquitto.out {broker.path('mosquitto.log')}; "
                 "exit 1")
        events = os.path.join(work, "ha.txt")
        guest.sh(f"/usr/bin/mosquitto_sub {' '.join(broker.client_args('homeassistant'))} -q 1 -c -i faults-ha "
                 f"-t 'doorgateway/front-door/#' -F '%t|%p' > {events} 2>/dev/null &")
        door.start()
        started_s = time.monotonic() - guest.started
        st = door.status()
        check(st.get("clock_synchronised") is True,
              f"status with the clock synchronised: {st.get('clock_synchronised')}")

        door.ctl("keys", "otp", "new")
        door.key_file = os.path.join(work, "otp.key")
        guest.sh(f"{door.env} /bin/gateway ctl keys otp export > {door.key_file}")
        door.ctl("keys", "command", "new")
        door.command_key = bytes.fromhex(door.ctl("keys", "command", "export").stdout.strip())
        check(len(door.command_key) >= 16, "command key export")
        plain, limited, scheduled = "04C10C00000001", "04C10C00000002", "04C10C00000003"
        dump_plain = door.provision(plain, work)
        dump_limited = door.provision(limited, work)
        dump_scheduled = door.provision(scheduled, work, ("tags", "issue", "--action", "0", "--schedule", "shop"))

        grants = 0  # strike pulses the door owes: grants, accepted commands, exit presses
        phases = []

        def expect(before_after, what, opens):
            """One strike pulse for a grant, none on a refusal."""
            nonlocal grants
            before, after = before_after
            if opens:
                check(after == before + 1, f"{what}: strike pulses {before} → {after} (expected one)")
                grants += 1
            else:
                check(after == before, f"{what}: the strike pulsed on a refusal ({before} → {after})")

        def command(message, what, kind, reasons=None):
            [(got_kind, reason)], before, after = door.command(message, what)
            check(got_kind == kind and (reasons is None or reason in reasons),
                  f"{what}: {got_kind} ({reason}), expected {kind} {reasons or ''}")
            expect((before, after), what, kind == "remote_accepted")
            return reason

        def accepted_then_replayed(message, what):
            """The same message twice inside the window: accepted once (one pulse), then refused as a replay."""
            verdicts, before, after = door.command(message, what, copies=2)
            check(verdicts == [("remote_accepted", None), ("remote_rejected", "replay")],
                  f"{what}: {verdicts}, expected accepted then refused (replay)")
            expect((before, after), what, True)

        def stickers(what, limited_granted):
            expect(door.tap(dump_plain, plain, f"{what}: sticker without expiry"), f"{what}: sticker", True)
            expect(door.tap(dump_scheduled, scheduled, f"{what}: sticker with a schedule"),
                   f"{what}: sticker with a schedule, synchronised", True)
            if limited_granted is not None:
                expect(door.tap(dump_limited, limited, f"{what}: sticker with expiry"),
                       f"{what}: sticker with expiry, not yet expired" if limited_granted else f"{what}: expired sticker",
                       limited_granted)
            nonlocal grants
            n = door.press(what)
            check(n == 1, f"{what}: the exit button pulsed {n} times")
            grants += 1

        def scheduled_unsynchronised(what):
            """Right after a step, unsynchronised: access limited by a schedule fails closed, access
            without limits does not."""
            expect(door.tap(dump_scheduled, scheduled, f"{what}, unsynchronised: sticker with a schedule"),
                   f"{what}, unsynchronised: sticker with a schedule", False)
            last = door.last_access()
            check(last == ("access_denied", "clock_unsynchronised"),
                  f"{what}, unsynchronised: the scheduled sticker's decision {last}, expected access_denied "
                  f"(clock_unsynchronised)")
            expect(door.tap(dump_plain, plain, f"{what}, unsynchronised: sticker without limits"),
                   f"{what}, unsynchronised: sticker without limits", True)
            check(door.clock()[1] is False, f"{what}: the clock synchronised itself during the taps")

        def jump(delta, what, taps=True):
            phases[-1][2] = door.clock()[0]
            guest.sh(f"clockctl shift {delta}")
            wall, synced = door.clock()
            st = door.status()
            check(not synced and st.get("clock_synchronised") is False,
                  f"{what}: after the step the kernel says synchronised={synced}, "
                  f"status {st.get('clock_synchronised')}")
            command(door.make(), f"{what}, unsynchronised: a fresh command", "remote_rejected", {"clock_unsynchronised"})
            # Access limited by a schedule fails closed; access without limits does not. (Not on the
            # step of seconds: its logged block must still be fresh afterwards.)
            if taps:
                scheduled_unsynchronised(what)
            guest.sh("clockctl sync")
            st = door.status()
            check(st.get("clock_synchronised") is True,
                  f"{what}: status after the resync: {st.get('clock_synchronised')}")
            return wall
        # Phase 1: synchronised at w0.
        phases.append(["start", w0, None])
        b1_ts = door.clock()[0]
        b1 = door.make(now=b1_ts)
        accepted_then_replayed(b1, "synchronised: a fresh compat command, twice")
        # A step back of seconds, so that the logged block is fresh again (the step lands 4 s before its
        # timestamp; resynchronising takes a few): only the replay record can refuse it.
        small = door.clock()[0] - b1_ts + 4
        jump(-small, f"{small} s back", taps=False)
        skew = door.clock()[0] - b1_ts
        # On a loaded host the step's own checks can outlast the 4 s margin (CI once saw +4 s here and the
        # command judged 6 s old: stale, not replay). Step back again, straight to a few seconds before the
        # block, until the block is not older than the clock; the command is then judged inside the window.
        corrections = 0
        while skew > 0 and corrections < 3:
            guest.sh(f"clockctl shift {-(skew + 3)}")
            guest.sh("clockctl sync")
            skew = door.clock()[0] - b1_ts
            corrections += 1
        check(-5 < skew <= 0, f"{small} s back (+{corrections} corrections): the logged block is {skew} s old, "
              "not fresh: the guest is too slow")
        command(b1, f"{small} s back: the logged block, fresh again ({skew:+d} s)", "remote_rejected", {"replay"})
        small_step = (f"{small} s back ({corrections} correction steps): the logged block, {skew:+d} s old (fresh), "
                      "refused replay")
        n1 = door.native()
        accepted_then_replayed(n1, "synchronised: a fresh native command, twice")
        stickers("synchronised", None)

        # Phase 2: 3 h back.
        wall = jump(-3 * HOUR, "3 h back")
        phases.append(["back", wall, None])
        check(abs(wall - (w0 - 3 * HOUR)) < 300, f"3 h back: the guest's clock says {wall}, w0 {w0}")
        replay_back = command(b1, "3 h back: the logged block again", "remote_rejected",
                              {"future", "replay", "older_than_highest"})
        b2 = door.make()
        command(b2, "3 h back: a block made for the new wall time", "remote_rejected", {"older_than_highest"})
        native_back = command(n1, "3 h back: the logged native command again", "remote_rejected",
                              {"future", "replay", "older_than_highest"})
        n2 = door.native()
        command(n2, "3 h back: a native command for the new wall time", "remote_rejected", {"older_than_highest"})
        now_back = door.clock()[0]
        # An expiry between this wall time and the latest synchronised time the door saw (w0): passed for
        # the door, whatever the clock now says (its clock floor).
        door.ctl("tags", "expire", limited, "--at", str(now_back + 2 * HOUR))
        expect(door.tap(dump_limited, limited, "3 h back: an expiry the door had already passed"),
               "3 h back: a sticker whose expiry lies between the wall clock and the clock floor", False)
        expiry = w0 + HOUR  # after the floor, before the wall time after the step forward
        door.ctl("tags", "expire", limited, "--at", str(expiry))
        stickers("3 h back", True)

        # Phase 3: 5 h forward.
        wall = jump(5 * HOUR, "5 h forward")
        phases.append(["forward", wall, None])
        check(wall > expiry, f"5 h forward: the wall clock {wall} is not past the expiry {expiry}")
        command(b1, "5 h forward: the first block again", "remote_rejected", {"stale"})
        command(b2, "5 h forward: the refused block again", "remote_rejected", {"stale"})
        command(door.make(now=w0 + 60), "5 h forward: a never-seen block from before", "remote_rejected", {"stale"})
        command(door.make(), "5 h forward: a fresh command", "remote_accepted")
        command(n1, "5 h forward: the first native command again", "remote_rejected", {"stale"})
        command(n2, "5 h forward: the refused native command again", "remote_rejected", {"stale"})
        command(door.native(), "5 h forward: a fresh native command", "remote_accepted")
        stickers("5 h forward", False)

        # The whole run.
        phases[-1][2] = door.clock()[0]
        cmdline = guest.sh(f"tr '\\0' ' ' < /proc/{door.pid}/cmdline", check_rc=False)[1]
        check(cmdline.startswith("/bin/gateway daemon"), f"gatewayd's pid {door.pid} is gone ({cmdline!r})")
        pid = door.pid

        # Phase 4: 5 h back again (before the sticker's expiry) and gatewayd restarted: the highest accepted
        # timestamps come from the store.
        wall = jump(-5 * HOUR, "5 h back, before a restart")
        phases.append(["restart", wall, None])
        # Ended: gone, or a zombie (its parent, the agent's shell, is gone; init does not reap it).
        guest.sh(f"kill {door.pid}; for i in $(seq 200); do s=$(awk '/^State:/{{print $2}}' /proc/{door.pid}/status "
                 "2>/dev/null); { [ -z \"$s\" ] || [ \"$s\" = Z ]; } && exit 0; sleep 0.1; done; exit 1")
        door.start(" after restart")
        command(door.make(), "restarted 5 h back: a fresh block", "remote_rejected", {"older_than_highest"})
        command(door.native(), "restarted 5 h back: a fresh native command", "remote_rejected", {"older_than_highest"})
        expired_back = door.tap(dump_limited, limited, "restarted 5 h back: the sticker that had expired")
        expect(expired_back, "restarted 5 h back: the sticker that had expired (clock floor)", False)
        revived = expired_back[1] - expired_back[0]
        stickers("restarted 5 h back", None)
        phases[-1][2] = door.clock()[0]

        pulses = door.pulses()
        check(pulses == grants, f"the strike pulsed {pulses} times for {grants} grants")
        door.verify_chain("at the end")
        wait_until(lambda: door.status()["broker"].get("outbox") == 0, 30, "outbox drained", 0.5)
        time.sleep(2)
        backup = os.path.join(work, "backup.db")
        door.ctl("backup", backup)
        local_db = os.path.join(work, "audit.db")
        with open(local_db, "wb") as f:
            f.write(base64.b64decode(guest.sh(f"base64 {backup} | tr -d '\\n'")[1]))
        ha = guest.sh(f"cat {events}")[1]
        with open(events, "w") as f:
            f.write(ha)
        ha = ha.splitlines()
        con = sqlite3.connect(local_db)
        try:
            cols = [r[1] for r in con.execute("PRAGMA table_info(audit)")]
            check({"id", "time", "kind", "reason"} <= set(cols), f"audit columns: {cols}")
            rows = con.execute("SELECT id, kind, reason, time FROM audit ORDER BY id").fetchall()
        finally:
            con.close()
        events_by_seq = {e.get("seq"): (e.get("kind"), round(unix(e.get("time")))) for e in messages(ha, "/event")}
        telemetry = messages(ha, "/telemetry")
        # At least once: a message delivered twice has one seq; the door's events in seq order are its audit rows.
        delivered = [events_by_seq[k] for k in sorted(events_by_seq)]
        audited = [(kind, t) for _, kind, _, t in rows]
        check(delivered == audited,
              f"events at the broker ({len(delivered)}) are not the audit rows ({len(audited)}): first difference "
              f"{next(((a, b) for a, b in zip(delivered, audited) if a != b), None)}")
        # Audit times follow the guest's clock: the rows of the 3 h back phase are stamped ~3 h before the first.
        times = [unix(r[3]) for r in rows]
        check(min(times) < w0 - 2 * HOUR and max(times) > w0 + HOUR,
              f"audit times do not follow the clock steps: {min(times)}…{max(times)}, w0 {w0}")
        check(telemetry and all(isinstance(t.get("clock_synchronised"), bool) for t in telemetry),
              f"telemetry does not name the clock's state: {telemetry[:2]}")
        # Each telemetry message is stamped with the wall time of the phase it was sent in.
        stamped = []
        for t in telemetry:
            at = unix(t.get("time"))
            phase = next((name for name, a, b in phases if a - 5 <= at <= b + 5), None)
            check(phase, f"telemetry stamped {t.get('time')} outside every phase's wall time {phases}")
            stamped.append(f"{phase} {'synchronised' if t['clock_synchronised'] else 'unsynchronised'}")
        reasons = dict(collections.Counter(f"{kind}:{reason}" for _, kind, reason, _ in rows
                                           if kind.startswith("remote_") or kind in ("denied", "tap_denied")))
        report["clockjump"] = (
            f"guest {guest.initrd_mb:.0f} MB initramfs ({libs} mosquitto files), boot → agent {guest.boot_s:.1f} s, gatewayd "
            f"connected {started_s:.1f} s after boot; wall clock +4 h → −3 h → +5 h (STA_UNSYNC after each step, "
            f"commands refused until resynchronised, a scheduled sticker denied clock_unsynchronised and one "
            f"without limits granted meanwhile); {small_step}; compat and native alike: the logged "
            f"message 3 h back: "
            f"{replay_back}/{native_back}; one made for the earlier wall time: older_than_highest; after +5 h old "
            f"messages stale, fresh ones accepted; sticker "
            f"with expiry granted before, denied after; pid {pid} kept through the steps; restarted 5 h back: "
            f"fresh compat and native refused older_than_highest (persisted), the expired sticker "
            f"{'GRANTED again' if revived else 'denied'}; {grants} strike pulses = grants; "
            f"chain verified; {len(audited)} audit rows = events at the broker (kind, time); telemetry "
            f"({', '.join(stamped)}) stamped with its phase's wall time; remote/denied rows {reasons}")
