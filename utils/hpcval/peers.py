"""The peer rule: each of a group of values (a screen's nodes, a node's
GPUs or links) fails when worse than the others' median by more than a
floor and k(n) robust standard deviations of their log-values
(docs/screening.md: the rule, its false-alarm rate, detection limit)."""
import bisect
import math
import statistics
from dataclasses import dataclass

from hpcval import units


@dataclass(frozen=True)
class PeerRule:
    """How one kind of figure is judged against its peers (floor, k, peers)."""
    floor: float
    min_peers: int
    better: str             # 'higher' or 'lower'


#: per figure kind (hpcval.units families).  Floors: the smallest
#: slowdown a screen can name where the nodes' healthy spread is below it
#: (a wrong BIOS setting, a missing DIMM, a throttled GPU cost 10-20 %);
#: times (latencies) are the noisy kind and need five peers
PEER_RULES = {
    'flops': PeerRule(0.05, 1, 'higher'),
    'bandwidth': PeerRule(0.05, 1, 'higher'),
    'rate': PeerRule(0.05, 1, 'higher'),
    'time': PeerRule(0.20, 5, 'lower'),
    # a GPU's clock and temperature under the same load as its siblings'
    'clock': PeerRule(0.05, 1, 'higher'),
    'temperature': PeerRule(0.05, 1, 'lower'),
}
#: false alarms the spread term is built for: one healthy figure in
#: 10,000 fails (log-normal healthy figures, the median and MAD of n
#: peers); docs/screening.md
PEER_ALARM = 1e-4
# k(n): the 1 - PEER_ALARM quantile of (median - x) / (1.4826 MAD) of n
# normal peers (Monte Carlo, 2e6 draws for n <= 32, 1e6 above:
# tests/bench_screen.py --rule draws them again).  Below 4 peers the
# spread is not measured and the floor alone judges.
_K_OF_PEERS = ((4, 112.9), (5, 110.1), (6, 32.2), (7, 30.8), (8, 17.9),
               (10, 13.0), (12, 10.4), (16, 7.85), (24, 6.01), (32, 5.29),
               (64, 4.44), (128, 4.00), (1 << 30, 3.72))
# leave-one-out MAD is exact up to this many peers; above, one node moves
# the MAD of all by less than a rank: the MAD of all is used (fast at
# 1,000 nodes)
_EXACT_MAD_PEERS = 128


def k_of_peers(n):
    """Robust standard deviations allowed among ``n`` peers, or None."""
    if n < _K_OF_PEERS[0][0]:
        return None
    for (n0, k0), (n1, k1) in zip(_K_OF_PEERS, _K_OF_PEERS[1:]):
        if n0 <= n < n1:
            # linear in log n between the simulated points
            t = (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
            return k0 + t * (k1 - k0)
    return _K_OF_PEERS[-1][1]


def rule_for(kind):
    """The PeerRule of ``kind``: a PEER_RULES key or a unit ('MB/s')."""
    if kind in PEER_RULES:
        return PEER_RULES[kind]
    try:
        return PEER_RULES[units.family(kind)]
    except (ValueError, KeyError):
        raise ValueError(f'no peer rule for {kind!r} (kinds: '
                         f'{", ".join(PEER_RULES)}, or a known unit)') \
            from None


@dataclass(frozen=True)
class PeerJudgement:
    """One value against the others of its group."""
    name: str
    value: float
    median: float           # of the others
    peers: int
    factor: float           # the bound, as a factor on the median
    limit: float            # the value at the bound
    passed: bool

    @property
    def worse(self):
        """How many times worse than the median (1: equal)."""
        if self.limit <= self.median:       # higher is better
            return self.median / self.value if self.value > 0 else math.inf
        return self.value / self.median if self.median > 0 else math.inf


def judge(values, kind, floor=None, spread=True):
    """{name: PeerJudgement} of each of ``values`` by the rule of ``kind``
    (``floor``: in place of its floor; ``spread=False``: the floor alone)."""
    rule = rule_for(kind)
    floor = rule.floor if floor is None else floor
    if not 0 <= floor < 1:
        raise ValueError(f'floor {floor!r}: expected 0 <= floor < 1')
    sign = 1.0 if rule.better == 'higher' else -1.0
    good = {n: v for n, v in values.items()
            if isinstance(v, (int, float)) and v > 0 and math.isfinite(v)}
    peers = len(good) - 1
    if peers < max(rule.min_peers, 1):
        return {}
    # log-values, oriented so that lower is worse
    logs = {n: sign * math.log(v) for n, v in good.items()}
    ordered = sorted(logs.values())
    k = k_of_peers(peers) if spread else None
    floor_log = -math.log(1 - floor)
    whole_mad = None
    if k is not None and peers > _EXACT_MAD_PEERS:
        mid = statistics.median(ordered)
        whole_mad = statistics.median(abs(x - mid) for x in ordered)
    out = {}
    for name, x in logs.items():
        i = bisect.bisect_left(ordered, x)
        mid = _median_without(ordered, i)
        bound = floor_log
        if k is not None:
            mad = whole_mad if whole_mad is not None else statistics.median(
                abs(y - mid) for y in ordered[:i] + ordered[i + 1:])
            bound = max(bound, k * 1.4826 * mad)
        median = math.exp(sign * mid)
        limit = math.exp(sign * (mid - bound))
        out[name] = PeerJudgement(name, good[name], median, peers,
                                  math.exp(bound), limit,
                                  mid - x <= bound)
    return out


def outliers(values, kind, floor=None, spread=True):
    """The judgements of ``values`` that fail (``judge``)."""
    return {n: j for n, j in judge(values, kind, floor, spread).items()
            if not j.passed}


def _median_without(ordered, i):
    """The median of sorted ``ordered`` without its element ``i``."""
    n = len(ordered) - 1

    def at(j):          # j-th of the list without element i
        return ordered[j + 1] if j >= i else ordered[j]
    return at(n // 2) if n % 2 else (at(n // 2 - 1) + at(n // 2)) / 2


#: the unit of a member's figure over its peers' median
RATIO_UNIT = 'x'
#: the loosest floor a verdict takes from a run: a member at half its
#: peers' median fails whatever the run's option said
MAX_FLOOR = 0.5
_SUFFIX = '_vs_siblings@'
#: a member's figure against its own earlier one (a burn-in's last minute
#: against its first), judged by the same rule
_SELF_SUFFIX = '_vs_first@'


def figure_name(figure, member):
    """'triad', 'gpu2' -> 'triad_vs_siblings@gpu2'."""
    return f'{figure}{_SUFFIX}{member}'


def is_sibling_figure(metric):
    return _SUFFIX in metric or _SELF_SUFFIX in metric


def trusted_band(reference, lower, upper):
    """The band a verdict judges a sibling figure by: its own if the rule's."""
    if reference == 1.0 and upper is None and \
            isinstance(lower, (int, float)) and -MAX_FLOOR <= lower < 0:
        return reference, lower, upper
    if reference == 1.0 and lower is None and \
            isinstance(upper, (int, float)) and \
            0 < upper <= 1 / (1 - MAX_FLOOR) - 1:
        return reference, lower, upper
    if lower is None and upper is not None:
        return 1.0, None, 1 / (1 - MAX_FLOOR) - 1
    return 1.0, -MAX_FLOOR, None


def band(j):
    """(reference, lower, upper) of ``j``'s ratio to its peers' median."""
    if j.limit <= j.median:     # higher is better
        return 1.0, 1 / j.factor - 1, None
    return 1.0, None, j.factor - 1


def ratio(j):
    """``j``'s value over its peers' median."""
    return j.value / j.median
