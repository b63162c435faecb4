"""How many runs a figure needs for its calibrated bound."""
import functools
import math

from hpcval.publish.stats import prediction_factor

_MOST = 100000


@functools.lru_cache(maxsize=None)
def _limit(false_alarm):
    # f(n) -> z as n grows; n = 10^6 is z to 6 digits
    return prediction_factor(10 ** 6, false_alarm)


def _fewest(false_alarm, ok, least):
    """The fewest n >= least with ok(f(n)), or None (f falls with n)."""
    if ok(prediction_factor(least, false_alarm)):
        return least
    if not ok(prediction_factor(_MOST, false_alarm)):
        return None
    lo, hi = least, _MOST
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(prediction_factor(mid, false_alarm)):
            hi = mid
        else:
            lo = mid
    return hi


def runs_to_judge(cv, false_alarm, least=2):
    """The fewest runs whose lower bound f(n) * cv stays below 1, or None."""
    return _fewest(false_alarm, lambda f: f * cv < 1, least)


def _widen(width, direction):
    return -math.expm1(-width) if direction == 'higher' else \
        math.expm1(min(width, 700.0))       # past a float's range: huge


def runs_to_halve(log_std, tolerance, floor, direction, false_alarm,
                  least=2):
    """(runs, why) for a bound half as wide as ``tolerance``."""
    half = tolerance / 2
    if half < floor:
        return None, f'never: half ({half:.3g}) is below the floor {floor:g}'
    best = _widen(_limit(false_alarm) * log_std, direction)
    if best > half:
        return None, f'never: the spread alone gives at best {best:.3g}'
    n = _fewest(false_alarm, lambda f: _widen(f * log_std, direction)
                <= half, least)
    return n, f'{n} runs give {half:.3g}'


def table(figures, rule):
    """Rows (figure, n, spread, bound, set by, runs to halve) of figures."""
    rows = []
    for fig in figures:
        cv = fig['std'] / fig['mean'] if fig['mean'] else 0.0
        s = fig.get('log_std')
        s = cv if s is None else s
        if rule.k is not None:
            need = f'fixed k = {rule.k:g}'
        elif fig.get('family'):
            need = 'a family band: its caps and lowest ratio set it'
        elif fig['tolerance'] is None:
            judge = runs_to_judge(s, rule.false_alarm, rule.min_samples)
            need = f'{judge} for any bound at all' if judge else \
                'no number of runs: the spread alone judges nothing'
        else:
            floor = rule.floor_of(fig['metric'], fig['direction'])
            _, need = runs_to_halve(s, fig['tolerance'], floor,
                                    fig['direction'], rule.false_alarm,
                                    rule.min_samples)
        sign = '-' if fig['direction'] == 'higher' else '+'
        bound = 'none' if fig['tolerance'] is None else \
            f'{sign}{fig["tolerance"]:.4g}'
        rows.append((fig['label'], str(fig['n']), f'{cv:.2%}', bound,
                     fig['how'], need))
    return rows
