"""TransferBench a2a and p2p bandwidth matrices as heat maps.

The table keeps the averages and one metric per GPU pair; the matrix
(with its N/A cells and, for p2p, the CPU rows) is read again from the
job output ReFrame kept, with the parser the check used.
"""
import datetime
import math

import numpy as np

from hpcval.parsers import ParseError
from hpcval.parsers.transferbench import parse_a2a, parse_p2p
from hpcval.publish.comparison import columns
from hpcval.publish.plots.common import (Plotted, describe, kept_output, new_figure,
                                         not_passed, save, slug, unique_cases)

BENCHMARK = 'transferbench'
PRESETS = {'a2a': parse_a2a, 'p2p': parse_p2p}


def _matrix(devices, links):
    grid = np.full((len(devices), len(devices)), np.nan)
    for (src, dst), bw in links.items():
        if bw is not None:
            grid[devices.index(src), devices.index(dst)] = bw
    return grid


def _panels(preset, result):
    """[(title, devices, grid)] of one parsed run."""
    if preset == 'a2a':
        return [('all-to-all, every pair at once', list(result.gpus),
                 _matrix(list(result.gpus), result.links))]
    out = []
    for m, what in ((result.uni, 'unidirectional'),
                    (result.bidir, 'bidirectional, each direction')):
        if m is not None:
            out.append((f'p2p {what}', list(m.devices),
                        _matrix(list(m.devices), m.links)))
    return out


def _latest(cases):
    """{(column, check, preset): (latest passed case, runs)} and messages."""
    label = columns(cases)
    chosen, skipped = {}, []
    for case in cases:
        preset = dict(case.params).get('preset')
        if case.benchmark != BENCHMARK or preset not in PRESETS:
            continue
        why = not_passed(case)
        if why is not None:
            skipped.extend([why] if why else [])
            continue
        key = (label[case], case.check, preset)
        best, runs = chosen.get(key, (None, 0))
        if best is None or case.time >= best.time:
            best = case
        chosen[key] = (best, runs + 1)
    return chosen, skipped


def transferbench_heatmaps(cases, outdir, force=False):
    """A heat map (GB/s in each cell) per column, check and preset, of the
    latest passed a2a or p2p run; grey cells: not measured (the diagonal,
    N/A pairs).  Cases or Samples; runs whose output is not on this machine
    are left out with a message.  Returns Plotted."""
    chosen, skipped = _latest(unique_cases(cases))
    plotted = Plotted(skipped=skipped)
    for (col, check, preset), (case, runs) in sorted(chosen.items()):
        text, why = kept_output(case)
        if text is None:
            plotted.skipped.append(why)
            continue
        try:
            panels = _panels(preset, PRESETS[preset](text))
        except ParseError as err:
            plotted.skipped.append(f'{describe(case)}: its kept output does '
                                   f'not parse ({err}); not plotted')
            continue
        _figure(case, col, preset, panels, runs, outdir, plotted, force)
    return plotted


def _figure(case, col, preset, panels, runs, outdir, plotted, force):
    n = max(len(d) for _, d, _ in panels)
    side = max(3.2, 0.55 * n + 1.4)
    fig = new_figure(side * len(panels) + 1.0, side + 0.7)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    values = np.concatenate([g[np.isfinite(g)] for _, _, g in panels])
    # the colours span the measured range (every cell is annotated with its
    # value), so that one weak link stands out among equal ones
    span = (float(values.min()), float(values.max())) if values.size \
        else (0.0, 1.0)
    if span[0] == span[1]:
        span = (0.0, span[1] or 1.0)
    image = None
    for ax, (title, devices, grid) in zip(axes, panels):
        image = _panel(ax, title, devices, grid, span)
    fig.colorbar(image, ax=list(axes), label='GB/s', shrink=0.8)
    when = datetime.datetime.fromtimestamp(
        case.time, datetime.timezone.utc).strftime('%Y-%m-%d') \
        if case.time else 'undated'
    latest = f', latest of {runs} runs' if runs > 1 else ''
    fig.suptitle(f'TransferBench {preset} (GB/s): {col}\n{case.check}, '
                 f'{when}{latest}', fontsize=10)
    save(fig, outdir, slug('heatmap', BENCHMARK, col, case.check, preset),
         plotted, force)


def _panel(ax, title, devices, grid, span):
    image = ax.imshow(np.ma.masked_invalid(grid), cmap=_cmap(),
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


def _cmap():
    from matplotlib import colormaps
    return colormaps['viridis'].with_extremes(bad='#e0e0e0')
