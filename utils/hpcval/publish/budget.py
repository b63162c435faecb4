"""A false-alarm budget per node, not per figure (docs/calibrate.md, "The
statistics: a false-alarm budget per node").

A node's verdict judges every figure of its run: m figures each failing a
healthy run with probability a fail one of them with 1 - (1 - a)^m.  So
calibrate takes the node's budget b (a healthy run of the node fails with
probability at most b) and builds each bound for a = 1 - (1 - b)^(1/m),
m counted from the baseline runs themselves (``judged_per_run``).
"""
import math

from hpcval import peers
from hpcval.judgement import Band

#: 1 healthy run in 200 of a node may fail: a weekly check of 200 nodes
#: raises about one false alarm a week, each one a node drained for nothing
BUDGET = 1 / 200


def per_figure(budget, judged):
    """The false-alarm rate per figure that keeps ``judged`` figures
    within ``budget`` together (independent figures: exact; figures that
    move together fail together less often)."""
    # expm1/log1p: 1 - (1 - b)^(1/m) without cancellation for small b
    return -math.expm1(math.log1p(-budget) / max(judged, 1))


def judged_per_run(samples, calibrated):
    """m: the figures one run of ``samples`` judges.

    A figure counts where calibrate bounds it or tries to (its key and
    metric in ``calibrated``, {(check, partition, params, metric)}: every
    GPU's ``copy@gpuN`` is judged by ``copy``'s bound, and a figure
    refused for noise still counts, so m is never too small), where it is
    a GPU's or link's figure against its siblings, or where its run
    recorded a band for it (a reference that judges it already).  Per test
    the most of any of its runs, summed over the tests: the figures of a
    run that runs each test once."""
    by_case = {}
    for s in samples:
        by_case.setdefault(id(s.case), (s.case, []))[1].append(s)
    most = {}
    for case, figures in by_case.values():
        key = (case.check, case.partition, case.params)
        n = sum(1 for s in figures
                if (*key, s.metric.split('@')[0]) in calibrated or
                peers.is_sibling_figure(s.metric) or
                Band.of_sample(s) is not None)
        most[key] = max(most.get(key, 0), n)
    return sum(most.values())
