"""nccl-tests / rccl-tests bus bandwidth against message size."""
import math
import statistics

from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from hpcval.parsers.nccl_tests import IN_PLACE, OUT_OF_PLACE, parse_nccl_tests
from hpcval import plotdata
from hpcval.publish.comparison import columns
from hpcval.units import AXIS_SIZES, size_label
from hpcval.publish.plots.common import (Plotted, better_label, describe,
                                         new_figure, parsed_output, passed,
                                         save, slug, unique_cases)

BENCHMARK = 'nccl_tests'
_LINESTYLES = ('-', '--', ':', '-.')


def _byte_axis(ax, sizes):
    """Log2 axis, labels at every 2^(5k) or so (1K, 32K, 1M ... 1G)."""
    low, high = (int(math.floor(math.log2(min(sizes)))),
                 int(math.ceil(math.log2(max(sizes)))))
    step = next(s for s in (1, 2, 5, 10) if (high - low) / s <= 8)
    ticks = [2.0 ** e for e in range(low, high + 1) if e % step == 0]
    ax.set_xscale('log', base=2)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FuncFormatter(
        lambda v, _: size_label(int(round(v)), AXIS_SIZES, '')))
    ax.xaxis.set_minor_locator(FixedLocator(
        [2.0 ** e for e in range(low, high + 1)]))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(2.0 ** low / 1.3, 2.0 ** high * 1.3)


def _run_curve(case, place):
    """(curve {size: busbw}, None) of one run, or (None, message)."""
    stored = plotdata.check(case.plot_data, plotdata.CURVES)
    if stored is None:
        # the check judged this output already; a replayed excerpt (a
        # quoted table) has no footer, and needs none to be drawn
        result, why = parsed_output(case, lambda text: parse_nccl_tests(
            text, require_footer=False))
        if result is None:
            return None, why
        stored = plotdata.check(plotdata.collective(result), plotdata.CURVES)
    curve = (stored or {}).get(place)
    if not curve:
        return None, (f'{describe(case)}: no {place.replace("_", "-")} rows '
                      f'with a non-zero size; not plotted')
    return curve, None


def _collect(cases, place):
    """{collective: {(column, check): [run curves]}} and messages."""
    label = columns(cases)
    curves, skipped = {}, []
    for case in passed((c for c in cases if c.benchmark == BENCHMARK),
                       skipped):
        curve, why = _run_curve(case, place)
        if curve is None:
            skipped.append(why)
            continue
        collective = dict(case.params).get('collective') or case.check
        if curve and not any(curve.values()):
            # one GPU: no bytes cross between GPUs, busbw is 0 by definition
            skipped.append(f'{label[case]} {case.check} {collective}: bus '
                           f'bandwidth 0 at every size (one GPU); not drawn')
            continue
        curves.setdefault(collective, {}).setdefault(
            (label[case], case.check), []).append(curve)
    return curves, skipped


def collective_curves(samples_or_cases, outdir, place=IN_PLACE,
                      force=False):
    """busbw by message size: a figure per collective, a line per column."""
    if place not in (IN_PLACE, OUT_OF_PLACE):
        raise ValueError(f'place must be {IN_PLACE} or {OUT_OF_PLACE}, not '
                         f'{place!r}')
    curves, skipped = _collect(unique_cases(samples_or_cases), place)
    plotted = Plotted(skipped=skipped)
    for collective, lines in sorted(curves.items()):
        _figure(collective, lines, place, outdir, plotted, force)
    return plotted


def _figure(collective, lines, place, outdir, plotted, force):
    fig = new_figure(8, 5)
    ax = fig.add_subplot()
    checks = sorted({check for _, check in lines})
    cols = sorted({col for col, _ in lines},
                  key=lambda c: (c.endswith('(replay)'), c))
    colours = {c: f'C{i % 10}' for i, c in enumerate(cols)}
    sizes = set()
    for (col, check), runs in sorted(lines.items()):
        xs = sorted(set().union(*runs))
        sizes.update(xs)
        per_size = [[r[s] for r in runs if s in r] for s in xs]
        mean = [statistics.fmean(v) for v in per_size]
        label = col if len(checks) == 1 else f'{col}, {check}'
        ax.plot(xs, mean, color=colours[col], marker='o', markersize=3,
                linewidth=1.5,
                linestyle=_LINESTYLES[checks.index(check) % 4],
                label=f'{label} (n={len(runs)})')
        if len(runs) > 1:
            ax.fill_between(xs, [min(v) for v in per_size],
                            [max(v) for v in per_size],
                            color=colours[col], alpha=0.15, linewidth=0)
    _byte_axis(ax, sizes)
    ax.set_ylim(bottom=0)
    ax.set_xlabel('message size (bytes)')
    ax.set_ylabel(f'busbw (GB/s), {place.replace("_", "-")}\n'
                  f'{better_label("higher")}')
    ax.set_title(f'{collective}: bus bandwidth by message size')
    ax.grid(which='major', alpha=0.3)
    ax.legend(fontsize=8, loc='upper left')
    save(fig, outdir, slug('curve', BENCHMARK, collective, place), plotted,
         force)
