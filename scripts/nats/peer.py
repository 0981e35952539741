#!/usr/bin/env python3
"""peer.py — a tiny NATS client for tests (Debian's nats-server ships none):
TLS with a client certificate, user JWT + nkey signature, core pub/sub.

  peer.py --url HOST:PORT --creds FILE [--ca CA --cert CERT --key KEY]
  peer.py --url HOST:PORT (--user NAME --password SECRET | --token SECRET) [--ca CA]

Reads commands on stdin, one a line:
  SUB <subject>            subscribe
  PUB <subject> <text>     publish text (the rest of the line; may be empty)
  REQ <subject> <text>     publish with a reply subject (_INBOX.peer.N); the reply
                           is printed like any message, on that subject
  FLUSH                    PING/PONG round trip, then prints {"flushed": true}
Prints JSON lines on stdout: {"ready": true} once connected,
{"subject": …, "payload": …} for each message, {"error": …} for -ERR.
Exits when stdin closes or the server closes the connection.
"""
import argparse
import base64
import json
import os
import socket
import ssl
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mkjwt import Key  # noqa: E402

out_lock = threading.Lock()


def emit(obj):
    with out_lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


def block(text, what):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("-----BEGIN") and what in line:
            for body in lines[i + 1:]:
                if body.strip():
                    return body.strip()
    raise SystemExit(f"no {what} block in the creds file")


class Conn:
    def __init__(self, a):
        host, port = a.url.rsplit(":", 1)
        raw = socket.create_connection((host, int(port)), timeout=10)
        self.f = raw.makefile("rb")
        info = json.loads(self.f.readline().decode().split(" ", 1)[1])
        self.sock = raw
        if info.get("tls_required"):
            ctx = ssl.create_default_context(cafile=a.ca)
            if a.cert:
                ctx.load_cert_chain(a.cert, a.key)
            ctx.check_hostname = False
            self.sock = ctx.wrap_socket(raw, server_hostname=host)
            self.f = self.sock.makefile("rb")
        self.sock.settimeout(None)
        connect = {"verbose": False, "pedantic": False, "lang": "python", "name": "test-peer",
                   "version": "0", "protocol": 1, "echo": False, "tls_required": bool(info.get("tls_required"))}
        if a.creds:
            text = open(a.creds).read()
            user_jwt, seed = block(text, "JWT"), block(text, "SEED")
            sig = Key.from_seed(seed).sign(info["nonce"].encode())
            connect["jwt"] = user_jwt
            connect["sig"] = base64.urlsafe_b64encode(sig).decode().rstrip("=")
        elif a.token:
            connect["auth_token"] = a.token
        elif a.user:
            connect["user"], connect["pass"] = a.user, a.password
        self.lock = threading.Lock()
        self.send(f"CONNECT {json.dumps(connect)}\r\nPING\r\n".encode())
        self.sid = 0
        self.pongs = threading.Semaphore(0)

    def send(self, data):
        with self.lock:
            self.sock.sendall(data)

    def read_loop(self):
        first = True
        while True:
            line = self.f.readline()
            if not line:
                emit({"closed": True})
                os._exit(0)
            line = line.decode().rstrip("\r\n")
            if line == "PING":
                self.send(b"PONG\r\n")
            elif line == "PONG":
                if first:
                    first = False
                    emit({"ready": True})
                else:
                    self.pongs.release()
            elif line.startswith("-ERR"):
                emit({"error": line[5:].strip().strip("'")})
            elif line.startswith("MSG "):
                parts = line.split(" ")
                size = int(parts[-1])
                payload = self.f.read(size + 2)[:size]
                emit({"subject": parts[1], "payload": payload.decode(errors="replace")})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--url", required=True)
    p.add_argument("--creds")
    p.add_argument("--user")
    p.add_argument("--password")
    p.add_argument("--token")
    p.add_argument("--ca")
    p.add_argument("--cert")
    p.add_argument("--key")
    a = p.parse_args()
    c = Conn(a)
    threading.Thread(target=c.read_loop, daemon=True).start()
    for line in sys.stdin:
        line = line.rstrip("\n")
        if line.startswith("SUB "):
            c.sid += 1
            c.send(f"SUB {line[4:].strip()} {c.sid}\r\n".encode())
        elif line.startswith("PUB "):
            rest = line[4:]
            subject, _, text = rest.partition(" ")
            data = text.encode()
            c.send(f"PUB {subject} {len(data)}\r\n".encode() + data + b"\r\n")
        elif line.startswith("REQ "):
            subject, _, text = line[4:].partition(" ")
            c.sid += 1
            inbox = f"_INBOX.peer.{c.sid}"
            data = text.encode()
            c.send(f"SUB {inbox} {c.sid}\r\nPUB {subject} {inbox} {len(data)}\r\n".encode() + data + b"\r\n")
        elif line == "FLUSH":
            c.send(b"PING\r\n")
            c.pongs.acquire(timeout=10)
            emit({"flushed": True})


if __name__ == "__main__":
    main()
