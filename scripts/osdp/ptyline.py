"""What the OSDP test scripts share (pd.py, bus.py): dying with the parent, and
a raw pseudo-terminal pair for a line. Imported, never run."""
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
