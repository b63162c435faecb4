"""How many runs a figure needs for its calibrated bound (docs/calibrate.md,
"How many runs").

A calibrated bound is ``max(f(n) * cv, floor)``: f(n) is the prediction
factor for the requested false-alarm rate (hpcval.publish.stats), cv the
runs' spread (std / mean).  More runs shrink f(n) towards the normal
quantile z, so they tighten the bound until the floor sets it.  The runs
a figure needs are the fewest N with f(N) * cv <= floor; where even z * cv
is above the floor, the spread itself sets the bound and no number of
runs reaches the floor: then N is the fewest runs that bring f(N) within
10 % of z (more runs change the bound by less than that).
"""
import functools

from hpcval.publish.stats import prediction_factor

#: "close enough to the limit": f(N) <= (1 + WITHIN) * z
WITHIN = 0.10
_MOST = 100000


@functools.lru_cache(maxsize=None)
def _limit(false_alarm):
    # f(n) -> z as n grows; n = 10^6 is z to 6 digits
    return prediction_factor(10 ** 6, false_alarm)


def _fewest(false_alarm, ok, least):
    """The fewest n >= least with ok(f(n)), or None (bisection: f falls
    with n)."""
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


def runs_needed(cv, floor, false_alarm, least=2):
    """(runs, why) for a figure of spread ``cv``: the fewest runs whose
    bound reaches ``floor``, else the fewest within WITHIN of the best the
    spread allows."""
    if cv <= 0:
        return least, 'no spread: the floor sets the bound'
    z = _limit(false_alarm)
    if z * cv <= floor:
        n = _fewest(false_alarm, lambda f: f * cv <= floor, least)
        return n, f'the bound reaches the floor {floor:g}'
    n = _fewest(false_alarm, lambda f: f <= (1 + WITHIN) * z, least)
    return n, (f'the spread sets the bound (at best {z * cv:.3g}, above the '
               f'floor {floor:g}): {n} runs bring it within '
               f'{WITHIN:.0%} of that')


def runs_to_judge(cv, false_alarm, least=2):
    """The fewest runs whose higher-is-better bound f(n) * cv stays below
    1 (a lower bound above 0), or None where no number of runs does."""
    return _fewest(false_alarm, lambda f: f * cv < 1, least)


def table(figures, rule):
    """Rows (figure, n, spread, bound, set by, runs needed) of the
    calibrated ``figures`` (dicts of label, metric, direction, n, mean,
    std, tolerance, how)."""
    rows = []
    for fig in figures:
        cv = fig['std'] / fig['mean'] if fig['mean'] else 0.0
        floor = rule.floor_of(fig['metric'], fig['direction'])
        if rule.k is not None:
            need, why = rule.min_samples, f'fixed k = {rule.k:g}'
        else:
            need, why = runs_needed(cv, floor, rule.false_alarm,
                                    max(rule.min_samples, 2))
        if fig['tolerance'] is None and fig['direction'] == 'higher' and \
                rule.k is None:
            judge = runs_to_judge(cv, rule.false_alarm,
                                  max(rule.min_samples, 2))
            need, why = (need, f'{judge} for any bound at all; then {why}'
                         ) if judge else \
                (None, 'no number of runs: the spread alone passes 0')
        sign = '-' if fig['direction'] == 'higher' else '+'
        bound = 'none' if fig['tolerance'] is None else \
            f'{sign}{fig["tolerance"]:.4g}'
        rows.append((fig['label'], str(fig['n']), f'{cv:.2%}', bound,
                     fig['how'], f'{need} ({why})' if need else why))
    return rows
