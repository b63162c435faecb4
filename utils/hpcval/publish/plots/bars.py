"""Per-metric bars across the comparison table's columns (systems)."""
import re
import textwrap

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from hpcval.publish import comparison, numbers
from hpcval.publish.formats import ARROW
from hpcval.publish.plots.common import (BAND_COLOUR, REFERENCE_COLOUR,
                                         REPLAY_HATCH, VERDICT_COLOURS,
                                         Plotted, better_label, new_figure,
                                         save, slug, text_width)

PANELS_PER_FIGURE = 16
TICK_SIZE = 6.5     # the small multiples' column labels
# between two neighbouring tick labels, and the y axis's labels beside a
# panel (inches)
TICK_GAP, Y_MARGIN = 0.15, 0.8


def _wrapped(label, width=18):
    return '\n'.join(textwrap.wrap(label, width, break_on_hyphens=False)) \
        or label


def _top(cells, scaled=lambda x: x):
    """The y axis's top: above each bar, whisker, reference and band."""
    peaks = [0]
    for cell in cells:
        peaks.append(scaled(cell.mean) + scaled(cell.std or 0))
        ref = comparison.drawn_reference(cell)
        if ref is not None:
            ref = comparison.Reference(scaled(ref.reference), ref.lower,
                                       ref.upper)
            peaks += [x for x in (ref.reference, ref.limits()[1])
                      if x is not None]
    return max(peaks) * 1.18 or 1.0


def metric_bars(table, row, outdir, force=False, plotted=None):
    """One bar per column of ``table`` that has ``row``; returns Plotted."""
    plotted = Plotted() if plotted is None else plotted
    cols, cells = _columns(table, row)
    if not _drawable(cells):
        plotted.skipped.append(f'{row.benchmark} {row.test} {row.metric}: '
                               f'no column has a value (other than 0 by '
                               f'definition); not plotted')
        return plotted
    ticks = [_tick(c, cell, 18) for c, cell in zip(cols, cells)]
    legend = _legend(_drawable(cells), cols)
    fig = new_figure(1, 1)
    slot = max(1.0, text_width(fig, ticks, 8) + TICK_GAP)
    # left of the axes the y label and ticks, right of it the legend
    beside = 1.2 + text_width(fig, [h.get_label() for h in legend], 7) + 0.6
    fig.set_size_inches(max(4.5, slot * (len(cols) + 0.2) + beside), 4.8)
    ax = fig.add_subplot()
    top = _top(cells)
    xs = range(len(cols))
    stem = slug('bars', row.benchmark, row.test, row.metric)
    for x, col, cell in zip(xs, cols, cells):
        _draw(ax, x, col, cell, lambda v: v, _BIG, row, stem, plotted, top)
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(cols) - 0.4)
    ax.set_xticks(list(xs), ticks, fontsize=8)
    where = comparison.scope(row)
    ax.set_ylabel(f'{row.metric} ({row.unit}'
                  f'{", " + where if where else ""})\n'
                  f'{better_label(row.better)}')
    ax.set_title(f'{row.benchmark}: {row.metric}\n{_wrapped(row.test, 60)}',
                 fontsize=10)
    ax.grid(axis='y', alpha=0.3, zorder=0)
    ax.legend(handles=legend, fontsize=7,
              loc='upper left', bbox_to_anchor=(1.01, 1), borderaxespad=0)
    save(fig, outdir, stem, plotted, force)
    return plotted


# (bar edge, cap, whisker, label offset and size, reference half-width, line)
_BIG = (0.6, 5, 1, 3, 8, 0.42, 1.8)
_SMALL = (0.5, 3, 0.8, 2, 6.5, 0.4, 1.4)


def _draw(ax, x, col, cell, scaled, style, row, stem, plotted, band=None):
    """A column's bar, spread, value and own reference (``band``: the pass
    band's top); a vacuous cell gets none, its tick says why."""
    if comparison.vacuous(cell):
        return
    edge, cap, whisker, offset, size, half, line = style
    replay, mean = col.endswith('(replay)'), scaled(cell.mean)
    ax.bar(x, mean, width=0.6,
           color=VERDICT_COLOURS.get(cell.verdict, '#8c8c8c'),
           hatch=REPLAY_HATCH if replay else None, edgecolor='black',
           linewidth=edge, alpha=0.6 if replay else 0.9, zorder=2)
    if cell.std is not None:
        ax.errorbar(x, mean, yerr=scaled(cell.std), color='black',
                    capsize=cap, linewidth=whisker, zorder=3)
    ax.annotate(numbers.sig(mean, 3), (x, mean + scaled(cell.std or 0)),
                xytext=(0, offset), textcoords='offset points', ha='center',
                va='bottom', fontsize=size, zorder=4)
    ref = comparison.drawn_reference(cell)
    if ref is None:
        return
    if band is not None:
        lo, hi = ref.limits()
        ax.fill_between([x - half, x + half], lo or 0,
                        band if hi is None else hi, color=BAND_COLOUR,
                        alpha=0.15, linewidth=0, zorder=1)
    ax.hlines(scaled(ref.reference), x - half, x + half,
              colors=REFERENCE_COLOUR, linestyles='--', linewidth=line,
              zorder=3)
    plotted.references.append((stem, col, row.metric, ref.reference))


def _legend(cells, cols, band=True):
    handles = [Patch(facecolor=VERDICT_COLOURS[v], edgecolor='black',
                     label=v)
               for v in VERDICT_COLOURS if any(c.verdict == v for c in cells)]
    if any(comparison.drawn_reference(c) is not None for c in cells):
        handles.append(Line2D([], [], color=REFERENCE_COLOUR, linestyle='--',
                              label='reference (the column\'s own)'))
        if band:
            handles.append(Patch(facecolor=BAND_COLOUR, alpha=0.15,
                                 label='pass band'))
    if any(c.endswith('(replay)') for c in cols):
        handles.append(Patch(facecolor='white', edgecolor='black',
                             hatch=REPLAY_HATCH,
                             label='replay (recorded output,\nnot a '
                                   'measurement)'))
    if any(c.std is not None for c in cells):
        handles.append(Line2D([], [], color='black', marker='_',
                              markersize=10,
                              label='± sample std of n runs (n under '
                                    'each bar)'))
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
    """``metric_bars`` for every row ``select`` keeps (callable or regex)."""
    keep = _selector(select)
    plotted, links = Plotted(), 0
    for row in table.rows:
        if not keep(row):
            continue
        if comparison.LINK_METRIC.search(row.metric):
            # what the heat maps show; a bar chart per pair buries the rest
            links += 1
            continue
        metric_bars(table, row, outdir, force, plotted)
    if links:
        plotted.skipped.append(f'{links} per-GPU-pair TransferBench metrics '
                               f'have no bar chart: the heat maps show them')
    return plotted


def benchmark_multiples(table, benchmark, outdir, force=False, select=None):
    """Small multiples: a figure per benchmark, a panel per shared row."""
    plotted, keep = Plotted(), _selector(select)
    # a figure of one system compares nothing: its table says it all
    rows = [r for r in table.rows if r.benchmark == benchmark and keep(r)
            and not comparison.LINK_METRIC.search(r.metric)
            and _compares(table, r)]
    for part, start in enumerate(range(0, len(rows), PANELS_PER_FIGURE)):
        _multiples(table, benchmark, rows[start:start + PANELS_PER_FIGURE],
                   part, outdir, force, plotted)
    return plotted


def _columns(table, row):
    """(columns, cells) of ``row`` that hold a figure, in column order."""
    cols = [c for c in table.columns
            if (row, c) in table.cells and table.cells[(row, c)].values]
    return cols, [table.cells[(row, c)] for c in cols]


def _compares(table, row):
    """Two or more columns have ``row``, one of them a figure to draw."""
    cols, cells = _columns(table, row)
    return len(cols) > 1 and bool(_drawable(cells))


def _drawable(cells):
    """The cells that get a bar: not a diagnostic 0 by definition."""
    return [c for c in cells if not comparison.vacuous(c)]


def _multiples(table, benchmark, rows, part, outdir, force, plotted):
    ncols = min(4, len(rows))
    nrows = -(-len(rows) // ncols)
    panels = [_columns(table, r) for r in rows]
    fig = new_figure(1, 1)
    # panels share one width: the one of most columns, a slot per column
    # as wide as the widest line of any tick label, so that neighbouring
    # labels ('1 GPU x 1 node' beside '2 GPU x 1 node') never touch
    slot = max(0.55, text_width(fig, [_tick(c, cell)
                                      for cols, cells in panels
                                      for c, cell in zip(cols, cells)],
                                TICK_SIZE) + TICK_GAP)
    shown = max(len(cols) for cols, _ in panels)
    width = max(2.8, slot * (shown + 0.2) + Y_MARGIN)
    fig.set_size_inches(width * ncols, 2.9 * nrows + 0.9)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    cells_all = []
    stem = slug('multiples', benchmark, part or None)
    for ax, row, (cols, cells) in zip(axes.flat, rows, panels):
        _panel(ax, row, cols, cells, stem, plotted)
        cells_all += _drawable(cells)
    for ax in list(axes.flat)[len(rows):]:
        ax.set_axis_off()
    cols = [c for c in table.columns if any(c in p for p, _ in panels)]
    more = f' (part {part + 1})' if part else ''
    fig.suptitle(f'{benchmark}: every figure by system{more}', fontsize=11)
    fig.legend(handles=_legend(cells_all, cols, band=False), fontsize=7,
               loc='outside lower center', ncols=5)
    save(fig, outdir, stem, plotted, force)


def _panel(ax, row, cols, cells, stem, plotted):
    unit = numbers.scaled_unit(row.unit, [c.mean for c in cells])

    def scaled(x):
        return numbers.scale(x, row.unit, unit)
    top = _top(cells, scaled)
    for x, (col, cell) in enumerate(zip(cols, cells)):
        _draw(ax, x, col, cell, scaled, _SMALL, row, stem, plotted)
    ax.set_ylim(0, top)
    ax.set_xlim(-0.6, len(cols) - 0.4)
    ax.set_xticks(range(len(cols)), [_tick(c, cell)
                                     for c, cell in zip(cols, cells)],
                  fontsize=TICK_SIZE)
    ax.tick_params(axis='y', labelsize=7)
    where = comparison.scope(row)
    ax.set_ylabel(f'{unit}{", " + where if where else ""} '
                  f'{ARROW[row.better]}', fontsize=7)
    ax.set_title(_wrapped(f'{row.test}: {row.metric}', 34), fontsize=7.5)
    ax.grid(axis='y', alpha=0.3, zorder=0)


def _tick(col, cell, width=12):
    """A column's tick label: name, n, GPUs x nodes, why no bar."""
    lines = [_wrapped(col, width), f'n={cell.n}']
    if cell.gpus and cell.nodes:
        lines.append(f'{cell.gpus} GPU x {cell.nodes} node')
    if comparison.vacuous(cell):
        lines.append('none by\ndefinition')
    return '\n'.join(lines)
