"""The comparison as a LaTeX document texlive-latex-base compiles."""
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
    """``text`` safe in a pdflatex document (OT1, brackets braced)."""
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
    body = []
    for test, row in formats.labelled_rows(rows):
        shown = formats.Shown(table, row, cols)
        cells = formats.cell_texts(shown, lambda lines: r' \newline '.join(
            tex(x) for x in lines))
        body.append([tex(test), tex(shown.label())] + cells)
    return _long(spec, size, landscape,
                 rf'\caption{{{tex(table.title)}: {tex(bench)}}}'
                 rf'\label{{{_label("tab", table.title + "-" + bench)}}}',
                 ['test', 'metric'] + cols, body)


def _long(spec, size, landscape, caption, head, rows):
    """A longtable of ``head`` (escaped here) and ``rows`` (LaTeX already)."""
    def line(cells):
        return ' & '.join(cells) + r' \\'
    head = line([tex(c) for c in head])
    out = [r'\begin{landscape}' if landscape else '', size,
           rf'\begin{{longtable}}{{{spec}}}', caption + r'\\',
           r'\hline', head, r'\hline', r'\endfirsthead',
           r'\hline', head, r'\hline', r'\endhead', r'\hline', r'\endfoot']
    out += [line(cells) for cells in rows]
    out += [r'\end{longtable}', r'\normalsize',
            r'\end{landscape}' if landscape else '']
    return [x for x in out if x]


_FIGURE_PATH = re.compile(r'[A-Za-z0-9_./-]+\.png')


def _systems(table):
    """The systems table: the page's facts of every column."""
    rows = formats.systems(table) if table.cases else []
    if not rows:
        return []
    keys = list(rows[0][1])
    return _long('p{2.4cm}' + 'p{2.0cm}' * (len(keys) - 1) + 'p{6.0cm}',
                 r'\scriptsize', True,
                 r'\caption{Systems: where, when and with what the columns '
                 r'were measured or replayed}\label{tab:systems}',
                 ['column'] + keys,
                 [[tex(col)] + [tex(info[k]) for k in keys]
                  for col, info in rows])


def _label(prefix, text):
    return f'{prefix}:' + re.sub(r'[^a-z0-9]+', '-', text.lower()).strip('-')


def _cited(text, docs):
    """``text`` with each short citation followed by its ``\\cite``."""
    for d in docs:
        short = tex(d.short)
        if short in text:
            text = text.replace(short, f'{short}~\\cite{{{d.key}}}')
    return text


def figure_caption(stem):
    """What a figure of ``hpcval report --plots`` shows, from its name."""
    parts = stem.split('-')
    kind, bench = parts[0], parts[1] if len(parts) > 1 else ''
    rest = ' '.join(parts[2:])
    if stem.startswith('bars-babelstream-kernels-'):
        what = ('one node (CPU)' if stem.endswith('cpu') else
                'the node\'s slowest GPU, per device')
        return (f'BabelStream kernels by system, {what}: bars are the mean, '
                f'error bars the sample standard deviation of n runs (n in '
                f'the legend); a line is the column\'s own reference, drawn '
                f'only where its system judged it')
    if stem.startswith('bars-babelstream-per-gpu-'):
        return (f'BabelStream per GPU ({rest[8:]}): each device\'s five '
                f'kernels, mean and sample standard deviation of n runs')
    if kind == 'curve':
        return (f'{bench}: bus bandwidth (GB/s) against message size '
                f'({rest}), one line per system and check')
    if kind == 'heatmap':
        return (f'{bench}: GPU-to-GPU bandwidth matrix (GB/s) of {rest}; '
                f'grey cells were not measured')
    if kind == 'multiples':
        return (f'{bench}: every figure that two or more systems share, '
                f'mean with the sample standard deviation of n runs (n and '
                f'GPUs x nodes under each bar); a dashed line is the '
                f'column\'s own reference where its system judged it')
    return stem


def _figures(images):
    """Each figure a float with a caption and a label (fig:<name>)."""
    out = []
    for i, (caption, path) in enumerate(images):
        if not _FIGURE_PATH.fullmatch(str(path)) or '..' in str(path):
            continue        # a path we did not write: not included
        out += [r'\begin{figure}[htbp]', r'\centering',
                rf'\includegraphics[width=\linewidth,height=0.75\textheight,'
                rf'keepaspectratio]{{{path}}}',
                rf'\caption{{{tex(figure_caption(caption))}}}',
                rf'\label{{{_label("fig", caption)}}}',
                r'\end{figure}']
        if i % 3 == 2:
            out.append(r'\clearpage')      # floats never pile up
    return out


def document(tables, title=None, images=()):
    """A complete document of ``tables``; ``images``: [(caption, path)]."""
    title = title or tables[0].title
    docs = sources.cited(tables)
    out = [_PREAMBLE.rstrip('\n'), rf'\section*{{{tex(title)}}}',
           tex(formats.legend(tables)) + r'\par']
    out += [_cited(line, docs) for line in _systems(tables[0])]
    for table in tables:
        if len(tables) > 1:
            out.append(rf'\subsection*{{{_cited(tex(table.title), docs)}}}')
        for bench, rows in table.groups():
            note = formats.checks_note(table, bench)
            if note:
                out.append(rf'\noindent\textit{{{tex(bench)}: measured by '
                           rf'{tex(note)}.}}\par')
            out += [_cited(line, docs)
                    for line in _longtable(table, bench, rows)]
        out += [_cited(tex(note), docs) + r'\par' for note in table.notes]
    if images:
        out += [r'\clearpage', r'\section*{Figures}', *_figures(images),
                r'\clearpage']
    bounds = [b for t in tables for b in t.bounds]
    if bounds:
        out += [rf'\section*{{{tex(formats.APPENDIX[0])}}}',
                *(tex(line) + r'\par' for line in (formats.APPENDIX[1],
                                                    *bounds))]
    if docs:
        # the same entries as comparison.bib, typeset without a bibtex run
        out += [r'\begin{thebibliography}{9}',
                *(rf'\bibitem{{{d.key}}} {tex(d.text())}' for d in docs),
                r'\end{thebibliography}']
    out.append(r'\end{document}')
    return '\n'.join(out) + '\n'
