"""``python -m mpi4py.bench pingpong``: one-way times, MB/s (10^6 B/s)."""
import re
from dataclasses import dataclass

from hpcval.parsers.common import (  # noqa: F401 (row_at re-exported)
    ParseError, crash_report, number, row_at)

_HEADER = '# MPI PingPong Test'
_ROW = re.compile(
    r'^\s*(?P<size>\d+)\s+(?P<bw>\S+)\s+\|\s+(?P<mean>\S+)\s+±\s+'
    r'(?P<std>\S+)\s+(?P<samples>\d+)\s*$', re.MULTILINE
)


@dataclass(frozen=True)
class PingPongRow:
    size: int           # bytes
    bandwidth: float    # MB/s (10^6 B/s)
    time_mean: float    # seconds, one way
    time_std: float     # seconds
    samples: int


def parse_pingpong(text, launcher=''):
    """The rows of a ping-pong run, in order; ``launcher`` for the message."""
    if _HEADER not in text:
        raise ParseError(f'no {_HEADER!r} header: the benchmark did not '
                         f'start or died before flushing its output'
                         f'{crash_report(text)}')

    headers = sum(line.strip() == _HEADER for line in text.splitlines())
    if headers > 1:
        # each job's rank 0 printed it: every row was a rank pinging itself
        by = f' ({launcher})' if launcher else ''
        raise ParseError(f'mpi4py.bench printed {headers} {_HEADER!r} '
                         f'headers: the launcher{by} ran {headers} one-rank '
                         f'jobs, not one 2-rank communicator; no message '
                         f'crossed between ranks')

    rows = []
    for m in _ROW.finditer(text):
        size = int(m['size'])
        rows.append(PingPongRow(
            size, number(m['bw'], f'bandwidth at {size} B'),
            number(m['mean'], f'mean time at {size} B'),
            number(m['std'], f'time std at {size} B'), int(m['samples'])))

    if not rows:
        raise ParseError(f'no result rows after the header: the run died '
                         f'before its first message size{crash_report(text)}')

    return rows
