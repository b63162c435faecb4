"""``python -m mpi4py.bench pingpong``.

Output (mpi4py 4.x)::

    # MPI PingPong Test
    # Size [B]  Bandwidth [MB/s] | Time Mean [s] ± StdDev [s]  Samples
             1              0.78 | 1.2806215e-06 ± 4.5550e-07    10000

Bandwidth is 10^6 bytes per second; the time is one way (half the round
trip), mean and standard deviation over ``Samples`` iterations.
"""
import re
from dataclasses import dataclass

from hpcval.parsers.common import ParseError, crash_report, number

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


def parse_pingpong(text):
    """Return the rows of a ping-pong run, in the order printed."""
    if _HEADER not in text:
        raise ParseError(f'no {_HEADER!r} header: the benchmark did not '
                         f'start or died before flushing its output'
                         f'{crash_report(text)}')

    rows = []
    for m in _ROW.finditer(text):
        size = int(m['size'])
        rows.append(PingPongRow(
            size=size,
            bandwidth=number(m['bw'], f'bandwidth at {size} B'),
            time_mean=number(m['mean'], f'mean time at {size} B'),
            time_std=number(m['std'], f'time std at {size} B'),
            samples=int(m['samples'])
        ))

    if not rows:
        raise ParseError(f'no result rows after the header: the run died '
                         f'before its first message size{crash_report(text)}')

    return rows


def row_at(rows, size):
    """The row for message ``size`` bytes, or ParseError if it is missing."""
    for r in rows:
        if r.size == size:
            return r

    printed = ', '.join(str(r.size) for r in rows)
    raise ParseError(f'no result for {size} B (sizes printed: {printed}): '
                     f'the run stopped early or was asked for other sizes')
