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

from lib import Broker, Failure, Gateway, Rig, Subscriber, check, wait_until

UID_GRANTED = "04A1B2C3D4E5F6"
UID_GUEST = "04A1B2C3D4E5F7"
GUEST_USES = 100000
PROMISE_MS = float(os.environ.get("FAULTS_PROMISE_MS", "200"))


def run(bindir, cuts, seed, report):
    rng = random.Random(seed)
    with Rig("powercut") as rig:
        work = rig.work
        broker = rig.add(Broker(work)).start()
        sub = rig.add(Subscriber(broker))
        g = rig.add(Gateway(bindir, work, broker=broker)).start()
        # Setup: the timestamp key for phone commands, one provisioned sticker, and a guest pass with more
        # uses than the run can take.
        key_file = g.otp_key_file(work)
        dump = g.provision(UID_GRANTED, work)
        guest_dump = g.provision(UID_GUEST, work, ("provision", "arm", "--action", "0", "--guest", "--uses",
                                                   str(GUEST_USES)))
        guest_unlocks = 0  # relay moves the guest pass made, from gatewayd's log
        promises = collections.Counter()

        ops = collections.Counter()
        replay_checks = 0
        early_resends = 0
        for i in range(cuts):
            op = rng.choice(["tap", "deny", "remote", "provision", "mixed", "guest", "promise"])
            ops[op] += 1
            message = None
            accepted0 = g.count("remote_accepted")
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
            unlocks0 = g.pulses()
            if op == "guest":
                g.ctl("sim", "tap", "--dump", guest_dump, "--uid", UID_GUEST)
            if op == "promise":
                # Cut PROMISE_MS after the relay moved: the tap's row must be on disk.
                uid, tag = rng.choice([(UID_GRANTED, dump), (UID_GUEST, guest_dump)])
                rows0 = g.count("access_granted", uid)
                g.ctl("sim", "tap", "--dump", tag, "--uid", uid)
                wait_until(lambda: g.pulses() > unlocks0, 10, f"cut {i}: the relay moved", 0.002)
                time.sleep(PROMISE_MS / 1000)
            else:
                time.sleep(rng.uniform(0, 0.6))
            g.kill()
            if op == "guest" or (op == "promise" and uid == UID_GUEST):
                guest_unlocks += g.pulses() - unlocks0
            if op == "promise":
                check(g.count("access_granted", uid) == rows0 + 1,
                      f"cut {i} (promise, {uid}): the access_granted row not on disk {PROMISE_MS:.0f} ms after the "
                      f"relay moved ({g.count('access_granted', uid) - rows0} new)")
                promises[uid] += 1
            taken = GUEST_USES - _uses_left(g, UID_GUEST)
            check(taken >= guest_unlocks,
                  f"cut {i} ({op}): the guest pass moved the relay {guest_unlocks}× but {taken} uses are on disk")
            g.check_integrity(f"cut {i} ({op})")
            g.start()
            g.verify_chain(f"cut {i} ({op})")
            if message is not None:
                # The same message resent inside its freshness window: judged,
                # and across the cut and the resend accepted at most once.
                # The door's session is clean: a message published before it
                # has subscribed again is not kept for it. Wait for the
                # connection, and send once more if the first copy came too
                # early (the subscription follows the connection).
                judged0 = g.count("remote_accepted") + g.count("remote_rejected")
                wait_until(g.connected, 20, f"cut {i}: connected again")
                judged = lambda: g.count("remote_accepted") + g.count("remote_rejected") > judged0  # noqa: E731
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
                check(g.count("remote_accepted") - accepted0 <= 1,
                      f"cut {i} ({op}): one command accepted twice across a cut")
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

        report["power cut"] = (
            f"{cuts} SIGKILLs (seed {seed}; {dict(ops)}), integrity ok {cuts}/{cuts}, chain verified {cuts}/{cuts}, "
            f"{len(rows)} audit rows, {len(sub.events())} distinct events received, {replay_checks} resent commands "
            f"({early_resends} sent again: the first copy came before the subscription), "
            f"{len(active)} active stickers; guest pass: {guest_unlocks} relay moves, "
            f"{GUEST_USES - _uses_left(g, UID_GUEST)} uses taken on disk; {sum(promises.values())} cuts "
            f"{PROMISE_MS:.0f} ms after the relay, each with its access_granted row")
        sub.check_nothing_lost(rows)


def _uses_left(g, uid):
    return g.query("SELECT uses_left FROM issued_tag WHERE uid = ?", uid)[0][0]
