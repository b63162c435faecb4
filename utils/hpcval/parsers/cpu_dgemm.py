"""Output of hpcval's DGEMM kernel (hpcval/benchmarks/kernels/cpu_dgemm.py):
one ``cpu_dgemm rank=R node=N n=... iterations=... seconds=... gflops=G
best_slice_gflops=B`` line per rank."""
import collections
import re

from hpcval.parsers.common import ParseError, crash_report, number

Rank = collections.namedtuple('Rank', 'rank node n iterations seconds gflops '
                                       'best')

_LINE = re.compile(r'^cpu_dgemm rank=(\d+) node=(\S+) n=(\d+) '
                   r'iterations=(\d+) seconds=(\S+) gflops=(\S+) '
                   r'best_slice_gflops=(\S+)$',
                   re.MULTILINE)


def parse_cpu_dgemm(text, ranks):
    """The ``ranks`` result lines, ordered by rank; ParseError when a rank
    is missing, repeated, or printed no finite figure."""
    found = {}
    for m in _LINE.finditer(text):
        rank = int(m.group(1))
        if rank in found:
            raise ParseError(f'rank {rank} reported twice')
        row = Rank(rank, m.group(2), int(m.group(3)), int(m.group(4)),
                   number(m.group(5), f'rank {rank} seconds'),
                   number(m.group(6), f'rank {rank} gflops'),
                   number(m.group(7), f'rank {rank} best_slice_gflops'))
        if row.iterations < 1 or row.gflops <= 0 or row.best <= 0:
            raise ParseError(f'rank {rank} on {row.node} measured nothing '
                             f'({row.iterations} iterations)')
        found[rank] = row

    missing = sorted(set(range(ranks)) - set(found))
    if missing:
        shown = ', '.join(map(str, missing[:8]))
        raise ParseError(f'no result from rank {shown} ({len(found)} of '
                         f'{ranks} ranks reported){crash_report(text)}')
    extra = sorted(set(found) - set(range(ranks)))
    if extra:
        raise ParseError(f'rank {extra[0]} reported, but {ranks} ranks ran')

    return [found[r] for r in range(ranks)]
