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

from lib import (Broker, Failure, Gateway, Subscriber, check, outlast_quiet_window, popen, proc_cpu_s, proc_fds,
                 proc_rss_kb, remove, sim_control, wait_until, work_dir)


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
            self.process.terminate()
            self.process.wait(10)
            self.process.stdout.close()

    def control(self, line):
        return sim_control(self.sock, line)


def started_with_sticker(sim, g, uid, work):
    """The external pn532-sim and gatewayd started, the reader ok, a sticker
    of `uid` provisioned; its dump."""
    sim.start()
    g.start()
    wait_until(lambda: reader_ok(g), 10, "reader ok at start")
    return provision(g, uid, work)


def external_sim_gateway(bindir, work, broker=None):
    sim = Sim(bindir, work)
    g = Gateway(bindir, work, broker=broker, edits=[
        ('simulator = "spawn"', f'simulator = "{sim.sock}"'),
        ('connstring = "pn532_i2c:/dev/i2c-1"', f'connstring = "pn532_uart:{sim.tty}"'),
    ])
    return sim, g


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def reader_ok(g):
    return g.status().get("reader") == "ok"


def strike_pulses(g):
    return g.log_text().count("sim output strike → unlocked")


def strike_locks(g):
    return g.log_text().count("sim output strike → locked")


def provision(g, uid, work):
    g.ctl("provision", "arm", "--action", "0")
    g.ctl("sim", "tap", "--blank", "--uid", uid)
    wait_until(lambda: any(e.get("kind") == "provisioning_written" for e in g.status().get("last_events", [])), 20,
               "the sticker written")
    dump = os.path.join(work, "sticker.dump")
    g.ctl("sim", "dump", dump)
    g.ctl("sim", "remove")
    outlast_quiet_window(g.gateway)
    return dump


def granted_tap(g, dump, uid, what):
    pulses = strike_pulses(g)
    g.ctl("sim", "tap", "--dump", dump, "--uid", uid)
    wait_until(lambda: strike_pulses(g) > pulses, 10, f"{what}: the strike pulses")
    g.ctl("sim", "remove")
    wait_until(lambda: g.status()["outputs"]["strike"] == "locked", 10, f"{what}: locked again")
    outlast_quiet_window(g.gateway)


def run_reader(bindir, report, pulls=100):
    work = work_dir("reader")
    sim, g = external_sim_gateway(bindir, work)
    uid = "04EEEE00000001"
    try:
        dump = started_with_sticker(sim, g, uid, work)
        pid = g.process.pid
        # Warm up: the first losses allocate what every later one reuses.
        samples = []
        kinds = {"kill": 0, "mute": 0, "hang": 0}
        for i in range(pulls):
            if i % 10 == 3:
                kind = "mute"
                sim.control("mute")
            elif i % 10 == 7:
                kind = "hang"
                sim.control("hang")
            else:
                kind = "kill"
                sim.kill()
            kinds[kind] += 1
            wait_until(lambda: g.status().get("reader", "").startswith("lost"), 20, f"pull {i} ({kind}): reader lost")
            if kind == "kill":
                sim.start()
            else:
                sim.control("unmute")
            wait_until(lambda: reader_ok(g), 30, f"pull {i} ({kind}): reader recovered")
            if i in (9, pulls - 1):
                time.sleep(0.5)
                samples.append((proc_fds(pid), threads(pid), proc_rss_kb(pid)))
        granted_tap(g, dump, uid, "after the pulls")
        (fd0, th0, rss0), (fd1, th1, rss1) = samples
        report["reader"] = (f"{pulls} pulls ({kinds['kill']} SIGKILLed, {kinds['mute']} muted, {kinds['hang']} hung), "
                            f"recovered each time; after pull 10 → {pulls}: fds {fd0} → {fd1}, threads {th0} → {th1}, "
                            f"RSS {rss0} → {rss1} kB; a tap after the last opened")
        check(fd1 <= fd0, f"fds grew {fd0} → {fd1}")
        check(th1 <= th0, f"threads grew {th0} → {th1}")
        check(rss1 <= rss0 + 1024, f"RSS grew {rss0} → {rss1} kB")
    finally:
        g.stop() if g.alive() else None
        sim.stop()
        if os.environ.get("FAULTS_KEEP") != "1":
            remove(work)


def run_broker(bindir, report, flaps=100):
    work = work_dir("broker")
    broker = Broker(work)
    # A second CA and a server certificate from it: the door must refuse it.
    broker._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                    "-subj", "/CN=rogue-ca", "-keyout", broker.path("rogue-ca.key"), "-out", broker.path("rogue-ca.crt"))
    broker._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", "/CN=localhost",
                    "-keyout", broker.path("rogue.key"), "-out", broker.path("rogue.csr"))
    broker._openssl("x509", "-req", "-in", broker.path("rogue.csr"), "-CA", broker.path("rogue-ca.crt"), "-CAkey",
                    broker.path("rogue-ca.key"), "-CAcreateserial", "-days", "2", "-extfile", broker.path("broker.ext"),
                    "-out", broker.path("rogue.crt"))
    with open(broker.path("mosquitto.conf")) as f:
        good = f.read()
    rogue = good.replace(broker.path("broker.crt"), broker.path("rogue.crt")).replace(
        broker.path("broker.key"), broker.path("rogue.key"))
    check(rogue != good, "rogue broker configuration")
    g = Gateway(bindir, work, broker=broker)
    sub = None
    try:
        broker.start()
        sub = Subscriber(broker, "doorgateway/front-door/event")
        g.start()
        connected = lambda: g.status()["broker"].get("connected") is True  # noqa: E731
        wait_until(connected, 20, "connected at start")
        pid = g.process.pid
        samples = []
        tls_errors = 0
        for i in range(flaps):
            broker.stop()
            if i % 10 == 5:
                with open(broker.path("mosquitto.conf"), "w") as f:
                    f.write(rogue)
                broker.start()
                wait_until(lambda: "certificate" in (g.status()["broker"].get("last_error") or "").lower() or
                           "tls" in (g.status()["broker"].get("last_error") or "").lower(), 30,
                           f"flap {i}: the TLS error named in status")
                check(not connected(), f"flap {i}: connected to a broker with a rogue certificate")
                tls_errors += 1
                broker.stop()
                with open(broker.path("mosquitto.conf"), "w") as f:
                    f.write(good)
            if i == flaps // 2:
                # Ten seconds without a broker: what does the door burn?
                time.sleep(1)
                cpu0 = proc_cpu_s(pid)
                time.sleep(10)
                away_cpu = proc_cpu_s(pid) - cpu0
            else:
                time.sleep(0.1)
            g.ctl("open", "--action", "0") if i % 25 == 0 else None
            broker.start()
            wait_until(connected, 30, f"flap {i}: reconnected")
            if i in (9, flaps - 1):
                time.sleep(0.5)
                samples.append((proc_fds(pid), threads(pid), proc_rss_kb(pid)))
        g.wait_outbox_drained()
        time.sleep(1)
        audited = g.count()
        seqs = {e.get("seq") for e in sub.messages("/event")}
        (fd0, th0, rss0), (fd1, th1, rss1) = samples
        report["broker"] = (f"{flaps} broker restarts ({tls_errors} with a rogue certificate, refused and named); "
                            f"CPU while away 10 s: {away_cpu:.2f} s; after flap 10 → {flaps}: fds {fd0} → {fd1}, "
                            f"threads {th0} → {th1}, RSS {rss0} → {rss1} kB; {audited} events audited, all "
                            f"acknowledged by the broker (outbox 0); a subscriber saw {len(seqs)}")
        check(away_cpu < 0.5, f"{away_cpu:.2f} s of CPU in 10 s without a broker: a busy loop")
        check(fd1 <= fd0 + 2, f"fds grew {fd0} → {fd1}")
        check(th1 <= th0 + 2, f"threads grew {th0} → {th1}")
        # Each event was acknowledged by a broker (the outbox drained above);
        # what a subscriber sees across restarts of a broker without
        # persistence is the broker's business, so it is only reported.
        st = g.status()["broker"]
        check(st.get("outbox") == 0 and st.get("connected"), f"at the end: {st}")
    finally:
        g.stop() if g.alive() else None
        sub.stop() if sub else None
        broker.stop()
        if os.environ.get("FAULTS_KEEP") != "1":
            remove(work)


def run_flood(bindir, report, clients=1000, taps=12):
    work = work_dir("flood")
    sim, g = external_sim_gateway(bindir, work)
    uid = "04F100D0000001"
    held = []
    stop = threading.Event()
    try:
        dump = started_with_sticker(sim, g, uid, work)
        pid = g.process.pid
        fds0 = proc_fds(pid)

        def latencies(n, what):
            out = []
            for k in range(n):
                pulses, locks = strike_pulses(g), strike_locks(g)
                t0 = time.monotonic()
                # Straight to the emulator: the flooded socket is not in the tap's path.
                answer = sim.control(f"insert {uid} {dump}")
                check(answer.startswith("ok"), f"{what}: insert: {answer}")
                while strike_pulses(g) <= pulses:
                    if time.monotonic() - t0 > 10:
                        raise Failure(f"{what}: tap {k}: no strike pulse in 10 s")
                    time.sleep(0.002)
                out.append((time.monotonic() - t0) * 1000)
                sim.control("remove")
                # The log, not status: the flooded socket is not asked.
                wait_until(lambda: strike_locks(g) > locks, 10, f"{what}: locked again")
                outlast_quiet_window(g.gateway)
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
                        if time.monotonic() > deadline or stop.is_set():
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
                first = s.recv(200)
                if b'"busy"' in first:
                    with lock:
                        busy_answers[0] += 1
                while not stop.is_set() and s.recv(4096):
                    pass
            except OSError:
                pass

        threads_ = [threading.Thread(target=flood_client, args=(("big" if i % 50 == 0 else
                                                                    "binary" if i % 50 == 1 else "silent"),),
                                     daemon=True) for i in range(clients)]
        for t in threads_:
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
        stop.set()
        for s in held:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()
        for t in threads_:
            t.join(10)
        wait_until(lambda: proc_fds(pid) <= fds0, 20, f"fds back to {fds0} after the flood")

        def pct(values, p):
            values = sorted(values)
            return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]

        report["flood"] = (f"{clients} clients ({busy_answers[0]} answered busy), fds during {during_fds} "
                           f"(before {fds0}, after {proc_fds(pid)}); tap → strike p50/p99: quiet "
                           f"{statistics.median(quiet):.0f}/{pct(quiet, 99):.0f} ms, flooded "
                           f"{statistics.median(flooded):.0f}/{pct(flooded, 99):.0f} ms")
        check(during_fds < fds0 + 64, f"fds during the flood {during_fds} (before {fds0}): clients are not bounded")
        check(pct(flooded, 99) < max(2 * pct(quiet, 99), pct(quiet, 99) + 100),
              f"tap latency under flood p99 {pct(flooded, 99):.0f} ms vs quiet {pct(quiet, 99):.0f} ms")
    finally:
        stop.set()
        for s in held:
            s.close()
        g.stop() if g.alive() else None
        sim.stop()
        if os.environ.get("FAULTS_KEEP") != "1":
            remove(work)
