"""The cross-system table: benchmark metrics by system.

Rows are (benchmark, test, metric), grouped by benchmark; columns are
systems.  A cell holds mean +- standard deviation and the sample count over
the selected runs, the reference the runs were judged against, and the
verdict of the mean against it, with the direction of "better" taken from
the unit's family (bandwidths, rates and FLOP/s: higher; times: lower).

Replays (recorded outputs fed through the checks) never share a column with
measurements: their column is labelled "<system> (replay)".
"""
import statistics
from dataclasses import dataclass, field

from hpcval import units

PASS, FAIL, NO_REFERENCE, PUBLISHED = 'pass', 'fail', 'no reference', \
    'published'


def better(unit):
    """'lower' for times, 'higher' for everything else hpcval measures,
    'unknown' for a unit hpcval does not know (a report from elsewhere)."""
    try:
        fam = units.family(unit)
    except ValueError:
        return 'unknown'

    return 'lower' if fam == 'time' else 'higher'


@dataclass(frozen=True)
class Row:
    benchmark: str
    test: str
    metric: str
    unit: str

    @property
    def better(self):
        return better(self.unit)


@dataclass(frozen=True)
class Reference:
    value: float
    lower: object        # fraction or None: unbounded
    upper: object

    def bounds(self):
        mag = abs(self.value)
        return (None if self.lower is None else self.value + self.lower * mag,
                None if self.upper is None else self.value + self.upper * mag)

    def judge(self, value):
        lo, hi = self.bounds()
        ok = (lo is None or value >= lo) and (hi is None or value <= hi)
        return PASS if ok else FAIL


@dataclass
class Cell:
    values: list
    reference: object = None     # Reference or None
    verdict: str = NO_REFERENCE
    spread: object = None        # published std (references-only view)

    @property
    def n(self):
        return len(self.values)

    @property
    def mean(self):
        return statistics.fmean(self.values)

    @property
    def std(self):
        if self.spread is not None:
            return self.spread

        return statistics.stdev(self.values) if self.n > 1 else None


@dataclass
class Table:
    title: str
    columns: list
    rows: list
    cells: dict                       # (Row, column) -> Cell
    notes: list = field(default_factory=list)

    def groups(self):
        """(benchmark, [rows]) in row order."""
        out = []
        for row in self.rows:
            if not out or out[-1][0] != row.benchmark:
                out.append((row.benchmark, []))
            out[-1][1].append(row)

        return out


def _named(case):
    label = case.label or case.system
    if label == 'local' and case.hostname and not case.replay:
        # "local" is whatever host ReFrame ran on: name the host
        label += f'@{case.hostname}'
    return label


def column_of(case, multi_partition=()):
    """``multi_partition``: the (name, replay) columns that one column per
    partition splits."""
    label = _named(case)
    if (label, case.replay) in multi_partition:
        label += f':{case.partition}'

    return label + (' (replay)' if case.replay else '')


def columns(cases):
    """{case: column label}: the system ("local@<host>" for local, or the
    label the user gave its report), with the partition where one system
    shows several, and "(replay)"."""
    parts = {}
    for c in cases:
        parts.setdefault((_named(c), c.replay), set()).add(c.partition)
    multi = {key for key, p in parts.items() if len(p) > 1}
    return {c: column_of(c, multi) for c in cases}


def _reference(sample):
    if not sample.reference or (sample.lower is None
                                and sample.upper is None):
        # ReFrame's default (0, None, None): the run had no reference
        return None

    return Reference(sample.reference, sample.lower, sample.upper)


def build(samples, title='Cross-system comparison'):
    """Aggregate ``samples`` (hpcval.publish.results.Sample) into a Table."""
    column = columns({s.case for s in samples})
    unit_of, groups = {}, {}
    for s in sorted(samples, key=lambda s: s.case.time):
        key = (s.case.benchmark, s.case.test, s.metric)
        unit = unit_of.setdefault(key, s.unit)
        try:
            value = units.convert(s.value, s.unit, unit)
        except ValueError:
            key, unit, value = key + (s.unit,), s.unit, s.value
            unit_of.setdefault(key, unit)
        row = Row(*key[:3], unit)
        groups.setdefault((row, column[s.case]), []).append(
            (value, s))

    table = Table(title, [], [], {})
    for (row, col), pairs in groups.items():
        refs = {_reference(s) for _, s in pairs}
        latest = _reference(pairs[-1][1])
        if len(refs) > 1:
            table.notes.append(
                f'{col}, {row.test} {row.metric}: the runs were judged '
                f'against {len(refs)} different references; the latest, '
                f'{_describe(latest)}, is used')
        ref = None if latest is None else Reference(
            units.convert(latest.value, pairs[-1][1].unit, row.unit),
            latest.lower, latest.upper)
        cell = Cell([v for v, _ in pairs], ref)
        if ref is not None:
            cell.verdict = ref.judge(cell.mean)
        table.cells[(row, col)] = cell

    table.rows = sorted({r for r, _ in table.cells},
                        key=lambda r: (r.benchmark, r.test, r.metric))
    table.columns = sorted({c for _, c in table.cells},
                           key=lambda c: (c.endswith('(replay)'), c))
    return table


def _describe(ref):
    return 'none' if ref is None else f'{ref.value:g}'
