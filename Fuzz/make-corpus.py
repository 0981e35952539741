#!/usr/bin/env python3
"""Writes the seed corpora Fuzz/corpus/<target>/ from the interop vectors
(Tests/Fixtures/compat.json, docs/formats.md "Test vectors"), the
configuration example and the requests gatewayctl sends.

    swift build --product fuzz-targets && python3 Fuzz/make-corpus.py

The debug `gateway` (config example) and `fuzz-targets` (reader transcripts)
must be built. Files are named seed-<what>; a target's directory is rewritten
except for files named regression-* (crashing inputs kept for FuzzCorpusTests).
"""
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "Fuzz", "corpus")
BIN = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, capture_output=True, text=True,
                     check=True).stdout.strip()
V = json.load(open(os.path.join(ROOT, "Tests", "Fixtures", "compat.json")))

seeds = {}


def add(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    name = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")
    seeds.setdefault(target, {})[f"seed-{name}"] = bytes(data)


h = bytes.fromhex

# ndef: TLV areas, NDEF messages (the NDEF TLV's value), dumps (raw, and as
# "type selector byte + memory" for the image path).
for i, t in enumerate(V["tags_v1"] + V["tags_v2"]):
    tlv = h(t["ndef_tlv"])
    add("ndef", f"area-sticker-{i}", tlv)
    length, start = (tlv[1], 2) if tlv[1] != 0xFF else ((tlv[2] << 8) | tlv[3], 4)
    add("ndef", f"message-sticker-{i}", tlv[start:start + length])
for i, c in enumerate(V["ndef_cases"]):
    add("ndef", f"area-case-{i}-{c['why'][:40]}", h(c["tlv"]))
for d in V["dumps"]:
    dump = h(d["hex"])
    add("ndef", f"dump-{d['type']}", dump)
    add("ndef", f"image-{d['type']}", bytes([{"NTAG213": 0, "NTAG215": 1, "NTAG216": 2}[d["type"]]]) + dump)
add("ndef", "area-blank", h("0300fe"))
add("ndef", "area-empty", b"")

# sticker: URLs (valid, odd, forged), share links, foreign URIs.
for i, t in enumerate(V["tags_v1"] + V["tags_v2"]):
    add("sticker", f"url-{i}", t["url"])
for i, c in enumerate(V["sticker_cases"]):
    add("sticker", f"case-{i}-{c['why'][:40]}", c["url"])
# Review H1: each v2 sticker with its u= cut off (a v1 copy of a generated key's sticker).
for i, t in enumerate(V["tags_v2"]):
    add("sticker", f"v2-u-cut-{i}", t["url"].split("&u=")[0])
for i, c in enumerate(V["bad_tags"]):
    add("sticker", f"bad-{i}-{c['why'][:40]}", c["url"])
for i, s in enumerate(V["share"]):
    add("sticker", f"share-{i}", s["link"])
add("sticker", "foreign-https", "https://example.com/door")
add("sticker", "uppercase-scheme", "SMP://action?idx=1&ts=1&sig=00")

# compat: the phone app's messages, device reports, the report command.
for i, o in enumerate(V["otp"]):
    msg = o.get("message") or json.dumps({"command": 1, "otp-auth": o["otp_auth"]})
    add("compat", f"otp-{i}", msg)
for i, c in enumerate(V["otp_cases"]):
    add("compat", f"case-{i}-{c['why']}", c["message"])
add("compat", "device-report", '{"TT_ID":"front-door","state":1}')
add("compat", "report-command", '{"command": 5}')
add("compat", "escapes", '{"command": 1, "otp-auth": "\\u0036\\ud83d\\ude00", "x": [1.5e3, -0, true, null]}')

# native: signed with the tests' native key (0x42 * 32), and broken variants.
NATIVE_KEY = bytes([0x42]) * 32


def native(action, ts, nonce, device="front-door", mac=None):
    msg = f"cmd1|{device}|{action}|{ts}|{nonce}".encode()
    mac = mac or hmac.new(NATIVE_KEY, msg, hashlib.sha256).hexdigest()
    return json.dumps({"action": action, "ts": ts, "nonce": nonce, "device": device, "mac": mac},
                      separators=(",", ":"))


NONCE = "00112233445566778899aabbccddeeff"
add("native", "signed", native(0, 1757216934, NONCE))
add("native", "signed-action-3", native(3, 1757216930, NONCE[::-1]))
add("native", "unknown-action", native(7, 1757216934, NONCE))
add("native", "other-device", native(0, 1757216934, NONCE, device="back-door"))
add("native", "bad-mac", native(0, 1757216934, NONCE, mac="0" * 64))
add("native", "huge-ts", native(0, 9223372036854775807, NONCE))
add("native", "negative-ts", native(0, -9223372036854775808, NONCE))

# toml: the example for both boards, uncommented, minimal, MQTT, and sections.
def example(board):
    return subprocess.run([os.path.join(BIN, "gateway"), "ctl", "config", "example", "--board", board],
                          capture_output=True, text=True, check=True).stdout


def uncommented(text):
    out, block = [], False
    for line in text.split("\n"):
        if line.startswith("# ["):
            block = True
            out.append(line[2:])
            continue
        if not line:
            block = False
        if block and line.startswith("# "):
            out.append(line[2:])
        elif re.match(r"^# [a-z_]+ = ", line):
            out.append(line[2:])
        else:
            out.append(line)
    return "\n".join(out)


PREAMBLE = '[device]\nid = "f"\n[board]\nkind = "sim"\n'
full = uncommented(example("pi"))
add("toml", "example-pi", example("pi"))
add("toml", "example-sim", example("sim"))
add("toml", "minimal", PREAMBLE)
add("toml", "mqtt", PREAMBLE + '[mqtt]\nenabled = true\nhost = "127.0.0.1"\n[mqtt.tls]\nca_file = "/etc/ca.crt"\n'
    '[mqtt.commands]\ncompat_topics = ["phone/front-door"]\n[mqtt.commands.mapping]\n1 = 0\n5 = "report"\n')
sections, current = [], None
for line in full.split("\n"):
    if line.startswith("#") or not line.strip():
        continue
    if line.startswith("[") or current is None:
        current = []
        sections.append(current)
    current.append(line)
for s in sections:
    if s[0].startswith("[device]") or s[0].startswith("[board]"):
        continue
    name = s[0].strip("[] ").replace(".", "-") if s[0].startswith("[") else "top"
    add("toml", f"section-{name}", PREAMBLE + "\n".join(s) + "\n")

# control: request lines as gatewayctl sends them, several to a seed.
def req(i, method, **params):
    r = {"id": i, "method": method}
    if params:
        r["params"] = params
    return json.dumps(r, separators=(",", ":"))


dump = V["dumps"][0]["hex"]
lines = [
    req(1, "status"), req(2, "open", action=0), req(3, "mode", mode="passage"),
    req(4, "provision", action=1, label="Alice", protect=True, overwrite=False),
    req(5, "feedback.play", pattern="granted"), req(6, "secrets.import", link=V["share"][0]["link"]),
    req(7, "keys.import", name="native_command", key="42" * 32), req(8, "tags.revoke", uid="04B3527F791D06"),
    req(9, "tags.revoke", signature="ee" * 32), req(10, "tags.expire", uid="04:B3:52:7F:79:1D:06", at=1),
    req(11, "log", limit=5), req(12, "sim.tap", uid="04B3527F791D06", dump=dump),
    req(13, "sim.tap", url=V["tags_v1"][0]["url"]), req(14, "sim.press", hold=0.5),
    req("s", "sim.door", state="open"), req(15, "backup", path="/tmp/b.sqlite"),
]
add("control", "gatewayctl", "\n".join(lines) + "\n")
add("control", "one-status", req(1, "status") + "\n")
add("control", "bad-lines", '\n \r\n{"id":1}\n[1,2]\n{"id":1.5,"method":"x"}\n{"id":1,"method":"x","params":3}\n'
    + "x" * 600 + "\n" + req(2, "status") + "\n")

# mqtt: one selector byte (topic, retained, HA-open link) + payload.
TOPIC = {"command": 0, "compat": 1, "lock": 2, "mode": 3, "lockout": 4, "action": 5}
add("mqtt", "native", bytes([TOPIC["command"]]) + native(0, 1757216934, NONCE).encode())
add("mqtt", "compat", bytes([TOPIC["compat"]]) + V["otp"][0]["message"].encode())
add("mqtt", "compat-device-report", bytes([TOPIC["compat"]]) + b'{"TT_ID":"x"}')
add("mqtt", "compat-report-command", bytes([TOPIC["compat"]]) + b'{"command": 5}')
for payload in ["OPEN", "UNLOCK", "LOCK", "open"]:
    add("mqtt", f"lock-{payload}", bytes([TOPIC["lock"] | 0x10]) + payload.encode())
add("mqtt", "lock-closed", bytes([TOPIC["lock"]]) + b"OPEN")
add("mqtt", "mode", bytes([TOPIC["mode"] | 0x10]) + b"passage")
add("mqtt", "lockout", bytes([TOPIC["lockout"] | 0x10]) + b"PRESS")
add("mqtt", "action", bytes([TOPIC["action"] | 0x10]) + b"2")
add("mqtt", "retained", bytes([TOPIC["mode"] | 0x18]) + b"normal")

# reader: tag mode (flags | 0x80, then memory) and, from the same runs, the
# script-mode transcripts of what that tag answered.
reader_tags = {"ntag213-identify": (0x81, h(V["dumps"][0]["hex"])),
               "ntag215-identify-twice": (0x83, h(V["dumps"][1]["hex"])),
               "ntag213-write": (0x9D, h(V["dumps"][0]["hex"])),
               "ntag213-protect": (0xD1, h(V["dumps"][0]["hex"])),
               "ntag213-noidentify": (0x80, h(V["dumps"][0]["hex"]))}
blank = bytearray(180)
blank[0:12] = h("04b3526d7f791d061d480000")
blank[12:19] = h("e1101200" "0300fe")
reader_tags["blank-write"] = (0x9D, bytes(blank))
for name, (flags, memory) in reader_tags.items():
    data = bytes([flags]) + memory
    add("reader", f"tag-{name}", data)
    with tempfile.TemporaryDirectory() as tmp:
        seed, out = os.path.join(tmp, "in"), os.path.join(tmp, "out")
        open(seed, "wb").write(data)
        subprocess.run([os.path.join(BIN, "fuzz-targets"), "reader", seed], env=dict(
            os.environ, FUZZ_READER_TRANSCRIPT=out), capture_output=True, check=True)
        add("reader", f"script-{name}", open(out, "rb").read())
add("reader", "script-silent", b"\x01")
add("reader", "script-no-tag", b"\x00\x01\x00")


def ed25519_sign(seed, message):
    """Ed25519 with OpenSSL (a raw 32-byte seed as PKCS#8 DER)."""
    with tempfile.TemporaryDirectory() as tmp:
        key, msg = os.path.join(tmp, "k.der"), os.path.join(tmp, "m")
        open(key, "wb").write(h("302e020100300506032b657004220420") + seed)
        open(msg, "wb").write(message)
        return subprocess.run(["openssl", "pkeyutl", "-sign", "-inkey", key, "-keyform", "DER", "-rawin", "-in", msg],
                              capture_output=True, check=True).stdout


def ed25519_public(seed):
    with tempfile.TemporaryDirectory() as tmp:
        key = os.path.join(tmp, "k.der")
        open(key, "wb").write(h("302e020100300506032b657004220420") + seed)
        der = subprocess.run(["openssl", "pkey", "-inform", "DER", "-in", key, "-pubout", "-outform", "DER"],
                             capture_output=True, check=True).stdout
        return der[-32:]


def b64u(data):
    import base64
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def nkey(prefix, key):
    import base64
    payload = bytes([prefix]) + key
    crc = 0
    for b in payload:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return base64.b32encode(payload + bytes([crc & 0xFF, crc >> 8])).decode().rstrip("=")


# fleet (Sources/fuzz-targets/FleetTarget.swift, site seed 0x5e * 32): bodies
# (the target also signs its input as a body), envelopes signed with the
# site seed, a forged one, and broken envelopes.
SITE_SEED = bytes([0x5E] * 32)
BODIES = {
    "minimal": {"site": "main-site", "version": 1, "origin": "door-a/alice", "issued": 1795000000,
                "revocations": {"uids": [], "signatures": []}, "tags": []},
    "full": {"site": "main-site", "version": 7, "origin": "door-b/alice", "issued": 1795000000,
             "revocations": {"uids": ["04A1B2C3D4E5F6"], "signatures": ["ab" * 32]},
             "tags": [{"uid": "04112233445566", "action": 0, "label": "bob", "valid_until": None},
                      {"uid": "04AABBCCDDEEFF", "action": 1, "label": "ünï\u202e", "valid_until": 1800000000}],
             "secrets": {"epk": b64u(bytes(32)), "nonce": b64u(bytes(12)), "ct": b64u(bytes(48))}},
    "other-site": {"site": "elsewhere", "version": 2, "origin": "x/y", "issued": 0,
                   "revocations": {"uids": [], "signatures": []}, "tags": []},
    "int64-max": {"site": "main-site", "version": 9223372036854775807, "origin": "door-a/m", "issued": 0,
                  "revocations": {"uids": [], "signatures": []}, "tags": [{"uid": "04A1B2C3D4E5F6", "action": 0, "valid_until": -9223372036854775808}]},
}
for name, body in BODIES.items():
    raw = json.dumps(body, separators=(",", ":")).encode()
    add("fleet", f"body-{name}", raw)
    sig = ed25519_sign(SITE_SEED, b"doorgateway-fleet-v1\n" + raw)
    add("fleet", f"signed-{name}", json.dumps({"fleet": 1, "body": b64u(raw), "sig": b64u(sig)},
                                              separators=(",", ":")))
raw = json.dumps(BODIES["minimal"], separators=(",", ":")).encode()
add("fleet", "forged", json.dumps({"fleet": 1, "body": b64u(raw), "sig": b64u(bytes(64))}))
add("fleet", "format-2", json.dumps({"fleet": 2, "body": b64u(raw), "sig": b64u(bytes(64))}))
add("fleet", "short-sig", json.dumps({"fleet": 1, "body": b64u(raw), "sig": b64u(bytes(63))}))
add("fleet", "empty-body", '{"fleet":1,"body":"","sig":"' + b64u(bytes(64)) + '"}')
add("fleet", "nested", '{"fleet":1,"body":{"site":"main-site"},"sig":[1,2]}')
add("fleet", "empty", b"")

# natsjwt (Sources/fuzz-targets/NATSJWTTarget.swift, account seed 0xac * 32):
# claims (the target also signs its input as claims), JWTs signed by that
# account, one by another key, tampered and broken ones.
ACCOUNT = nkey(0, ed25519_public(bytes([0xAC] * 32)))
DOOR = nkey(20 << 3, ed25519_public(bytes([0xD0] * 32)))
HEADER = b64u(b'{"typ":"JWT","alg":"ed25519-nkey"}')
CLAIMS = {
    "user": {"jti": "J", "iat": 1757216000, "exp": 1757300000, "iss": ACCOUNT, "name": "front-door", "sub": DOOR,
             "nats": {"type": "user", "version": 2, "pub": {"allow": ["doorgateway.front-door.>"]}}},
    "no-exp": {"iat": 1757216000, "iss": ACCOUNT, "sub": DOOR, "nats": {"type": "user"}},
    "ahead": {"iat": 253402300799, "exp": 253402300799, "iss": ACCOUNT, "sub": DOOR},
    "expired": {"iat": 1000, "exp": 2000, "iss": ACCOUNT, "sub": DOOR},
    "float-time": {"iat": 1.5e9, "exp": 1e19, "iss": ACCOUNT, "sub": DOOR},
    "account-sub": {"iat": 1, "iss": ACCOUNT, "sub": ACCOUNT},
    "operator-type": {"iat": 1, "iss": ACCOUNT, "sub": DOOR, "nats": {"type": "operator"}},
}
for name, claims in CLAIMS.items():
    raw = json.dumps(claims, separators=(",", ":")).encode()
    add("natsjwt", f"claims-{name}", raw)
    signed = HEADER + "." + b64u(raw)
    add("natsjwt", f"jwt-{name}", signed + "." + b64u(ed25519_sign(bytes([0xAC] * 32), signed.encode())))
signed = HEADER + "." + b64u(json.dumps(CLAIMS["user"], separators=(",", ":")).encode())
add("natsjwt", "jwt-foreign", signed + "." + b64u(ed25519_sign(bytes([0x77] * 32), signed.encode())))
add("natsjwt", "jwt-unsigned", signed + "." + b64u(bytes(64)))
add("natsjwt", "jwt-two-parts", signed)
add("natsjwt", "jwt-with-seed", "-----BEGIN USER NKEY SEED-----\nSUAAAA\n------END USER NKEY SEED------\n")
add("natsjwt", "jwt-bad-header", b64u(b'{"alg":"HS256"}') + "." + b64u(b"{}") + "." + b64u(bytes(64)))

# mdns (Sources/fuzz-targets/MulticastDNSTarget.swift): answers to a one-shot
# A query for broker.local, as python3-zeroconf and avahi send them, and broken ones.
def mdns_name(*labels):
    return b"".join(bytes([len(l)]) + l.encode() for l in labels) + b"\0"


def mdns_rr(name, rtype, rclass, ttl, data):
    return name + bytes([rtype >> 8, rtype & 255, rclass >> 8, rclass & 255]) + ttl.to_bytes(4, "big") + \
        len(data).to_bytes(2, "big") + data


broker = mdns_name("broker", "local")
question = broker + b"\0\1\0\1"
add("mdns", "legacy-unicast-zeroconf", b"\x12\x34\x84\0\0\1\0\1\0\0\0\1" + question +
    mdns_rr(b"\xc0\x0c", 1, 1, 120, bytes([10, 253, 7, 1])) +
    mdns_rr(b"\xc0\x0c", 47, 1, 4500, b"\xc0\x0c\0\4\0\0\0\x08"))
add("mdns", "multicast-cache-flush", b"\0\0\x84\0\0\0\0\1\0\0\0\0" +
    mdns_rr(broker, 1, 0x8001, 120, bytes([192, 168, 1, 10])))
add("mdns", "aaaa-then-a-additional", b"\0\0\x84\0\0\0\0\1\0\0\0\1" +
    mdns_rr(broker, 28, 0x8001, 120, bytes(range(16))) + mdns_rr(b"\xc0\x0c", 1, 0x8001, 120, bytes([10, 0, 0, 9])))
add("mdns", "goodbye", b"\0\0\x84\0\0\0\0\1\0\0\0\0" + mdns_rr(broker, 1, 0x8001, 0, bytes([10, 0, 0, 1])))
add("mdns", "service-answer", b"\0\0\x84\0\0\0\0\4\0\0\0\0" +
    mdns_rr(mdns_name("_secure-mqtt", "_tcp", "local"), 12, 1, 4500, mdns_name("broker broker", "_secure-mqtt", "_tcp", "local")) +
    mdns_rr(b"\xc0\x2f", 33, 0x8001, 120, b"\0\0\0\0\x22\xb3" + broker) +
    mdns_rr(b"\xc0\x2f", 16, 0x8001, 4500, b"\0") +
    mdns_rr(broker, 1, 0x8001, 120, bytes([10, 253, 7, 1])))
add("mdns", "query", b"\0\0\0\0\0\1\0\0\0\0\0\0" + question)
add("mdns", "pointer-loop", b"\0\0\x84\0\0\0\0\1\0\0\0\0\xc0\x0c\0\1\0\1\0\0\0\1\0\4\1\2\3\4")
add("mdns", "truncated", b"\0\0\x84\0\0\0\0\1\0\0\0\0" + broker + b"\0\1\0")

# ntag424 (Sources/fuzz-targets/NTAG424Target.swift): 00 + a SUN URL (AN12196 Tables 3/5/6,
# keys zero), else tag answers: E(K, RndB) and E(K, TI ‖ RndA' ‖ caps) of AN12196 Table 14.
for name, url in {
    "e": "https://choose.url.com/ntag424?e=EF963FF7828658A599F3041510671E88&c=94EED9EE65337086",
    "p": "lnurlw://card.example/ln?p=ef963ff7828658a599f3041510671e88&c=94eed9ee65337086",
    "enc": "https://sdm.nfcdeveloper.com/tag?picc_data=FD91EC264309878BE6345CBE53BADF40"
           "&enc=CEE9A53E3E463EF1F459635736738962&cmac=ECC1E7F6C6C73BF6",
    "lrp": "https://a/?e=EF963FF7828658A599F3041510671E88EF963FF7828658A5&c=94EED9EE65337086",
    "bad-mac": "https://a/?e=EF963FF7828658A599F3041510671E88&c=94EED9EE65337087",
}.items():
    add("ntag424", f"sun-{name}", b"\x00" + url.encode())
add("ntag424", "ev2-table14", b"\x01" + h("A04C124213C186F22399D33AC2A30215")
    + h("3FA64DB5446D1F34CD6EA311167F5E4985B89690C04A05F17FA7AB2F08120663"))
add("ntag424", "response-table29", b"\x01" + bytes(16) + h("70756055688505B52A5E26E59E329CD6595F672298EA41B7"))
# 02 / 03 + a ReaderTarget script: NFCReader.tapNTAG424 / provisionNTAG424 on scripted answers:
# InListPassiveTarget with an ATS, ISOSelect, GetVersion (3 parts), the NDEF file (NLEN 5, a
# record), AuthenticateEV2First's challenge, then 91AE.


def answer(b):
    return bytes([len(b)]) + b


UID424 = h("04DE5F1EACC040")
SCRIPT424 = b"".join(answer(a) for a in [
    h("0101034420") + h("07") + UID424 + h("067777710280"), h("009000"),
    h("0004040230001105") + h("91AF"), h("0004040201021105") + h("91AF"),
    h("00") + UID424 + h("CF39411020272091" + "00"), h("009000"), h("0000059000"), h("00D1010155009000"),
    h("000123456789ABCDEF0123456789ABCDEF91AF"), h("0091AE"),
])
add("ntag424", "reader-tap", b"\x02" + SCRIPT424)
add("ntag424", "reader-provision", b"\x03" + SCRIPT424)

# osdp (Sources/fuzz-targets/OSDPTarget.swift): OSDP packets as a reader sends them: SIA OSDP
# Annex E's examples, the replies the CP reads, a Secure Channel reply, noise and broken ones.
# osdpcp: mode (bit 0: Secure Channel, session up with SCBK 5A×16, RND.A B0×8, RND.B A0×8),
# chunk size, then the reader's answers.
def osdp_crc(data):
    crc = 0x1D0F
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def osdp_frame(addr, seq, code, data=b"", scb=None, mac_len=0, reply=True):
    scb_bytes = bytes([len(scb) + 1]) + scb if scb else b""
    total = 5 + len(scb_bytes) + 1 + len(data) + mac_len + 2
    ctrl = seq | 0x04 | (0x08 if scb else 0)
    return bytes([0x53, addr | (0x80 if reply else 0), total & 255, total >> 8, ctrl]) + scb_bytes + bytes([code]) + data


def osdp_close(body):
    c = osdp_crc(body)
    return body + bytes([c & 255, c >> 8])


def aes_ecb(key, block):
    return subprocess.run(["openssl", "enc", "-aes-128-ecb", "-nopad", "-K", key.hex()], input=block,
                          capture_output=True, check=True).stdout


def osdp_mac(k1, k2, iv, msg):
    if len(msg) == 0 or len(msg) % 16:
        msg = msg + b"\x80" + bytes((-(len(msg) + 1)) % 16)
    chain = iv
    blocks = [msg[i:i + 16] for i in range(0, len(msg), 16)]
    for i, b in enumerate(blocks):
        chain = aes_ecb(k2 if i == len(blocks) - 1 else k1, bytes(x ^ y for x, y in zip(b, chain)))
    return chain


def osdp_encrypt(kenc, mac, data):
    data = data + b"\x80" + bytes((-(len(data) + 1)) % 16)
    out, chain = b"", bytes(~x & 255 for x in mac)
    for i in range(0, len(data), 16):
        chain = aes_ecb(kenc, bytes(x ^ y for x, y in zip(data[i:i + 16], chain)))
        out += chain
    return out


OSDP_CARD = h("00011A00AABBCCC0")
add("osdp", "annexe-id-crc", h("53000900046100C066"))
add("osdp", "annexe-comset-checksum", h("537F0C00006E008025000F"))
add("osdp", "stream-mark-noise", b"\x00\xff" + h("53000900046100C066") + b"\xff" + h("537F0C00006E008025000F"))
add("osdp", "ack", osdp_close(osdp_frame(1, 1, 0x40)))
add("osdp", "nak", osdp_close(osdp_frame(1, 2, 0x41, b"\x06")))
add("osdp", "pdid", osdp_close(osdp_frame(1, 0, 0x45, h("5C2623190278563412030201"))))
add("osdp", "pdcap", osdp_close(osdp_frame(1, 1, 0x46, h("090101080100040102"))))
add("osdp", "raw", osdp_close(osdp_frame(1, 3, 0x50, OSDP_CARD)))
add("osdp", "fmt", osdp_close(osdp_frame(1, 3, 0x51, b"\x00\x00\x04" + b"1234")))
add("osdp", "keypad", osdp_close(osdp_frame(1, 1, 0x53, b"\x00\x03" + b"12\x0d")))
add("osdp", "lstatr", osdp_close(osdp_frame(1, 1, 0x48, b"\x01\x00")))
add("osdp", "busy", osdp_close(osdp_frame(1, 0, 0x79)))
add("osdp", "ccrypt", osdp_close(osdp_frame(1, 2, 0x76, bytes(range(32)), scb=b"\x12\x01")))
add("osdp", "rmac-i", osdp_close(osdp_frame(1, 3, 0x78, bytes(range(16)), scb=b"\x14\x01")))
add("osdp", "scs18", osdp_close(osdp_frame(1, 1, 0x50, bytes(range(16)), scb=b"\x18", mac_len=4) + b"\1\2\3\4"))
add("osdp", "bad-scb-length", osdp_close(h("5381") + bytes([10, 0, 0x0D, 9, 0x11, 0x40])))
add("osdp", "truncated", h("53810E000D0215"))

SCBK, RND_A, RND_B = bytes([0x5A]) * 16, bytes([0xB0]) * 8, bytes([0xA0]) * 8
S_ENC, S_MAC1, S_MAC2 = (aes_ecb(SCBK, bytes([1, b]) + RND_A[:6] + bytes(8)) for b in (0x82, 0x01, 0x02))
RMAC_I = aes_ecb(S_MAC2, aes_ecb(S_MAC1, aes_ecb(S_ENC, RND_B + RND_A)))
# The CP's first poll in the session (sequence 1, SCS_15), then the reader's SCS_18 card reply.
C_MAC = osdp_mac(S_MAC1, S_MAC2, RMAC_I, osdp_frame(1, 1, 0x60, scb=b"\x15", mac_len=4, reply=False))
enc = osdp_encrypt(S_ENC, C_MAC, OSDP_CARD)
body = osdp_frame(1, 1, 0x50, enc, scb=b"\x18", mac_len=4)
sealed_card = osdp_close(body + osdp_mac(S_MAC1, S_MAC2, C_MAC, body)[:4])
add("osdpcp", "secure-card", b"\x01\x3f" + sealed_card)
add("osdpcp", "secure-plaintext-card", b"\x01\x3f" + osdp_close(osdp_frame(1, 1, 0x50, OSDP_CARD)))
add("osdpcp", "secure-replay-then-card", b"\x01\x05" + sealed_card + sealed_card)
add("osdpcp", "insecure-link-up-card", b"\x00\x3f" + osdp_close(osdp_frame(1, 0, 0x45, h("5C2623190278563412030201")))
    + osdp_close(osdp_frame(1, 1, 0x46, h("090101"))) + osdp_close(osdp_frame(1, 2, 0x50, OSDP_CARD)))
# osdp_FMT (an ASCII card number, OSDP/CardData.swift): plain and inside the session.
OSDP_FMT = b"\x00\x00\x08" + b"12345678"
add("osdp", "fmt-card-number", osdp_close(osdp_frame(1, 1, 0x51, OSDP_FMT)))
add("osdp", "fmt-control-chars", osdp_close(osdp_frame(1, 1, 0x51, b"\x00\x00\x03" + b"1\n\xc3")))
fmt_body = osdp_frame(1, 1, 0x51, osdp_encrypt(S_ENC, C_MAC, OSDP_FMT), scb=b"\x18", mac_len=4)
add("osdpcp", "secure-fmt", b"\x01\x3f" + osdp_close(fmt_body + osdp_mac(S_MAC1, S_MAC2, C_MAC, fmt_body)[:4]))
add("osdpcp", "insecure-link-up-fmt", b"\x00\x3f" + osdp_close(osdp_frame(1, 0, 0x45, h("5C2623190278563412030201")))
    + osdp_close(osdp_frame(1, 1, 0x46, h("090101"))) + osdp_close(osdp_frame(1, 2, 0x51, OSDP_FMT)))
add("osdpcp", "insecure-busy-noise", b"\x00\x02\xff\x00" + osdp_close(osdp_frame(1, 0, 0x79)) + h("5381FFFF"))

for target, files in sorted(seeds.items()):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for old in os.listdir(d):
        if old.startswith("seed-"):
            os.remove(os.path.join(d, old))
    for name, data in sorted(files.items()):
        open(os.path.join(d, name), "wb").write(data)
    print(f"{target}: {len(files)} seeds", file=sys.stderr)
