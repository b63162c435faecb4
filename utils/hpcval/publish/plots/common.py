"""What the hpcval plots share: Agg canvas, file names, kept outputs."""
import io
import os
import re
from dataclasses import dataclass, field

try:
    from matplotlib import rc_context
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties
except ImportError as err:      # matplotlib is an optional extra
    raise ImportError(f'hpcval plots need matplotlib ({err}); install it '
                      f'with: pip install "hpcval[plots]"') from None

from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval.publish import output

DPI = 100
REPLAY_HATCH = '//'
VERDICT_COLOURS = {'pass': '#4c9a2a', 'fail': '#c0392b',
                   'no reference': '#8c8c8c', 'not judged': '#8c8c8c',
                   'reproduces the published figure': '#6f8fb0',
                   'differs from the published figure': '#b08f6f'}
BAND_COLOUR = '#3a6ea5'
REFERENCE_COLOUR = '#1f3b73'


@dataclass
class Plotted:
    """The files a plotting call wrote, and why each left-out was left out."""
    files: list = field(default_factory=list)
    skipped: list = field(default_factory=list)
    #: every reference line drawn: (figure, column, metric, value in the
    #: row's unit), so that a test can see which bounds a figure shows
    references: list = field(default_factory=list)

    def __iter__(self):
        return iter(self.files)

    def add(self, other):
        self.files.extend(other.files)
        self.skipped.extend(other.skipped)
        self.references.extend(other.references)


def slug(*parts, limit=120):
    """A file-name-safe, lower-case stem from ``parts``."""
    text = '-'.join(str(p) for p in parts if p not in (None, ''))
    text = re.sub(r'[^a-z0-9._]+', '-', text.lower()).strip('-.')
    return text[:limit].rstrip('-.') or 'figure'


def new_figure(width, height):
    fig = Figure(figsize=(width, height), dpi=DPI, layout='constrained')
    FigureCanvasAgg(fig)
    return fig


def text_width(fig, texts, size):
    """The widest line of ``texts`` at font ``size``, in inches."""
    renderer = fig.canvas.get_renderer()
    prop = FontProperties(size=size)
    return max((renderer.get_text_width_height_descent(
        line, prop, ismath=False)[0]
        for text in texts for line in text.split('\n')),
        default=0) / fig.dpi


def save(fig, outdir, stem, plotted, force=False):
    """Write ``stem``.png and .svg under ``outdir`` (never over a file)."""
    output.check_folder(outdir)     # never a link
    base, n = stem, 1
    while os.path.join(outdir, base + '.png') in plotted.files:
        n += 1
        base = f'{stem}-{n}'
    paths = [os.path.join(outdir, f'{base}.{ext}') for ext in ('png', 'svg')]
    existing = [p for p in paths if os.path.exists(p)]
    if existing and not force:
        raise FileExistsError(f'{existing[0]} exists; not overwritten '
                              f'(force=True, or --force, replaces it)')
    # SVG: text kept as text (searchable, editable), no date in the file
    with rc_context({'svg.fonttype': 'none', 'svg.hashsalt': stem}):
        for path in paths:
            buf = io.BytesIO()
            ext = path.rsplit('.', 1)[1]
            fig.savefig(buf, format=ext, metadata={'Date': None}
                        if ext == 'svg' else None)
            output.write(path, buf.getvalue(), force)
    plotted.files.extend(paths)
    return paths


def unique_cases(samples_or_cases):
    """The cases of ``samples_or_cases``, first-seen order, each once."""
    return list(dict.fromkeys(getattr(item, 'case', item)
                              for item in samples_or_cases))


def describe(case):
    return (f'{case.test} @{case.system}:{case.partition}+{case.environ} '
            f'({case.source})')


def parsed_output(case, parse):
    """(``parse`` of the case's kept stdout, None), or (None, message)."""
    if not case.outputdir or not case.stdout:
        return None, (f'{describe(case)}: the report names no kept output '
                      f'(ReFrame keeps the output of passed cases only); '
                      f'not plotted')
    path = os.path.join(case.outputdir, case.stdout)
    if not os.path.isfile(path):
        return None, (f'{describe(case)}: its output {path} is not on this '
                      f'machine (a report from another site, or the output '
                      f'folder was removed); not plotted')
    try:
        return parse(read_text(path)), None
    except OSError as err:
        return None, f'{describe(case)}: cannot read {path}: {err}; ' \
                     f'not plotted'
    except ParseError as err:
        return None, (f'{describe(case)}: its kept output does not parse '
                      f'({err}); not plotted')


def passed(cases, skipped):
    """The cases that passed; why each failed one is not drawn: skipped."""
    for case in cases:
        if case.result == 'pass':
            yield case
        elif case.result != 'skip':
            skipped.append(f'{describe(case)}: result {case.result}; its '
                           f'output is not plotted')


def better_label(better):
    return {'higher': '↑ higher is better', 'lower': '↓ lower is better'}.get(
        better, '? unit unknown to hpcval')
