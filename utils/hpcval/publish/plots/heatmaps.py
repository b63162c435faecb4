"""TransferBench a2a and p2p bandwidth matrices as heat maps."""
import math
import re

import numpy as np
from matplotlib import colormaps

from hpcval.parsers.transferbench import parse_a2a, parse_p2p
from hpcval import plotdata
from hpcval.publish import comparison, sources
from hpcval.publish.plots.common import (Plotted, new_figure,
                                         parsed_output, passed, save, slug,
                                         unique_cases)

BENCHMARK = 'transferbench'
PRESETS = {'a2a': parse_a2a, 'p2p': parse_p2p}
_CMAP = colormaps['viridis'].with_extremes(bad='#e0e0e0')
_PAIR = re.compile(r'(?:(?P<dir>uni|bidir)_)?gpu(?P<src>\d+)_to_gpu(?P<dst>\d+)')


def _from_metrics(samples):
    """Panels of the GPU pairs among a run's metrics."""
    by_dir = {}
    for s in samples:
        m = _PAIR.fullmatch(s.metric)
        if m:
            by_dir.setdefault(m['dir'] or '', {})[
                (f'GPU {int(m["src"]):02d}', f'GPU {int(m["dst"]):02d}')] = \
                s.value
    titles = {'': 'all-to-all, every pair at once',
              'uni': 'p2p unidirectional', 'bidir': 'p2p bidirectional'}
    panels = []
    for d, links in sorted(by_dir.items(), key=lambda kv: kv[0] != 'uni'):
        devices = sorted({x for pair in links for x in pair})
        panels.append((titles[d] + ' (GPU pairs of the report)', devices,
                       plotdata.grid(devices, links)))
    return panels or None


def _latest(cases):
    """{(column, check, preset): (latest passed case, runs)} and messages."""
    label = comparison.columns(cases)
    chosen, skipped = {}, []
    for case in passed((c for c in cases if c.benchmark == BENCHMARK and
                        dict(c.params).get('preset') in PRESETS), skipped):
        key = (label[case], case.check, dict(case.params)['preset'])
        best, runs = chosen.get(key, (None, 0))
        if best is None or case.time >= best.time:
            best = case
        chosen[key] = (best, runs + 1)
    return chosen, skipped


def transferbench_heatmaps(cases, outdir, force=False):
    """A heat map per column, check and preset of the latest passed run."""
    items = list(cases)
    samples = {}
    for s in items:
        if hasattr(s, 'case'):
            samples.setdefault(s.case, []).append(s)
    chosen, skipped = _latest(unique_cases(items))
    plotted = Plotted(skipped=skipped)
    for (col, check, preset), (case, runs) in sorted(chosen.items()):
        panels = plotdata.check(case.plot_data, plotdata.MATRICES)
        if panels is None:
            result, why = parsed_output(case, PRESETS[preset])
            panels = None if result is None else plotdata.check(
                plotdata.transferbench(preset, result), plotdata.MATRICES)
            if panels is None:
                panels = _from_metrics(samples.get(case, ()))
            if panels is None:
                plotted.skipped.append(why)
                continue
        # None (not measured) is NaN as a float
        grids = [(t, d, np.array(g, dtype=float).reshape(len(d), len(d)))
                 for t, d, g in panels]
        _figure(case, col, preset, grids, runs, outdir, plotted, force)
    return plotted


def _figure(case, col, preset, panels, runs, outdir, plotted, force):
    n = max(len(d) for _, d, _ in panels)
    side = max(3.2, 0.55 * n + 1.4)
    fig = new_figure(side * len(panels) + 1.0, side + 0.7)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    values = np.concatenate([g[np.isfinite(g)] for _, _, g in panels])
    # the colours start at zero: a link at half the others' bandwidth stands
    # out, a 1% difference does not look like a fault (every cell is
    # annotated with its value)
    top = float(values.max()) if values.size else 0.0
    span = (0.0, top if top > 0 else 1.0)
    image = None
    for ax, (title, devices, grid) in zip(axes, panels):
        image = _panel(ax, title, devices, grid, span)
    fig.colorbar(image, ax=list(axes), label='GB/s', shrink=0.8)
    when = sources.date_of(case)
    latest = f', latest of {runs} runs' if runs > 1 else ''
    fig.suptitle(f'TransferBench {preset} (GB/s): {col}\n{case.check}, '
                 f'{when}{latest}', fontsize=10)
    save(fig, outdir, slug('heatmap', BENCHMARK, col, case.check, preset),
         plotted, force)


def _panel(ax, title, devices, grid, span):
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=_CMAP,
                      vmin=span[0], vmax=span[1])
    ticks = range(len(devices))
    ax.set_xticks(ticks, devices, rotation=45, ha='right', fontsize=8)
    ax.set_yticks(ticks, devices, fontsize=8)
    ax.set_xlabel('destination')
    ax.set_ylabel('source')
    ax.set_title(title, fontsize=9)
    size = 8 if len(devices) <= 8 else 7
    middle = (span[0] + span[1]) / 2
    for i in ticks:
        for j in ticks:
            v = grid[i, j]
            if math.isnan(v):
                text, colour = ('—' if i == j else 'N/A'), '#555555'
            else:
                text = f'{v:.0f}' if v >= 100 else f'{v:.1f}'
                colour = 'white' if v < middle else 'black'
            ax.text(j, i, text, ha='center', va='center', fontsize=size,
                    color=colour)
    return image
