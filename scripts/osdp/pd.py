#!/usr/bin/env python3
"""An OSDP reader for the tests: libosdp's peripheral device (PyPI libosdp, an
independent implementation) on a pseudo-terminal. Run with the Python of the venv
scripts/osdp/venv.sh builds (Tests/OSDPTests/LibosdpInteropTests.swift does).

    pd.py [--address N] [--scbk HEX] [--no-sc] [--link PATH]

Prints `tty /dev/pts/N` (the side the control panel opens) first, then one line
per event: `card-submitted NS` (a card handed to libosdp, CLOCK_MONOTONIC ns), `sc-active` (a session with its own SCBK; libosdp does not count SCBK-D), `command {...}` (each command libosdp hands the PD app,
LED and buzzer included). Reads lines on stdin: `card BITS HEX` (a raw Wiegand
read of BITS bits), `keys TEXT` (key presses), `quit`. Dies with its parent.

--link PATH makes PATH a symlink to the pty (as /dev/serial/by-id/… names a USB adapter), so a
control panel can be configured before the reader starts (make run); it is removed on exit.
Without --scbk the reader is in install mode (SCBK-D); --no-sc makes a reader that
does not offer Secure Channel at all (a plaintext reader: its osdp_PDCAP leaves out
function 9, which libosdp itself always lists). The attacks, each once, on
the reader's own replies as they leave it (the line between reader and door):
`tamper-mac` flips a bit of the next MAC'd reply's MAC (CRC made good again);
`replay-card` sends the last MAC'd card reply again in place of the next MAC'd reply;
`downgrade-card HEX` answers the next MAC'd reply's command in plain text instead, with
a 26-bit card HEX (a downgrade: no security block). Each prints `attack NAME` once done.
`fmt-card TEXT` (a plaintext reader, --no-sc) answers the next poll with osdp_FMT carrying the
ASCII card number TEXT in place of libosdp's ACK: libosdp 3.2.9 sends no osdp_FMT itself (its
CardFormat.ASCII read is dropped as deprecated), so this is the door's only FMT peer on a line.
"""
import argparse
import os
import select
import signal
import sys
import time

from osdp import (Capability, CardFormat, Channel, Command, Event, LibFlag, LogLevel, PDCapabilities, PDInfo,
                  PeripheralDevice)
from ptyline import FdIO, die_with_parent, raw_pty, say


def crc16(data):
    """OSDP's CRC-16 (polynomial 0x1021, initial 0x1D0F), sent least significant byte first."""
    crc = 0x1D0F
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def with_crc(packet):
    body = bytes(packet[:-2])
    crc = crc16(body)
    return body + bytes([crc & 0xFF, crc >> 8])


def reply(address, ctrl, code, payload):
    """A whole reply packet: header, code, payload and its CRC."""
    length = 6 + len(payload) + 2
    return with_crc(bytes([0x53, address, length & 0xFF, length >> 8, ctrl, code]) + payload + b"\x00\x00")


class PtyChannel(FdIO, Channel):
    def __init__(self, fd):
        super().__init__(fd)
        self.attack = None
        self.attack_arg = None
        self.last_card = None
        self.plaintext = False

    def tamper(self, buf):
        """The armed attack on one of the reader's replies (a whole packet per write)."""
        data = bytes(buf)
        start = data.find(b"\x53")
        if start < 0 or len(data) - start < 8:
            return data
        mark, packet = data[:start], data[start:]
        ctrl = packet[4]
        scb = ctrl & 0x08
        code_at = 5 + (packet[5] if scb else 0)
        mac = scb and packet[6] in (0x16, 0x18)
        if mac and packet[6] == 0x18 and packet[code_at] == 0x50:
            self.last_card = packet
        if self.plaintext and not scb and packet[5] == 0x46:
            # libosdp always lists Secure Channel among its capabilities: a plaintext reader
            # is one whose osdp_PDCAP does not (function 9 left out).
            caps = packet[6:-2]
            kept = b"".join(caps[i:i + 3] for i in range(0, len(caps) - 2, 3) if caps[i] != 9)
            return mark + reply(packet[1], ctrl, 0x46, kept)
        if self.attack == "fmt-card" and not scb and packet[5] == 0x40:
            self.attack = None
            chars = self.attack_arg.encode()
            say("attack fmt-card")
            return mark + reply(packet[1], ctrl, 0x51, bytes([0x00, 0x00, len(chars)]) + chars)
        if not mac or self.attack is None:
            return data
        name, self.attack = self.attack, None
        if name == "tamper-mac":
            forged = bytearray(packet)
            forged[-3] ^= 0x01  # the MAC's last byte
            packet = with_crc(forged)
        elif name == "replay-card" and self.last_card is not None:
            packet = self.last_card
        elif name == "downgrade-card":
            card = bytes.fromhex(self.attack_arg)
            payload = bytes([0x00, 0x01, 26, 0x00]) + card
            length = 5 + 1 + 1 + len(payload) + 2
            head = bytes([0x53, packet[1], length & 0xFF, length >> 8, (ctrl & 0x03) | 0x04, 0x50]) + payload
            packet = with_crc(head + b"\x00\x00")
        else:
            self.attack = name
            return data
        say("attack " + name)
        return mark + packet

    def write(self, buf):
        return len(buf) if super().write(self.tamper(buf)) else 0


def main():
    die_with_parent()
    p = argparse.ArgumentParser()
    p.add_argument("--address", type=int, default=1)
    p.add_argument("--scbk", help="the reader's SCBK (32 hex digits); without it, install mode (SCBK-D)")
    p.add_argument("--no-sc", action="store_true", help="a reader without Secure Channel (plaintext)")
    p.add_argument("--link", help="a symlink to the pty, made at start and removed at exit")
    p.add_argument("--log-level", type=int, default=LogLevel.Warning)
    args = p.parse_args()

    master, slave = raw_pty()
    flags = [LibFlag.EnforceSecure] if args.scbk else []
    channel = PtyChannel(master)
    channel.plaintext = args.no_sc
    info = PDInfo(args.address, channel, scbk=bytes.fromhex(args.scbk) if args.scbk else None,
                  flags=[] if args.no_sc else flags)
    caps = [
        (Capability.LEDControl, 1, 1),
        (Capability.AudibleControl, 1, 1),
        (Capability.CheckCharacter, 1, 0),
    ]
    if not args.no_sc:
        caps.append((Capability.CommunicationSecurity, 1, 1))
    caps = PDCapabilities(caps)
    pd = PeripheralDevice(info, caps, log_level=args.log_level)
    pd.start()
    if args.link:
        if os.path.lexists(args.link):
            os.remove(args.link)
        os.symlink(os.ttyname(slave), args.link)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # so `finally` removes the link
    say("tty " + os.ttyname(slave))
    secure = False
    try:
        while True:
            ready, _, _ = select.select([sys.stdin], [], [], 0.02)
            if ready:
                line = sys.stdin.readline()
                if not line or line.strip() == "quit":
                    break
                words = line.split()
                if words[0] == "card":
                    submitted = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                    pd.submit_event({"event": Event.CardRead, "reader_no": 0, "direction": 0,
                                     "format": CardFormat.Wiegand, "length": int(words[1]),
                                     "data": bytes.fromhex(words[2])})
                    # When the read was handed to libosdp (CLOCK_MONOTONIC ns): the bench's start.
                    say("card-submitted %d" % submitted)
                elif words[0] in ("tamper-mac", "replay-card", "downgrade-card", "fmt-card"):
                    channel.attack_arg = words[1] if len(words) > 1 else None
                    channel.attack = words[0]
                elif words[0] == "keys":
                    pd.submit_event({"event": Event.KeyPress, "reader_no": 0, "data": words[1].encode()})
            if not secure and pd.is_sc_active():
                secure = True
                say("sc-active")
            while True:
                cmd = pd.get_command(timeout=-1)
                if not cmd:
                    break
                if cmd.get("command") == Command.Keyset:
                    # The key the door handed over (test readers only: a real reader never shows it).
                    say("keyset " + repr(sorted((k, v.hex() if isinstance(v, (bytes, bytearray)) else v)
                                                for k, v in cmd.items())))
                else:
                    say("command " + repr(sorted(cmd.items())))
    finally:
        pd.stop()
        if args.link and os.path.islink(args.link):
            os.remove(args.link)


if __name__ == "__main__":
    main()
