"""OSU micro-benchmarks (``osu_latency``, ``osu_bw``, ``osu_allreduce``...):
us and MB/s (10^6 B/s), columns found by label (docs/benchmarks/osu.md)."""
import re
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from hpcval.parsers.common import ParseError, crash_report, number, row_at

_TITLE = re.compile(r'^# OSU MPI(?:-(?P<accel>[A-Z]+))? (?P<test>.+?)'
                    r'(?: v(?P<version>\S+))?\s*$', re.MULTILINE)
_DATATYPE = re.compile(r'^# Datatype: (?P<type>\S+?)\.?\s*$')
_HEADER = re.compile(r'^# Size\s+(?P<labels>\S.*?)\s*$')
_ROW = re.compile(r'^(?P<size>\d+)\s+(?P<cells>\S.*?)\s*$')
_VALIDATION_ERROR = re.compile(r'^.*DATA VALIDATION ERROR.*$', re.MULTILINE)
# what OSU prints on stdout or stderr when it refuses to start
_REFUSAL = re.compile(r'^.*(?:Invalid option|support not enabled|requires '
                      r'exactly two processes|Error initializing device)'
                      r'.*$', re.MULTILINE)
_BUFFERS = re.compile(r'^# (?:Send Buffer|Rank 0 Memory) on .*$')

# first column label -> (quantity, unit)
_QUANTITIES = {
    'Avg Latency(us)': ('latency', 'us'),
    'Latency (us)': ('latency', 'us'),
    'Bandwidth (MB/s)': ('bandwidth', 'MB/s'),
    'MB/s': ('bandwidth', 'MB/s'),
}
VALIDATION = 'Validation'


@dataclass(frozen=True)
class Row:
    size: int                        # bytes
    value: float                     # the table's quantity (us or MB/s)
    validation: Optional[str]        # 'Pass', 'Fail' or None (no -c)
    extra: Dict[str, str] = field(default_factory=dict)   # other columns


@dataclass(frozen=True)
class Table:
    datatype: Optional[str]          # 'MPI_CHAR'; None before 7.1
    quantity: str                    # 'latency' or 'bandwidth'
    unit: str                        # 'us' or 'MB/s'
    labels: Tuple[str, ...]          # header labels after '# Size'
    rows: Tuple[Row, ...]

    def at(self, size):
        return row_at(self.rows, size, self.quantity,
                      'was given other sizes (-m)')

    @property
    def largest(self):
        return max(self.rows, key=lambda r: r.size)


@dataclass(frozen=True)
class OsuResult:
    test: str                        # 'Latency Test', 'Bandwidth Test', ...
    version: str                     # '7.4'; '' when not printed
    accelerator: str                 # 'CUDA', 'ROCM', ... or '' (host)
    buffers: str                     # old-format buffer line, or ''
    tables: Tuple[Table, ...]

    def table(self, datatype=None):
        """The table of ``datatype``, or the only one when it is None."""
        found = [t for t in self.tables if datatype in (None, t.datatype)]
        types = ', '.join(str(t.datatype) for t in self.tables)
        if datatype is None and len(found) != 1:
            raise ParseError(f'{len(self.tables)} tables ({types}): '
                             f'say which datatype to judge')
        if not found:
            raise ParseError(f'no table for datatype {datatype} (printed: '
                             f'{types})')
        return found[0]


def _row(m, labels, quantity):
    size = int(m['size'])
    cells = m['cells'].split()
    if len(cells) != len(labels):
        raise ParseError(f'row for {size} B has {len(cells)} values, the '
                         f'header has {len(labels)} columns '
                         f'({", ".join(labels)}): truncated or interleaved '
                         f'output')

    values = dict(zip(labels, cells))
    validation = values.pop(VALIDATION, None)
    if validation not in (None, 'Pass', 'Fail'):
        raise ParseError(f'validation at {size} B: {validation!r} is neither '
                         f'Pass nor Fail')

    value = number(values.pop(labels[0]), f'{quantity} at {size} B')
    return Row(size=size, value=value, validation=validation, extra=values)


def _tables(lines):
    tables, datatype, current = [], None, None
    for line in lines:
        if m := _DATATYPE.match(line):
            datatype = m['type']
            if current is not None and not current[2]:
                current[0] = datatype   # 7.1, 7.2: printed after '# Size'
            else:
                current = None
        elif header := _HEADER.match(line):
            # labels are right-aligned in 20-character fields and hold
            # single spaces ('Avg Latency(us)'): split on two or more
            labels = tuple(re.split(r'\s{2,}', header['labels'].strip()))
            if labels[0] not in _QUANTITIES:
                raise ParseError(f'unknown column {labels[0]!r} after '
                                 f'"# Size": not a latency or bandwidth '
                                 f'test this parser knows')
            current = [datatype, labels, []]
            tables.append(current)
        elif (row := _ROW.match(line)) and current is not None:
            _, labels, rows = current
            rows.append(_row(row, labels, _QUANTITIES[labels[0]][0]))
        elif current is not None and line.strip():
            current = None      # anything else ends the table

    return [Table(dt, *_QUANTITIES[labels[0]], labels, tuple(rows))
            for dt, labels, rows in tables]


def parse_osu(text):
    """One OSU run; ParseError if incomplete or failing its validation."""
    title = _TITLE.search(text)
    if not title:
        refusal = _REFUSAL.search(text)
        why = f'; {refusal.group(0).strip()}' if refusal else \
            crash_report(text)
        raise ParseError(f'no "# OSU MPI ... Test" title: the benchmark did '
                         f'not start{why}')

    failed = _VALIDATION_ERROR.search(text)
    if failed:
        raise ParseError(f'data validation failed: {failed.group(0).strip()}')

    lines = text[title.end():].splitlines()
    tables = _tables(lines)
    if not tables:
        raise ParseError(f'no "# Size ..." header after the title: the run '
                         f'died before its first message size'
                         f'{crash_report(text)}')

    for t in tables:
        if not t.rows:
            raise ParseError(f'no result rows under "# Size  '
                             f'{"  ".join(t.labels)}": the run died before '
                             f'its first message size{crash_report(text)}')

        failures = [str(r.size) for r in t.rows if r.validation == 'Fail']
        if failures:
            raise ParseError(f'validation failed at {", ".join(failures)} B '
                             f'(Validation column)')

    buffers = next((line[2:].strip() for line in lines
                    if _BUFFERS.match(line)), '')
    return OsuResult(test=title['test'], version=title['version'] or '',
                     accelerator=title['accel'] or '', buffers=buffers,
                     tables=tuple(tables))


#: executable -> the test its title names ('# OSU MPI[-CUDA] <test> v7.4')
TITLES = {
    'osu_latency': 'Latency Test',
    'osu_bw': 'Bandwidth Test',
    'osu_bibw': 'Bi-Directional Bandwidth Test',
    'osu_allreduce': 'Allreduce Latency Test',
}


def check_benchmark(result, benchmark):
    """ParseError unless the title names ``benchmark``'s test."""
    wanted = TITLES.get(benchmark)
    if wanted and result.test != wanted:
        raise ParseError(f'the output is of the OSU {result.test} (its '
                         f'title), this test runs {benchmark} (the OSU '
                         f'{wanted})')


def check_largest(table, max_size):
    """Raise ParseError unless the table reached ``max_size`` bytes."""
    if table.largest.size < max_size:
        raise ParseError(f'the largest size reached is {table.largest.size} '
                         f'B, the test asks {max_size} B (-m): the run '
                         f'stopped early')
