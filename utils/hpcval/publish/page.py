"""The comparison as one self-contained HTML page."""
import html
import os
import re

from hpcval.publish import formats, sources
from hpcval.publish.comparison import (DIFFERS, FAIL, NOT_ITS_OWN, PASS,
                                      PUBLISHED, REPRODUCES)

_CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1500px;
padding:0 1.5em;color:#222;line-height:1.35}
h1{margin-bottom:.2em} .meta{color:#555;margin-top:0}
nav ol{columns:3;color:#333} nav a{text-decoration:none}
.wrap{overflow-x:auto;margin-bottom:1.5em}
table{border-collapse:collapse}
th,td{border:1px solid #bbb;padding:.3em .6em;vertical-align:top;
text-align:left}
th{background:#eee} td.test,td.metric{font-family:monospace;font-size:85%}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.legend,.checks{color:#555}
td.pass{background:#e3f4e3} td.fail{background:#f8dcdc}
td.replay{background-image:repeating-linear-gradient(45deg,transparent 0,
transparent 6px,rgba(0,0,0,.05) 6px,rgba(0,0,0,.05) 12px)}
.ref{color:#555;font-size:85%} .fail .ref{color:#900;font-weight:bold}
ul.notes{color:#555}
figure{margin:1em 0} figure img{max-width:100%;height:auto;
border:1px solid #ddd} figcaption{color:#555;font-size:90%}
"""
_FIGURE = re.compile(r'^(?:bars|curve|heatmap|multiples)-(?P<bench>[a-z0-9_]+)')


def _anchor(text):
    return 'b-' + re.sub(r'[^a-z0-9_]+', '-', text.lower()).strip('-')


def input_name(source):
    """A report's file name (or label), or the database's name and session."""
    db, sep, session = str(source).partition('#')
    return os.path.basename(db) + sep + session


def _problem(problem):
    name = input_name(problem.source)
    reason = str(problem.reason).replace(str(problem.source), name)
    return formats.without_paths(f'{name}: {reason}')


def summary(table):
    """{column: {verdict: n}} over the figures the tables show."""
    out = {col: dict.fromkeys(SUMMARY_KEYS, 0) for col in table.columns}
    for row in (r for _, rows in table.groups() for r in rows):
        for col in table.columns:
            cell = table.cells.get((row, col))
            if cell is not None and cell.verdict != PUBLISHED:
                out[col][_summary_key(cell)] += 1
    return out


SUMMARY_KEYS = (PASS, FAIL, 'reproduces', 'differs', NOT_ITS_OWN,
                'diagnostic', formats.UNJUDGED)


def _class(key, n):
    return f' {key}' if key in (PASS, FAIL) and n else ''


def _grid(head, rows, cell):
    """A table of 'column' and ``head``: ``cell(row, key)`` of each row."""
    esc = html.escape
    return ('<div class="wrap"><table><tr><th>column</th>' +
            ''.join(f'<th>{esc(h)}</th>' for h in head) + '</tr>' +
            ''.join(f'<tr><td>{esc(col)}</td>' +
                    ''.join(cell(row, h) for h in head) + '</tr>'
                    for col, row in rows) + '</table></div>')


_SHORT = {REPRODUCES: 'reproduces', DIFFERS: 'differs',
          NOT_ITS_OWN: NOT_ITS_OWN}


def _summary_key(cell):
    if cell.verdict in _SHORT:
        return _SHORT[cell.verdict]
    if cell.diagnostic and cell.reference is None:
        return 'diagnostic'
    return formats.verdict_word(cell)


def _table(table, rows, esc):
    cols = formats.columns_of(table, rows)
    parts = ['<div class="wrap"><table><tr><th>test</th><th>metric</th>' +
             ''.join(f'<th>{esc(c)}</th>' for c in cols) + '</tr>']
    for test, row in formats.labelled_rows(rows):
        shown = formats.Shown(table, row, cols)
        span = sum(r.test == row.test for r in rows)
        parts.append('<tr>' + (f'<td class="test" rowspan="{span}">'
                               f'{esc(test)}</td>' if test else '') +
                     f'<td class="metric">{esc(shown.label())}</td>')
        for col, cell in zip(cols, shown.cells):
            if cell is None:
                parts.append('<td></td>')
                continue
            cls = cell.verdict if cell.verdict in (PASS, FAIL) else ''
            if col.endswith('(replay)'):
                cls += ' replay'
            parts.append(f'<td class="num {cls.strip()}">'
                         f'{esc(shown.measured(cell))}<div class="ref">'
                         f'{esc(formats.judged(cell, shown.value))}'
                         f'</div></td>')
        parts.append('</tr>')
    parts.append('</table></div>')
    return parts


def _notes(items):
    return '<ul class="notes">' + ''.join(
        f'<li>{html.escape(str(i))}</li>' for i in items) + '</ul>'


def _figures(items, esc):
    return [f'<figure><img src="{uri}" alt="{esc(caption)}">'
            f'<figcaption>{esc(caption)}</figcaption></figure>'
            for caption, uri in items]


def by_benchmark(images):
    """{benchmark: [(caption, uri)]} of the figures, by their names."""
    out = {}
    for caption, uri in images:
        m = _FIGURE.match(caption)
        out.setdefault(m['bench'] if m else '', []).append((caption, uri))
    return out


def render(tables, inputs=(), problems=(), images=(), title=None,
           unplotted=()):
    """The page; ``images``: [(file name, data URI)]; ``unplotted``: why."""
    tables = tables if isinstance(tables, (list, tuple)) else [tables]
    esc = html.escape
    main = tables[0]
    title = title or main.title
    figures = by_benchmark(images)
    runs = [c for c in main.cases if c.result != 'skip']
    # a replay's time is when it was replayed, not a date of its figures
    latest = max((c.time for c in main.cases if not c.replay and c.time
                  and sources.utc_date(c.time) != 'undated'), default=None)
    parts = ['<!DOCTYPE html><html><head><meta charset="utf-8">',
             f'<title>{esc(title)}</title><style>{_CSS}</style></head><body>',
             f'<h1>{esc(title)}</h1>']
    if main.cases:
        parts.append(f'<p class="meta">Measured runs up to '
                     f'{sources.utc_date(latest)}'
                     f' (replays carry their documents\' dates): '
                     f'{len(runs)} runs of {len(main.columns)} systems; '
                     f'made by <code>hpcval report</code>.</p>')
    toc, body = [], []

    def section(anchor, heading, text):
        toc.append((anchor, heading))
        body.append(f'<h2 id="{anchor}">{esc(heading)}</h2>{text}')
    sys_rows = formats.systems(main) if main.cases else []
    if sys_rows:
        keys = list(sys_rows[0][1])
        section('systems', 'Systems', _grid(
            keys, sys_rows, lambda info, k: f'<td>{esc(info[k])}</td>'))
        section('summary', 'Summary', '<p class="legend">Figures in the '
                'tables below, per system: passed and failed (a run failed '
                'or the mean is out of its band) against references made for '
                'that system; reproduce or differ from the published figure '
                '(replays); not judged (the runs had another system\'s '
                'references); diagnostic (logged on purpose by the check, '
                'such as the bus bandwidth of a one-GPU collective, 0 by '
                'definition); unjudged (no reference).</p>' +
                _grid(SUMMARY_KEYS, summary(main).items(), lambda n, k:
                      f'<td class="num{_class(k, n[k])}">{n[k]}</td>'))
    body.append(f'<p class="legend">{esc(formats.legend(tables))}</p>')
    for table in tables:
        if len(tables) > 1:
            body.append(f'<h2>{esc(table.title)}</h2>')
        for bench, rows in table.groups():
            anchor = _anchor(f'{table.title}-{bench}' if table is not main
                             else bench)
            toc.append((anchor, bench if table is main
                        else f'{bench} ({table.title})'))
            body.append(f'<h3 id="{anchor}">{esc(bench)}</h3>')
            note = formats.checks_note(table, bench)
            if note:
                body.append(f'<p class="checks">Measured by {esc(note)}.</p>')
            body += _table(table, rows, esc)
            links = formats.link_count(table, bench)
            if links:
                body.append(f'<p class="checks">{links} per-GPU and '
                            f'per-GPU-pair figures: in the figures below '
                            f'(all in the CSV).</p>')
            if table is main:
                body += _figures(figures.pop(bench, []), esc)
        if table.notes:
            body.append(_notes(table.notes))
    rest = [item for items in figures.values() for item in items]
    if rest:
        section('figures', 'Other figures', '')
        body += _figures(rest, esc)
    for anchor, heading, items in (
            ('inputs', 'Inputs', [input_name(i) if not isinstance(i, tuple)
                                  else i[0] for i in inputs]),
            ('left-out', 'Inputs left out', [_problem(p) for p in problems]),
            ('not-drawn', 'Figures not drawn',
             [formats.without_paths(why) for why in unplotted])):
        if items:
            section(anchor, heading, _notes(items))
    bounds = [b for t in tables for b in t.bounds]
    if bounds:
        section('appendix', formats.APPENDIX[0], f'<p class="legend">'
                f'{esc(formats.APPENDIX[1])}</p>{_notes(bounds)}')
    docs = sources.cited(tables)
    if docs:
        # the address as text: the page loads and links nothing
        section('sources', 'Sources', '<ol class="notes">' + ''.join(
            f'<li id="{esc(d.key)}">{esc(d.text())}</li>' for d in docs) +
            '</ol>')
    parts.append('<nav><h2>Contents</h2><ol>' + ''.join(
        f'<li><a href="#{a}">{esc(t)}</a></li>' for a, t in toc) +
        '</ol></nav>')
    parts += body
    parts.append('</body></html>\n')
    return '\n'.join(parts)
