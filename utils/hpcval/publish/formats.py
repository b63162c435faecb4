"""A comparison Table as Markdown, CSV, HTML and LaTeX."""
import csv
import io
import math
import re
import unicodedata
import urllib.parse

from hpcval import units
from hpcval.publish import numbers, sources
from hpcval.publish.comparison import (FAIL, LINK_METRIC, NOT_ITS_OWN, PASS,
                                      PUBLISHED, WHOLE_NODE, Cell, Reference,
                                      Row, Table, scope, vacuous,
                                      columns as column_labels)

ARROW = {'higher': '↑', 'lower': '↓', 'unknown': '?'}
LEGEND = ('↑ higher is better, ↓ lower is better (? a unit hpcval does not '
          'know).  A cell is mean ± sample standard deviation of its n '
          'figures (n=1: one figure, no spread, not a basis for a '
          'difference), the GPUs the runs used where their check names '
          'them (a whole-node aggregate of columns with different GPU '
          'counts is also given per GPU), how many runs passed, a '
          'difference from another column where the means differ by '
          'more than both standard deviations together (n >= 2 each), '
          'then the reference, its pass band and the verdict: fail when '
          'any run failed, else the mean against the band.  Pass/fail is '
          'given only against references made for the column\'s own '
          'system; a replay of a published recording is never a pass: it '
          'reproduces the published figure or differs from it')
PUBLISHED_LEGEND = ('↑ higher is better, ↓ lower is better; a cell is the '
                    'published figure ± its published standard deviation, '
                    'as references/ holds them')
FORMATS = ('md', 'csv', 'html', 'tex')
UNJUDGED = 'unjudged'


def legend(tables):
    tables = tables if isinstance(tables, (list, tuple)) else [tables]
    if all(c.verdict == PUBLISHED for t in tables for c in t.cells.values()):
        return PUBLISHED_LEGEND
    return LEGEND


num = numbers.sig      # four significant digits, thousands separated


def published(x):
    """A published figure with the digits its source printed."""
    return f'{x:,.15g}'


class Shown:
    """How one row is printed: its unit scaled to its cells."""

    def __init__(self, table, row, columns=None):
        self.row = row
        names = table.columns if columns is None else columns
        self.cells = cells = [table.cells.get((row, c)) for c in names]
        if any(c is not None and c.verdict == PUBLISHED for c in cells):
            self.unit = row.unit
        else:
            self.unit = metric_unit(table, row)
        # a whole-node figure of columns that used different GPU counts
        gpus = {c.gpus for c in cells if c is not None and c.values}
        self.per_gpu = bool(WHOLE_NODE.search(row.metric)) and \
            len(gpus) > 1 and None not in gpus
        self.differs = differences(dict(zip(names, cells)))

    def value(self, x):
        return numbers.scale(x, self.row.unit, self.unit)

    def label(self):
        return f'{self.row.metric} [{self.unit}] {ARROW[self.row.better]}'

    def measured(self, cell):
        text = measured(cell, self.value)
        if self.per_gpu and cell.gpus and cell.values:
            text += f'; {num(self.value(cell.mean / cell.gpus))} per GPU'
        others = self.differs.get(id(cell))
        if others:
            text += f'; differs from {", ".join(others)}'
        return text


def _family(unit):
    try:
        return units.family(unit)
    except ValueError:          # a unit hpcval does not know: its own
        return unit


def metric_unit(table, row):
    """The unit ``row`` is printed in: one per metric across the table."""
    def key(r):
        return (r.benchmark, r.metric, _family(r.unit))
    if not table.shown_units:
        table.shown_units.update(_scaled_units(
            ((r, c) for (r, _), c in table.cells.items()
             if c.verdict != PUBLISHED and c.values), key))
    return table.shown_units.get(key(row)) or row.unit


def _scaled_units(cells, key):
    """{key(row): unit} of (row, cell) pairs, scaled to the largest mean."""
    peaks = {}
    for row, cell in cells:
        unit, values = peaks.setdefault(key(row), (row.unit, []))
        if cell.values:
            values.append(units.convert(cell.mean, row.unit, unit))
    return {k: numbers.scaled_unit(unit, values)
            for k, (unit, values) in peaks.items()}


def differences(cells):
    """{id(cell): [other columns]} whose means differ beyond both stds."""
    spread = {col: c for col, c in cells.items()
              if c is not None and c.verdict != PUBLISHED and c.n >= 2
              and c.std is not None}
    out = {}
    for col, c in spread.items():
        others = [o for o, d in spread.items() if o != col and
                  abs(c.mean - d.mean) > c.std + d.std]
        if others:
            out[id(c)] = others
    return out


def _band(ref, scale):
    lo, hi = ref.limits()
    if hi is None:
        return f'≥ {num(scale(lo))}'
    if lo is None:
        return f'≤ {num(scale(hi))}'
    return f'{num(scale(lo))}..{num(scale(hi))}'


def runs_text(cell):
    """'3 runs', or '2 of 3 runs passed' where any failed."""
    if cell.failed_runs:
        return f'{cell.passed_runs} of {cell.runs} runs passed'
    return f'{cell.runs} run{"s" if cell.runs != 1 else ""}'


def measured(cell, scale=lambda x: x):
    if cell.verdict == PUBLISHED:
        return published(cell.mean) + (
            '' if cell.std is None else f' ± {published(cell.std)}')
    if not cell.values:
        return f'no figure ({runs_text(cell)})'
    if vacuous(cell):
        # 0 by definition in every run: no number to read (the CSV has it)
        text = 'none by definition'
    else:
        text = num(scale(cell.mean))
        if cell.std is not None:
            text += f' ± {num(scale(cell.std))}'
    counts = f'n={cell.n}' + (', no spread' if cell.n == 1 else '')
    if cell.nodes == 0:
        counts += '; GPUs x nodes not recorded'
    elif cell.gpus:
        counts += f'; {cell.gpus} GPU{"s" if cell.gpus != 1 else ""}'
        if cell.nodes:
            counts += f' x {cell.nodes} node{"s" if cell.nodes != 1 else ""}'
    if cell.runs and (cell.failed_runs or cell.runs != cell.n):
        counts += f'; {runs_text(cell)}'
    return f'{text} ({counts})'


def verdict_word(cell):
    return UNJUDGED if cell.verdict not in (PASS, FAIL, PUBLISHED) \
        else cell.verdict


def judged(cell, scale=lambda x: x):
    if cell.verdict == PUBLISHED:
        return ''
    if cell.reference is None:
        return cell.diagnostic or verdict_word(cell)
    if cell.verdict == NOT_ITS_OWN:
        return f'not judged (the runs had {cell.judged_by}\'s references, ' \
               f'not this system\'s)'
    return f'ref {num(scale(cell.reference.reference))} ' \
           f'[{_band(cell.reference, scale)}]: {cell.verdict}'


def labelled_rows(rows):
    """(test label or '' when it repeats the row above, row)."""
    last = None
    for row in rows:
        yield ('' if row.test == last else row.test), row
        last = row.test


def cell_texts(shown, joined):
    """Each column's cell text: ``joined`` of its lines; '' where empty."""
    return ['' if cell is None else joined([x for x in (
        shown.measured(cell), judged(cell, shown.value)) if x])
        for cell in shown.cells]


def checks_note(table, bench):
    """The check classes (and versions) behind a benchmark's rows."""
    by_check, by_version = {}, {}
    for col in table.columns:
        checks = table.checks.get((bench, col), ())
        for check in sorted(checks):
            by_check.setdefault(check, []).append(col)
        if checks:
            version = ', '.join(sorted(table.versions.get((bench, col), ())))
            by_version.setdefault(version or 'not recorded', []).append(col)
    def listed(by):
        return '; '.join(f'{k} ({", ".join(cols)})' for k, cols in by.items())
    note = listed(by_check)
    if not note or not table.cases:
        return note
    return f'{note}. Benchmark version: {listed(by_version)}'


def columns_of(table, rows):
    """The table's columns that hold a cell of ``rows``."""
    return [c for c in table.columns
            if any((r, c) in table.cells for r in rows)]


def link_count(table, bench):
    return sum(1 for r in table.rows
               if r.benchmark == bench and LINK_METRIC.search(r.metric))


def to_markdown(table, images=None):
    """``images``: {benchmark: [(caption, path)]} shown under its table."""
    out = [f'## {md_text(table.title)}', '', legend(table), '']
    for bench, rows in table.groups():
        cols = columns_of(table, rows)
        head = ['test', 'metric'] + cols
        out += [f'### {md_text(bench)}', '']
        note = checks_note(table, bench)
        if note:
            out += [f'Measured by {md_text(note)}.', '']
        out += ['| ' + ' | '.join(md_text(h) for h in head) + ' |',
                '|' + '---|' * len(head)]
        for test, row in labelled_rows(rows):
            shown = Shown(table, row, cols)
            cells = cell_texts(shown,
                               lambda lines: '<br>'.join(map(md_text, lines)))
            out.append('| ' + ' | '.join(
                [md_text(test), md_text(shown.label())] + cells) + ' |')
        out.append('')
        links = link_count(table, bench)
        if links:
            out += [f'{links} per-GPU and per-GPU-pair figures: shown in '
                    f'the figures below (every figure is in the CSV).', '']
        for caption, path in (images or {}).get(bench, ()):
            # a file name of ours, quoted so that no character ends the link
            out += [f'![{md_text(caption)}]'
                    f'({urllib.parse.quote(str(path), safe="/")})', '']
    out += [f'- {md_text(n)}' for n in table.notes]
    return '\n'.join(out).rstrip() + '\n'


_CONTROL = {'\n': '\\n', '\r': '\\r', '\t': '\\t'}


def visible(text):
    """``text`` with control and separator characters escaped."""
    out = []
    for ch in str(text):
        if unicodedata.category(ch) in ('Cc', 'Cf', 'Zl', 'Zp'):
            out.append(_CONTROL.get(ch) or (f'\\x{ord(ch):02x}'
                                            if ord(ch) < 0x100
                                            else f'\\u{ord(ch):04x}'))
        else:
            out.append(ch)
    return ''.join(out)


# what would make a link, image, code, cell break or HTML, escaped
_MD = {'\\': '\\\\', '|': '\\|', '[': '\\[', ']': '\\]', '(': '\\(',
       ')': '\\)', '!': '\\!', '`': '\\`', '&': '&amp;', '<': '&lt;',
       '>': '&gt;', '$': '\\$'}


def md_text(text):
    """Text safe in a Markdown table cell (names come from anywhere)."""
    return ''.join(_MD.get(ch, ch) for ch in visible(text))


def csv_text(x):
    """A CSV cell: a number as is, text no spreadsheet reads as a formula."""
    if isinstance(x, (int, float)):
        return x
    text = visible(x)
    return f"'{text}" if text[:1] in ('=', '+', '-', '@') else text


APPENDIX = ('Appendix: the runs\' own bounds',
            'Each bound a run carried that differs from the reference file '
            'judging it, in the verdict\'s words (the tables judge by the '
            'files).')


def markdown_end(tables):
    """The runs' own bounds (APPENDIX) and the cited sources, where any."""
    bounds = [f'- {md_text(b)}' for t in tables for b in t.bounds]
    docs = [f'{i}. {md_text(d.text())}'
            for i, d in enumerate(sources.cited(tables), 1)]
    return ['\n'.join(head + lines) + '\n' for head, lines in (
        ([f'## {APPENDIX[0]}', '', md_text(APPENDIX[1]), ''], bounds),
        (['## Sources', ''], docs)) if lines]


#: the tidy CSV: one line per table x system x test x metric x statistic
CSV_FIELDS = ('table', 'system', 'kind', 'date', 'benchmark', 'version',
              'test', 'scope', 'gpu_model', 'gpus', 'nodes', 'metric',
              'unit', 'better', 'statistic', 'value', 'n', 'spread',
              'reference', 'lower_bound', 'upper_bound', 'judgement',
              'references_of', 'note', 'runs', 'passed_runs', 'checks',
              'source', 'citation')
#: the statistics of a measured or replayed cell ('published': quoted)
STATISTICS = ('mean', 'min', 'max')
MEASURED, REPLAY, QUOTED = 'measured', 'replay', 'quoted'
#: a number that is not there: pandas and polars read it as a float
MISSING = 'NaN'
NOT_RECORDED = 'not recorded'


def csv_units(tables):
    """{(metric, unit family): unit} across every table of the CSV."""
    return _scaled_units(((row, cell) for table in tables
                          for (row, _), cell in table.cells.items()),
                         lambda row: (row.metric, _family(row.unit)))


def _in_unit(x, unit, to_unit):
    """``x`` in ``to_unit``, to the 15 significant digits a double holds."""
    if x is None or unit == to_unit:
        return x
    return float(f'{units.convert(x, unit, to_unit):.15g}')


def _csv_date(cell, doc):
    """The ISO date of a cell's latest run (a document's: its year), or ''."""
    if doc is not None:
        return f'{doc.year}-01-01'
    date = sources.utc_date(cell.latest) if cell.latest else ''
    return '' if date == 'undated' else date


def _csv_source(cell):
    names = cell.inputs
    if not names:
        return NOT_RECORDED
    if len(names) > 4:
        return f'{" ".join(names[:3])} and {len(names) - 3} more reports'
    return ' '.join(names)


def csv_lines(table, unit_of=None):
    """The tidy lines of ``table``: dicts of CSV_FIELDS."""
    unit_of = unit_of or csv_units([table])
    published = bool(table.cells) and all(
        c.verdict == PUBLISHED for c in table.cells.values())
    doc = table.sources[0] if published and table.sources else None
    for row in table.rows:
        unit = unit_of.get((row.metric, _family(row.unit)), row.unit)

        def conv(x):
            return _in_unit(x, row.unit, unit)
        for col in table.columns:
            cell = table.cells.get((row, col))
            if cell is None:
                continue
            ref = cell.reference
            lo, hi = ref.limits() if ref else (None, None)
            cited = doc or table.cited_by.get(col)
            kind = QUOTED if published else REPLAY if cell.replay \
                else MEASURED
            base = {
                'table': table.title, 'system': col, 'kind': kind,
                'date': _csv_date(cell, cited),
                'benchmark': row.benchmark,
                'version': ' '.join(sorted(table.versions.get(
                    (row.benchmark, col), ()))) or NOT_RECORDED,
                'test': row.test, 'scope': scope(row),
                'gpu_model': cell.gpu_model or NOT_RECORDED,
                'gpus': _opt(cell.gpus), 'nodes': _opt(cell.nodes),
                'metric': row.metric, 'unit': unit,
                'better': row.better, 'n': cell.n,
                'spread': _opt(conv(cell.std)),
                'reference': _opt(conv(ref and ref.reference)),
                'lower_bound': _opt(conv(lo)), 'upper_bound': _opt(conv(hi)),
                'judgement': cell.verdict, 'references_of': cell.judged_by,
                'note': cell.diagnostic,
                'runs': cell.runs, 'passed_runs': cell.passed_runs,
                'checks': ' '.join(sorted(table.checks.get(
                    (row.benchmark, col), ()))),
                'source': cited.short if cited else _csv_source(cell),
                'citation': cited.key if cited else ''}
            if published:
                stats = [('published', cell.mean)]
            elif cell.values:
                stats = zip(STATISTICS, (cell.mean, min(cell.values),
                                         max(cell.values)))
            else:
                stats = [('mean', None)]        # no figure: MISSING
            for stat, value in stats:
                yield {**base, 'statistic': stat, 'value': _opt(conv(value))}


def to_csv(tables):
    """Every table as one tidy CSV (one header, one unit per metric)."""
    tables = tables if isinstance(tables, (list, tuple)) else [tables]
    unit_of = csv_units(tables)
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator='\n')
    out.writerow(CSV_FIELDS)
    for table in tables:
        for line in csv_lines(table, unit_of):
            out.writerow([csv_text(line[k]) for k in CSV_FIELDS])
    return buf.getvalue()


def tables_from_csv(rows):
    """The comparison Tables rebuilt from tidy CSV lines (dicts)."""
    tables = {}

    def number(text):
        x = float(text.lstrip("'")) if text else math.nan
        return None if math.isnan(x) else x

    def count(text):
        x = number(text)
        return None if x is None else int(x)
    for line in rows:
        if line['statistic'] not in ('mean', 'published'):
            continue
        table = tables.setdefault(line['table'],
                                  Table(line['table'], [], [], {}))
        row = Row(*(line[k] for k in ('benchmark', 'test', 'metric', 'unit')))
        col = line['system']
        n, mean, spread = int(line['n']), number(line['value']), \
            number(line['spread'])
        ref, lo, hi = (number(line[k]) for k in (
            'reference', 'lower_bound', 'upper_bound'))
        cell = Cell(
            [mean] * n if mean is not None else [],
            None if ref is None else Reference(
                ref, None if lo is None else lo / ref - 1 if ref else lo,
                None if hi is None else hi / ref - 1 if ref else hi),
            verdict=line['judgement'], runs=int(line['runs']),
            failed_runs=int(line['runs']) - int(line['passed_runs']),
            diagnostic=line['note'], replay=line['kind'] == REPLAY,
            judged_by=line['references_of'],
            gpus=count(line['gpus']), nodes=count(line['nodes']))
        if line['statistic'] == 'published':
            cell.spread = spread
        elif mean is not None:
            cell.stats = (mean, spread)
        table.cells[(row, col)] = cell
        if line['checks']:
            table.checks.setdefault((row.benchmark, col), set()).update(
                line['checks'].split())
    for table in tables.values():
        table.sort()
    return list(tables.values())


def _opt(x):
    return MISSING if x is None else repr(x)


_PATH = re.compile(r'(?<![\w.])/(?:[^\s/]+/)+([^\s/()]+)')


def without_paths(text):
    """``text`` with each absolute path cut to its last part."""
    return _PATH.sub(lambda m: m[1], text)


def systems(table):
    """[(column, {what: text})]: where, when and on what the runs ran."""
    label = column_labels(table.cases)
    by_col = {}
    for case in table.cases:
        by_col.setdefault(label[case], []).append(case)
    out = []
    for col in (c for c in table.columns if c in by_col):
        cases = by_col[col]
        times = [c.time for c in cases if not c.replay
                 and c.time and sources.utc_date(c.time) != 'undated']
        first, last = (sources.utc_date(pick(times, default=0))
                       for pick in (min, max))
        prov = {}
        for c in cases:
            for key, val in (c.provenance or {}).items():
                if isinstance(val, str):
                    # a program's path on the node says nothing to a
                    # reader: its name and version do
                    prov.setdefault(str(key), set()).add(without_paths(val))
        ran = [c for c in cases if c.result != 'skip']
        out.append((col, {
            'kind': 'replay of recorded output' if cases[0].replay
                    else 'measured',
            'system': ', '.join(sorted({f'{c.system}:{c.partition}'
                                        for c in cases})),
            'nodes': ', '.join(sorted({n for c in cases for n in c.nodes}))
                     or 'not recorded',
            'runs': f'{sum(c.result == "pass" for c in ran)} of {len(ran)} '
                    f'passed' + (f', {len(cases) - len(ran)} skipped'
                                 if len(cases) > len(ran) else ''),
            'dates': (sources.date_of(cases[0]) if cases[0].replay
                      else f'{first} to {last}' if first != last else last),
            'ReFrame': ', '.join(sorted({c.version for c in cases
                                         if c.version})) or 'not recorded',
            'provenance': '; '.join(f'{k}: {", ".join(sorted(v))}'
                                    for k, v in sorted(prov.items()))
                          or 'not recorded',
        }))
    return out
