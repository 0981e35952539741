#!/usr/bin/env python3
"""An OSDP reader for the tests: libosdp's peripheral device (PyPI libosdp, an
independent implementation) on a pseudo-terminal. Run with the Python of the venv
scripts/osdp/venv.sh builds (Tests/OSDPTests/LibosdpInteropTests.swift does).

    pd.py [--address N] [--scbk HEX | --install]

Prints `tty /dev/pts/N` (the side the control panel opens) first, then one line
per event: `sc-active` (a session with its own SCBK; libosdp does not count SCBK-D), `command {...}` (each command libosdp hands the PD app,
LED and buzzer included). Reads lines on stdin: `card BITS HEX` (a raw Wiegand
read of BITS bits), `keys TEXT` (key presses), `quit`. Dies with its parent.
"""
import argparse
import ctypes
import os
import select
import signal
import sys
import termios
import tty

from osdp import (Capability, CardFormat, Channel, Event, LibFlag, LogLevel, PDCapabilities, PDInfo,
                  PeripheralDevice)


def die_with_parent():
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        sys.exit(1)


class PtyChannel(Channel):
    def __init__(self, fd):
        super().__init__()
        self.fd = fd

    def read(self, max_bytes):
        try:
            return os.read(self.fd, max_bytes)
        except (BlockingIOError, OSError):
            return b""

    def write(self, buf):
        try:
            return os.write(self.fd, bytes(buf))
        except (BlockingIOError, OSError):
            return 0

    def flush(self):
        pass


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main():
    die_with_parent()
    p = argparse.ArgumentParser()
    p.add_argument("--address", type=int, default=1)
    p.add_argument("--scbk", help="the reader's SCBK (32 hex digits); without it, install mode (SCBK-D)")
    p.add_argument("--log-level", type=int, default=LogLevel.Warning)
    args = p.parse_args()

    master, slave = os.openpty()
    tty.setraw(slave, termios.TCSANOW)
    tty.setraw(master, termios.TCSANOW)
    os.set_blocking(master, False)
    flags = [LibFlag.EnforceSecure] if args.scbk else []
    info = PDInfo(args.address, PtyChannel(master), scbk=bytes.fromhex(args.scbk) if args.scbk else None,
                  flags=flags)
    caps = PDCapabilities([
        (Capability.LEDControl, 1, 1),
        (Capability.AudibleControl, 1, 1),
        (Capability.CheckCharacter, 1, 0),
        (Capability.CommunicationSecurity, 1, 1),
    ])
    pd = PeripheralDevice(info, caps, log_level=args.log_level)
    pd.start()
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
                    pd.submit_event({"event": Event.CardRead, "reader_no": 0, "direction": 0,
                                     "format": CardFormat.Wiegand, "length": int(words[1]),
                                     "data": bytes.fromhex(words[2])})
                elif words[0] == "keys":
                    pd.submit_event({"event": Event.KeyPress, "reader_no": 0, "data": words[1].encode()})
            if not secure and pd.is_sc_active():
                secure = True
                say("sc-active")
            while True:
                cmd = pd.get_command(timeout=-1)
                if not cmd:
                    break
                say("command " + repr(sorted(cmd.items())))
    finally:
        pd.stop()


if __name__ == "__main__":
    main()
