"""Things that come and go around a running gatewayd:

reader  — the PN532 pulled 100 times (the emulator SIGKILLed and started
          again on the same port), muted and hung in between: the reader
          recovers each time, a tap still opens, fds/threads/RSS flat.
broker  — mosquitto stopped and started 100 times, every tenth time with a
          server certificate from another CA (a TLS error): the door
          reconnects each time, the error is named in status, CPU while the
          broker is away shows no busy loop, threads and fds flat, and the
          events of the whole run arrive.
flood   — 1 000 control-socket clients at once (most silent, some sending
          1 MB lines or binary): the door keeps deciding taps with the same
          latency (tap → strike p50/p99 measured during the flood against a
          quiet baseline), the socket stays usable for an admin, and every
          fd is given back.
"""
import os
import socket
import statistics
import subprocess
import threading
import time

from harness import percentile
from lib import (Broker, Failure, Gateway, Rig, Subscriber, check, popen, proc_cpu_s, proc_fds, proc_sample, sim_control,
                 stop, wait_until)

LOCKED = "sim output strike → locked"


class Sim:
    """pn532-sim run by the suite (the daemon reaches it as an external
    simulator), so it can be pulled and put back on the same port."""

    def __init__(self, bindir, work):
        self.exe = os.path.join(bindir, "pn532-sim")
        self.tty = os.path.join(work, "sim.tty")
        self.sock = os.path.join(work, "sim.sock")
        self.process = None

    def start(self):
        self.process = popen([self.exe, "--link", self.tty, "--control", self.sock], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
        self.process.stdout.readline()  # the pty path: link and socket exist now

    def kill(self):
        self.process.kill()
        self.process.wait(10)
        self.process.stdout.close()

    def stop(self):
        if self.process and self.process.poll() is None:
            stop(self.process)
            self.process.stdout.close()

    def control(self, line):
        return sim_control(self.sock, line)


def external_sim_door(rig, bindir, uid):
    """The external pn532-sim and gatewayd reaching it started, the reader ok, a sticker of `uid`
    provisioned: (sim, gateway, the sticker's dump)."""
    sim = rig.add(Sim(bindir, rig.work))
    g = Gateway(bindir, rig.work, edits=[
        ('simulator = "spawn"', f'simulator = "{sim.sock}"'),
        ('connstring = "pn532_i2c:/dev/i2c-1"', f'connstring = "pn532_uart:{sim.tty}"'),
    ])
    sim.start()
    rig.add(g).start()
    wait_until(lambda: reader_ok(g), 10, "reader ok at start")
    return sim, g, g.provision(uid, rig.work)


def reader_ok(g):
    return g.status().get("reader") == "ok"


def flat(samples):
    """Two proc_sample()s as a report's words, and each figure's growth (fds, threads, RSS kB)."""
    (fd0, th0, rss0), (fd1, th1, rss1) = samples
    return (f"fds {fd0} → {fd1}, threads {th0} → {th1}, RSS {rss0} → {rss1} kB", fd1 - fd0, th1 - th0,
            rss1 - rss0)


def run_reader(bindir, report, pulls=100):
    uid = "04EEEE00000001"
    with Rig("reader") as rig:
        sim, g, dump = external_sim_door(rig, bindir, uid)
        pid = g.process.pid
        # Warm up: the first losses allocate what every later one reuses.
        samples = []
        kinds = {"kill": 0, "mute": 0, "hang": 0}
        for i in range(pulls):
            kind = {3: "mute", 7: "hang"}.get(i % 10, "kill")
            kinds[kind] += 1
            sim.kill() if kind == "kill" else sim.control(kind)
            wait_until(lambda: g.status().get("reader", "").startswith("lost"), 20, f"pull {i} ({kind}): reader lost")
            sim.start() if kind == "kill" else sim.control("unmute")
            wait_until(lambda: reader_ok(g), 30, f"pull {i} ({kind}): reader recovered")
            if i in (9, pulls - 1):
                time.sleep(0.5)
                samples.append(proc_sample(pid))
        g.granted_tap(dump, uid, "after the pulls")
        text, fds, threads, rss = flat(samples)
        report["reader"] = (f"{pulls} pulls ({kinds['kill']} SIGKILLed, {kinds['mute']} muted, {kinds['hang']} hung), "
                            f"recovered each time; after pull 10 → {pulls}: {text}; a tap after the last opened")
        check(fds <= 0, f"fds grew: {text}")
        check(threads <= 0, f"threads grew: {text}")
        check(rss <= 1024, f"RSS grew: {text}")


def run_broker(bindir, report, flaps=100):
    with Rig("broker") as rig:
        broker = rig.add(Broker(rig.work))
        # A second CA and a server certificate from it: the door must refuse it.
        broker.ca("rogue-ca", "rogue-ca")
        broker.issue("rogue", "localhost", ca="rogue-ca")
        rogue = broker.conf_text("rogue")
        check(rogue != broker.conf, "rogue broker configuration")
        broker.start()
        sub = rig.add(Subscriber(broker))
        g = rig.add(Gateway(bindir, rig.work, broker=broker)).start()
        wait_until(g.connected, 20, "connected at start")
        pid = g.process.pid
        samples = []
        tls_errors = 0
        for i in range(flaps):
            broker.stop()
            if i % 10 == 5:
                broker.start(rogue)
                wait_until(lambda: any(w in (g.status()["broker"].get("last_error") or "").lower()
                                       for w in ("certificate", "tls")), 30, f"flap {i}: the TLS error named in status")
                check(not g.connected(), f"flap {i}: connected to a broker with a rogue certificate")
                tls_errors += 1
                broker.stop()
            if i == flaps // 2:
                # Ten seconds without a broker: what does the door burn?
                time.sleep(1)
                cpu0 = proc_cpu_s(pid)
                time.sleep(10)
                away_cpu = proc_cpu_s(pid) - cpu0
            else:
                time.sleep(0.1)
            g.ctl("open", "--action", "0") if i % 25 == 0 else None
            broker.start(broker.conf)
            wait_until(g.connected, 30, f"flap {i}: reconnected")
            if i in (9, flaps - 1):
                time.sleep(0.5)
                samples.append(proc_sample(pid))
        g.wait_outbox_drained()
        time.sleep(1)
        text, fds, threads, _ = flat(samples)
        report["broker"] = (f"{flaps} broker restarts ({tls_errors} with a rogue certificate, refused and named); "
                            f"CPU while away 10 s: {away_cpu:.2f} s; after flap 10 → {flaps}: {text}; {g.count()} "
                            f"events audited, all acknowledged by the broker (outbox 0); a subscriber saw "
                            f"{len(sub.events())}")
        check(away_cpu < 0.5, f"{away_cpu:.2f} s of CPU in 10 s without a broker: a busy loop")
        check(fds <= 2, f"fds grew: {text}")
        check(threads <= 2, f"threads grew: {text}")
        # Each event was acknowledged by a broker (the outbox drained above);
        # what a subscriber sees across restarts of a broker without
        # persistence is the broker's business, so it is only reported.
        st = g.status()["broker"]
        check(st.get("outbox") == 0 and st.get("connected"), f"at the end: {st}")


def run_flood(bindir, report, clients=1000, taps=12):
    uid = "04F100D0000001"
    held = []
    done = threading.Event()

    def release():
        done.set()
        for s in held:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    with Rig("flood") as rig:
        sim, g, dump = external_sim_door(rig, bindir, uid)
        rig.add(held, release)
        pid = g.process.pid
        fds0 = proc_fds(pid)

        def latencies(n, what):
            out = []
            for k in range(n):
                pulses, locks = g.pulses(), g.pulses(LOCKED)
                t0 = time.monotonic()
                # Straight to the emulator: the flooded socket is not in the tap's path.
                answer = sim.control(f"insert {uid} {dump}")
                check(answer.startswith("ok"), f"{what}: insert: {answer}")
                while g.pulses() <= pulses:
                    if time.monotonic() - t0 > 10:
                        raise Failure(f"{what}: tap {k}: no strike pulse in 10 s")
                    time.sleep(0.002)
                out.append((time.monotonic() - t0) * 1000)
                sim.control("remove")
                # The log, not status: the flooded socket is not asked.
                wait_until(lambda: g.pulses(LOCKED) > locks, 10, f"{what}: locked again")
                g.outlast()
            return out

        quiet = latencies(taps // 2, "baseline")

        # The flood: silent clients (slowloris), 1 MB lines, binary.
        busy_answers = [0]
        connect_errors = []
        lock = threading.Lock()

        def flood_client(kind):
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(30)
            try:
                # A full listen backlog answers a non-blocking connect with EAGAIN; a blocking
                # client (gatewayctl) would wait there, so the flood waits too, up to 30 s.
                deadline = time.monotonic() + 30
                while True:
                    try:
                        s.connect(g.socket)
                        break
                    except BlockingIOError:
                        if time.monotonic() > deadline or done.is_set():
                            raise
                        time.sleep(0.01)
            except OSError as e:
                # A flood that never reached the daemon tests nothing: count it, fail below.
                with lock:
                    connect_errors.append(str(e))
                s.close()
                return
            with lock:
                held.append(s)
            try:
                if kind == "big":
                    s.sendall(b"x" * (1 << 20))
                elif kind == "binary":
                    s.sendall(os.urandom(4096) + b"\n")
                if b'"busy"' in s.recv(200):
                    with lock:
                        busy_answers[0] += 1
                while not done.is_set() and s.recv(4096):
                    pass
            except OSError:
                pass

        threads = [threading.Thread(target=flood_client, daemon=True,
                                    args=({0: "big", 1: "binary"}.get(i % 50, "silent"),)) for i in range(clients)]
        for t in threads:
            t.start()
        time.sleep(2)

        def settled():
            with lock:
                return len(held) + len(connect_errors) >= clients
        wait_until(settled, 30, "every flood client connected or failed")
        with lock:
            connected_n, errors = len(held), list(connect_errors)
        check(not errors and connected_n == clients,
              f"flood: {connected_n} of {clients} clients connected; connect errors: {sorted(set(errors))[:3]}")
        during_fds = proc_fds(pid)
        flooded = latencies(taps, "during the flood")
        # An admin still gets in once the silent ones time out (10 s idle).
        wait_until(lambda: g.ctl_ok("status"), 30, "gatewayctl status during the flood")
        release()
        for t in threads:
            t.join(10)
        wait_until(lambda: proc_fds(pid) <= fds0, 20, f"fds back to {fds0} after the flood")
        q99, f99 = percentile(quiet, 99), percentile(flooded, 99)
        report["flood"] = (f"{clients} clients ({busy_answers[0]} answered busy), fds during {during_fds} "
                           f"(before {fds0}, after {proc_fds(pid)}); tap → strike p50/p99: quiet "
                           f"{statistics.median(quiet):.0f}/{q99:.0f} ms, flooded "
                           f"{statistics.median(flooded):.0f}/{f99:.0f} ms")
        check(during_fds < fds0 + 64, f"fds during the flood {during_fds} (before {fds0}): clients are not bounded")
        check(f99 < max(2 * q99, q99 + 100), f"tap latency under flood p99 {f99:.0f} ms vs quiet {q99:.0f} ms")
