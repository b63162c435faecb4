"""The comparison as a LaTeX document that ``pdflatex`` compiles with
Debian's texlive-latex-base alone: a ``longtable`` per benchmark (it breaks
across pages), in landscape where it has more than three system columns,
fixed-width columns that wrap, and every character outside ASCII written
as a LaTeX command or transliterated (a system named "Zürich" or a unit
"µs" never stops the compile).
"""
import re
import unicodedata

from hpcval.publish import formats, sources

_TEX = {'\\': r'\textbackslash{}', '&': r'\&', '%': r'\%', '$': r'\$',
        '#': r'\#', '_': r'\_', '{': r'\{', '}': r'\}',
        '~': r'\textasciitilde{}', '^': r'\textasciicircum{}',
        '<': r'\textless{}', '>': r'\textgreater{}', '|': r'\textbar{}',
        '"': "''", '[': '{[}', ']': '{]}',
        '±': r'$\pm$', '·': r'$\cdot$', '↑': r'$\uparrow$',
        '↓': r'$\downarrow$', '≥': r'$\geq$', '≤': r'$\leq$',
        '→': r'$\rightarrow$', '—': '---', '–': '--', 'µ': r'$\mu$',
        'μ': r'$\mu$', '×': r'$\times$', '…': r'\ldots{}'}


def tex(text):
    """``text`` safe in a pdflatex document (OT1 fonts, no inputenc);
    brackets braced (a row starting with one would be read as ``\\[...]``
    after the row above), control characters shown as their escapes."""
    out = []
    for ch in formats.visible(text):
        if ch in _TEX:
            out.append(_TEX[ch])
        elif ch.isascii():
            out.append(ch if ch.isprintable() else ' ')
        else:
            plain = unicodedata.normalize('NFKD', ch).encode(
                'ascii', 'ignore').decode()
            out.append(''.join(_TEX.get(c, c) for c in plain) or '?')
    return ''.join(out)


_PREAMBLE = r"""\documentclass[10pt]{article}
\usepackage[margin=1.5cm]{geometry}
\usepackage{longtable,lscape,array,graphicx}
\setlength{\LTcapwidth}{\linewidth}
\renewcommand{\arraystretch}{1.15}
\begin{document}
"""


def _longtable(table, bench, rows):
    cols = formats.columns_of(table, rows)
    landscape = len(cols) > 3
    width = 24.0 if landscape else 17.0        # usable cm
    fixed = 3.0 + 3.2
    each = max(1.8, (width - fixed) / max(1, len(cols)) - 0.3)
    size = r'\footnotesize' if len(cols) <= 5 else r'\scriptsize'
    spec = 'p{3.0cm}p{3.2cm}' + ''.join(f'p{{{each:.1f}cm}}' for _ in cols)
    head = ' & '.join(['test', 'metric'] + [tex(c) for c in cols]) + r' \\'
    out = [r'\begin{landscape}' if landscape else '', size,
           rf'\begin{{longtable}}{{{spec}}}',
           rf'\caption{{{tex(table.title)}: {tex(bench)}}}\\',
           r'\hline', head, r'\hline', r'\endfirsthead',
           r'\hline', head, r'\hline', r'\endhead', r'\hline', r'\endfoot']
    for test, row in formats.labelled_rows(rows):
        shown = formats.Shown(table, row, cols)
        cells = []
        for cell in shown.cells:
            lines = [] if cell is None else [shown.measured(cell),
                                             shown.judged(cell)]
            cells.append(r' \newline '.join(tex(x) for x in lines if x))
        out.append(' & '.join([tex(test), tex(shown.label())] + cells) +
                   r' \\')
    out += [r'\end{longtable}', r'\normalsize',
            r'\end{landscape}' if landscape else '']
    return [line for line in out if line]


_FIGURE_PATH = re.compile(r'[A-Za-z0-9_./-]+\.png')


def _systems(table):
    """The systems table: nodes, runs, dates, ReFrame and provenance of
    every column (the page's)."""
    from hpcval.publish import page
    rows = page.systems(table) if table.cases else []
    if not rows:
        return []
    keys = list(rows[0][1])
    spec = 'p{2.4cm}' + 'p{2.0cm}' * (len(keys) - 1) + 'p{6.0cm}'
    head = ' & '.join(['column'] + [tex(k) for k in keys]) + r' \\'
    out = [r'\begin{landscape}', r'\scriptsize',
           rf'\begin{{longtable}}{{{spec}}}',
           r'\caption{Systems: where, when and with what the columns were '
           r'measured or replayed}\\',
           r'\hline', head, r'\hline', r'\endfirsthead', r'\hline', head,
           r'\hline', r'\endhead', r'\hline', r'\endfoot']
    out += [' & '.join([tex(col)] + [tex(info[k]) for k in keys]) + r' \\'
            for col, info in rows]
    out += [r'\end{longtable}', r'\normalsize', r'\end{landscape}']
    return out


def _figures(images):
    """Each figure on its own, full width, captioned by its file name."""
    out = []
    for caption, path in images:
        if not _FIGURE_PATH.fullmatch(str(path)) or '..' in str(path):
            continue        # a path we did not write: not included
        out += [r'\begin{center}',
                rf'\includegraphics[width=\linewidth,height=0.8\textheight,'
                rf'keepaspectratio]{{{path}}}\par',
                rf'\small Figure: {tex(caption)}\normalsize',
                r'\end{center}']
    return out


def document(tables, title=None, images=()):
    """A complete document of ``tables`` (comparison Tables); ``images``:
    [(caption, PNG path relative to the document)] shown after the
    tables."""
    title = title or tables[0].title
    out = [_PREAMBLE.rstrip('\n'), rf'\section*{{{tex(title)}}}',
           tex(formats.legend(tables)) + r'\par']
    out += _systems(tables[0])
    for table in tables:
        if len(tables) > 1:
            out.append(rf'\subsection*{{{tex(table.title)}}}')
        for bench, rows in table.groups(links=False):
            note = formats.checks_note(table, bench)
            if note:
                out.append(rf'\noindent\textit{{{tex(bench)}: measured by '
                           rf'{tex(note)}.}}\par')
            out += _longtable(table, bench, rows)
        for note in table.notes:
            out.append(tex(note) + r'\par')
    if images:
        out.append(r'\section*{Figures}')
        out += _figures(images)
    docs = sources.cited(tables)
    if docs:
        # the same entries as comparison.bib, typeset without a bibtex run
        out.append(r'\begin{thebibliography}{9}')
        out += [rf'\bibitem{{{d.key}}} {tex(d.text())}' for d in docs]
        out.append(r'\end{thebibliography}')
    out.append(r'\end{document}')
    return '\n'.join(out) + '\n'
