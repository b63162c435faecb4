"""BabelStream's five kernels, across systems and per GPU."""
import glob
import math
import os
import re
import statistics

from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from hpcval import plotdata, units
from hpcval.publish import comparison, numbers
from hpcval.parsers import ParseError
from hpcval.parsers.babelstream import CLASSIC_KERNELS, parse_babelstream
from hpcval.parsers.common import read_text
from hpcval.publish.plots.common import (
    REFERENCE_COLOUR, REPLAY_HATCH, Plotted, describe, new_figure, passed,
    save, slug, unique_cases)

BENCHMARK = 'babelstream'
KERNELS = tuple(k.lower() for k in CLASSIC_KERNELS)
GPU_CHECKS = ('BabelStreamCudaCheck', 'BabelStreamHipCheck')
UNIT = 'GB/s'
_GPU_FILE = re.compile(r'^stream\.(?P<host>.+)\.gpu(?P<gpu>\d+)\.out$')


def babelstream_kernels(table_or_samples, outdir, force=False, table=None):
    """Grouped kernel bars across columns, and per GPU where recorded."""
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


def _across(table, outdir, plotted, force):
    series = {}         # {kind: {(column, test): {kernel: (row, cell)}}}
    for col in table.columns:
        for row in table.rows:
            cell = table.cells.get((row, col))
            if cell is None or row.benchmark != BENCHMARK or \
                    row.metric not in KERNELS:
                continue
            # CPU and GPU tests never share a figure
            kind = 'GPU' if row.test.startswith('GPU') or \
                row.test.split(' ', 1)[0] in GPU_CHECKS else 'CPU'
            series.setdefault(kind, {}).setdefault(
                (col, row.test), {})[row.metric] = (row, cell)
    for kind, of_series in sorted(series.items()):
        stem = slug('bars', BENCHMARK, 'kernels', kind)
        tests = {test for _, test in of_series}
        bars = []
        for (col, test), kernels in of_series.items():
            values, refs = {}, {}
            for kernel in KERNELS:
                row, cell = kernels.get(kernel, (None, None))
                if cell is None or not cell.values:     # every run failed
                    continue
                values[kernel] = (_gb(cell.mean, row.unit),
                                  _gb(cell.std or 0, row.unit), cell.n)
                ref = comparison.drawn_reference(cell)
                if ref is not None:
                    refs[kernel] = _gb(ref.reference, row.unit)
                    plotted.references.append((stem, col, kernel,
                                               ref.reference))
            label = col if len(tests) == 1 else f'{col}, {test.split()[0]}'
            bars.append((label, col.endswith('(replay)'), values, refs))
        title = f'BabelStream kernels by system ({kind})'
        note = 'the node\'s slowest GPU' if kind == 'GPU' else 'one node'
        _grouped(bars, title, note, outdir, stem, plotted, force)


def _grouped(bars, title, note, outdir, stem, plotted, force):
    """Bars grouped by kernel, each reference drawn over its bar."""
    fig = new_figure(max(7.0, 0.35 * len(bars) * len(KERNELS) + 3.5), 5)
    ax = fig.add_subplot()
    width = 0.8 / len(bars)
    # GPUs in TB/s, CPUs in GB/s: the unit that suits the magnitude
    unit = numbers.scaled_unit(UNIT, [m for _, _, values, _ in bars
                                      for m, _, _ in values.values()])
    f = units.convert(1.0, UNIT, unit)
    for i, (label, replay, values, refs) in enumerate(bars):
        ks = [k for k, kernel in enumerate(KERNELS) if kernel in values]
        xs = [k - 0.4 + width * (i + 0.5) for k in ks]
        got = [(m * f, s * f, n) for m, s, n in
               (values[KERNELS[k]] for k in ks)]
        refs = {k: r * f for k, r in refs.items()}
        ns = sorted({n for _, _, n in got})
        n = f'n={ns[0]}' if len(ns) == 1 else f'n={ns[0]}-{ns[-1]}'
        ax.bar(xs, [m for m, _, _ in got], width * 0.92,
               # no whisker where one run gives no spread
               yerr=[s if n > 1 else math.nan for _, s, n in got],
               capsize=2, color=f'C{i % 10}',
               edgecolor='black', linewidth=0.5, zorder=2,
               hatch=REPLAY_HATCH if replay else None, label=f'{label} ({n})')
        for x, k in zip(xs, ks):
            if KERNELS[k] in refs:
                ax.hlines(refs[KERNELS[k]], x - width / 2, x + width / 2,
                          colors=REFERENCE_COLOUR, linewidth=2.2, zorder=4)
    ax.set_xticks(range(len(KERNELS)), KERNELS)
    ax.set_ylabel(f'bandwidth ({unit}), ↑ higher is better\n{note}')
    ax.set_title(title, fontsize=10)
    ax.grid(axis='y', alpha=0.3, zorder=0)
    ax.set_ylim(bottom=0)
    handles, _ = ax.get_legend_handles_labels()
    if any(refs for *_, refs in bars):
        handles.append(Line2D([], [], color=REFERENCE_COLOUR, linewidth=2.2,
                              label='reference'))
    if any(replay for _, replay, *_ in bars):
        handles.append(Patch(facecolor='white', edgecolor='black',
                             hatch=REPLAY_HATCH,
                             label='replay (recorded output)'))
    ax.legend(handles=handles, fontsize=8, loc='upper left',
              bbox_to_anchor=(1.01, 1), borderaxespad=0)
    save(fig, outdir, stem, plotted, force)


def _gb(value, unit):
    return units.convert(value, unit, UNIT)


def _gpu_results(case):
    """({(host, N): {kernel: GB/s}}, None) or (None, message)."""
    stored = plotdata.check(case.plot_data, plotdata.PER_GPU)
    if stored is not None:
        return stored, None
    if not case.outputdir:
        return None, (f'{describe(case)}: the report names no kept output '
                      f'(ReFrame keeps the output of passed cases only); no '
                      f'per-GPU bars')
    if not os.path.isdir(case.outputdir):
        return None, (f'{describe(case)}: its output folder '
                      f'{case.outputdir} is not on this machine (a report '
                      f'from another site, or the folder was removed); no '
                      f'per-GPU bars')
    found = {}
    for path in sorted(glob.glob(os.path.join(case.outputdir,
                                              'stream.*.gpu*.out'))):
        m = _GPU_FILE.match(os.path.basename(path))
        if not m:
            continue
        err = path[:-4] + '.err'
        try:
            found[f'{m["host"]}.gpu{m["gpu"]}'] = parse_babelstream(
                read_text(path), read_text(err) if os.path.isfile(err) else '')
        except ParseError as exc:
            return None, (f'{describe(case)}: {os.path.basename(path)} does '
                          f'not parse ({exc}); no per-GPU bars')
    found = plotdata.check(plotdata.babelstream(found, CLASSIC_KERNELS),
                           plotdata.PER_GPU)
    if found is None:
        return None, (f'{describe(case)}: no stream.<host>.gpu<N>.out in '
                      f'{case.outputdir}; no per-GPU bars')
    return found, None


def _per_gpu(samples, outdir, plotted, force):
    cases = unique_cases(samples)
    label = comparison.columns(cases)   # of every case: the column names
    refs = {}                   # the node's references: each GPU must hold
    for s in sorted(samples, key=lambda s: s.case.time):
        # only a system's own references (a report shown under another
        # label was judged by that system's file)
        if s.metric in KERNELS and s.reference and s.case.check in \
                GPU_CHECKS and s.case.label in ('', s.case.system):
            refs.setdefault((label[s.case], s.case.check), {})[s.metric] = \
                _gb(s.reference, s.unit)
    runs = {}
    for case in passed((c for c in cases if c.check in GPU_CHECKS),
                       plotted.skipped):
        found, why = _gpu_results(case)
        if found is None:
            plotted.skipped.append(why)
            continue
        runs.setdefault((label[case], case.check), []).append(found)
    for (col, check), found in sorted(runs.items()):
        gpus = sorted(set().union(*found))
        hosts = {host for host, _ in gpus}
        bars = []
        for gpu in gpus:
            values = {}
            for kernel in KERNELS:
                v = [r[gpu][kernel] for r in found
                     if kernel in r.get(gpu, {})]
                if not v:
                    continue
                values[kernel] = (statistics.fmean(v), statistics.stdev(v)
                                  if len(v) > 1 else 0, len(v))
            name = f'GPU {gpu[1]}' if len(hosts) == 1 else \
                f'{gpu[0]} GPU {gpu[1]}'
            bars.append((name, col.endswith('(replay)'), values,
                         refs.get((col, check), {})))
        where = f' on {next(iter(hosts))}' if len(hosts) == 1 else ''
        stem = slug('bars', BENCHMARK, 'per-gpu', col, check)
        plotted.references += [(stem, col, kernel, value) for kernel, value
                               in sorted(refs.get((col, check), {}).items())]
        _grouped(bars, f'BabelStream per GPU: {col}\n{check}{where}',
                 'each GPU (its own output)', outdir, stem, plotted, force)
