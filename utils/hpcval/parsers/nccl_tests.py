"""nccl-tests and rccl-tests (``all_reduce_perf``, ``all_gather_perf``...).

Output (nccl-tests 2.19, columns abridged here to fit; rccl-tests differ
as noted)::

    # nccl-tests version 2.19.6 nccl-headers=22809 nccl-library=22809
    # Collective test starting: all_reduce_perf
    # nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) ...
    # Using devices
    #  Rank  0 Group  0 Pid 3505 on vm device  0 [0000:00:06] NVIDIA H200
    #
    #                     out-of-place                 in-place
    # size count type redop root time algbw busbw #wrong time algbw busbw ...
    #  (B) (elements)          (us) (GB/s) (GB/s)     (us) (GB/s) (GB/s)
       8     2 float sum  -1 13.86  0.00  0.00     0 13.40  0.00  0.00 ...
    # Out of bounds values : 0 OK
    # Avg bus bandwidth    : 112.366
    #
    # Collective test concluded: all_reduce_perf

rccl-tests print an un-commented ``rccl-tests: Version develop:ae3e635``
line and ``#   Rank  0 Pid ...`` lines without ``Group`` (so do nccl-tests
<= 2.13.3); ``-O 0`` leaves only the in-place block.  nccl-tests <= 2.11
have no ``root`` column (all_gather no ``redop`` either) and end each block
with ``error``, a maximum deviation rather than a count.  ``-c 0`` prints
``N/A`` for ``#wrong``; ``-I 1`` adds ``i_*`` columns after each block,
``-S 1`` a timestamp and rccl ``-A 1`` algorithm columns after the last.
Columns are therefore found by the header's labels, never by position.

Times are microseconds, bandwidths GB/s (10^9 B/s), sizes bytes (the larger
of send and receive buffer).  A run that fails prints ``Test failure``
(``Test CUDA failure``, ``Test NCCL failure``, ``Test timeout``) lines.
"""
import re
from dataclasses import dataclass
from typing import Optional, Tuple

from hpcval.parsers.common import ParseError, number

OUT_OF_PLACE, IN_PLACE = 'out_of_place', 'in_place'

_FAILURE = re.compile(r'^.*\bTest (?:[A-Z]+ )?(?:failure|timeout)\b.*$',
                      re.MULTILINE)
_VERSION = re.compile(r'^# nccl-tests version (\S+)|'
                      r'^rccl-tests: Version (\S+)', re.MULTILINE)
_COLLECTIVE = re.compile(r'^# Collective test starting: (\S+)', re.MULTILINE)
_RANK = re.compile(
    r'^#\s*Rank\s+(?P<rank>\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+'
    r'(?P<host>\S+)\s+device\s+(?P<device>\d+)\s+\[(?P<bus>[^\]]*)\]\s*'
    r'(?P<name>.*?)\s*$', re.MULTILINE)
_FOOTER = re.compile(r'^#\s*(?P<key>Out of bounds values|Avg bus bandwidth)'
                     r'\s*:\s*(?P<value>\S+)\s*(?P<verdict>\S*)')
_TIME_LABELS = ('time', 'cputime')      # cputime: run with -C 1
_CHECK_LABELS = ('#wrong', 'error')     # error: nccl-tests <= 2.11


@dataclass(frozen=True)
class Rank:
    rank: int
    host: str
    device: int
    bus_id: str
    name: str


@dataclass(frozen=True)
class Block:
    time_us: float
    algbw: float                # GB/s (10^9 B/s)
    busbw: float                # GB/s
    wrong: Optional[int]        # None: validation off (N/A) or <= 2.11


@dataclass(frozen=True)
class Row:
    size: int                   # bytes
    count: int                  # elements
    type: str
    redop: Optional[str]        # None: column absent (<= 2.11 all_gather)
    root: Optional[int]         # None: column absent (<= 2.11)
    out_of_place: Optional[Block]   # None: rccl-tests -O 0
    in_place: Optional[Block]


@dataclass(frozen=True)
class NcclTestsResult:
    tool: str                   # 'nccl-tests', 'rccl-tests' or '' if unsaid
    version: str                # '2.19.6', 'develop:ae3e635' or ''
    collective: str             # e.g. 'all_reduce_perf' (>= 2.17) or ''
    ranks: Tuple[Rank, ...]
    rows: Tuple[Row, ...]
    avg_bus_bandwidth: Optional[float]  # GB/s; None only if not required
    out_of_bounds_ok: Optional[bool]    # None: footer line not printed

    @property
    def devices(self):
        return len(self.ranks)

    def has_block(self, place):
        """Whether any row has results for ``place`` (in/out of place)."""
        place = place.replace('-', '_')
        return any(getattr(r, place) is not None for r in self.rows)

    def busbw_at_largest(self, place=IN_PLACE):
        """busbw at the largest size; the lowest if it ran more than once
        (``-N``, ``-d all``, ``-o all``): a threshold must hold every time."""
        rows = self._rows(place)
        largest = max(size for size, _ in rows)
        return min(b.busbw for size, b in rows if size == largest)

    def max_busbw(self, place=IN_PLACE):
        return max(b.busbw for _, b in self._rows(place))

    def time_at_smallest(self, place=IN_PLACE):
        """Time (us) at the smallest non-zero size, the highest if repeated.

        Zero-byte rows are skipped: all_gather and reduce_scatter print
        size 0 when the size is under ranks x element size, and time nothing.
        """
        rows = [(size, b) for size, b in self._rows(place) if size > 0]
        if not rows:
            raise ParseError(f'no {_label(place)} rows with a non-zero size')

        smallest = min(size for size, _ in rows)
        return max(b.time_us for size, b in rows if size == smallest)

    def _rows(self, place):
        place = place.replace('-', '_')
        rows = [(r.size, getattr(r, place)) for r in self.rows
                if getattr(r, place) is not None]
        if not rows:
            hint = ' (rccl-tests run with -O 0?)' if place == OUT_OF_PLACE \
                else ''
            raise ParseError(f'no {_label(place)} results in the output{hint}')

        return rows


def _label(place):
    return place.replace('_', '-')


def _find_header(lines):
    headers = [i for i, line in enumerate(lines)
               if line.split()[:4] == ['#', 'size', 'count', 'type']]
    if not headers:
        raise ParseError('no result table header ("#  size  count  type ..."):'
                         ' the run died before its first size')

    if len(headers) > 1:
        raise ParseError(f'the output holds {len(headers)} result tables: '
                         f'separate runs were concatenated, or nccl-tests '
                         f'built without MPI=1 ran once per mpirun rank')

    return headers[0]


def _columns(lines, at):
    """Map column labels to token indices; blocks in the printed order."""
    labels = lines[at].split()[1:]
    prefix = {}
    for i, label in enumerate(labels):
        if label in _TIME_LABELS:
            break

        prefix[label] = i

    starts = [i for i, label in enumerate(labels) if label in _TIME_LABELS]
    for i in starts:
        if labels[i + 1:i + 3] != ['algbw', 'busbw'] or \
                i + 3 >= len(labels) or labels[i + 3] not in _CHECK_LABELS:
            raise ParseError(f'unexpected result table header: '
                             f'{lines[at].strip()!r}')

    # the line above names the blocks; rccl-tests -O 0 prints only in-place
    names = re.findall(r'(out-of-place|in-place)', lines[at - 1]) \
        if at > 0 and lines[at - 1].lstrip().startswith('#') else []
    if len(names) != len(starts):
        names = {1: ['in-place'], 2: ['out-of-place', 'in-place']}.get(
            len(starts))
        if names is None:
            raise ParseError(f'result table header has {len(starts)} '
                             f'time/algbw/busbw blocks, expected 1 or 2: '
                             f'{lines[at].strip()!r}')

    blocks = {n.replace('-', '_'): (i, labels[i + 3])
              for n, i in zip(names, starts)}
    return prefix, blocks, max(starts) + 4


def _block(tokens, start, check, place, size):
    def value(offset, what):
        return number(tokens[start + offset],
                      f'{what} at {size} B ({_label(place)})')

    time_us, algbw, busbw = (value(0, 'time'), value(1, 'algbw'),
                             value(2, 'busbw'))
    token = tokens[start + 3]
    wrong = None
    if check == 'error':
        # old rccl-tests mark a deviation over the threshold with '*'
        if token.endswith('*'):
            raise ParseError(f'error {token} at {size} B ({_label(place)}) '
                             f'exceeds the threshold: wrong results')

        value(3, 'error')
    elif token != 'N/A':
        wrong = int(value(3, '#wrong'))
        if wrong > 0:
            raise ParseError(f'#wrong is {wrong} at {size} B '
                             f'({_label(place)}): the collective returned '
                             f'wrong data')

    return Block(time_us, algbw, busbw, wrong)


def _row(line, prefix, blocks, width):
    tokens = line.split()
    size = int(tokens[0])
    if len(tokens) < width:
        raise ParseError(f'the row for {size} B is truncated ({len(tokens)} '
                         f'of {width} columns): {line.strip()!r}')

    def optional(label):
        return tokens[prefix[label]] if label in prefix else None

    try:
        count = int(tokens[prefix['count']])
        root = optional('root')
        root = None if root is None else int(root)
    except (KeyError, ValueError):
        raise ParseError(f'the row for {size} B does not match the header: '
                         f'{line.strip()!r}') from None

    parsed = {place: _block(tokens, start, check, place, size)
              for place, (start, check) in blocks.items()}
    return Row(size, count, tokens[prefix['type']], optional('redop'), root,
               parsed.get(OUT_OF_PLACE), parsed.get(IN_PLACE))


def _ranks(text):
    ranks = tuple(Rank(int(m['rank']), m['host'], int(m['device']), m['bus'],
                       m['name']) for m in _RANK.finditer(text))
    seen = set()
    for r in ranks:
        if r.rank in seen:
            raise ParseError(f'rank {r.rank} is listed twice: several '
                             f'independent tests ran (nccl-tests built '
                             f'without MPI=1 under mpirun?)')
        seen.add(r.rank)

    return ranks


def parse_nccl_tests(text, require_footer=True):
    """Parse one nccl-tests / rccl-tests run.

    ``require_footer=False`` accepts a table without the ``Avg bus
    bandwidth`` footer, as documents quote it; a job's output must have it,
    or it was cut short.
    """
    failure = _FAILURE.search(text)
    if failure:
        raise ParseError(f'the test reported a failure: '
                         f'{failure.group(0).lstrip(" .").rstrip()}')

    lines = text.splitlines()
    at = _find_header(lines)
    prefix, blocks, width = _columns(lines, at)
    if not {'size', 'count', 'type'} <= prefix.keys():
        raise ParseError(f'unexpected result table header: '
                         f'{lines[at].strip()!r}')

    rows, footer = [], {}
    for line in lines[at + 1:]:
        m = _FOOTER.match(line.strip())
        if m:
            footer[m['key']] = m
            continue

        tokens = line.split()
        # rows start with the size; NCCL_DEBUG and other lines interleave
        if not footer and tokens and tokens[0].isdigit():
            rows.append(_row(line, prefix, blocks, width))

    if not rows:
        raise ParseError('no result rows after the table header: the run '
                         'died before finishing its first size')

    oob = footer.get('Out of bounds values')
    if oob and oob['verdict'] == 'FAILED':
        raise ParseError(f'"Out of bounds values : {oob["value"]} FAILED": '
                         f'the collective returned wrong data')

    avg = footer.get('Avg bus bandwidth')
    if avg is None and require_footer:
        raise ParseError(f'no "Avg bus bandwidth" footer after the row for '
                         f'{rows[-1].size} B: the output is truncated (the '
                         f'run died or was killed)')

    if avg and avg['verdict'] == 'FAILED':
        raise ParseError(f'"Avg bus bandwidth : {avg["value"]} FAILED": below '
                         f'90% of NCCL_TESTS_MIN_BW')

    version = _VERSION.search(text)
    collective = _COLLECTIVE.search(text)
    return NcclTestsResult(
        tool=('' if not version else
              'nccl-tests' if version.group(1) else 'rccl-tests'),
        version=version.group(version.lastindex) if version else '',
        collective=collective.group(1) if collective else '',
        ranks=_ranks(text),
        rows=tuple(rows),
        avg_bus_bandwidth=(number(avg['value'], 'Avg bus bandwidth')
                           if avg else None),
        out_of_bounds_ok=oob['verdict'] == 'OK' if oob else None,
    )


def _spans(numbers):
    """'0-2, 4-7' for [0, 1, 2, 4, 5, 6, 7]."""
    spans, numbers = [], sorted(numbers)
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])

    return ', '.join(f'{a}' if a == b else f'{a}-{b}' for a, b in spans)


def check_devices(result, expected):
    """Raise ParseError unless the output lists ``expected`` ranks."""
    n = len(result.ranks)
    if n == expected:
        return

    if n == 0:
        raise ParseError(f'expected {expected} GPUs, output lists none (no '
                         f'"# Rank N ... device N" lines)')

    hosts = sorted({r.host for r in result.ranks})
    where = ', '.join(hosts[:4]) + (f' and {len(hosts) - 4} more'
                                    if len(hosts) > 4 else '')
    raise ParseError(f'expected {expected} GPUs, output lists {n} '
                     f'(rank{"s" if n > 1 else ""} '
                     f'{_spans(r.rank for r in result.ranks)} on {where})')
