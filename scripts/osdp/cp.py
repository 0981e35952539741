#!/usr/bin/env python3
"""libosdp's own control panel (PyPI libosdp's ControlPanel, as shipped: its thread refreshes
every 20 ms) on a serial device, for the bench (scripts/bench-osdp.py): the other side of the
comparison with gatewayd's control panel. Run with the Python of scripts/osdp/venv.sh's venv.

    cp.py DEVICE --scbk HEX [--address N]

Prints `sc-active` once Secure Channel is up with the reader's key, then one line per card
the reader sends: `card NS HEX`, NS the CLOCK_MONOTONIC nanoseconds at which libosdp handed
the event to its callback. Stops on `quit` or when stdin closes; dies with its parent.
"""
import argparse
import select
import sys
import time

from osdp import Channel, ControlPanel, Event, LibFlag, LogLevel, PDInfo
from ptyline import FdIO, die_with_parent, open_raw, say


class TtyChannel(FdIO, Channel):
    pass


def main():
    die_with_parent()
    p = argparse.ArgumentParser()
    p.add_argument("device")
    p.add_argument("--scbk", required=True)
    p.add_argument("--address", type=int, default=1)
    args = p.parse_args()
    fd = open_raw(args.device)

    def on_event(pd, event):
        if event.get("event") == Event.CardRead:
            say("card %d %s" % (time.clock_gettime_ns(time.CLOCK_MONOTONIC), bytes(event["data"]).hex().upper()))
        return 0

    info = PDInfo(args.address, TtyChannel(fd), scbk=bytes.fromhex(args.scbk), flags=[LibFlag.EnforceSecure])
    cp = ControlPanel([info], log_level=LogLevel.Warning, event_handler=on_event)
    cp.start()
    secure = False
    try:
        while True:
            ready, _, _ = select.select([sys.stdin], [], [], 0.05)
            if ready:
                line = sys.stdin.readline()
                if not line or line.strip() == "quit":
                    break
            if not secure and cp.is_sc_active(args.address):
                secure = True
                say("sc-active")
    finally:
        cp.stop()


if __name__ == "__main__":
    main()
