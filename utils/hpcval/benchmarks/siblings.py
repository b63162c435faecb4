"""One node's GPUs, or links, each against its siblings' median by the peer
rule (hpcval.peers): ``<figure>_vs_siblings@<member>`` (docs/verdict.md)."""
from dataclasses import dataclass

import reframe as rfm
from reframe.core.builtins import run_after, variable

from hpcval import inputs, peers
from hpcval.judgement import Band
from hpcval.inputs import InputError, at_load


def check_factor(value):
    """InputError unless ``value`` is a finite factor in (1, MAX_FLOOR]."""
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


def factor_of_band(band, where):
    """The sibling factor of a band (1, lower, None, 'x'); else InputError."""
    factor = Band(*band).peer_factor(peers.MAX_FLOOR)
    if factor is None:
        raise InputError(f'{where}: a sibling band is value 1, unit '
                         f'{peers.RATIO_UNIT}, lower in '
                         f'[-{peers.MAX_FLOOR}, 0) and no upper; got '
                         f'{band!r}')
    return factor


def compare(groups, factor):
    """[Sibling] of {figure: {member: (component, value, unit)}}."""
    factor_of = factor if callable(factor) else lambda figure: factor
    out = []
    for figure, members in groups.items():
        units = {unit for _, _, unit in members.values()}
        if len(units) != 1:
            continue        # never within one figure; nothing to compare
        [unit] = units
        judged = peers.judge({m: v for m, (_, v, _) in members.items()},
                             unit, 1 - 1 / factor_of(figure),
                             spread=False)
        for member, j in judged.items():
            out.append(Sibling(peers.figure_name(figure, member), figure,
                               members[member][0], unit, j))
    return out


def failures(found):
    """'GPU 2: triad ... is 61% of its 3 siblings' median ...' per failure."""
    return [f'{s.component}: {s.figure} {s.judgement.value:.6g} {s.unit} '
            f'is {peers.ratio(s.judgement):.0%} of its {s.judgement.peers} '
            f'siblings\' median {s.judgement.median:.6g} (bound '
            f'>= {s.judgement.limit:.6g} {s.unit}, x{s.judgement.factor:.3g})'
            for s in found if not s.judgement.passed]


class SiblingFigures(rfm.RegressionTestPlugin):
    """Mixin comparing the members of ``sibling_groups(result)``."""

    #: a member this many times worse than its siblings' median fails,
    #: where the system's references give its figure no sibling band
    sibling_factor = variable(float, value=1.6)
    #: {figure: factor} where a figure's default is not ``sibling_factor``
    sibling_factors = {}
    #: how a -S value of it is checked (hpcval.inputs)
    input_policy = {'sibling_factor': inputs.number(1, 2, low_open=True)}

    @run_after('init')
    def check_sibling_factor(self):
        with at_load(self):
            check_factor(self.sibling_factor)

    def sibling_groups(self, result):
        """{figure: {member: (component, value, unit)}}."""
        return {}

    def sibling_factor_of(self, figure):
        """``figure``'s factor: the system's band, else sibling_factor."""
        name = peers.figure_name(figure, '')[:-1]
        band = self._references({f'{name}@*': peers.RATIO_UNIT})
        if not band:
            return self.sibling_factors.get(figure, self.sibling_factor)
        where = (f'references/{self.current_system.name}.yaml: '
                 f'{type(self).__name__} {name}')
        factor = factor_of_band(band[f'{name}@*'], where)
        default = type(self)._rfm_var_space['sibling_factor'].default_value
        if self.sibling_factor != default and \
                abs(self.sibling_factor - factor) > 1e-9:
            raise InputError(f'-S sibling_factor={self.sibling_factor:g}: '
                             f'{where} gives the sibling bound '
                             f'{1 / factor:.3g} x; change it there (a site '
                             f'layer, docs/site.md), not by an option')
        return factor

    def judge_siblings(self, result):
        """[Sibling] of ``result``; a re-measuring benchmark overrides this."""
        return compare(self.sibling_groups(result), self.sibling_factor_of)

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
                found[s.metric] = (*peers.band(s.judgement), peers.RATIO_UNIT)
        return found
