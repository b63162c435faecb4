"""``hpcval calibrate``: a system's reference file from its own good runs
(docs/calibrate.md: the statistics, and how the file changes)."""
import collections
import contextlib
import dataclasses
import datetime
import difflib
import functools
import math
import os
import re
import statistics
import tempfile
import textwrap

import yaml

from hpcval import bounded, judgement, paths, peers, references, units
from hpcval.health import inventory
from hpcval.health.inventory import INVENTORY_MARKER
from hpcval.publish.comparison import better
from hpcval.publish.stats import Rule, prediction_factor

# the outlier test: docs/calibrate.md, "Runs that sit apart"
OUTLIER_RATE = 1e-3
OUTLIER_MIN_SPREAD = 0.005

# 1 - rate must stay below 1 in double precision, with digits to spare
# for the t quantile's iteration (stats.t_ppf)
MIN_FALSE_ALARM = 1e-12
# a figure whose square a double still holds, with room for a sum of them
_LARGEST = 1e150
#: the node's false-alarm budget by default: 1 healthy run in 200 may fail
#: (docs/calibrate.md, "a false-alarm budget per node")
BUDGET = 1 / 200
RULE = 'calibrated'
SIBLING_RULE = 'calibrated_siblings'
# the sibling band's limits and margin: docs/calibrate.md, "Sibling bands"
SIBLING_LOOSEST, SIBLING_TIGHTEST, SIBLING_MARGIN = 1 / 1.6, 0.90, 0.95
SIBLING_RULE_TEXT = (
    'Measured on this node by `hpcval calibrate`: a GPU\'s or link\'s '
    'figure over the median of its siblings in the same run (unit x), one '
    'band per figure family for every member, value 1.  The bound is the '
    'lower of a one-sided prediction bound on the logarithms of the healthy '
    'ratios of all members over all baseline runs (t(1 - a; runs - 1) '
    '* sqrt(1 + 1/runs) std below their mean, a the per-figure rate of '
    'the rule calibrated) and the lowest healthy ratio times '
    f'{SIBLING_MARGIN:g}, never looser than {SIBLING_LOOSEST:g} (1/1.6) '
    f'nor tighter than {SIBLING_TIGHTEST:g}.')
MARKER = '# hpcval calibrate:'
_SECTION = f"""\
{MARKER} measured on this system.  These entries follow the ones
# above and override them for the same tests (the last applicable entry
# wins); a new calibration rewrites everything below this comment.
"""
_HEADER = {line.strip() for line in _SECTION.splitlines()}


class CalibrationError(ValueError):
    """The calibration cannot be made or written; the message says why."""


@dataclasses.dataclass(frozen=True)
class Calibration:
    """The reference file's new text, its diff, and ``notes``: what was
    left out, refused or kept and why."""
    text: str
    diff: str
    notes: list
    path: str
    #: each figure tried, as hpcval.publish.sample_size.table reads it
    figures: list = dataclasses.field(default_factory=list)
    rule: object = None     # the stats.Rule the bounds were built by


class _Folded(str):
    pass


class _Dumper(yaml.SafeDumper):
    """SafeDumper writing sources as folded blocks, for this module only."""


_Dumper.add_representer(
    _Folded, lambda dumper, text: dumper.represent_scalar(
        'tag:yaml.org,2002:str', text, style='>'))


def _significant(x, digits=6):
    return float(f'{x:.{digits}g}')


def _fraction_up(x):
    # round a tolerance away from zero, so that it never gets tighter
    return math.ceil(round(x * 1e4, 6)) / 1e4


def _select(samples, system, allow_replays, accept_performance_failures,
            notes):
    # a failed case has samples only if its sanity passed: only its old
    # bounds (or a later stage) failed
    ok = {'pass', 'fail'} if accept_performance_failures else {'pass'}
    failing = collections.defaultdict(list)
    for s in samples:
        if s.case.result == s.result == 'fail' and \
                s.case.phase == 'performance':
            failing[id(s.case)].append(s.metric)
    # cases that failed on sibling figures (hpcval.peers) and nothing else
    by_siblings = set() if accept_performance_failures else {
        case for case, metrics in failing.items()
        if all(map(peers.is_sibling_figure, metrics))}
    kept, left = [], collections.Counter()
    for s in samples:
        why = ('another system' if s.case.system != system else
               f'result {s.case.result}' if s.case.result not in ok and
               id(s.case) not in by_siblings else
               'a replay' if s.case.replay and not allow_replays else None)
        if why:
            left[why] += 1
        else:
            kept.append(s)
    notes += [f'left out {n} sample(s) of {why}'
              for why, n in sorted(left.items())]
    counted = {id(s.case) for s in kept} & by_siblings
    if counted:
        notes.append(f'counted {len(counted)} run(s) that failed only their '
                     f'sibling figures (a GPU or link slower than its '
                     f'siblings in that run): their other figures count')
    return kept


def utc(t, fmt='%Y-%m-%d %H:%M'):
    """Unix time ``t`` in UTC, as ``fmt``."""
    return datetime.datetime.fromtimestamp(
        t, datetime.timezone.utc).strftime(fmt)


def _dates(cases):
    first, last = (utc(f(c.time for c in cases)) for f in (min, max))
    return f'{first} to {last} UTC' if first != last else f'{first} UTC'


def _listed(items, most=6):
    items = sorted(set(items))
    more = f' and {len(items) - most} more' if len(items) > most else ''
    return ', '.join(items[:most]) + more


def _versions(cases):
    # what the runs were measured with (hpcval.provenance), where recorded
    found = collections.defaultdict(set)
    for c in cases:
        for key, val in c.extras.get('provenance', {}).items():
            # each node's own record (a mapping) is not a version
            if key not in ('kernel', 'cpu') and isinstance(val, str):
                found[key].add(val)
    return '; '.join(f'{key} {_listed(vals)}'
                     for key, vals in sorted(found.items()))


def _provenance(runs, mean, std, unit, how):
    cases = [s.case for s in runs]
    replays = ' (replayed outputs)' if any(c.replay for c in cases) else ''
    nodes = [n for c in cases for n in c.nodes]
    failed = sum(c.result != 'pass' for c in cases)
    kind = f'runs ({failed} failed their performance check)' if failed \
        else 'passed runs'
    # runs read from monitoring have no session: their series say where
    sessions = [c.session[:8] for c in cases if c.session]
    origin = (f'ReFrame {_listed(c.version for c in cases)} on '
              f'{_listed(c.hostname for c in cases)}; ' if sessions else
              f'monitoring series of {_listed(c.source for c in cases)}; ')
    versions = _versions(cases)
    return _Folded(
        f'calibrated by `hpcval calibrate` from {len(runs)} {kind}'
        f'{replays}, {_dates(cases)}: mean {mean:g} +- '
        f'{std:g} {unit}, bound {how}; '
        + (f'{versions}; ' if versions else '')
        + origin + f'job nodes {_listed(nodes) or "not recorded"}'
        + (f'; sessions {_listed(sessions)}' if sessions else ''))


def outliers(values, rate=OUTLIER_RATE):
    """Indices of the ``values`` that sit apart (none of fewer than 3)."""
    n = len(values)
    if n < 3 or not all(map(math.isfinite, values)):
        return []
    factor = _outlier_factor(n, rate)
    mean_all = math.fsum(values) / n
    squares = math.fsum((v - mean_all) ** 2 for v in values)
    apart = []
    for i, value in enumerate(values):
        # the mean and spread of the others, from those of all
        mean = (mean_all * n - value) / (n - 1)
        rest = max(squares - (value - mean_all) ** 2 * n / (n - 1), 0.0)
        spread = max(math.sqrt(rest / (n - 2)),
                     OUTLIER_MIN_SPREAD * abs(mean))
        if abs(value - mean) > factor * spread:
            apart.append(i)
    # more than a third apart is no outlier but a spread: calibrate it
    return apart if len(apart) * 3 <= n else []


@functools.lru_cache(maxsize=256)
def _outlier_factor(n, rate):
    return prediction_factor(n - 1, rate / n / 2)


def _run_name(s):
    nodes = '+'.join(s.case.nodes) or 'node not recorded'
    session = f'session {s.case.session[:8]} ' if s.case.session else ''
    return f'{session}on {nodes} at {utc(s.case.time)} UTC'


def _metric(label, metric, runs, rule, notes, keep_outliers, figures):
    """The metric spec of ``runs`` (samples of one metric), or None; each
    figure tried is added to ``figures``."""
    def refuse(what, measured=None, how=None):
        notes.append(f'refused {label}: {what}')
        if measured:
            figures.append({'label': label, 'metric': metric,
                            'direction': better(unit), 'n': len(values),
                            **measured, 'tolerance': None,
                            'how': f'refused: {how}'})

    unit = runs[-1].unit
    try:
        values = [units.convert(s.value, s.unit, unit) for s in runs]
    except ValueError as err:
        return refuse(err)
    huge = [v for v in values if not abs(v) < _LARGEST]
    if huge:
        return refuse(f'{_listed(map(str, huge), 3)} {unit} is beyond any '
                      f'measurement (its square, which a spread needs, '
                      f'overflows)')

    apart = [] if keep_outliers else outliers(values)
    if apart:
        mid = statistics.median(values)
        named = '; '.join(
            f'{values[i]:g} {unit} ({(values[i] - mid) / abs(mid):+.1%} '
            f'vs the median; {_run_name(runs[i])})' if mid else
            f'{values[i]:g} {unit} ({_run_name(runs[i])})' for i in apart)
        notes.append(f'warning: {label}: left out {len(apart)} of '
                     f'{len(values)} run(s) apart from the rest: {named} '
                     f'(a healthy run is left out with a chance of '
                     f'{OUTLIER_RATE:g} per metric; check that node, or '
                     f'keep_outliers calibrates them in)')
        runs = [s for i, s in enumerate(runs) if i not in apart]
        values = [v for i, v in enumerate(values) if i not in apart]

    if len(values) < rule.min_samples:
        few = len(values) > 1 and statistics.fmean(values) > 0
        return refuse(
            f'{len(values)} sample(s), fewer than {rule.min_samples} (few '
            f'runs say little of the spread; run it again or lower '
            f'min_samples)', few and {
                'mean': statistics.fmean(values),
                'std': statistics.stdev(values),
                'log_std': statistics.stdev([math.log(v) for v in values])
                if min(values) > 0 else None},
            f'fewer than {rule.min_samples} runs')

    try:    # min_samples >= 2 and every value below _LARGEST
        mean, std = statistics.fmean(values), statistics.stdev(values)
        spread = std / mean if mean > 0 else 0.0
    except (OverflowError, ValueError):
        mean = std = spread = math.inf
    if not all(map(math.isfinite, (mean, std, spread))):
        return refuse(f'values beyond any float '
                      f'({_listed(map(str, values), 3)} {unit})')
    if mean <= 0:
        return refuse(f'mean {mean:g} {unit}, no relative bound can be made')

    direction = better(unit)
    # with a value not above 0, the logs' first order: ln(mean) +- std/mean
    logs = [math.log(v) for v in values] if min(values) > 0 else None
    log_mean, log_std = (statistics.fmean(logs), statistics.stdev(logs)) \
        if logs else (math.log(mean), std / mean)
    measured = {'mean': mean, 'std': std, 'log_std': log_std}
    tol, how = rule.tolerance(metric, direction, len(values), mean, std,
                              log_mean, log_std)
    if tol >= judgement.IMPLAUSIBLE - 1:
        # a time bound past 1000 x its baseline passes whatever a
        # benchmark measures (hpcval.judgement.IMPLAUSIBLE)
        what = f'{how}: the bound passes more than ' \
               f'{judgement.IMPLAUSIBLE} x the baseline'
        return refuse(f'{what}, which judges nothing (take quieter or more '
                      f'runs)', measured, what)
    tol = _fraction_up(tol)
    # too noisy to judge: a linear bound at 0, or (on logs) a bound that
    # passes e^-1 = 37 % of the baseline, the same to first order
    width = tol if rule.k is not None else \
        prediction_factor(len(values), rule.false_alarm) * log_std
    higher = direction == 'higher'
    if higher and (tol >= 1 or width >= 1):
        what = f'{how} = {tol:g}' if tol >= 1 else f'{how} = {width:.4g} >= 1'
        return refuse(f'{what}, a lower bound '
                      f'{"at 0" if tol >= 1 else "this far below"} '
                      f'would judge nothing (take quieter or more runs)',
                      measured, what)
    if tol >= (0.5 if higher else 1):
        passes = f'down to {1 - tol:.0%} of' if higher else \
            f'up to {1 + tol:.1f} x'
        notes.append(f'warning: {label} judges little: it passes {passes} '
                     f'the baseline ({how}; take quieter or more runs)')
    spec = {'value': _significant(mean),
            'lower' if higher else 'upper': -tol if higher else tol,
            'spread': _significant(std), 'unit': unit, 'rule': RULE,
            'source': _provenance(runs, mean, std, unit, how)}
    figures.append({'label': label, 'metric': metric, 'direction': direction,
                    'n': len(values), **measured, 'tolerance': tol,
                    'how': how})
    return spec


def _plan(samples, old_refs, include_absent, notes):
    """What to calibrate: [(key, test label, {metric: runs}, {sibling
    family: runs})]; what is left out, and why, in ``notes``."""
    groups = {}     # {(check, partition, params): {metric: [Sample]}}
    for s in sorted(samples, key=lambda s: s.case.time):
        key = (s.case.check, s.case.partition, s.case.params)
        groups.setdefault(key, {}).setdefault(s.metric, []).append(s)
    out = []
    for (check, partition, params), metrics in groups.items():
        other = {tuple(s.case.extras.get('lineage') or (check,))[0]
                 for runs in metrics.values() for s in runs} - {check}
        if other:       # its entry would fail every test in setup
            notes.append(f'refused {check}: no such check: its runs '
                         f'recorded the class {_listed(map(str, other))} '
                         f'(hpcval_lineage); its runs are not calibrated')
            continue
        where = dict(params)
        test = ' '.join([check, *(f'{name}={val}' for name, val in params),
                         f'(partition {partition})'])
        envs = {s.case.environ for runs in metrics.values() for s in runs}
        if len(envs) > 1:
            notes.append(f'{test}: runs of environments '
                         f'{_listed(envs)} calibrated together (references '
                         f'do not tell environments apart)')
        wanted, families = {}, {}
        for metric, runs in metrics.items():
            label = f'{test} {metric}'
            if peers.is_sibling_figure(metric):
                # every member's ratio makes its family's one band
                families.setdefault(metric.split('@')[0], []).extend(runs)
                continue
            if '@' in metric:
                # one GPU's figure: judged against its metric's reference
                continue
            if include_absent:
                wanted[metric] = runs
                continue
            # the last applicable entry wins
            absent = [r for r in old_refs if r.metric == metric and
                      references.applies(r, [check], partition, where)][-1:]
            if absent and absent[0].value is None:
                notes.append(f'kept {label} explicitly absent ('
                             f'{" ".join(absent[0].source.split())}); '
                             f'include_absent calibrates it')
                continue
            # the check said it logs this on purpose (hpcval_unjudged)
            declared = next((why[len('diagnostic: '):] for why in (
                (s.case.extras.get('unjudged') or {}).get(s.metric)
                for s in runs) if isinstance(why, str) and
                why.startswith('diagnostic: ') and
                not why.startswith('diagnostic: explicitly absent')), None)
            if declared:
                notes.append(f'kept {label} unjudged: the check logs it as a '
                             f'diagnostic ({declared}); include_absent '
                             f'calibrates it')
                continue
            wanted[metric] = runs
        out.append(((check, partition, params), test, wanted, families))
    return out


def _entries(plan, rule, notes, keep_outliers, figures):
    """New calibrated entries: [(key, {metric: spec})]."""
    out = []
    for key, test, metrics, families in plan:
        specs = {metric: _metric(f'{test} {metric}', metric, runs, rule,
                                 notes, keep_outliers, figures)
                 for metric, runs in metrics.items()}
        specs.update((name, _family(f'{test} {name}', runs, rule, notes,
                                    figures))
                     for name, runs in sorted(families.items()))
        specs = {name: spec for name, spec in specs.items() if spec}
        if specs:
            out.append((key, specs))
    return out


def _family(label, runs, rule, notes, figures):
    """The spec of one sibling family's band (sibling_band), or None."""
    # the ratios that failed their run's band are left out
    kept = [s for s in runs if s.result != 'fail' and s.value > 0 and
            math.isfinite(s.value)]
    if len(kept) < len(runs):
        notes.append(f'{label}: left out {len(runs) - len(kept)} ratio(s) '
                     f'that failed their run\'s band (a member named '
                     f'slower than its siblings) or are not positive')
    cases = {id(s.case): s.case for s in kept}.values()
    if len(cases) < rule.min_samples:
        notes.append(f'refused {label}: ratios of {len(cases)} run(s), '
                     f'fewer than {rule.min_samples}')
        return None
    ratios = [s.value for s in kept]
    bound, how = sibling_band(ratios, len(cases), rule.false_alarm)
    tol = _fraction_up(1 - bound)
    members = {s.metric.split('@', 1)[1] for s in kept}
    std = statistics.stdev(ratios)
    figures.append({'label': label, 'metric': kept[0].metric.split('@')[0],
                    'direction': 'higher', 'n': len(ratios),
                    'mean': statistics.fmean(ratios), 'std': std,
                    'log_std': statistics.stdev([math.log(r) for r in ratios]),
                    'tolerance': tol, 'how': how, 'family': True})
    nodes = _listed(n for c in cases for n in c.nodes) or 'not recorded'
    return {'value': 1, 'lower': -tol, 'spread': _significant(std),
            'unit': peers.RATIO_UNIT, 'rule': SIBLING_RULE,
            'source': _Folded(
                f'calibrated by `hpcval calibrate` from this node\'s '
                f'healthy runs: {len(ratios)} ratios of {len(members)} '
                f'members ({_listed(members, 4)}) against their siblings '
                f'over {len(cases)} runs, {_dates(cases)}: lowest '
                f'{min(ratios):.4g}, mean {statistics.fmean(ratios):.4g}; '
                f'bound {1 - tol:.4g} x, {how}; job nodes {nodes}')}


def sibling_band(ratios, runs, false_alarm):
    """(bound, how) of a sibling family's healthy ``ratios`` of ``runs``."""
    logs = [math.log(r) for r in ratios]
    f = prediction_factor(runs, false_alarm)
    normal = math.exp(statistics.fmean(logs) - f * statistics.stdev(logs))
    lowest, margin = min(ratios), SIBLING_MARGIN
    bound, how = min((normal, f'{f:.3g} std of ln ratio'),
                     (lowest * margin, f'lowest ratio {lowest:.3g} x '
                                       f'{margin:g}'))
    if bound < SIBLING_LOOSEST:
        return SIBLING_LOOSEST, f'{how} = {bound:.3g}, raised to the ' \
            f'loosest allowed, {SIBLING_LOOSEST:g} (1/1.6)'
    if bound > SIBLING_TIGHTEST:
        return SIBLING_TIGHTEST, f'{how} = {bound:.3g}, lowered to the ' \
            f'tightest allowed, {SIBLING_TIGHTEST:g}'
    return bound, how


def per_figure(budget, judged):
    """The rate per figure that keeps ``judged`` figures within ``budget``."""
    # expm1/log1p: 1 - (1 - b)^(1/m) without cancellation for small b
    return -math.expm1(math.log1p(-budget) / max(judged, 1))


def judged_per_run(samples, calibrated):
    """m, the figures one run of ``samples`` judges; ``calibrated``: the
    (check, partition, params, metric) calibrate bounds or tries to."""
    judged = collections.Counter()      # {(case, test): figures judged}
    for s in samples:
        key = (s.case.check, s.case.partition, s.case.params)
        judged[id(s.case), key] += (*key, s.metric.split('@')[0]) in \
            calibrated or peers.is_sibling_figure(s.metric) or \
            judgement.Band.of_sample(s) is not None
    most = collections.defaultdict(int)     # per test, its most of any run
    for (_, key), n in judged.items():
        most[key] = max(most[key], n)
    return sum(most.values())


def _split(text, path):
    """(lines before the calibrated section, its entries, {index of the
    entry: the site's comment lines in or before it; len(entries): after})."""
    lines = text.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines)
               if line.strip().startswith(MARKER)), None)
    if at is None:
        return lines, [], {}

    section = textwrap.dedent(''.join(lines[at:]))
    try:
        entries = bounded.load(section) or []
    except bounded.TooBig as err:
        raise CalibrationError(f'{path}: the calibrated section is '
                               f'refused: {err}') from None
    except yaml.YAMLError as err:
        raise CalibrationError(f'{path}: the calibrated section is not '
                               f'valid YAML: {err}') from None
    if not isinstance(entries, list):
        raise CalibrationError(f'{path}: the calibrated section is not a '
                               f'list of entries')
    comments, index = {}, -1
    for line in section.splitlines(keepends=True):
        if re.match(r'- ', line):
            index += 1
        if line.lstrip().startswith('#') and line.strip() not in _HEADER:
            # a comment at the list's own indentation stands before the
            # next entry
            where = index if index >= 0 and line[0].isspace() \
                else index + 1
            comments.setdefault(where, []).append(line.strip() + '\n')
    return lines[:at], entries, comments


def _key(entry):
    return (entry.get('check'), entry.get('partition', '*'),
            tuple((str(k), str(v)) for k, v in
                  (entry.get('where') or {}).items()))


def _merge(previous, new):
    merged = {_key(e): e for e in previous}
    for (check, partition, params), specs in new:
        entry = {'check': check, 'partition': partition}
        if params:
            entry['where'] = dict(params)
        entry = merged.setdefault(_key(entry), {**entry, 'metrics': {}})
        entry['metrics'].update(specs)
    for entry in merged.values():
        for spec in entry.get('metrics', {}).values():
            if isinstance(spec, dict) and isinstance(spec.get('source'), str):
                spec['source'] = _Folded(' '.join(spec['source'].split()))
    return list(merged.values())


def _top_level(lines, key, path=None):
    """The line of the top-level ``key``; if none, None or (``path``) error."""
    at = next((i for i, line in enumerate(lines)
               if re.match(rf'{key}:', line)), None)
    if at is None and path:
        raise CalibrationError(f'{path}: no top-level {key} key')
    return at


def _block_end(lines, at):
    return next((i for i in range(at + 1, len(lines))
                 if lines[i].strip() and not lines[i][0].isspace()),
                len(lines))


def _set_rule(lines, rule_text, path, name=RULE):
    """Sets rules.<name> of the file's ``lines`` to ``rule_text``."""
    r = _top_level(lines, 'rules')
    if r is None:
        e = _top_level(lines, 'entries', path)
        lines[e:e] = ['rules:\n', *_rule_lines('  ', rule_text, name)]
        return

    if lines[r].strip() != 'rules:':
        raise CalibrationError(f'{path}: rules must be a block mapping '
                               f'(one rule per line) to add {name!r}')
    end = _block_end(lines, r)
    body = [i for i in range(r + 1, end) if lines[i].strip()]
    indent = re.match(r'\s*', lines[body[0]]).group() if body else '  '
    old = next((i for i in body if lines[i].startswith(f'{indent}{name}:')),
               None)
    if old is None:
        at = body[-1] + 1 if body else r + 1
        lines[at:at] = _rule_lines(indent, rule_text, name)
    else:
        stop = next((i for i in range(old + 1, end) if lines[i].strip()
                     and len(lines[i]) - len(lines[i].lstrip())
                     <= len(indent)), end)
        lines[old:stop] = _rule_lines(indent, rule_text, name)


def _set_false_alarms(lines, rule):
    """Sets the top-level ``false_alarms`` of ``lines`` from ``rule``."""
    old = _top_level(lines, 'false_alarms')
    if old is not None:
        del lines[old:_block_end(lines, old)]
    at = _top_level(lines, 'entries')
    node = '' if rule.budget is None else f'node_rate: {rule.budget:g}, '
    lines[at:at] = [f'false_alarms: {{{node}figures: {rule.judged}, '
                    f'per_figure: {rule.false_alarm:.3g}}}\n']


def _inventory(samples):
    """Per partition, the inventory entry the runs' health records show."""
    by_part = collections.defaultdict(dict)
    for s in samples:
        rec = s.case.extras.get('health')
        if rec is not None and rec.node:
            # the latest record of each node
            by_part[s.case.partition][rec.node] = (s.case.time, rec)
    out = []
    for part, nodes in sorted(by_part.items()):
        when = utc(max(t for t, _ in nodes.values()), '%Y-%m-%d')
        entry = inventory.from_records(
            [rec for _, rec in nodes.values()], part, f'hpcval calibrate: '
            f'the GPU tool on {_listed(nodes)} in the baseline runs, {when}')
        if entry:
            out.append(entry)
    return out


_INVENTORY_HEADER = (f'{INVENTORY_MARKER} the GPUs of the baseline runs '
                     f'(rewritten by each calibration)\n')


def _set_inventory(lines, entries, path, notes):
    """Sets the ``inventory:`` block of ``lines`` to ``entries``, unless
    the site wrote it by hand (a note says what the runs show)."""
    if not entries:
        return
    at = _top_level(lines, 'inventory')
    if at is not None:
        mark = at - 1       # calibrate's comment, maybe the site's below it
        while mark >= 0 and lines[mark].lstrip().startswith('#') and \
                not lines[mark].startswith(INVENTORY_MARKER):
            mark -= 1
        if mark < 0 or not lines[mark].startswith(INVENTORY_MARKER):
            notes.append(f'{path}: kept the inventory written by hand; the '
                         f'baseline runs show: ' + '; '.join(
                             f'{e["partition"]}: {e["gpus"]} x '
                             f'{e.get("model", "no GPU")}' for e in entries))
            return
        end = _block_end(lines, at)
        try:
            old = (bounded.load(''.join(lines[at:end])) or {}).get(
                'inventory') or []
        except (yaml.YAMLError, bounded.TooBig, AttributeError) as err:
            raise CalibrationError(f'{path}: the calibrated inventory is '
                                   f'not readable: {err}') from None
        # every key the site added to a partition's entry (a pin, a note)
        # is kept
        by_part = {e.get('partition'): e for e in old if isinstance(e, dict)}
        entries = [{**e, **{k: v for k, v in by_part.get(e['partition'],
                                                         {}).items()
                            if k not in e}} for e in entries]
        if entries == old:
            notes.append(f'{path}: inventory rewritten from the baseline '
                         f'runs (unchanged)')
            return              # as it was, the site's comments in place
        # the site's whole-line comments, as they were written
        comments = [line if line.endswith('\n') else line + '\n'
                    for line in lines[mark + 1:end]
                    if line.lstrip().startswith('#')]
        lines[mark:end] = [_INVENTORY_HEADER, *comments,
                           _inventory_block(entries)]
        notes.append(f'{path}: inventory rewritten from the baseline runs')
        return
    e = _top_level(lines, 'entries', path)
    lines[e:e] = [_INVENTORY_HEADER, _inventory_block(entries)]
    notes.append(f'{path}: inventory written from the baseline runs')


def _dump(data, **style):
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=72,
                     **style)


def _inventory_block(entries):
    return 'inventory:\n' + textwrap.indent(
        _dump(entries, default_flow_style=None), '  ')


def _rule_lines(indent, text, name=RULE):
    body = textwrap.fill(text, 76, initial_indent=indent * 2,
                         subsequent_indent=indent * 2)
    return [f'{indent}{name}: >\n', body + '\n']


def _new_file(system, rule_text):
    return (f'system: {system}\n'
            f'description: >\n'
            f'  {system}, as measured on it: its baseline from its own passed '
            f'runs\n  (hpcval calibrate); each metric\'s source says which.\n'
            f'rules:\n{"".join(_rule_lines("  ", rule_text))}'
            f'entries:\n')


def _append(lines, entries, path, comments, trailing):
    """``lines`` and the calibrated section of ``entries``, each after its
    ``comments`` ({_key(entry): [lines]}), ``trailing`` comments last."""
    e = _top_level(lines, 'entries', path)
    if any(re.match(r'[A-Za-z_]', line) for line in lines[e + 1:]):
        raise CalibrationError(f'{path}: entries must be the last top-level '
                               f'key, so that calibrated entries can follow')
    if re.fullmatch(r'entries:\s*\[\s*\]\s*', lines[e]):
        lines[e] = 'entries:\n'
    items = [re.match(r'(\s*)- ', line) for line in lines[e + 1:]]
    indent = next((m.group(1) for m in items if m), '  ')
    body = ''.join(lines).rstrip('\n') + '\n'
    dumped = ''.join(
        ''.join(comments.get(_key(entry), ())) +
        _dump([entry], default_flow_style=False, allow_unicode=True)
        for entry in entries) + ''.join(trailing)
    return body + textwrap.indent(_SECTION + dumped, indent)


def _loaded(below, path, text):
    """The references as judged: ``text`` of ``path`` (None: no file)
    layered over the file ``below`` (None: none)."""
    if text is None:
        return references.load(below) if below else []
    if below:
        return references.load_over(below, path, text)
    return references.load(path, text=text)


def _check_loads(text, new_entries, path, below):
    """references.load accepts ``text`` (layered over ``below``), and each
    calibrated test gets the calibrated tuples from it."""
    try:        # in memory: nothing is written before --write
        refs = _loaded(below, path, text)
    except references.ReferenceFileError as err:
        raise CalibrationError(f'{path}: the calibrated text does not '
                               f'load: {err}') from None

    for (check, partition, params), specs in new_entries:
        got = references.select(refs, [check], partition, dict(params),
                                {m: s['unit'] for m, s in specs.items()})
        for metric, spec in specs.items():
            want = (spec['value'], spec.get('lower'), spec.get('upper'))
            have = got.get(metric)
            if not have or not math.isclose(have[0], want[0]) \
                    or have[1:3] != want[1:]:
                raise CalibrationError(
                    f'{path}: {check} {metric} would be judged against '
                    f'{have}, not the calibrated {want}')


def _read(path):
    if os.path.islink(path):
        raise CalibrationError(f'{path} is a symbolic link: hpcval '
                               f'calibrate reads and writes only the file '
                               f'itself')
    try:
        with open(path, encoding='utf-8') as fp:
            return fp.read()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise CalibrationError(f'{path}: cannot read: '
                               f'{getattr(err, "strerror", None) or err}'
                               ) from None


def _replace(path, text):
    """Write ``text`` to ``path`` atomically, never through a link."""
    folder = os.path.dirname(path) or '.'
    try:
        mode = os.stat(path).st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        # never group- or other-writable: the site layer refuses such files
        mode = 0o666 & ~umask & ~0o022
    tmp = None
    try:
        os.makedirs(folder, exist_ok=True)      # a new site's references/
        fd, tmp = tempfile.mkstemp(
            dir=folder, prefix=f'.{os.path.basename(path)}.', suffix='.tmp')
        with os.fdopen(fd, 'w', encoding='utf-8') as fp:
            fp.write(text)
            fp.flush()
            os.fsync(fp.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except OSError as err:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise CalibrationError(f'cannot write {path}: {err.strerror}; '
                               f'nothing written') from None


_SYSTEM = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]*')


def check_system(system, by_system_refs):
    """``system`` if it names a known system (it becomes a file name)."""
    known = set(by_system_refs)
    for folder in (os.path.join(paths.repo_root(), 'systems'),
                   *paths.site_folders('systems')):
        with contextlib.suppress(OSError):
            known |= {f[:-3] for f in os.listdir(folder)
                      if f.endswith('.py') and not f.startswith('_')}
    if not isinstance(system, str) or not _SYSTEM.fullmatch(system) \
            or system not in known:
        raise CalibrationError(f'--system {system!r}: not a known system '
                               f'(one of {", ".join(sorted(known))})')
    return system


def _check_options(floor, k, min_samples, budget, false_alarm):
    """One line naming the option that is out of range."""
    rate = f'from {MIN_FALSE_ALARM} to below 0.5'
    for name, value, ok, want in (
            ('floor', floor, lambda v: math.isfinite(v) and v >= 0, '>= 0'),
            ('k', k, lambda v: math.isfinite(v) and v > 0, '> 0'),
            ('min_samples', min_samples, lambda v: v >= 2, '>= 2'),
            ('budget', budget, lambda v: MIN_FALSE_ALARM <= v < 0.5, rate),
            ('false_alarm', false_alarm,
             lambda v: MIN_FALSE_ALARM <= v < 0.5, rate)):
        if value is None or ok(value):      # NaN fails every comparison
            continue
        note = '; a spread needs two runs' if name == 'min_samples' else \
            '; a smaller rate has no t quantile in double precision' \
            if want == rate and value < MIN_FALSE_ALARM else ''
        raise CalibrationError(f'expected {name} {want} (got {value}{note})')


def calibrate(samples, system, by_system_refs, floor=None, k=None, *,
              min_samples=5, budget=BUDGET, false_alarm=None,
              allow_replays=False, include_absent=False,
              accept_performance_failures=False, ref_dir=None, write=False,
              base_dir=None, keep_outliers=False):
    """The Calibration of ``system`` from ``samples`` with ``hpcval
    calibrate``'s options; ``by_system_refs``: as the caller read them."""
    check_system(system, by_system_refs)
    _check_options(floor, k, min_samples, budget, false_alarm)
    if ref_dir is None:
        ref_dir = paths.references_dir()
    path = os.path.join(ref_dir, f'{system}.yaml')
    old = _read(path)
    # the file a site file is layered over, if any
    below = os.path.join(base_dir, f'{system}.yaml') if base_dir else None
    if below and (os.path.abspath(below) == os.path.abspath(path)
                  or not os.path.isfile(below)):
        below = None
    old_refs = by_system_refs.get(system, [])
    if _loaded(below, path, old) != old_refs:
        raise CalibrationError(f'{path if old is not None else below} '
                               f'changed since it was read')

    notes, figures = [], []
    selected = _select(samples, system, allow_replays,
                       accept_performance_failures, notes)
    plan = _plan(selected, old_refs, include_absent, notes)
    judged = judged_per_run(selected, {
        (*key, metric) for key, _, metrics, _ in plan for metric in metrics})
    if false_alarm is None:
        false_alarm = per_figure(budget, judged)
        notes.append(f'bounds built for a node false-alarm rate of '
                     f'{budget:g} per healthy run (1 in {1 / budget:.0f}) '
                     f'over the {judged} figures a run judges: '
                     f'{false_alarm:.3g} per figure')
    else:
        budget = None
        notes.append(f'bounds built for a false-alarm rate of '
                     f'{false_alarm:g} per figure; a run judges {judged} '
                     f'figures: a healthy run of the node fails with '
                     f'probability up to '
                     f'{-math.expm1(judged * math.log1p(-false_alarm)):.3g}')
    rule = Rule(false_alarm=false_alarm, min_samples=min_samples, k=k,
                floor=floor, budget=budget, judged=judged)
    new_entries = _entries(plan, rule, notes, keep_outliers, figures)
    rule_text = rule.text()
    # a new site file holds the calibrated entries only, layered over the
    # built-in file (references.ReferenceSet.layered), so that upstream
    # corrections of the other entries still reach the site
    head, previous, comments = _split(old, path) if old is not None \
        else (_new_file(system, rule_text).splitlines(keepends=True), [], {})
    if not new_entries:
        notes.append(f'nothing to calibrate for {system}: the file is left '
                     f'as it is')
        return Calibration(old or '', '', notes, path, figures, rule)

    _set_inventory(head, _inventory(selected), path, notes)
    by_key = {_key(e): comments.pop(i, [])
              for i, e in enumerate(previous) if isinstance(e, dict)}
    if any(spec.get('rule') == SIBLING_RULE for _, specs in new_entries
           for spec in specs.values()):
        _set_rule(head, SIBLING_RULE_TEXT, path, SIBLING_RULE)
    _set_false_alarms(head, rule)
    _set_rule(head, rule_text, path)
    text = _append(head, _merge(previous, new_entries), path, by_key,
                   [line for rest in comments.values() for line in rest])
    _check_loads(text, new_entries, path, below)
    name = os.path.join(os.path.basename(ref_dir), f'{system}.yaml')
    diff = ''.join(difflib.unified_diff(
        (old or '').splitlines(keepends=True),
        text.splitlines(keepends=True),
        fromfile=f'a/{name}' if old is not None else '/dev/null',
        tofile=f'b/{name}'))
    if write:
        if _read(path) != old:
            raise CalibrationError(f'{path} changed since it was read; '
                                   f'nothing written')
        _replace(path, text)
        notes.append(f'wrote {path}')
    return Calibration(text, diff, notes, path, figures, rule)
