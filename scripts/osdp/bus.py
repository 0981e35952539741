#!/usr/bin/env python3
"""An RS-485 bus for the tests: several OSDP readers (scripts/osdp/pd.py, each on its own
pseudo-terminal) behind one line, as a multi-drop bus wires them to one adapter.

    bus.py TTY [TTY ...]

Opens each reader's pty raw and makes a new pty pair for the control panel; prints
`tty /dev/pts/N` (the side the control panel opens). Every byte the control panel sends
reaches every reader (each answers only its own address); every reader's reply reaches the
control panel. Half duplex: a command sent while another reader's reply is still due
(less than 150 ms after the command it answers, nothing answered yet) is a collision on a
real bus; each is printed as `collision ADDRESS`. Dies with its parent, or when stdin closes.
"""
import os
import select
import sys
import time

from ptyline import die_with_parent, open_raw, raw_pty


def main():
    die_with_parent()
    readers = []
    for path in sys.argv[1:]:
        readers.append(open_raw(path))
    master, slave = raw_pty()
    sys.stdout.write("tty " + os.ttyname(slave) + "\n")
    sys.stdout.flush()
    stdin = sys.stdin.fileno()
    pending = None  # (address, time) of the command on the line, its reply not seen yet
    while True:
        ready, _, _ = select.select([master, stdin] + readers, [], [], 0.5)
        if stdin in ready and not os.read(stdin, 64):
            return
        if master in ready:
            try:
                data = os.read(master, 4096)
            except OSError:
                data = b""
            start = data.find(b"\x53")
            if 0 <= start < len(data) - 1 and not data[start + 1] & 0x80:
                now = time.monotonic()
                if pending is not None and pending[0] != data[start + 1] and now - pending[1] < 0.15:
                    sys.stdout.write("collision %d\n" % data[start + 1])
                    sys.stdout.flush()
                pending = (data[start + 1], now)
            for fd in readers:
                try:
                    os.write(fd, data)
                except OSError:
                    pass
        for fd in readers:
            if fd in ready:
                try:
                    data = os.read(fd, 4096)
                    os.write(master, data)
                    pending = None
                except OSError:
                    pass


if __name__ == "__main__":
    main()
