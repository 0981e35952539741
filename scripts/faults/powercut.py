"""Power cut: gatewayd SIGKILLed at random points while it writes its store
(provisioning, audit appends, outbox commits, replay records), then checked:

- SQLite's `PRAGMA integrity_check` is `ok` after every cut;
- the audit chain verifies after every restart (`gatewayctl log --verify`);
- no sticker is active in the registry without its verified write
  (a `provisioning_written` audit row for that UID);
- no accepted remote command is accepted again: the same message resent
  right after the restart (inside its freshness window) is refused;
- no event is lost from the outbox: every audit row reaches the broker as an
  event at least once (duplicates allowed: at-least-once), checked against a
  persistent subscriber that ran through every cut;
- what is durable when the relay moves (docs/reliability.md, "What a power
  cut keeps"): a guest pass (100 000 uses) is tapped alone and cut at random;
  after every cut the uses taken on disk are at least the relay moves the
  guest pass ever made (gatewayd's log line of the sim strike; a power cut
  never gives a use back);
- what is durable soon after: `promise` cuts wait for the relay's log line,
  then PROMISE_MS (200; FAULTS_PROMISE_MS) more, then SIGKILL: the tap's
  `access_granted` row (and with it last_seen) must be on disk.
"""
import collections
import os
import random
import time

from lib import (Broker, Failure, Gateway, Subscriber, check, lost_events, outlast_quiet_window, remove, wait_until,
                 work_dir)

UID_GRANTED = "04A1B2C3D4E5F6"
UID_GUEST = "04A1B2C3D4E5F7"
GUEST_USES = 100000
PROMISE_MS = float(os.environ.get("FAULTS_PROMISE_MS", "200"))
UNLOCKED = "sim output strike → unlocked"


def run(bindir, cuts, seed, report):
    rng = random.Random(seed)
    work = work_dir("powercut")
    broker = Broker(work)
    broker.start()
    sub = Subscriber(broker, "doorgateway/front-door/event")
    g = Gateway(bindir, work, broker=broker)
    try:
        g.start()
        # Setup: the timestamp key for phone commands, and one provisioned sticker.
        g.ctl("keys", "otp", "new")
        key_file = os.path.join(work, "otp.key")
        with open(key_file, "w") as f:
            f.write(g.ctl("keys", "otp", "export").stdout)
        g.ctl("provision", "arm", "--action", "0")
        g.ctl("sim", "tap", "--blank", "--uid", UID_GRANTED)
        wait_until(lambda: any(e.get("kind") == "provisioning_written" for e in g.status().get("recent_events", [])) or
                   g.count("provisioning_written") > 0, 20, "the setup sticker written")
        dump = os.path.join(work, "sticker.dump")
        g.ctl("sim", "dump", dump)
        g.ctl("sim", "remove")
        # A guest pass with more uses than the run can take.
        g.ctl("provision", "arm", "--action", "0", "--guest", "--uses", str(GUEST_USES))
        g.ctl("sim", "tap", "--blank", "--uid", UID_GUEST)
        wait_until(lambda: g.count("provisioning_written") >= 2, 20, "the guest pass written")
        guest_dump = os.path.join(work, "guest.dump")
        g.ctl("sim", "dump", guest_dump)
        g.ctl("sim", "remove")
        outlast_quiet_window(g.gateway)
        guest_unlocks = 0  # relay moves the guest pass made, from gatewayd's log
        promises = collections.Counter()

        ops = collections.Counter()
        replay_checks = 0
        early_resends = 0
        for i in range(cuts):
            op = rng.choice(["tap", "deny", "remote", "provision", "mixed", "guest", "promise"])
            ops[op] += 1
            message = None
            accepted0 = _accepted(g)
            if op in ("tap", "mixed"):
                g.ctl("sim", "tap", "--dump", dump, "--uid", UID_GRANTED)
            if op in ("deny", "mixed"):
                g.ctl("sim", "tap", f"smp://action?idx=0&ts=1760000000&sig={os.urandom(32).hex()}", "--uid",
                      "04" + os.urandom(6).hex().upper())
            if op in ("remote", "mixed"):
                message = g.ctl("otp", "make", "--key-file", key_file, "--command", "1").stdout.strip()
                broker.publish("phone/front-door", message)
            if op == "provision":
                g.ctl("provision", "arm", "--action", "0")
                g.ctl("sim", "tap", "--blank", "--uid", "04" + os.urandom(6).hex().upper())
            unlocks0 = _unlocks(g)
            if op == "guest":
                g.ctl("sim", "tap", "--dump", guest_dump, "--uid", UID_GUEST)
            if op == "promise":
                # Cut PROMISE_MS after the relay moved: the tap's row must be on disk.
                uid, tag = rng.choice([(UID_GRANTED, dump), (UID_GUEST, guest_dump)])
                rows0 = g.count("access_granted", uid)
                g.ctl("sim", "tap", "--dump", tag, "--uid", uid)
                wait_until(lambda: _unlocks(g) > unlocks0, 10, f"cut {i}: the relay moved", 0.002)
                time.sleep(PROMISE_MS / 1000)
            else:
                time.sleep(rng.uniform(0, 0.6))
            g.kill()
            if op == "guest" or (op == "promise" and uid == UID_GUEST):
                guest_unlocks += _unlocks(g) - unlocks0
            if op == "promise":
                check(g.count("access_granted", uid) == rows0 + 1,
                      f"cut {i} (promise, {uid}): the access_granted row not on disk {PROMISE_MS:.0f} ms after the "
                      f"relay moved ({g.count('access_granted', uid) - rows0} new)")
                promises[uid] += 1
            taken = GUEST_USES - _uses_left(g, UID_GUEST)
            check(taken >= guest_unlocks,
                  f"cut {i} ({op}): the guest pass moved the relay {guest_unlocks}× but {taken} uses are on disk")
            result = g.integrity()
            check(result == "ok", f"cut {i} ({op}): integrity_check: {result}")
            g.start()
            verify = g.ctl("log", "--verify", check_rc=False)
            check(verify.returncode == 0, f"cut {i} ({op}): audit chain: {verify.stdout} {verify.stderr}")
            if message is not None:
                # The same message resent inside its freshness window: judged,
                # and across the cut and the resend accepted at most once.
                # The door's session is clean: a message published before it
                # has subscribed again is not kept for it. Wait for the
                # connection, and send once more if the first copy came too
                # early (the subscription follows the connection).
                judged0 = _accepted(g) + g.count("remote_rejected")
                wait_until(lambda: g.status().get("broker", {}).get("connected") is True, 20,
                           f"cut {i}: connected again")
                judged = lambda: _accepted(g) + g.count("remote_rejected") > judged0  # noqa: E731
                for attempt in range(2):
                    broker.publish("phone/front-door", message)
                    try:
                        wait_until(judged, 10, f"cut {i}: the resent command judged")
                        break
                    except Failure:
                        if attempt == 1:
                            raise
                        early_resends += 1
                time.sleep(0.3)
                check(_accepted(g) - accepted0 <= 1, f"cut {i} ({op}): one command accepted twice across a cut")
                replay_checks += 1
            g.ctl("sim", "remove", check_rc=False)

        # Let the outbox drain, stop cleanly, and compare.
        g.wait_outbox_drained()
        time.sleep(1)
        g.stop()
        time.sleep(0.5)
        rows = g.audit()
        active = [r[0] for r in g.query("SELECT uid FROM issued_tag WHERE state = 'active'")]
        written = {r[6] for r in rows if r[2] == "provisioning_written"}

        without = [u for u in active if u not in written]
        check(not without, f"active stickers without a verified write: {without}")

        lost, events = lost_events(sub, rows)
        report["power cut"] = (
            f"{cuts} SIGKILLs (seed {seed}; {dict(ops)}), integrity ok {cuts}/{cuts}, chain verified {cuts}/{cuts}, "
            f"{len(rows)} audit rows, {events} distinct events received, {replay_checks} resent commands "
            f"({early_resends} sent again: the first copy came before the subscription), "
            f"{len(active)} active stickers; guest pass: {guest_unlocks} relay moves, "
            f"{GUEST_USES - _uses_left(g, UID_GUEST)} uses taken on disk; {sum(promises.values())} cuts "
            f"{PROMISE_MS:.0f} ms after the relay, each with its access_granted row")
        check(not lost, f"{sum(lost.values())} audited events never reached the broker: {sorted(lost)[:10]}")
    finally:
        g.stop() if g.alive() else None
        sub.stop()
        broker.stop()
        if os.environ.get("FAULTS_KEEP") != "1":
            remove(work)


def _uses_left(g, uid):
    return g.query("SELECT uses_left FROM issued_tag WHERE uid = ?", uid)[0][0]


def _unlocks(g):
    """The sim strike's unlocks gatewayd logged (its log spans every restart)."""
    with open(g.log_path, errors="replace") as f:
        return f.read().count(UNLOCKED)


def _accepted(g):
    return g.count("remote_accepted")
