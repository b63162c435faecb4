"""Progress of the long commands (hpcval.progress): a bar on a terminal,
nothing in a pipe."""
import fcntl
import io
import os
import struct
import sys
import termios

from hpcval import progress


def test_a_bar_on_a_terminal(monkeypatch):
    main, tty = os.openpty()
    # 24 x 80: a new pseudo-terminal is 0 columns wide
    fcntl.ioctl(tty, termios.TIOCSWINSZ, struct.pack('HHHH', 24, 80, 0, 0))
    with os.fdopen(tty, 'w') as stderr:
        monkeypatch.setattr(sys, 'stderr', stderr)
        assert list(progress.bar(range(3), desc='plots', delay=0)) == \
            [0, 1, 2]
        stderr.flush()
        os.set_blocking(main, False)
        shown = os.read(main, 4096).decode()
    os.close(main)
    assert 'plots:' in shown and '/3' in shown, shown


def test_nothing_in_a_pipe(monkeypatch):
    stderr = io.StringIO()
    monkeypatch.setattr(sys, 'stderr', stderr)
    assert list(progress.bar(range(3), desc='plots', delay=0)) == [0, 1, 2]
    assert stderr.getvalue() == ''
