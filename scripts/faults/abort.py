"""A broken chip's answers that crashed stock libnfc 1.8.0: with the
patched libnfc the static binaries link (patches/libnfc/, built by
scripts/static-deps.sh), gatewayd gets an error instead and carries on.

Where stock libnfc 1.8.0 crashes (libnfc/chips/pn53x.c, `pn53x_transceive`):

- `nad`: after PowerDown, InDataExchange, InCommunicateThru and the other
  commands whose answer starts with a status byte, `if (pbtRx[0] & 0x80) {
  abort(); } // NAD detected`. gatewayd's reader sends InDataExchange for
  every tag read, and nfc_close sends PowerDown (pn53x_idle).
- `mi-empty`: an answer with MI (bit 6) makes libnfc send a continuation and
  append its answer with `memcpy(pbtRx + res, abtRx2 + 1, res2 - 1)`; a
  continuation without a status byte (LEN 2: TFI and response code only)
  gives res2 = 0 and a copy of SIZE_MAX bytes: heap corruption, SIGSEGV.

The patch returns NFC_EIO in both cases (and in their siblings: an answer
with no byte at all, NAD in a continuation, a continuation with MI set and no
data). pn532-sim's `nad` / `mi-empty` fault modes send these answers; the
scenario runs gatewayd on the stock sim example (spawned pn532-sim, MQTT on)
and checks, for each of `aborts` taps answered with NAD and one answered
with MI and an empty continuation:

- the binary carries the patched pn53x.o (its error messages are in it);
- libnfc reports the bad answer (the patch's error line in gatewayd's log),
  then the reader reports a fault and recovers (audited `reader_fault`,
  `reader_recovered`; reader health `ok` again); the read that got the bad
  answer decides nothing: no grant or denial and the strike stays locked until
  the reader is back;
- the sticker, still in the field, is then read afresh and granted (one
  strike pulse, one `access_granted` for it), and after it is removed a
  further good tap is granted too;
- gatewayd does not exit (no SIGABRT, no SIGSEGV): the process started at
  the beginning is alive after every fault (the same pid; nothing restarts it
  here), with the same spawned pn532-sim;
- state intact: `PRAGMA integrity_check` ok, the audit chain verifies, the
  registry (the sticker, active) and the secrets (the OTP key) unchanged,
  every audit row written before is still there.

Then `nad` once more and SIGTERM: nfc_close's PowerDown gets the NAD answer,
the outputs are locked, and gatewayd exits 0 (stock libnfc: SIGABRT); the
next start finds the state intact and opens for a good tap. At the end every
audit row has reached the broker.
"""
import collections
import os
import subprocess
import time

from lib import Broker, Failure, Gateway, Rig, Subscriber, check, pid_alive, sim_control, wait_until

UID = "04ABAB00000001"


def spawned_sim(g, line):
    """A line to the pn532-sim gatewayd spawned (its socket in the runtime directory)."""
    return sim_control(os.path.join(g.run_dir, "pn532-sim.sock"), line)


def children(pid):
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(c) for c in f.read().split()]
    except OSError:
        return []


def snapshot(g):
    return g.audit(), g.query("SELECT uid, state FROM issued_tag ORDER BY uid")


# The patched libnfc's error lines (patches/libnfc/*.patch), one per fault.
LIBNFC_ERRORS = {
    "nad": "NAD bit set in status byte",
    "mi-empty": "MI continuation without status byte",
}


def patched_libnfc(bindir):
    """The gateway binary carries the patched pn53x.o: all of the patch's
    error messages are in it (stock libnfc has none of them)."""
    with open(os.path.join(bindir, "gateway"), "rb") as f:
        data = f.read()
    return [m for m in LIBNFC_ERRORS.values() if m.encode() not in data]


def run(bindir, report, aborts=3):
    missing = patched_libnfc(bindir)
    check(not missing, f"{bindir}/gateway is not linked with the patched libnfc (no {missing})")
    outcomes = collections.Counter()
    recover = []
    with Rig("abort") as rig:
        broker = rig.add(Broker(rig.work)).start()
        sub = rig.add(Subscriber(broker))
        g = rig.add(Gateway(bindir, rig.work, broker=broker)).start()
        g.ctl("keys", "otp", "new")
        otp_key = g.ctl("keys", "otp", "export").stdout
        dump = g.provision(UID, rig.work)
        g.granted_tap(dump, UID, "before the faults")
        g.wait_outbox_drained("outbox drained at start")
        pid = g.process.pid
        sims = children(pid)
        check(sims, "gatewayd has no pn532-sim child")

        faults = ["nad"] * aborts + ["mi-empty"]
        for i, fault in enumerate(faults):
            audit0, tags0 = snapshot(g)
            pulses0 = g.pulses()
            log0 = len(g.log_text())
            answer = spawned_sim(g, fault)
            check(answer.startswith("ok"), f"{fault} {i}: {answer}")
            tapped = time.monotonic()
            g.ctl("sim", "tap", "--dump", dump, "--uid", UID)
            wait_until(lambda: "event reader_recovered" in g.log_text()[log0:] or not g.alive(), 20,
                       f"{fault} {i}: the reader recovered")
            check(g.alive(), f"{fault} {i}: gatewayd exited {g.process.poll()}")
            wait_until(lambda: g.status().get("reader") == "ok", 10, f"{fault} {i}: reader health ok again")
            recover.append(time.monotonic() - tapped)
            after = g.log_text()[log0:]
            error, fault_at, recovered = (after.find(LIBNFC_ERRORS[fault]), after.find("event reader_fault"),
                                          after.find("event reader_recovered"))
            check(0 <= error < fault_at < recovered,
                  f"{fault} {i}: not libnfc error → reader_fault → reader_recovered: {after[-600:]}")
            # The reader names the error it got back (pn53x_transceive sets no
            # device error, so nfc_strerror would say "Success").
            check("NFC_EIO" in after[error:recovered] and ": Success" not in after[error:recovered],
                  f"{fault} {i}: the reader's fault does not name NFC_EIO: {after[error:recovered][-600:]}")
            # The read that got the bad answer decided nothing: no grant, no
            # denial, the strike never energised until the reader was back.
            check("event access_" not in after[:recovered] and "strike → unlocked" not in after[:recovered],
                  f"{fault} {i}: the read with the bad answer was decided: {after[:recovered][-600:]}")
            # The sticker is still in the field: the recovered reader reads it
            # afresh and grants (a good read after the bad one).
            wait_until(lambda: g.pulses() > pulses0, 10, f"{fault} {i}: the re-read after recovery granted")
            g.ctl("sim", "remove")
            g.wait_locked(f"{fault} {i}")
            g.outlast()
            after = g.log_text()[log0:]
            check(g.alive() and g.process.pid == pid, f"{fault} {i}: gatewayd exited or was replaced")
            check(children(pid) == sims and all(pid_alive(s) for s in sims),
                  f"{fault} {i}: the spawned pn532-sim changed: {sims} → {children(pid)}")
            check(g.pulses() == pulses0 + 1, f"{fault} {i}: {g.pulses() - pulses0} strike pulses, not 1")
            audit1, tags1 = snapshot(g)
            new = audit1[len(audit0):]
            check(audit1[: len(audit0)] == audit0, f"{fault} {i}: audit rows written before changed")
            check([r[2] for r in new[:2]] == ["reader_fault", "reader_recovered"],
                  f"{fault} {i}: audit after the bad answer: {new}")
            check([r[2] for r in new if r[6] == UID] == ["access_granted"],
                  f"{fault} {i}: the sticker's decisions after the bad answer: {new}")
            check(tags1 == tags0 and (UID, "active") in tags1, f"{fault} {i}: registry {tags0} → {tags1}")
            g.check_integrity(f"{fault} {i}")
            g.verify_chain(f"{fault} {i}")
            check(g.ctl("keys", "otp", "export").stdout == otp_key, f"{fault} {i}: the OTP key changed")
            outcomes[fault] += 1
            g.granted_tap(dump, UID, f"{fault} {i}: a good tap afterwards")
            check(g.process.pid == pid, f"{fault} {i}: gatewayd was replaced")

        # The same answer to the PowerDown that nfc_close sends (pn53x_idle)
        # when gatewayd stops: stock libnfc aborted there; now a clean exit.
        g.wait_outbox_drained()
        audit0, tags0 = snapshot(g)
        log0 = len(g.log_text())
        check(spawned_sim(g, "nad").startswith("ok"), "stop: nad")
        g.process.terminate()
        try:
            stop_code = g.process.wait(20)
        except subprocess.TimeoutExpired:
            raise Failure("stop: gatewayd still running 20 s after SIGTERM")
        g.process = None
        g.logfile.close()
        after = g.log_text()[log0:]
        check("sim all outputs locked" in after and "strike → unlocked" not in after,
              f"stop: the outputs were not locked before the exit: {after[-400:]}")
        check(LIBNFC_ERRORS["nad"] in after, f"stop: PowerDown's NAD answer was not reported: {after[-400:]}")
        check(stop_code == 0, f"stop: gatewayd exit {stop_code}, not 0")
        g.check_integrity("stop")
        g.start()
        g.verify_chain("stop")
        audit1, tags1 = snapshot(g)
        check(audit1[: len(audit0)] == audit0 and tags1 == tags0, "stop: audit or registry changed across the stop")
        check(g.ctl("keys", "otp", "export").stdout == otp_key, "stop: the OTP key changed")
        g.granted_tap(dump, UID, "a good tap after the stop")

        g.wait_outbox_drained()
        time.sleep(1)
        g.stop()
        audit = g.audit()
        report["libnfc bad answers"] = (
            f"patched libnfc linked; {aborts} taps answered with a NAD status byte, 1 with MI and an empty "
            f"continuation: libnfc reported each ({outcomes['nad']}/{aborts} nad, {outcomes['mi-empty']}/1 "
            f"mi-empty), the read with the bad answer decided nothing (strike locked), gatewayd kept running "
            f"(pid {pid}, no SIGABRT/SIGSEGV, same pn532-sim), reader_fault → reader_recovered, reader ok again "
            f"{min(recover):.2f}–{max(recover):.2f} s after the tap; the sticker still in the field re-read and "
            f"granted, then a further good tap granted after each; integrity ok, chain verified, OTP key and "
            f"sticker intact. SIGTERM with the same "
            f"answer to nfc_close's PowerDown: outputs locked, exit {stop_code}; state intact, a good tap opened "
            f"after start; {len(audit)} audit rows, {len(sub.events())} distinct events at the broker")
        sub.check_nothing_lost(audit)
