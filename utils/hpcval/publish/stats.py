"""Student's t distribution (no SciPy) and calibrate's bound rule."""
import math
import re
import sys
from dataclasses import dataclass


def _betacf(a, b, x, iters=300, eps=1e-15):
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, iters + 1):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def _betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1 - front * _betacf(b, a, 1 - x) / b


def t_cdf(x, df):
    """P(T <= x) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _betainc(df / 2, 0.5, df / (df + x * x))
    return 1 - tail if x > 0 else tail


def t_ppf(p, df):
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom."""
    if not 0 < p < 1:
        raise ValueError(f'p = {p} is not in (0, 1)')
    if p < 0.5:
        return -t_ppf(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def prediction_factor(n, false_alarm):
    """k = t(1 - false_alarm; n - 1) * sqrt(1 + 1/n): a prediction bound."""
    return t_ppf(1 - false_alarm, n - 1) * math.sqrt(1 + 1 / n)


def false_alarm_rate(n, k):
    """The inverse: the chance one healthy run falls beyond ``k`` s."""
    return t_cdf(-k / math.sqrt(1 + 1 / n), n - 1)


# beyond this, exp() overflows a float
_LARGEST_LOG = math.log(sys.float_info.max)

# Floors per kind of metric: never a bound tighter than this fraction.
# Tiny-message latencies are launch and polling overheads that move by tens
# of percent between healthy runs; host links have a heavy low tail: on one
# H100 (tests/fixtures/captured/h100_calib) healthy runs fell to 0.62 of
# five baselines' mean, which 0.4 passes while still naming a Gen5 x8 link
# (~0.55).  Device bandwidths and rates are steadier.
TINY_LATENCY = re.compile(r'.*(_smallest|_\d{1,3}B|_1KiB)')
HOST_LINK = re.compile(r'gpu_to_cpu|cpu_to_gpu|h2d|d2h|host')
FLOORS = (('tiny-message latency', 0.5), ('time', 0.2), ('host link', 0.4),
          ('bandwidth or rate', 0.05))


@dataclass(frozen=True)
class Rule:
    """How calibrate turns runs into a bound (log prediction, floors)."""
    false_alarm: float = 1e-4
    min_samples: int = 5
    k: object = None
    floor: object = None
    budget: object = None
    judged: object = None

    def kind(self, metric, direction):
        if direction == 'higher':
            return 'host link' if HOST_LINK.search(metric) else \
                'bandwidth or rate'
        return 'tiny-message latency' if TINY_LATENCY.fullmatch(metric) \
            else 'time'

    def floor_of(self, metric, direction):
        if self.floor is not None:
            return self.floor
        return dict(FLOORS)[self.kind(metric, direction)]

    def factor(self, n):
        return self.k if self.k is not None else \
            prediction_factor(n, self.false_alarm)

    def tolerance(self, metric, direction, n, mean, std, log_mean,
                  log_std):
        """(fraction, what set it) for ``n`` runs of ``mean`` +- ``std``."""
        floor = self.floor_of(metric, direction)
        if self.k is not None:
            spread, how = self.k * std / mean, f'{self.k:.3g} std / mean'
        else:
            factor = prediction_factor(n, self.false_alarm)
            sign = -1 if direction == 'higher' else 1
            # the bound over the mean, on the log scale: a time's can pass
            # any float (a five-run spread of orders of magnitude)
            ratio = log_mean + sign * factor * log_std - math.log(mean)
            spread = math.inf if ratio > _LARGEST_LOG else \
                sign * math.expm1(ratio)
            how = f'{factor:.3g} std of ln'
        if spread >= floor:
            return spread, how
        return floor, f'floor {floor:g} ({self.kind(metric, direction)})'

    def text(self):
        if self.k is not None:
            how = f'k = {self.k:g} standard deviations relative to the mean'
        else:
            node = '' if self.budget is None else (
                f'built so that a healthy run of this node fails any of '
                f'the {self.judged} figures it judges with probability at '
                f'most {self.budget:g} (1 in {1 / self.budget:.0f} healthy '
                f'runs), so per figure 1 - (1 - {self.budget:g})^(1/'
                f'{self.judged}) = {self.false_alarm:.3g}: ')
            how = (f'{node}a one-sided prediction bound on the logarithms '
                   f'of the runs\' values, exp(mean -+ t(1 - '
                   f'{self.false_alarm:.3g}; n - 1) * sqrt(1 + 1/n) * std): '
                   f'a healthy run falls outside it with probability '
                   f'{self.false_alarm:.3g} per figure (log-normal '
                   f'figures), the factor growing as runs get fewer (n = 5: '
                   f'{prediction_factor(5, self.false_alarm):.3g} std)')
        floors = f'the floor {self.floor:g}' if self.floor is not None else \
            'the floor of its kind (' + ', '.join(
                f'{kind} {f:g}' for kind, f in FLOORS) + ')'
        return (f'Measured on this system by `hpcval calibrate`: the value '
                f'is the mean over the selected passed runs (at least '
                f'{self.min_samples}), spread their sample standard '
                f'deviation.  Tolerance: {how}, never tighter than {floors}; '
                f'a metric where higher is better (bandwidth, rate, FLOP/s) '
                f'gets a lower bound only, one where lower is better (time) '
                f'an upper bound only.  Faster than the baseline is not a '
                f'failure.')
