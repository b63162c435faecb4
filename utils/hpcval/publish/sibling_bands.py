"""Sibling bands from a node's own healthy runs (docs/calibrate.md,
"Sibling bands").

Each GPU or link of a node is judged against the median of its siblings
in the same run (hpcval.peers): ``triad_vs_siblings@gpu2`` is GPU 2's
triad over the others' median, unit x.  One entry per figure family
(``triad_vs_siblings``) judges every member: value 1, and a lower bound
set by the healthy ratios of all members over all baseline runs.
"""
import math
import statistics

from hpcval.publish.stats import prediction_factor

#: never looser than the run's own rule (a member at 1/1.6 of its
#: siblings' median: hpcval.benchmarks.siblings), never tighter than 10 %
#: below them (a healthy GPU or link may sit a few percent off its peers
#: for good, by its place on the board)
LOOSEST = 1 / 1.6
TIGHTEST = 0.90
#: below the lowest healthy ratio seen: first-pass ratios of p2p links
#: have a heavy low tail (TransferBench re-measures a link only once it
#: falls under the bound; a healthy 0.671 is among the 4 x H100 baselines)
MARGIN = 0.95


def family(metric):
    """'uni_vs_siblings@gpu00_to_gpu01' -> 'uni_vs_siblings'."""
    return metric.split('@')[0]


def band(ratios, runs, false_alarm):
    """(bound, how) for a family's healthy ``ratios`` of ``runs`` runs:
    the lower of a log-normal prediction bound (t(1 - false_alarm; runs -
    1) sqrt(1 + 1/runs) std of the ln ratios below their mean; the runs,
    not the ratios, count as samples: members of one run move together)
    and the lowest ratio times MARGIN, kept within [LOOSEST, TIGHTEST]."""
    logs = [math.log(r) for r in ratios]
    f = prediction_factor(runs, false_alarm)
    normal = math.exp(statistics.fmean(logs) - f * statistics.stdev(logs))
    lowest = min(ratios) * MARGIN
    bound, how = min((normal, f'{f:.3g} std of ln ratio'),
                     (lowest, f'lowest ratio {min(ratios):.3g} x {MARGIN:g}'))
    if bound < LOOSEST:
        return LOOSEST, f'{how} = {bound:.3g}, raised to the loosest ' \
                        f'allowed, {LOOSEST:g} (1/1.6)'
    if bound > TIGHTEST:
        return TIGHTEST, f'{how} = {bound:.3g}, lowered to the tightest ' \
                         f'allowed, {TIGHTEST:g}'
    return bound, how


def healthy_ratios(runs, notes, label):
    """The ratios of ``runs`` (samples of one family) that passed their
    run's band; those that failed it are left out, with a note."""
    kept = [s for s in runs if s.result != 'fail' and s.value > 0 and
            math.isfinite(s.value)]
    if len(kept) < len(runs):
        notes.append(f'{label}: left out {len(runs) - len(kept)} ratio(s) '
                     f'that failed their run\'s band (a member named '
                     f'slower than its siblings) or are not positive')
    return kept
