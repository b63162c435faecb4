"""Figures for ``hpcval report --plots DIR`` (docs/reporting-plots.md)."""
import functools

from matplotlib import rc_context

from hpcval import progress

from hpcval.publish.plots.babelstream import babelstream_kernels
from hpcval.publish.plots.bars import (all_metric_bars, benchmark_multiples,
                                      metric_bars)
from hpcval.publish.plots.common import Plotted, slug
from hpcval.publish.plots.curves import collective_curves
from hpcval.publish.plots.heatmaps import transferbench_heatmaps

__all__ = ['Plotted', 'all_metric_bars', 'babelstream_kernels',
           'benchmark_multiples', 'collective_curves', 'draw_all',
           'metric_bars', 'slug', 'transferbench_heatmaps']


def draw_all(table, samples, outdir, select=None, force=False):
    """Every plot of ``samples`` and their ``table``; ``select``: the bars."""
    steps = [
        lambda: collective_curves(samples, outdir, force=force),
        lambda: transferbench_heatmaps(samples, outdir, force=force),
        lambda: babelstream_kernels(samples, outdir, force=force,
                                    table=table),
        *(functools.partial(benchmark_multiples, table, bench, outdir, force,
                            select)
          for bench in dict.fromkeys(r.benchmark for r in table.rows)
          # BabelStream's kernel figure compares its figures
          if bench != 'babelstream')]
    plotted = Plotted()
    # names are data: '$\\fakecmd$' is drawn as written, never as mathtext
    with rc_context({'text.parse_math': False}):
        for step in progress.bar(steps, desc='hpcval report: plots',
                                 unit='figure group'):
            plotted.add(step())
    return plotted
