#!/usr/bin/env python3
"""A serial line at a given baud rate between an OSDP reader's pseudo-terminal and a control
panel, for the bench (scripts/bench-osdp.py): a pty carries bytes at once, a real line at
10 bits per byte (8N1). Every control panel the bench compares talks through the same kind
of line, so both pay the same frame times.

    line.py BAUD TTY

Opens the reader's pty (TTY) raw and makes a new pty pair for the control panel; prints
`tty /dev/pts/N` (the side the control panel opens). Half duplex, like RS-485: one
direction at a time; each chunk read from either side goes on the wire when the wire is
free and is delivered whole once its last byte would have arrived (len × 10 / BAUD s after
it started). Dies with its parent, or when stdin closes. LINE_TRACE=FILE writes one line per
chunk read (time, which side sent it, its length), to see a control panel's poll cycle.
"""
import os
import select
import sys
import time

from ptyline import die_with_parent, open_raw, raw_pty


def main():
    die_with_parent()
    baud = int(sys.argv[1])
    reader = open_raw(sys.argv[2])
    master, slave = raw_pty()
    sys.stdout.write("tty " + os.ttyname(slave) + "\n")
    sys.stdout.flush()
    stdin = sys.stdin.fileno()
    peer = {master: reader, reader: master}
    queue = []  # (deliver at, fd, bytes), in wire order
    wire_free = 0.0
    trace = open(os.environ["LINE_TRACE"], "w") if os.environ.get("LINE_TRACE") else None
    while True:
        now = time.monotonic()
        while queue and queue[0][0] <= now:
            _, fd, data = queue.pop(0)
            try:
                os.write(fd, data)
            except OSError:
                pass
        timeout = max(0.0, queue[0][0] - now) if queue else 0.5
        ready, _, _ = select.select([master, reader, stdin], [], [], timeout)
        if stdin in ready and not os.read(stdin, 64):
            return
        for fd in (master, reader):
            if fd not in ready:
                continue
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not data:
                continue
            start = max(time.monotonic(), wire_free)
            wire_free = start + len(data) * 10 / baud
            queue.append((wire_free, peer[fd], data))
            if trace:  # LINE_TRACE=FILE: one line per chunk (when read, cp or pd, length)
                trace.write("%.6f %s %d\n" % (time.monotonic(), "cp" if fd == master else "pd", len(data)))
                trace.flush()


if __name__ == "__main__":
    main()
