"""Runs grouped by provenance (report --group-by) and node diffs (diff)."""
import dataclasses
import json
import math
import os
from dataclasses import dataclass, field

from hpcval import records, units, verdict_refs
from hpcval.publish import comparison, formats, numbers, stats
from hpcval.publish.calibrate import RULE, utc
from hpcval.publish.stats import FLOORS, Rule

ALPHA = 0.01
FALSE_ALARM = 1e-3
MIN_RUNS = 3
EXIT_OK, EXIT_MOVED, EXIT_INCOMPLETE, EXIT_INPUT = 0, 1, 2, 3
NOT_RECORDED = 'not recorded'
#: the names a user types for the keys provenance records
ALIASES = {'image': 'image_digest'}


def welch(a, b):
    """(t, df, two-sided p) of Welch's t-test of ``a`` and ``b`` (n >= 2)."""
    na, nb = len(a), len(b)
    ma, mb = math.fsum(a) / na, math.fsum(b) / nb
    va = math.fsum((x - ma) ** 2 for x in a) / (na - 1)
    vb = math.fsum((x - mb) ** 2 for x in b) / (nb - 1)
    se2 = va / na + vb / nb
    if se2 == 0:
        return (0.0, float(na + nb - 2), 1.0 if ma == mb else 0.0)
    t = (mb - ma) / math.sqrt(se2)
    df = se2 ** 2 / ((va / na) ** 2 / (na - 1) + (vb / nb) ** 2 / (nb - 1))
    return t, df, 2 * stats.t_cdf(-abs(t), df)


def node_provenance(case, node):
    """{key: value} the node recorded for ``case``, over the job's own."""
    record = case.provenance or {}
    return {**records.of_node(record, None), **records.of_node(record, node)}


@dataclass
class Group:
    """The runs of a figure with one value of the key."""
    value: str
    values: list

    def __post_init__(self):
        self.n = len(self.values)
        self.mean, self.std = comparison.mean_std(self.values)


@dataclass
class Figure:
    column: str
    test: str
    metric: str
    unit: str
    groups: list                 # [Group], the first is the baseline
    tests: list                  # per later group: None or (t, df, p)


def group_by(samples, cases, key):
    """[Figure] of ``samples`` by the provenance ``key`` of their node."""
    where = comparison.placed(cases)
    first_seen, by_figure = {}, {}
    for s in sorted(samples, key=lambda s: s.case.time):
        col, test = where[id(s.case)]
        value = ' | '.join(sorted({
            node_provenance(s.case, node).get(key) or NOT_RECORDED
            for node in s.case.nodes or ('',)}))
        first_seen.setdefault(value, len(first_seen))
        fig = by_figure.setdefault((col, test, s.metric, s.unit), {})
        fig.setdefault(value, []).append(s.value)
    out = []
    for (col, test, metric, unit), got in sorted(by_figure.items()):
        groups = [Group(v, got[v]) for v in sorted(got, key=first_seen.get)]
        base = groups[0]
        tests = [welch(base.values, g.values)
                 if base.n >= 2 and g.n >= 2 else None for g in groups[1:]]
        out.append(Figure(col, test, metric, unit, groups, tests))
    return out


def recorded_keys(cases):
    """The provenance keys any of ``cases`` recorded."""
    keys = set()
    for case in cases:
        for node in case.nodes or ('',):
            keys.update(node_provenance(case, node))
    return sorted(keys)


def _fmt(value, unit):
    shown = numbers.scaled_unit(unit, [value])
    return f'{numbers.sig(numbers.scale(value, unit, shown), 4)} {shown}'


def group_text(figures, key):
    """The group-by figures as a Markdown table."""
    esc = formats.md_text
    lines = [f'# Runs grouped by provenance key `{esc(key)}`', '',
             f'Each figure by value of {esc(key)}: n, mean ± sample '
             f'std; p: Welch\'s two-sided t-test (unequal variances) of '
             f'each value against the first, significant at p < {ALPHA} '
             f'(no test where a value has one run).', '',
             '| system | test | metric | ' + f'{esc(key)} | n | '
             'mean ± std | p (vs first) |', '|---|---|---|---|---|---|---|']
    for fig in figures:
        unit = numbers.scaled_unit(fig.unit, [x.mean for x in fig.groups])
        for i, (g, test) in enumerate(zip(fig.groups, (None, *fig.tests))):
            p = ('baseline' if i == 0 else 'no test (n < 2)' if test is None
                 else f'{test[2]:.2g}' + (' **differs**' if test[2] < ALPHA
                                          else ''))
            mean, std = (numbers.scale(x, fig.unit, unit)
                         for x in (g.mean, g.std))
            spread = f' ± {numbers.sig(std, 2)}' if std is not None else ''
            lines.append(f'| {esc(fig.column)} | {esc(fig.test)} | '
                         f'{esc(fig.metric)} | {esc(g.value)} | {g.n} | '
                         f'{numbers.sig(mean, 4)}'
                         f'{spread} {esc(unit)} | {p} |')
    tests = [t for f in figures for t in f.tests if t is not None]
    differs = sum(1 for t in tests if t[2] < ALPHA)
    lines += ['', f'{differs} of {len(tests)} tests (of {len(figures)} '
                  f'figures) differ at p < {ALPHA}; about '
                  f'{len(tests) * ALPHA:.1f} would by chance alone (no '
                  f'correction for multiple comparisons).']
    return '\n'.join(lines) + '\n'


def group_csv(figures, key):
    import csv
    import io
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator='\n')
    out.writerow(['system', 'test', 'metric', 'unit', 'key', 'value', 'n',
                  'mean', 'std', 'welch_t', 'welch_df', 'p', 'significant'])
    for fig in figures:
        for g, t in zip(fig.groups, (None, *fig.tests)):
            tested = ('',) * 4 if t is None else \
                (*t, str(t[2] < ALPHA).lower())
            out.writerow([formats.csv_text(x) for x in (
                fig.column, fig.test, fig.metric, fig.unit, key,
                g.value, g.n, g.mean, '' if g.std is None else g.std,
                *tested)])
    return buf.getvalue()


# the maintenance diff

@dataclass
class Session:
    """One ReFrame session's test cases on one node."""
    source: str              # its report file, or DB#uuid
    time: float              # when its last test case ended
    cases: list

    @property
    def passed(self):
        # ReFrame's result, its performance check included
        return all(c.result == 'pass' for c in self.cases)

    @property
    def name(self):
        return f'{utc(self.time)} UTC ({self.source})'


def _sessions(cases, node):
    """The node's Sessions among ``cases``, oldest first."""
    by = {}
    for c in cases:
        if node in c.nodes:
            by.setdefault(c.session, []).append(c)
    return sorted((Session(cs[0].source, max(c.time for c in cs), cs)
                   for cs in by.values()), key=lambda s: s.time)


@dataclass
class Moved:
    test: str
    metric: str
    unit: str
    value: float
    baseline: float = None   # the passing runs' mean, or calibrated value
    n: int = 0               # passing runs up to the baseline; 0: calibrated
    minimum: float = None    # the smallest move counted, in ``unit``
    why: str = ''            # what set the minimum

    @property
    def effect(self):
        """The move over its minimum: what moves are ranked by."""
        if self.minimum is None:
            return 0.0
        change = abs(self.value - self.baseline)
        return change / self.minimum if self.minimum else \
            (math.inf if change else 0.0)

    @property
    def verdict(self):
        return 'not judged' if self.minimum is None else \
            'moved' if self.effect > 1 else 'not moved'


@dataclass
class NodeDiff:
    node: str
    run: str                 # the newest session: date (report file)
    baseline: str = ''       # the baseline: session or calibration, or ''
    changed: dict = field(default_factory=dict)  # key: (before, after)
    figures: list = field(default_factory=list)  # [Moved], ranked
    missing: list = field(default_factory=list)  # tests without a baseline
    # tests whose newest run failed with no figure to compare: a crash is
    # no "nothing moved"
    failed: list = field(default_factory=list)
    compared: bool = False   # the baseline recorded provenance

    @property
    def moved(self):
        return [f for f in self.figures if f.verdict == 'moved']

    def as_dict(self):
        return {**dataclasses.asdict(self), 'moved': len(self.moved),
                'changed': {k: {'before': b, 'after': a}
                            for k, (b, a) in self.changed.items()},
                'figures': [{**dataclasses.asdict(f), 'effect': f.effect,
                             'verdict': f.verdict} for f in self.figures]}


def since(samples, cases, baseline=None, refs=None):
    """[NodeDiff] per node: its newest session against ``baseline``."""
    values = {}
    for s in samples:
        values.setdefault(id(s.case), {})[s.metric] = (s.value, s.unit)
    cases = [c for c in cases if not c.fixture and not c.replay]
    calibrated = verdict_refs.Bounds(refs) if baseline == CALIBRATION \
        else None
    may_be, no_base = _base_rule(baseline)
    out = []
    for node in sorted({n for c in cases for n in c.nodes}):
        *before, newest = _sessions(cases, node)
        diff = NodeDiff(node, newest.name)
        good = [s for s in before if s.passed]
        base = next((s for s in reversed(good) if may_be(s)), None)
        history = [c for s in good if base and s.time <= base.time
                   for c in s.cases]
        diff.baseline = base.name if base else f'none ({no_base})'
        if calibrated is not None:
            diff.baseline = 'the calibration in ' + refs.files.get(
                newest.cases[0].system, 'the references')
        for case in newest.cases:
            figures = values.get(id(case), {})
            if case.result in ('fail', 'abort') and not figures:
                diff.failed.append(case.test)
            if calibrated is not None:
                _against_calibration(diff, case, figures,
                                     calibrated.of_case(case).refs, refs)
                continue
            mine = [c for c in history if c.test == case.test
                    and c.system == case.system
                    and c.partition == case.partition]
            if not mine:
                diff.missing.append(case.test)
                continue
            then = next((c for c in mine if c.session ==
                         base.cases[0].session), mine[-1])
            _provenance(diff, node_provenance(then, node),
                        node_provenance(case, node))
            for metric, (value, unit) in sorted(figures.items()):
                diff.figures.append(_moved(case.test, metric, value, unit, [
                    values.get(id(c), {}).get(metric) for c in mine]))
        diff.figures.sort(key=lambda f: (_RANK[f.verdict], -f.effect))
        out.append(diff)
    return out


CALIBRATION = 'calibration'
_RANK = {'moved': 0, 'not moved': 1, 'not judged': 2}


def _base_rule(baseline):
    """(whether a passing session may be the baseline, why there is none)."""
    if isinstance(baseline, float):
        return (lambda s: s.time <= baseline,
                f'no passing session at or before {utc(baseline)} UTC')
    if baseline and baseline != CALIBRATION:
        path = os.path.realpath(baseline)
        return (lambda s: os.path.realpath(s.source) == path,
                f'no passing session in {baseline}')
    return lambda s: True, 'no passing session before it'


def _provenance(diff, before, after, only_before=False):
    diff.compared = diff.compared or bool(before)
    for key in sorted(set(before) | (set() if only_before else set(after))):
        if before.get(key) != after.get(key):
            diff.changed[key] = (before.get(key, NOT_RECORDED),
                                 after.get(key, NOT_RECORDED))


def _against_calibration(diff, case, figures, refs, references):
    """``case``'s figures and provenance against the calibration."""
    expected = references.expected(case.system, case.partition) or {}
    base = dict(expected.get('baseline') or {})
    serials = (base.pop('serials', None) or {}).get(diff.node)
    after = node_provenance(case, diff.node)
    if serials:     # the calibration records a set: the order is no change
        mine = after.get('gpu_serial', '')
        base['gpu_serial'] = mine if sorted(mine.split(',')) == \
            sorted(serials) else ','.join(serials)
    _provenance(diff, base, after, only_before=True)
    for metric, (value, unit) in sorted(figures.items()):
        ref = refs.get(metric.partition('@')[0])
        if ref is not None and ref.value is None:
            continue            # declared diagnostic: nothing to move from
        fig = Moved(case.test, metric, unit, value)
        if ref is not None and ref.rule == RULE and ref.value is not None \
                and (ref.lower, ref.upper) != (None, None):
            try:
                fig.baseline = ref.as_tuple(unit)[0]
            except ValueError:      # another unit family: not its figure
                diff.figures.append(fig)
                continue
            tolerance = max(abs(ref.lower or 0), abs(ref.upper or 0))
            fig.minimum = tolerance * abs(fig.baseline)
            fig.why = f'its calibrated tolerance {tolerance:.3g}'
        diff.figures.append(fig)


def _moved(test, metric, value, unit, history):
    got = [v for v, u in (h for h in history if h) if u == unit]
    fig = Moved(test, metric, unit, value, n=len(got))
    if len(got) < MIN_RUNS:
        return fig
    fig.baseline, std = comparison.mean_std(got)
    noise = stats.prediction_factor(len(got), FALSE_ALARM / 2) * std
    # calibrate's floor of the figure's kind
    kind = Rule().kind(metric.partition('@')[0], units.better(unit))
    floor = dict(FLOORS)[kind]
    fig.minimum = max(noise, floor * abs(fig.baseline))
    fig.why = f'the noise of {len(got)} passing runs' \
        if fig.minimum == noise else f'the floor {floor:g} of a {kind}'
    return fig


def unmeasured(started, cases, samples):
    """The newest input (of ``started``) if it has no figure, else None."""
    when = {src: t for src, t in started.items()
            if src not in {c.source for c in cases}}
    for c in cases:
        when[c.source] = max(when.get(c.source) or 0, c.time)
    if not when:
        return None
    # a start nobody recorded is taken as the newest
    newest = max(when, key=lambda src: math.inf if when[src] is None
                 else when[src])
    return None if newest in {s.case.source for s in samples} else newest


def diff_status(diffs, left_out=False, unmeasured=None):
    """The exit status; a left-out input is never "nothing moved"."""
    if any(d.moved or d.failed for d in diffs):
        return EXIT_MOVED
    if left_out:
        return EXIT_INPUT
    if not diffs or unmeasured or any(
            d.missing or any(f.verdict == 'not judged' for f in d.figures)
            for d in diffs):
        return EXIT_INCOMPLETE
    return EXIT_OK


MINIMUM = (f'A figure moved where it is further from its baseline than its '
           f'minimum: against passing sessions, the larger of their noise '
           f'(a two-sided prediction interval, false-alarm rate '
           f'{FALSE_ALARM:g} per figure, from at least {MIN_RUNS} passing '
           f'runs up to the baseline, else not judged) and the floor of '
           f'its kind (' + ', '.join(f'{k} {f:g}' for k, f in FLOORS) +
           '); against the calibration, its calibrated tolerance.  Ranked '
           'by effect: the move over its minimum.')


def diff_text(diffs, show_all=False, unmeasured=None):
    vis = formats.visible
    lines = ['Each node\'s newest run against its baseline: the provenance '
             'that differs, and the figures that moved.  ' + MINIMUM]
    if unmeasured:
        lines.append(f'newest run without figures: {vis(unmeasured)} '
                     f'(it crashed or ran nothing: not "nothing moved")')
    for d in diffs:
        lines.append(f'node {vis(d.node)}: run {vis(d.run)} against '
                     f'baseline {vis(d.baseline)}')
        for key, (before, after) in d.changed.items():
            lines.append(f'  changed {vis(key)}: {vis(before)} -> '
                         f'{vis(after)}')
        if not d.changed:
            lines.append('  provenance: ' + (
                'as at the baseline' if d.compared else
                'not compared (no baseline recorded any)'))
        judged = [f for f in d.figures if f.verdict != 'not judged']
        lines.append(f'  figures: {len(d.moved)} moved of {len(judged)} '
                     f'judged, {len(d.figures) - len(judged)} not judged')
        for f in d.figures:
            if f.verdict != 'moved' and not show_all:
                continue
            extra = '' if f.minimum is None else (
                f' vs {_fmt(f.baseline, f.unit)} ({_change(f)}, '
                f'{f.effect:.2g} x its minimum ±{_fmt(f.minimum, f.unit)}: '
                f'{f.why})')
            lines.append(f'  {f.verdict}: {vis(f.test)} {vis(f.metric)} '
                         f'{_fmt(f.value, f.unit)}{extra}')
        lines += [f'  failed without figures: {vis(t)}' for t in d.failed]
        lines += [f'  no passing run before: {vis(t)}' for t in d.missing]
    if not diffs:
        lines.append('no run in the inputs')
    return '\n'.join(lines) + '\n'


def _change(f):
    return f'{(f.value - f.baseline) / abs(f.baseline) * 100:+.1f} %' \
        if f.baseline else f'{f.value - f.baseline:+g} {f.unit}'


def diff_json(diffs, left_out=False, unmeasured=None):
    return json.dumps({'false_alarm': FALSE_ALARM, 'min_runs': MIN_RUNS,
                       'floors': dict(FLOORS), 'minimum': MINIMUM,
                       'newest_without_figures': unmeasured,
                       'status': diff_status(diffs, left_out, unmeasured),
                       'nodes': [d.as_dict() for d in diffs]}, indent=1,
                      sort_keys=True) + '\n'
