"""nccl-tests and rccl-tests (``all_reduce_perf``, ``all_gather_perf``...):
columns found by the header's labels, never by position (versions and
options add, drop and move them).  Times in us, bandwidths GB/s (10^9 B/s)."""
import itertools
import re
from dataclasses import dataclass
from typing import Optional, Tuple

from hpcval.parsers import devices
from hpcval.parsers.common import ParseError, number
from hpcval.plotdata import IN_PLACE, OUT_OF_PLACE


_FAILURE = re.compile(r'^.*\bTest (?:[A-Z]+ )?(?:failure|timeout)\b.*$',
                      re.MULTILINE)
_VERSION = re.compile(r'^# nccl-tests version (\S+)|'
                      r'^rccl-tests: Version (\S+)', re.MULTILINE)
_COLLECTIVE = re.compile(r'^# Collective test starting: (\S+)', re.MULTILINE)
# RCCL's banner (rccl-tests, or NCCL_DEBUG=VERSION): 'RCCL version : 2.22.3-
# develop:f5b15f2', older 'RCCL version 2.18.3+hip5.7 ...'; NCCL's own
# NCCL_DEBUG=VERSION line: 'NCCL version 2.21.5+cuda12.4'
_LIBRARY = re.compile(r'^(?:.*\bNCCL INFO )?(?P<lib>RCCL|NCCL) version\s*:?\s*'
                      r'(?P<version>\d+\.\d+\.\d+)(?P<tail>\S*)',
                      re.MULTILINE)
# the run's parameters, printed before anything else
_PARAMS = re.compile(r'^#\s*nThread\s+(?P<threads>\d+)\s+nGpus\s+(?P<gpus>\d+)'
                     r'\s+minBytes\s+(?P<min>\d+)\s+maxBytes\s+(?P<max>\d+)'
                     r'\s+step:\s*(?P<step>\d+)\((?P<kind>factor|bytes)\)',
                     re.MULTILINE)
# common.cu: printf("#\n# Reducing maxBytes to %ld due to memory limitation\n")
_REDUCED = re.compile(r'^#\s*Reducing maxBytes to (\d+) due to memory '
                      r'limitation', re.MULTILINE)
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
class Params:
    """The ``# nThread ... step:`` line: what the run was asked to do."""
    threads: int
    gpus: int                   # per thread (-g)
    min_bytes: int
    max_bytes: int
    step: int
    step_is_factor: bool


def largest_size(min_bytes, max_bytes, factor):
    """The last size of the sweep from ``min_bytes`` within ``max_bytes``."""
    if max_bytes < min_bytes or factor <= 1:
        return max_bytes
    size = min_bytes or 1
    while size * factor <= max_bytes:
        size *= factor
    return size


@dataclass(frozen=True)
class NcclTestsResult:
    tool: str                   # 'nccl-tests', 'rccl-tests' or '' if unsaid
    version: str                # '2.19.6', 'develop:ae3e635' or ''
    collective: str             # e.g. 'all_reduce_perf' (>= 2.17) or ''
    ranks: Tuple[Rank, ...]
    rows: Tuple[Row, ...]
    avg_bus_bandwidth: Optional[float]  # GB/s; None only if not required
    out_of_bounds_ok: Optional[bool]    # None: footer line not printed
    params: Optional[Params] = None     # None: parameter line not printed
    reduced_max_bytes: Optional[int] = None  # "Reducing maxBytes to N"
    library: Tuple[str, str] = ('', '')     # ('rccl', '2.22.3') if printed

    @property
    def largest_row_size(self):
        return max(r.size for r in self.rows)

    @property
    def devices(self):
        return len(self.ranks)

    def has_block(self, place):
        """Whether any row has results for ``place`` (in/out of place)."""
        place = place.replace('-', '_')
        return any(getattr(r, place) is not None for r in self.rows)

    def busbw_at_largest(self, place=IN_PLACE):
        """busbw at the largest size; the lowest if it ran more than once."""
        rows = self._rows(place)
        largest = max(size for size, _ in rows)
        return min(b.busbw for size, b in rows if size == largest)

    def max_busbw(self, place=IN_PLACE):
        return max(b.busbw for _, b in self._rows(place))

    def time_at_smallest(self, place=IN_PLACE):
        """Time (us) at the smallest non-zero size, the highest if repeated."""
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
                         f'separate runs were concatenated, nccl-tests '
                         f'built without MPI=1 ran once per mpirun rank, or '
                         f'a launcher without the MPI\'s PMI started each '
                         f'rank as a one-rank job')

    return headers[0]


def _columns(lines, at):
    """Map column labels to token indices; blocks in the printed order."""
    labels = lines[at].split()[1:]
    head = itertools.takewhile(lambda label: label not in _TIME_LABELS, labels)
    prefix = {label: i for i, label in enumerate(head)}

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


def listed_devices(text):
    """{N} of the devices the banner's ``# Rank ... device N`` lines list."""
    return {r.device for r in _ranks(text)}


def parse_nccl_tests(text, require_footer=True):
    """One nccl-tests / rccl-tests run; require_footer=False for excerpts."""
    failure = _FAILURE.search(text)
    if failure:
        raise ParseError(f'the test reported a failure: '
                         f'{failure.group(0).lstrip(" .").rstrip()}')

    lines = text.splitlines()
    at = _find_header(lines)
    prefix, blocks, width = _columns(lines, at)

    rows, footer = [], {}
    for line in lines[at + 1:]:
        tokens = line.split()
        if m := _FOOTER.match(line.strip()):
            footer[m['key']] = m
        # rows start with the size; NCCL_DEBUG and other lines interleave
        elif not footer and tokens and tokens[0].isdigit():
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
    params = _PARAMS.search(text)
    reduced = _REDUCED.search(text)
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
        params=Params(*map(int, params.group('threads', 'gpus', 'min', 'max',
                                             'step')),
                      params['kind'] == 'factor') if params else None,
        reduced_max_bytes=int(reduced.group(1)) if reduced else None,
        library=library_version(text),
    )


def library_version(text):
    """('rccl', '2.22.3') or ('nccl', '2.21.5') of the banner, or ('', '')."""
    m = _LIBRARY.search(text)
    return (m['lib'].lower(), m['version']) if m else ('', '')


#: the library each tool's output comes from, and its devices' vendor
TOOLS = {'nccl-tests': ('nccl', 'NVIDIA'), 'rccl-tests': ('rccl', 'AMD')}


def found_tool(result):
    """(tool, what says so), from banners or device vendor, or ('', '')."""
    if result.tool:
        banner = ('# nccl-tests version' if result.tool == 'nccl-tests'
                  else 'rccl-tests: Version')
        return result.tool, f'"{banner} {result.version}"'
    lib, version = result.library
    if lib:
        return (f'{lib}-tests', f'"{lib.upper()} version {version}"')
    vendors = {devices.vendor_of_name(r.name) for r in result.ranks} - {''}
    if len(vendors) == 1:
        vendor = vendors.pop()
        tool = next(t for t, (_, v) in TOOLS.items() if v == vendor)
        return tool, f'{vendor} devices'
    return '', ''


def check_tool(result, tool, arch='', identified=True):
    """ParseError unless the output is ``tool``'s on GPUs of ``arch``."""
    found, why = found_tool(result)
    if found and found != tool:
        listed = devices.summary(r.name for r in result.ranks)
        raise ParseError(f'the output is {found}\' ({why}; devices: '
                         f'{listed or "none listed"}), this test runs '
                         f'{tool}: another vendor\'s output')
    if not found and identified:
        raise ParseError(f'the output names neither nccl-tests nor '
                         f'rccl-tests, nor devices of a known vendor: '
                         f'cannot tell that it is {tool}\'s')
    lib, _ = result.library
    if lib and lib != TOOLS[tool][0]:
        raise ParseError(f'the output loaded {lib.upper()} '
                         f'("{lib.upper()} version {result.library[1]}"), '
                         f'{tool} runs on {TOOLS[tool][0].upper()}')
    devices.check_names([r.name for r in result.ranks], arch)


def _spans(numbers):
    """'0-2, 4-7' for [0, 1, 2, 4, 5, 6, 7]."""
    # consecutive numbers share their difference from their position
    runs = itertools.groupby(enumerate(sorted(numbers)), lambda p: p[1] - p[0])
    spans = [[n for _, n in run] for _, run in runs]
    return ', '.join(f'{s[0]}' if len(s) == 1 else f'{s[0]}-{s[-1]}'
                     for s in spans)


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


#: collectives whose rows name a reduction operator (the others print none)
REDUCING = ('all_reduce', 'reduce', 'reduce_scatter')
_UNITS = {'': 1, 'k': 2**10, 'm': 2**20, 'g': 2**30}


def parse_size(text):
    """A size as -b/-e read it ('64K', '8G': powers of 1024), or None."""
    m = re.fullmatch(r'([0-9]+)([KMGkmg]?)', str(text))
    return int(m[1]) * _UNITS[m[2].lower()] if m else None


def check_collective(result, collective):
    """ParseError unless the output is of ``collective`` ('all_reduce')."""
    exe = f'{collective}_perf'
    if result.collective:
        # the MPI=1 build as NGC and PyTorch containers install it
        if result.collective not in (exe, f'{exe}_mpi'):
            raise ParseError(f'the output is of {result.collective} ("# '
                             f'Collective test starting: '
                             f'{result.collective}"), this test runs {exe}')
        return

    redops = {r.redop for r in result.rows if r.redop is not None}
    if redops and (redops != {'none'}) != (collective in REDUCING):
        raise ParseError(f'the rows\' redop is {"/".join(sorted(redops))}: '
                         f'not an output of {exe}, which '
                         f'{"reduces" if collective in REDUCING else "reduces nothing"}')


def check_sizes(result, min_bytes, max_bytes, step_factor, ranks):
    """ParseError unless the sweep reached the largest size asked for."""
    if result.params and result.params.max_bytes != max_bytes:
        raise ParseError(f'the output was run with maxBytes '
                         f'{result.params.max_bytes}, the test asks '
                         f'{max_bytes} (-e): not this test\'s run')

    wanted = largest_size(min_bytes, max_bytes, step_factor)
    reached = result.largest_row_size
    if reached + 8 * max(ranks, 1) >= wanted:
        return

    if result.reduced_max_bytes is not None:
        raise ParseError(f'nccl-tests reduced maxBytes to '
                         f'{result.reduced_max_bytes} due to memory '
                         f'limitation: the largest size reached is {reached} '
                         f'B, the test asks {wanted} B (max_bytes); judge a '
                         f'smaller size with -S max_bytes and a reference '
                         f'made at that size')
    raise ParseError(f'the largest size reached is {reached} B, the test '
                     f'asks {wanted} B (max_bytes): the run stopped early')


def check_gpus_per_process(result, expected):
    """Raise ParseError unless the parameter line says nGpus ``expected``."""
    if result.params and result.params.gpus != expected:
        raise ParseError(f'the output ran nGpus {result.params.gpus} per '
                         f'process, the test asks -g {expected}')
