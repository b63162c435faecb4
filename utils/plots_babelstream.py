"""BabelStream's five kernels, across systems and per GPU.

A GPU check runs BabelStream on every GPU of the node at once and reports,
per kernel (metrics ``copy``, ``mul``, ``add``, ``triad``, ``dot``, MB/s),
the minimum over the GPUs: the slowest GPU sets the node's figure.  The
cross-system figure shows those metrics from the table; the per-GPU
figure reads each GPU's own output (``stream.<host>.gpu<N>.out``, kept
by the check in its output folder) with the check's parser.
"""
import glob
import os
import re
import statistics

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from hpcval import comparison, units
from hpcval.parsers import ParseError
from hpcval.parsers.babelstream import CLASSIC_KERNELS, parse_babelstream
from hpcval.parsers.common import read_text
from hpcval.plots_common import (BAND_COLOUR, REPLAY_HATCH, Plotted, columns,
                                 describe, new_figure, not_passed, save,
                                 short_check, slug, unique_cases)

BENCHMARK = 'babelstream'
KERNELS = tuple(k.lower() for k in CLASSIC_KERNELS)
GPU_CHECKS = ('BabelStreamCudaCheck', 'BabelStreamHipCheck')
UNIT = 'GB/s'
_GPU_FILE = re.compile(r'^stream\.(?P<host>.+)\.gpu(?P<gpu>\d+)\.out$')


def babelstream_kernels(table_or_samples, outdir, force=False, table=None):
    """Grouped bars of the five kernels: one figure across the table's
    columns (the node's figure: a GPU node's slowest GPU), and, given
    Samples whose cases kept their per-GPU outputs, one figure per column
    and GPU check with a bar per GPU.  With Samples, ``table`` may pass
    their comparison table if it is built already.  Returns Plotted."""
    plotted = Plotted()
    if isinstance(table_or_samples, comparison.Table):
        table = table_or_samples
    else:
        samples = list(table_or_samples)
        table = table or comparison.build(
            [s for s in samples if s.case.benchmark == BENCHMARK])
        _per_gpu(samples, outdir, plotted, force)
    _across(table, outdir, plotted, force)
    return plotted


def _series_of(table):
    """[(column, test)] with BabelStream kernel rows, and the cells."""
    cells = {}
    for (row, col), cell in table.cells.items():
        if row.benchmark == BENCHMARK and row.metric in KERNELS:
            cells[(col, row.test, row.metric)] = (row, cell)
    order = {c: i for i, c in enumerate(table.columns)}
    series = sorted({(col, test) for col, test, _ in cells},
                    key=lambda s: (order.get(s[0], 0), s[1]))
    return series, cells


def _across(table, outdir, plotted, force):
    series, cells = _series_of(table)
    if not series:
        return
    fig = new_figure(max(7, 0.45 * len(series) * len(KERNELS) + 3), 5)
    ax = fig.add_subplot()
    width = 0.8 / len(series)
    tests = {test for _, test in series}
    for i, (col, test) in enumerate(series):
        label = col if len(tests) == 1 else \
            f'{col} {short_check(test.split()[0], ("BabelStream",))}'
        replay = col.endswith('(replay)')
        xs, means, errs, ns = [], [], [], []
        for k, kernel in enumerate(KERNELS):
            if (col, test, kernel) not in cells:
                continue
            row, cell = cells[(col, test, kernel)]
            x = k - 0.4 + width * (i + 0.5)
            xs.append(x)
            means.append(_gb(cell.mean, row.unit))
            errs.append(_gb(cell.std or 0, row.unit))
            ns.append(cell.n)
            if cell.reference is not None:
                ax.hlines(_gb(cell.reference.value, row.unit),
                          x - width / 2, x + width / 2, colors=BAND_COLOUR,
                          linestyles='--', linewidth=1.2, zorder=3)
        n = f'n={min(ns)}' if min(ns) == max(ns) else \
            f'n={min(ns)}-{max(ns)}'
        ax.bar(xs, means, width * 0.95, yerr=errs, capsize=2,
               color=f'C{i % 10}', edgecolor='black', linewidth=0.5,
               hatch=REPLAY_HATCH if replay else None, zorder=2,
               label=f'{label} ({n})')
    ax.set_xticks(range(len(KERNELS)), KERNELS)
    ax.set_ylabel(f'bandwidth ({UNIT}), ↑ higher is better\n'
                  f'GPU nodes: the slowest GPU')
    ax.set_title('BabelStream kernels by system')
    ax.grid(axis='y', alpha=0.3, zorder=0)
    ax.set_ylim(bottom=0)
    handles, _ = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], color=BAND_COLOUR, linestyle='--',
                          label='reference'))
    if any(c.endswith('(replay)') for c, _ in series):
        handles.append(Patch(facecolor='white', edgecolor='black',
                             hatch=REPLAY_HATCH, label='replay'))
    ax.legend(handles=handles, fontsize=8, loc='upper left',
              bbox_to_anchor=(1.01, 1), borderaxespad=0)
    save(fig, outdir, slug('bars', BENCHMARK, 'kernels-by-system'), plotted,
         force)


def _gb(value, unit):
    return units.convert(value, unit, UNIT)


def _gpu_results(case):
    """({'host gpuN': {kernel: GB/s}}, None) or (None, message)."""
    if not case.outputdir or not os.path.isdir(case.outputdir):
        return None, (f'{describe(case)}: its output folder '
                      f'{case.outputdir or "(none in the report)"} is not on '
                      f'this machine; no per-GPU bars')
    found = {}
    for path in sorted(glob.glob(os.path.join(case.outputdir,
                                              'stream.*.gpu*.out'))):
        m = _GPU_FILE.match(os.path.basename(path))
        if not m:
            continue
        err = path[:-4] + '.err'
        try:
            result = parse_babelstream(
                read_text(path), read_text(err) if os.path.isfile(err) else '')
        except ParseError as exc:
            return None, (f'{describe(case)}: {os.path.basename(path)} does '
                          f'not parse ({exc}); no per-GPU bars')
        found[(m['host'], int(m['gpu']))] = {
            k.lower(): result.bandwidth(k) / 1e3 for k in CLASSIC_KERNELS}
    if not found:
        return None, (f'{describe(case)}: no stream.<host>.gpu<N>.out in '
                      f'{case.outputdir}; no per-GPU bars')
    return found, None


def _per_gpu(samples, outdir, plotted, force):
    cases = unique_cases(samples)
    label = columns(cases)      # of every case: the table's column names
    runs = {}
    for case in cases:
        if case.check not in GPU_CHECKS:
            continue
        why = not_passed(case)
        if why is not None:
            plotted.skipped.extend([why] if why else [])
            continue
        found, why = _gpu_results(case)
        if found is None:
            plotted.skipped.append(why)
            continue
        runs.setdefault((label[case], case.check), []).append(found)
    for (col, check), found in sorted(runs.items()):
        _gpu_figure(col, check, found, outdir, plotted, force)


def _gpu_figure(col, check, runs, outdir, plotted, force):
    gpus = sorted(set().union(*runs))
    hosts = {host for host, _ in gpus}
    fig = new_figure(max(7, 0.3 * len(gpus) * len(KERNELS) + 3), 5)
    ax = fig.add_subplot()
    width = 0.8 / len(gpus)
    for i, gpu in enumerate(gpus):
        values = [[r[gpu][k] for r in runs if gpu in r] for k in KERNELS]
        xs = np.arange(len(KERNELS)) - 0.4 + width * (i + 0.5)
        name = f'GPU {gpu[1]}' if len(hosts) == 1 else f'{gpu[0]} GPU {gpu[1]}'
        ax.bar(xs, [statistics.fmean(v) for v in values], width * 0.95,
               yerr=[statistics.stdev(v) if len(v) > 1 else 0
                     for v in values],
               capsize=2, color=f'C{i % 10}', edgecolor='black',
               linewidth=0.5, zorder=2,
               hatch=REPLAY_HATCH if col.endswith('(replay)') else None,
               label=f'{name} (n={len(values[0])})')
    ax.set_xticks(range(len(KERNELS)), KERNELS)
    ax.set_ylabel(f'bandwidth ({UNIT}), ↑ higher is better')
    where = f' on {next(iter(hosts))}' if len(hosts) == 1 else ''
    ax.set_title(f'BabelStream per GPU: {col} ({check}{where})', fontsize=10)
    ax.grid(axis='y', alpha=0.3, zorder=0)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc='upper left', bbox_to_anchor=(1.01, 1),
              borderaxespad=0)
    save(fig, outdir, slug('bars', BENCHMARK, 'per-gpu', col, check),
         plotted, force)
