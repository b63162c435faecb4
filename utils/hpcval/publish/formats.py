"""A comparison Table as Markdown, CSV, HTML (one self-contained page) and
LaTeX (booktabs).

Every format says the same per cell: mean +- std (n), the reference with
its pass band, and the verdict; the row says its unit and which way is
better.  CSV is tidy (one line per row and column) so that it loads into
any spreadsheet or dataframe without parsing cell text.
"""
import csv
import html
import io

from hpcval.publish.comparison import FAIL, PASS, PUBLISHED

ARROW = {'higher': '↑', 'lower': '↓', 'unknown': '?'}
LEGEND = ('↑ higher is better, ↓ lower is better (? a unit hpcval does not '
          'know); a cell is mean ± standard '
          'deviation (n runs), then the reference, its pass band and the '
          'verdict of the mean')
PUBLISHED_LEGEND = ('↑ higher is better, ↓ lower is better; a cell is the '
                    'published figure ± its published standard deviation, '
                    'as references/ holds them')


def legend(tables):
    tables = tables if isinstance(tables, (list, tuple)) else [tables]
    if all(c.verdict == PUBLISHED for t in tables for c in t.cells.values()):
        return PUBLISHED_LEGEND
    return LEGEND
FORMATS = ('md', 'csv', 'html', 'tex')


def num(x):
    """Two decimals with thousands separators (as the Sandia poster prints
    its figures); three significant digits below 0.01."""
    if x is None:
        return ''

    if x != 0 and abs(x) < 0.01:
        return f'{x:.3g}'

    return f'{x:,.2f}'


def _band(ref):
    lo, hi = ref.bounds()
    if hi is None:
        return f'≥ {num(lo)}'

    if lo is None:
        return f'≤ {num(hi)}'

    return f'{num(lo)}..{num(hi)}'


def published(x):
    """A published figure with the digits its source printed."""
    return f'{x:,.15g}'


def measured(cell):
    fmt = published if cell.verdict == PUBLISHED else num
    text = fmt(cell.mean)
    if cell.std is not None:
        text += f' ± {fmt(cell.std)}'

    if cell.verdict != PUBLISHED:
        text += f' (n={cell.n})'

    return text


def judged(cell):
    if cell.verdict == PUBLISHED or cell.reference is None:
        return cell.verdict if cell.verdict != PUBLISHED else ''

    return f'ref {num(cell.reference.value)} [{_band(cell.reference)}]: ' \
           f'{cell.verdict}'


def metric_label(row):
    return f'{row.metric} [{row.unit}] {ARROW[row.better]}'


def labelled_rows(rows):
    """(test label or '' when it repeats the row above, row)."""
    last = None
    for row in rows:
        yield ('' if row.test == last else row.test), row
        last = row.test


def _cells(table, row, joined):
    """Each column's cell text: ``joined`` of its lines (measured, then
    the reference and verdict where there is one); '' where empty."""
    out = []
    for col in table.columns:
        cell = table.cells.get((row, col))
        lines = [] if cell is None else [measured(cell), judged(cell)]
        out.append(joined([x for x in lines if x]) if lines else '')
    return out


def to_markdown(table):
    out = [f'## {_md(table.title)}', '', legend(table), '']
    head = ['test', 'metric'] + [_md(c) for c in table.columns]
    for bench, rows in table.groups():
        out += [f'### {_md(bench)}', '', '| ' + ' | '.join(head) + ' |',
                '|' + '---|' * len(head)]
        for test, row in labelled_rows(rows):
            cells = _cells(table, row,
                           lambda lines: '<br>'.join(map(_md, lines)))
            out.append('| ' + ' | '.join(
                [_md(test), _md(metric_label(row))] + cells) + ' |')
        out.append('')

    out += [f'- {_md(n)}' for n in table.notes]
    return '\n'.join(out).rstrip() + '\n'


_MD = {'\\': '\\\\', '|': '\\|', '&': '&amp;', '<': '&lt;', '>': '&gt;',
       '\n': ' ', '\r': ' '}


def _md(text):
    """Text safe in a Markdown table cell: no cell break, no raw HTML
    (names in reports come from anywhere)."""
    return ''.join(_MD.get(ch, ch) for ch in str(text))


CSV_FIELDS = ('benchmark', 'test', 'metric', 'unit', 'better', 'column',
              'n', 'mean', 'std', 'min', 'max', 'reference', 'lower_bound',
              'upper_bound', 'verdict')


def to_csv(table):
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator='\n')
    out.writerow(CSV_FIELDS)
    for row in table.rows:
        for col in table.columns:
            cell = table.cells.get((row, col))
            if cell is None:
                continue
            ref = cell.reference
            lo, hi = ref.bounds() if ref else (None, None)
            out.writerow([*map(_text_cell, (row.benchmark, row.test,
                                            row.metric, row.unit, row.better,
                                            col)),
                          cell.n, repr(cell.mean),
                          _opt(cell.std), repr(min(cell.values)),
                          repr(max(cell.values)),
                          _opt(ref and ref.value), _opt(lo), _opt(hi),
                          _text_cell(cell.verdict)])

    return buf.getvalue()


def _text_cell(text):
    """A text cell no spreadsheet takes for a formula: names in reports
    come from anywhere, and ``=``, ``+``, ``-``, ``@``, tab or CR first
    would make one (a leading ' shows it as text)."""
    text = str(text)
    return f"'{text}" if text[:1] in ('=', '+', '-', '@', '\t', '\r') \
        else text


def _opt(x):
    return '' if x is None else repr(x)


_CSS = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin-bottom:2em}
th,td{border:1px solid #bbb;padding:.3em .6em;vertical-align:top}
th{background:#eee} td.test,td.metric{font-family:monospace;font-size:85%}
.legend{color:#555}
td.pass{background:#e3f4e3} td.fail{background:#f8dcdc}
td.replay{background-image:repeating-linear-gradient(45deg,transparent 0,
transparent 6px,rgba(0,0,0,.05) 6px,rgba(0,0,0,.05) 12px)}
.ref{color:#555;font-size:85%} .fail .ref{color:#900;font-weight:bold}
ul.notes{color:#555}
"""


def _html_table(table, esc, heading=True):
    parts = [f'<h2>{esc(table.title)}</h2>'] if heading else []
    head = ''.join(f'<th>{esc(c)}</th>' for c in table.columns)
    for bench, rows in table.groups():
        parts.append(f'<h3>{esc(bench)}</h3><table><tr><th>test</th>'
                     f'<th>metric</th>{head}</tr>')
        for test, row in labelled_rows(rows):
            span = sum(r.test == row.test for r in rows)
            parts.append('<tr>' + (f'<td class="test" rowspan="{span}">'
                                   f'{esc(test)}</td>' if test else '') +
                         f'<td class="metric">{esc(metric_label(row))}'
                         f'</td>')
            for col in table.columns:
                cell = table.cells.get((row, col))
                if cell is None:
                    parts.append('<td></td>')
                    continue
                cls = cell.verdict if cell.verdict in (PASS, FAIL) else ''
                if col.endswith('(replay)'):
                    cls += ' replay'
                parts.append(f'<td class="{cls.strip()}">'
                             f'{esc(measured(cell))}<div class="ref">'
                             f'{esc(judged(cell))}</div></td>')
            parts.append('</tr>')
        parts.append('</table>')

    if table.notes:
        parts.append('<ul class="notes">' + ''.join(
            f'<li>{esc(n)}</li>' for n in table.notes) + '</ul>')
    return parts


def to_html(tables, inputs=(), problems=(), images=(), title=None):
    """One page with inline CSS and images given as data URIs:
    ``images`` is a list of (caption, data_uri)."""
    tables = tables if isinstance(tables, (list, tuple)) else [tables]
    esc = html.escape
    title = title or tables[0].title
    parts = ['<!DOCTYPE html><html><head><meta charset="utf-8">',
             f'<title>{esc(title)}</title><style>{_CSS}</style>'
             f'</head><body><h1>{esc(title)}</h1>',
             f'<p class="legend">{esc(legend(tables))}</p>']
    for table in tables:
        parts += _html_table(table, esc, heading=len(tables) > 1)

    for heading, items in (('Inputs', inputs), ('Inputs left out', problems)):
        if items:
            parts.append(f'<h2>{heading}</h2><ul class="notes">' +
                         ''.join(f'<li>{esc(str(i))}</li>' for i in items) +
                         '</ul>')

    for caption, uri in images:
        parts.append(f'<figure><img src="{uri}" alt="{esc(caption)}" '
                     f'style="max-width:100%"><figcaption>{esc(caption)}'
                     f'</figcaption></figure>')

    parts.append('</body></html>\n')
    return '\n'.join(parts)


_TEX = {'\\': r'\textbackslash{}', '&': r'\&', '%': r'\%', '$': r'\$',
        '#': r'\#', '_': r'\_', '{': r'\{', '}': r'\}',
        '~': r'\textasciitilde{}', '^': r'\textasciicircum{}',
        '±': r'$\pm$', '·': r'$\cdot$', '↑': r'$\uparrow$',
        '↓': r'$\downarrow$', '≥': r'$\geq$', '≤': r'$\leq$',
        '→': r'$\rightarrow$'}


def tex(text):
    return ''.join(_TEX.get(ch, ch) for ch in text)


def to_latex(table):
    """A booktabs tabular per benchmark (needs \\usepackage{booktabs})."""
    cols = 'll' + 'l' * len(table.columns)
    out = [f'% {tex(table.title)}', f'% {tex(legend(table))}']
    for bench, rows in table.groups():
        out += [r'\begin{table}[ht]', r'\centering', r'\small',
                rf'\caption{{{tex(table.title)}: {tex(bench)}}}',
                rf'\begin{{tabular}}{{{cols}}}', r'\toprule',
                ' & '.join(['test', 'metric'] +
                           [tex(c) for c in table.columns]) +
                r' \\', r'\midrule']
        for test, row in labelled_rows(rows):
            cells = _cells(table, row, lambda lines: (
                r'\begin{tabular}[t]{@{}l@{}}' +
                r' \\ '.join(map(tex, lines)) + r'\end{tabular}'))
            out.append(' & '.join([tex(test), tex(metric_label(row))] +
                                  cells) + r' \\')
        out += [r'\bottomrule', r'\end{tabular}', r'\end{table}', '']

    return '\n'.join(out)


RENDER = {'md': to_markdown, 'csv': to_csv, 'tex': to_latex}
