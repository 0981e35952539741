#!/usr/bin/env python3
"""mkjwt.py — nkeys, JWTs and a nats-server configuration for decentralised
auth (operator mode, resolver MEMORY), without nsc. Debian's
python3-cryptography (ed25519) only.

  mkjwt.py init DIR --port P [--tls CA CERT KEY] [--jetstream]
      operator, system account and account DOORS; DIR/server.conf, DIR/keys.json
  mkjwt.py user DIR NAME --pub SUBJ[,SUBJ] --sub SUBJ[,SUBJ] [--exp SECONDS]
      a user of DOORS: DIR/NAME.creds, DIR/NAME.jwt, DIR/NAME.nk; prints the public key
  mkjwt.py reissue DIR NAME [--exp SECONDS] [--iat-offset SECONDS] [--iat UNIX] [--exp-at UNIX]
                   [--issuer doors|spare|foreign]
      a new JWT for the same user key and permissions, printed (nothing written);
      --issuer spare signs with an account key the server does not know,
      foreign with a fresh key nobody knows (tests of what a door accepts)
  mkjwt.py account-key DIR NAME
      the public key (A...) of account NAME (doors, spare)

nkeys: base32 (no padding) of prefix byte(s) + 32-byte key + CRC-16/XMODEM
(little-endian). JWT: b64url(header).b64url(claims).b64url(ed25519 signature
by the issuer's key over the first two parts).
"""
import argparse
import base64
import hashlib
import json
import os
import sys
import time

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

PREFIX = {"seed": 18 << 3, "operator": 14 << 3, "account": 0, "user": 20 << 3}


def crc16(data):
    crc = 0
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else (crc << 1)
            crc &= 0xFFFF
    return crc


def b32(data):
    c = crc16(data)
    return base64.b32encode(data + bytes([c & 0xFF, c >> 8])).decode().rstrip("=")


def unb32(text):
    raw = base64.b32decode(text + "=" * (-len(text) % 8))
    data, c = raw[:-2], raw[-2] | raw[-1] << 8
    if crc16(data) != c:
        raise ValueError("bad nkey checksum")
    return data


class Key:
    def __init__(self, kind, raw=None):
        self.kind = kind
        self.raw = raw if raw is not None else os.urandom(32)
        self.priv = Ed25519PrivateKey.from_private_bytes(self.raw)

    @property
    def public(self):
        pub = self.priv.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        return b32(bytes([PREFIX[self.kind]]) + pub)

    @property
    def seed(self):
        p = PREFIX[self.kind]
        head = bytes([PREFIX["seed"] | (p >> 5), (p & 31) << 3])
        return b32(head + self.raw)

    @staticmethod
    def from_seed(text):
        data = unb32(text.strip())
        kind_byte = ((data[0] & 7) << 5) | ((data[1] & 0xF8) >> 3)
        kind = {v: k for k, v in PREFIX.items()}[kind_byte]
        return Key(kind, data[2:34])

    def sign(self, data):
        return self.priv.sign(data)


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def jwt(issuer, subject, name, nats, exp=None, iat=None):
    claims = {"iat": int(iat if iat is not None else time.time()), "iss": issuer.public,
              "name": name, "sub": subject, "nats": nats}
    if exp is not None:
        claims["exp"] = int(exp)
    claims["jti"] = base64.b32encode(
        hashlib.sha256(json.dumps(claims, sort_keys=True).encode()).digest()).decode().rstrip("=")
    head = b64url(json.dumps({"typ": "JWT", "alg": "ed25519-nkey"}).encode())
    body = b64url(json.dumps(claims).encode())
    sig = issuer.sign(f"{head}.{body}".encode())
    return f"{head}.{body}.{b64url(sig)}"


def account_claims(jetstream=False):
    limits = {"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
              "wildcards": True, "conn": -1, "leaf": -1}
    if jetstream:
        limits.update({"mem_storage": -1, "disk_storage": -1, "streams": -1, "consumer": -1})
    return {"type": "account", "version": 2, "limits": limits}


def user_claims(pub, sub):
    return {"type": "user", "version": 2, "pub": {"allow": pub}, "sub": {"allow": sub},
            "subs": -1, "data": -1, "payload": -1}


def creds(jwt_text, seed):
    return ("-----BEGIN NATS USER JWT-----\n" + jwt_text + "\n------END NATS USER JWT------\n\n"
            "************************* IMPORTANT *************************\n"
            "NKEY Seed printed below can be used to sign and prove identity.\n\n"
            "-----BEGIN USER NKEY SEED-----\n" + seed + "\n------END USER NKEY SEED------\n")


def write(path, text, mode=0o600):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def cmd_init(a):
    os.makedirs(a.dir, exist_ok=True)
    op, sys_acct, doors = Key("operator"), Key("account"), Key("account")
    op_jwt = jwt(op, op.public, "operator", {"type": "operator", "version": 2,
                                            "system_account": sys_acct.public})
    sys_jwt = jwt(op, sys_acct.public, "SYS", account_claims())
    doors_jwt = jwt(op, doors.public, "DOORS", account_claims(jetstream=a.jetstream))
    write(os.path.join(a.dir, "operator.jwt"), op_jwt)
    # "spare": an account key the server never hears of (not preloaded).
    keys = {"operator": op.seed, "sys": sys_acct.seed, "doors": doors.seed, "spare": Key("account").seed}
    write(os.path.join(a.dir, "keys.json"), json.dumps(keys))
    conf = [f"listen: 127.0.0.1:{a.port}", f'operator: "{os.path.join(a.dir, "operator.jwt")}"',
            f"system_account: {sys_acct.public}", "resolver: MEMORY",
            "resolver_preload: {", f"  {sys_acct.public}: {sys_jwt}", f"  {doors.public}: {doors_jwt}", "}"]
    if a.jetstream:
        conf += ["server_name: doorgateway_test",
                 f'jetstream {{ store_dir: "{os.path.join(a.dir, "js")}", max_mem: 64MB, max_file: 64MB }}']
    if a.tls:
        ca, cert, key = a.tls
        conf += ["tls {", f'  cert_file: "{cert}"', f'  key_file: "{key}"', f'  ca_file: "{ca}"',
                 "  verify: true", "  timeout: 5", "}"]
    write(os.path.join(a.dir, "server.conf"), "\n".join(conf) + "\n", 0o644)


def load_keys(d):
    with open(os.path.join(d, "keys.json")) as f:
        return {k: Key.from_seed(v) for k, v in json.load(f).items()}


def split(text):
    return [s for s in (text or "").split(",") if s]


def cmd_user(a):
    keys = load_keys(a.dir)
    user = Key("user")
    now = int(time.time())
    perms = {"pub": split(a.pub), "sub": split(a.sub)}
    text = jwt(keys["doors"], user.public, a.name, user_claims(perms["pub"], perms["sub"]),
               exp=(now + a.exp) if a.exp else None, iat=now)
    base = os.path.join(a.dir, a.name)
    write(base + ".creds", creds(text, user.seed))
    write(base + ".jwt", text + "\n")
    write(base + ".nk", user.seed + "\n")
    write(base + ".perms.json", json.dumps(perms), 0o644)
    print(user.public)


def cmd_reissue(a):
    keys = load_keys(a.dir)
    base = os.path.join(a.dir, a.name)
    with open(base + ".nk") as f:
        user = Key.from_seed(f.read())
    with open(base + ".perms.json") as f:
        perms = json.load(f)
    iat = a.iat if a.iat is not None else int(time.time()) + a.iat_offset
    exp = a.exp_at if a.exp_at is not None else (iat + a.exp) if a.exp else None
    issuer = Key("account") if a.issuer == "foreign" else keys[a.issuer]
    print(jwt(issuer, user.public, a.name, user_claims(perms["pub"], perms["sub"]), exp=exp, iat=iat))


def cmd_account_key(a):
    print(load_keys(a.dir)[a.name].public)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("init")
    i.add_argument("dir")
    i.add_argument("--port", type=int, required=True)
    i.add_argument("--tls", nargs=3, metavar=("CA", "CERT", "KEY"))
    i.add_argument("--jetstream", action="store_true", help="JetStream on, for the DOORS account too")
    u = sub.add_parser("user")
    u.add_argument("dir")
    u.add_argument("name")
    u.add_argument("--pub", default="")
    u.add_argument("--sub", default="")
    u.add_argument("--exp", type=int, default=0, help="lifetime in seconds (0: none)")
    r = sub.add_parser("reissue")
    r.add_argument("dir")
    r.add_argument("name")
    r.add_argument("--exp", type=int, default=0)
    r.add_argument("--iat-offset", type=int, default=0)
    r.add_argument("--iat", type=int, help="issued at, Unix seconds (instead of now + offset)")
    r.add_argument("--exp-at", type=int, help="expires at, Unix seconds (instead of iat + exp)")
    r.add_argument("--issuer", choices=["doors", "spare", "foreign"], default="doors")
    k = sub.add_parser("account-key")
    k.add_argument("dir")
    k.add_argument("name", choices=["doors", "spare"])
    a = p.parse_args()
    {"init": cmd_init, "user": cmd_user, "reissue": cmd_reissue, "account-key": cmd_account_key}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
