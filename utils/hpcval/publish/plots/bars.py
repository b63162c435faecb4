"""Per-metric bars across the comparison table's columns (systems)."""
import re
import textwrap

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from hpcval.publish.plots.common import (BAND_COLOUR, REFERENCE_COLOUR, REPLAY_HATCH,
                                         VERDICT_COLOURS, Plotted, better_label,
                                         new_figure, save, slug, value_label)

# TransferBench's per-pair metrics (gpu00_to_gpu01, uni_gpu00_to_gpu01...)
# are what the heat maps show; a bar chart per pair would bury the rest
LINK_METRIC = re.compile(r'(^|_)gpu\d+_to_gpu\d+$')


def _wrapped(label, width=18):
    return '\n'.join(textwrap.wrap(label, width, break_on_hyphens=False)) \
        or label


def _bounds(ref, bottom, top):
    lo, hi = ref.bounds()
    return (bottom if lo is None else lo), (top if hi is None else hi)


def _top(cells):
    peaks = []
    for cell in cells:
        peaks.append(cell.mean + (cell.std or 0))
        if cell.reference is not None:
            peaks.append(cell.reference.value)
            hi = cell.reference.bounds()[1]
            if hi is not None:
                peaks.append(hi)
    return max(peaks + [0]) * 1.18 or 1.0


def metric_bars(table, row, outdir, force=False):
    """One bar per column of ``table`` that has ``row``: mean with the
    standard deviation as error bar, coloured by verdict, hatched for
    replays; the column's reference as a dashed line over its bar, the pass
    band shaded; n under each bar.  Returns Plotted."""
    return _bars(table, row, outdir, force, Plotted())


def _bars(table, row, outdir, force, plotted):
    cols = [c for c in table.columns if (row, c) in table.cells]
    cells = [table.cells[(row, c)] for c in cols]
    if not cells:
        plotted.skipped.append(f'{row.benchmark} {row.test} {row.metric}: '
                               f'no column has a value; not plotted')
        return plotted

    fig = new_figure(max(4.5, 1.3 * len(cols) + 2.2), 4.8)
    ax = fig.add_subplot()
    top = _top(cells)
    xs = range(len(cols))
    for x, col, cell in zip(xs, cols, cells):
        replay = col.endswith('(replay)')
        ax.bar(x, cell.mean, width=0.6, color=VERDICT_COLOURS[cell.verdict],
               hatch=REPLAY_HATCH if replay else None, edgecolor='black',
               linewidth=0.6, alpha=0.6 if replay else 0.9, zorder=2)
        if cell.std is not None:
            ax.errorbar(x, cell.mean, yerr=cell.std, color='black',
                        capsize=5, linewidth=1, zorder=3)
        ax.annotate(value_label(cell.mean),
                    (x, cell.mean + (cell.std or 0)), xytext=(0, 3),
                    textcoords='offset points', ha='center', va='bottom',
                    fontsize=8, zorder=4)
        if cell.reference is not None:
            lo, hi = _bounds(cell.reference, 0, top)
            ax.fill_between([x - 0.42, x + 0.42], lo, hi, color=BAND_COLOUR,
                            alpha=0.15, linewidth=0, zorder=1)
            ax.hlines(cell.reference.value, x - 0.42, x + 0.42,
                      colors=REFERENCE_COLOUR, linestyles='--', linewidth=1.8,
                      zorder=3)

    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(cols) - 0.4)
    ax.set_xticks(list(xs), [f'{_wrapped(c)}\nn={cell.n}'
                             for c, cell in zip(cols, cells)], fontsize=8)
    ax.set_ylabel(f'{row.metric} ({row.unit})\n{better_label(row.better)}')
    ax.set_title(f'{row.benchmark}: {row.metric}\n{_wrapped(row.test, 60)}',
                 fontsize=10)
    ax.grid(axis='y', alpha=0.3, zorder=0)
    ax.legend(handles=_legend(cells, cols), fontsize=7, loc='upper left',
              bbox_to_anchor=(1.01, 1), borderaxespad=0)
    save(fig, outdir, slug('bars', row.benchmark, row.test, row.metric),
         plotted, force)
    return plotted


def _legend(cells, cols):
    handles = [Patch(facecolor=VERDICT_COLOURS[v], edgecolor='black',
                     label=v)
               for v in VERDICT_COLOURS if any(c.verdict == v for c in cells)]
    if any(c.reference is not None for c in cells):
        handles += [Line2D([], [], color=REFERENCE_COLOUR, linestyle='--',
                           label='reference'),
                    Patch(facecolor=BAND_COLOUR, alpha=0.15,
                          label='pass band')]
    if any(c.endswith('(replay)') for c in cols):
        handles.append(Patch(facecolor='white', edgecolor='black',
                             hatch=REPLAY_HATCH,
                             label='replay (recorded output,\nnot a '
                                   'measurement)'))
    if any(c.std is not None for c in cells):
        handles.append(Line2D([], [], color='black', marker='_',
                              markersize=10, label='± std'))
    return handles


def _selector(select):
    if select is None:
        return lambda row: True
    if callable(select):
        return select
    pattern = re.compile(select, re.IGNORECASE)
    return lambda row: bool(pattern.search(
        f'{row.benchmark} {row.test} {row.metric}'))


def all_metric_bars(table, outdir, select=None, force=False):
    """``metric_bars`` for every row of ``table`` that ``select`` keeps: a
    callable taking the Row, or a regular expression searched in
    "<benchmark> <test> <metric>".  TransferBench per-pair metrics are left
    to the heat maps (one message counts them)."""
    keep = _selector(select)
    plotted, links = Plotted(), 0
    for row in table.rows:
        if not keep(row):
            continue
        if LINK_METRIC.search(row.metric):
            links += 1
            continue
        _bars(table, row, outdir, force, plotted)

    if links:
        plotted.skipped.append(f'{links} per-GPU-pair TransferBench metrics '
                               f'have no bar chart: the heat maps show them')
    return plotted
