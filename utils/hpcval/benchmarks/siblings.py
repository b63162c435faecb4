"""One node's GPUs, or one node's links, compared with each other.

An absolute floor (a fraction of the reference) passes a GPU or link that
is much worse than its siblings on the same node, and siblings are the
best reference a node has.  Each member's figure is compared with the
median of its siblings by the peer rule (hpcval.peers) with the
benchmark's ``sibling_factor`` as the floor and no spread term (a node
has too few GPUs for one: the factor is chosen from the measured healthy
spread, docs/benchmarks/<benchmark>.md gives it with its false-alarm
rate and detection limit).

The comparison is a performance figure, not a sanity check: each member
gets ``<figure>_vs_siblings@<member>``, its value over its siblings'
median (unit ``x``), with the rule's band as its reference, so ReFrame's
performance stage judges it (hpcval.judgement) and a slow GPU's run keeps
every figure in the perflog and the results database.
"""
from dataclasses import dataclass

import reframe as rfm
from reframe.core.builtins import variable

from hpcval import peers
from hpcval.inputs import InputError


def check_factor(value):
    """Raise InputError unless ``value`` is a finite factor above 1 and
    within the verdict's cap (hpcval.peers.MAX_FLOOR)."""
    if not 1 < value <= 1 / (1 - peers.MAX_FLOOR):
        raise InputError(f'-S sibling_factor={value}: must be a number '
                         f'above 1 and at most {1 / (1 - peers.MAX_FLOOR):g}'
                         f' (1.6: under 62.5% of the siblings\' median '
                         f'fails)')


@dataclass(frozen=True)
class Sibling:
    """One member's figure against its siblings'."""
    metric: str         # 'triad_vs_siblings@gpu2'
    figure: str         # 'triad'
    component: str      # 'GPU 2', 'link GPU 00 -> GPU 01 (uni)'
    unit: str           # of the compared value: 'MB/s'
    judgement: object   # hpcval.peers.PeerJudgement


def compare(groups, factor):
    """[Sibling] of ``groups``: {figure: {member: (component, value,
    unit)}}, e.g. {'triad': {'gpu2': ('GPU 2', 3.98e6, 'MB/s'), ...}}."""
    out = []
    for figure, members in groups.items():
        units = {unit for _, _, unit in members.values()}
        if len(units) != 1:
            continue        # never within one figure; nothing to compare
        [unit] = units
        judged = peers.judge({m: v for m, (_, v, _) in members.items()},
                             unit, 1 - 1 / factor, spread=False)
        for member, j in judged.items():
            out.append(Sibling(peers.figure_name(figure, member), figure,
                               members[member][0], unit, j))
    return out


def failures(found):
    """'GPU 2: triad 2.1e+06 MB/s is 61% of its 3 siblings' median
    3.46e+06 (bound >= 3.14e+06 MB/s, x1.1)' per failing Sibling."""
    return [f'{s.component}: {s.figure} {s.judgement.value:.6g} {s.unit} '
            f'is {peers.ratio(s.judgement):.0%} of its {s.judgement.peers} '
            f'siblings\' median {s.judgement.median:.6g} (bound '
            f'>= {s.judgement.limit:.6g} {s.unit}, x{s.judgement.factor:.3g})'
            for s in found if not s.judgement.passed]


class SiblingFigures(rfm.RegressionTestPlugin):
    """Mixin of a ParsedBenchmark whose GPUs or links are compared with
    each other: it implements ``sibling_groups(result)`` and adds
    ``sibling_metrics(result)`` to its metrics and
    ``sibling_components(result)`` to its components."""

    #: a member this many times worse than its siblings' median fails;
    #: the benchmark sets its default
    sibling_factor = variable(float, value=1.6)

    def sibling_groups(self, result):
        """{figure: {member: (component, value, unit)}}."""
        return {}

    def judge_siblings(self, result):
        """[Sibling] of ``result``; a benchmark that re-measures an
        outlier before it is named overrides this."""
        return compare(self.sibling_groups(result), self.sibling_factor)

    def siblings(self, result):
        if getattr(self, '_siblings_of', (None,))[0] is not result:
            self._siblings_of = (result, self.judge_siblings(result))
        return self._siblings_of[1]

    def sibling_metrics(self, result):
        return {s.metric: (peers.ratio(s.judgement), peers.RATIO_UNIT)
                for s in self.siblings(result)}

    def sibling_components(self, result):
        return {s.metric: s.component for s in self.siblings(result)}

    def _references(self, metric_units):
        found = super()._references(metric_units)
        if not hasattr(self, '_siblings_of'):
            return found
        for s in self._siblings_of[1]:
            if s.metric in metric_units and s.metric not in found:
                found[s.metric] = (*peers.band(s.judgement),
                                   peers.RATIO_UNIT)
        return found
