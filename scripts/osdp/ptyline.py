"""What the OSDP test scripts share (pd.py, cp.py, bus.py, line.py): dying with
the parent, raw serial lines (a pseudo-terminal pair, or a device opened raw),
printing a line, and the byte I/O of libosdp's Channel on a file descriptor.
Imported, never run (without libosdp: bus.py and line.py run on the system's
Python)."""
import ctypes
import os
import signal
import sys
import termios
import tty


def die_with_parent():
    """SIGTERM when the parent (the test) dies; exits at once if it already has."""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    if os.getppid() != parent:
        sys.exit(1)


def raw_pty():
    """A new pseudo-terminal pair, both ends raw, the master non-blocking: (master, slave)."""
    master, slave = os.openpty()
    tty.setraw(slave, termios.TCSANOW)
    tty.setraw(master, termios.TCSANOW)
    os.set_blocking(master, False)
    return master, slave


def open_raw(path):
    """A serial device (another script's pty) opened raw and non-blocking."""
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)
    tty.setraw(fd, termios.TCSANOW)
    return fd


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class FdIO:
    """read/write/flush of a libosdp Channel on the non-blocking fd `fd`: `class C(FdIO, Channel)`."""

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
