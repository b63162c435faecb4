"""What changed, and did it matter: runs grouped by a provenance key
(``hpcval report --group-by KEY``) and a node's run against its last
passing run (``hpcval diff``).

Group-by: per figure (column, measurement, metric), the runs of each value
of KEY with n, mean and sample standard deviation, and Welch's two-sided
t-test of each value against the first (oldest) one: unequal variances,
Welch-Satterthwaite degrees of freedom, significant at p < ALPHA.  A value
with one run is shown without a test (no spread, no basis).

Diff: per node, the newest run among the inputs against the node's last
run of the same test that passed: the provenance keys that differ, and
every figure outside the noise of the node's earlier passing runs of that
test, the two-sided prediction interval mean +- k s with k = t(1 - a/2;
n - 1) sqrt(1 + 1/n), a = FALSE_ALARM: one healthy run falls outside with
probability a (normal figures).  A figure moved less than k s is not
detected: k s is the detection limit, printed beside each figure.  Fewer
than MIN_RUNS earlier passing runs: the noise is not measured and the
figure is "not judged", which makes the diff incomplete (exit 2).  A
newest run that failed with no figure is named and counts as moved
(exit 1): there is nothing to find within noise.
"""
import json
import math
from dataclasses import dataclass, field

from hpcval import records
from hpcval.publish import comparison, formats, numbers, stats

ALPHA = 0.01
FALSE_ALARM = 1e-3
MIN_RUNS = 3
EXIT_OK, EXIT_MOVED, EXIT_INCOMPLETE, EXIT_INPUT = 0, 1, 2, 3
NOT_RECORDED = 'not recorded'
#: the names a user types for the keys provenance records
ALIASES = {'image': 'image_digest'}


def welch(a, b):
    """(t, degrees of freedom, two-sided p) of Welch's t-test of samples
    ``a`` and ``b`` (each n >= 2); p = 1 where both have no spread and
    equal means, 0 where no spread and different means."""
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
    """{key: value} the node recorded for ``case``."""
    return records.of_node(case.provenance or {}, node)


def _key(name):
    return ALIASES.get(name, name)


@dataclass
class Group:
    value: str
    values: list = field(default_factory=list)

    @property
    def n(self):
        return len(self.values)

    @property
    def mean(self):
        return math.fsum(self.values) / self.n

    @property
    def std(self):
        return statistics_std(self.values)


def statistics_std(values):
    if len(values) < 2:
        return None
    mean = math.fsum(values) / len(values)
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values)
                     / (len(values) - 1))


@dataclass
class Figure:
    column: str
    test: str
    metric: str
    unit: str
    groups: list                 # [Group], the first is the baseline
    tests: list                  # per later group: None or (t, df, p)

    def as_dict(self):
        return {'column': self.column, 'test': self.test,
                'metric': self.metric, 'unit': self.unit,
                'groups': [{'value': g.value, 'n': g.n, 'mean': g.mean,
                            'std': g.std} for g in self.groups],
                'welch': [None if t is None else
                          {'t': t[0], 'df': t[1], 'p': t[2],
                           'significant': t[2] < ALPHA}
                          for t in self.tests]}


def group_by(samples, cases, key):
    """[Figure] of ``samples`` by the provenance ``key`` of their node
    (runs of several nodes: one value per node, joined)."""
    key = _key(key)
    where = comparison.placed(cases)
    first_seen, by_figure = {}, {}
    for s in sorted(samples, key=lambda s: s.case.time):
        col, test = where[id(s.case)]
        value = _value_of(s.case, key)
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


def _value_of(case, key):
    values = sorted({node_provenance(case, node).get(key) or NOT_RECORDED
                     for node in case.nodes or ('',)})
    return ' | '.join(values)


def recorded_keys(cases):
    """The provenance keys any of ``cases`` recorded."""
    keys = set()
    for case in cases:
        for node in case.nodes or ('',):
            keys.update(node_provenance(case, node))
    return sorted(keys)


def _in(value, unit, to_unit):
    return numbers.scale(value, unit, to_unit)


def _fmt(value, unit):
    if value is None:
        return '-'
    shown = numbers.scaled_unit(unit, [value])
    return f'{numbers.sig(_in(value, unit, shown), 4)} {shown}'


def group_text(figures, key):
    """The group-by figures as a Markdown table."""
    esc = formats.md_text
    lines = [f'# Runs grouped by provenance key `{esc(_key(key))}`', '',
             f'Each figure by value of {esc(_key(key))}: n, mean ± sample '
             f'std; p: Welch\'s two-sided t-test (unequal variances) of '
             f'each value against the first, significant at p < {ALPHA} '
             f'(no test where a value has one run).', '',
             '| system | test | metric | ' + f'{esc(_key(key))} | n | '
             'mean ± std | p (vs first) |', '|---|---|---|---|---|---|---|']
    for fig in figures:
        for i, g in enumerate(fig.groups):
            test = fig.tests[i - 1] if i else None
            p = ('baseline' if i == 0 else 'no test (n < 2)' if test is None
                 else f'{test[2]:.2g}' + (' **differs**' if test[2] < ALPHA
                                          else ''))
            unit = numbers.scaled_unit(fig.unit,
                                       [x.mean for x in fig.groups])
            spread = f' ± {numbers.sig(_in(g.std, fig.unit, unit), 2)}' \
                if g.std is not None else ''
            lines.append(f'| {esc(fig.column)} | {esc(fig.test)} | '
                         f'{esc(fig.metric)} | {esc(g.value)} | {g.n} | '
                         f'{numbers.sig(_in(g.mean, fig.unit, unit), 4)}'
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
        for i, g in enumerate(fig.groups):
            t = fig.tests[i - 1] if i else None
            out.writerow([formats.csv_text(x) for x in (
                fig.column, fig.test, fig.metric, fig.unit, _key(key),
                g.value, g.n, g.mean, '' if g.std is None else g.std,
                '' if t is None else t[0], '' if t is None else t[1],
                '' if t is None else t[2],
                '' if t is None else str(t[2] < ALPHA).lower())])
    return buf.getvalue()


# the maintenance diff

@dataclass
class Moved:
    test: str
    metric: str
    unit: str
    value: float
    last_good: float
    n: int                   # earlier passing runs (the noise's sample)
    mean: float = None
    limit: float = None      # k s: the smallest move detected
    verdict: str = ''        # 'moved', 'within noise', 'not judged'

    def as_dict(self):
        return {'test': self.test, 'metric': self.metric,
                'unit': self.unit, 'value': self.value,
                'last_good': self.last_good, 'n': self.n,
                'mean': self.mean, 'detection_limit': self.limit,
                'verdict': self.verdict}


@dataclass
class NodeDiff:
    node: str
    run: str                 # the run's session
    last_good: str           # the last passing run's session, or ''
    changed: dict = field(default_factory=dict)  # key: (before, after)
    figures: list = field(default_factory=list)  # [Moved]
    missing: list = field(default_factory=list)  # tests without a good run
    # tests whose newest run failed with no figure to compare: a crash is
    # no "nothing moved"
    failed: list = field(default_factory=list)

    @property
    def moved(self):
        return [f for f in self.figures if f.verdict == 'moved']

    def as_dict(self):
        return {'node': self.node, 'run': self.run,
                'last_good': self.last_good,
                'provenance_changed': {k: {'before': b, 'after': a}
                                       for k, (b, a) in self.changed.items()},
                'figures': [f.as_dict() for f in self.figures],
                'moved': len(self.moved),
                'no_passing_run': self.missing,
                'failed_without_figures': self.failed}


def since_good(samples, cases):
    """[NodeDiff] per node: its newest session among ``cases`` against
    the passing runs of the same tests before it."""
    values = {}
    for s in samples:
        values.setdefault(id(s.case), {})[s.metric] = (s.value, s.unit)
    cases = sorted((c for c in cases if not c.fixture and not c.replay),
                   key=lambda c: c.time)
    newest = {}
    for c in cases:
        for node in c.nodes:
            newest[node] = c.session
    out = []
    for node in sorted(newest):
        session = newest[node]
        diff = NodeDiff(node, session, '')
        mine = [c for c in cases if node in c.nodes]
        good_before = [c for c in mine if c.session != session
                       and c.result == 'pass']
        last_time = 0
        for case in (c for c in mine if c.session == session):
            if case.result in ('fail', 'abort') and \
                    not values.get(id(case)):
                diff.failed.append(case.test)
            good = [c for c in good_before if c.test == case.test
                    and c.system == case.system
                    and c.partition == case.partition
                    and c.time < case.time]
            if not good:
                diff.missing.append(case.test)
                continue
            last = good[-1]
            if last.time > last_time:
                diff.last_good, last_time = last.session, last.time
            before = node_provenance(last, node)
            after = node_provenance(case, node)
            for key in sorted(set(before) | set(after)):
                if before.get(key) != after.get(key):
                    diff.changed[key] = (before.get(key, NOT_RECORDED),
                                         after.get(key, NOT_RECORDED))
            for metric, (value, unit) in sorted(
                    values.get(id(case), {}).items()):
                diff.figures.append(_moved(case.test, metric, value, unit,
                                           [values.get(id(c), {}).get(metric)
                                            for c in good]))
        out.append(diff)
    return out


def _moved(test, metric, value, unit, history):
    got = [v for v, u in (h for h in history if h) if u == unit]
    last = got[-1] if got else None
    fig = Moved(test, metric, unit, value, last, len(got))
    if len(got) < MIN_RUNS:
        fig.verdict = 'not judged'
        return fig
    fig.mean = math.fsum(got) / len(got)
    k = stats.t_ppf(1 - FALSE_ALARM / 2, len(got) - 1) * \
        math.sqrt(1 + 1 / len(got))
    fig.limit = k * statistics_std(got)
    fig.verdict = 'moved' if abs(value - fig.mean) > fig.limit \
        else 'within noise'
    return fig


def diff_status(diffs, left_out=False):
    """``left_out``: an input was left out, which may be the run that
    moved: never "nothing moved" (the verdict's rule)."""
    if any(d.moved or d.failed for d in diffs):
        return EXIT_MOVED
    if left_out:
        return EXIT_INPUT
    if not diffs:
        return EXIT_INCOMPLETE
    if any(d.missing or any(f.verdict == 'not judged' for f in d.figures)
           for d in diffs):
        return EXIT_INCOMPLETE
    return EXIT_OK


def diff_text(diffs, show_all=False):
    vis = formats.visible
    lines = [f'Each node\'s newest run against its last passing run: '
             f'provenance that changed, and figures outside the noise of '
             f'the node\'s earlier passing runs (two-sided prediction '
             f'interval, false-alarm rate {FALSE_ALARM:g} per figure; the '
             f'detection limit is k s; fewer than {MIN_RUNS} runs: not '
             f'judged).']
    for d in diffs:
        lines.append(f'node {vis(d.node)}: run {d.run} against last good '
                     f'{d.last_good or "none"}')
        if d.changed:
            for key, (before, after) in d.changed.items():
                lines.append(f'  changed {vis(key)}: {vis(before)} -> '
                             f'{vis(after)}')
        else:
            lines.append('  provenance: nothing changed')
        moved = d.moved
        judged = [f for f in d.figures if f.verdict != 'not judged']
        lines.append(f'  figures: {len(moved)} moved beyond noise of '
                     f'{len(judged)} judged, '
                     f'{len(d.figures) - len(judged)} not judged')
        for f in d.figures:
            if f.verdict != 'moved' and not show_all:
                continue
            change = (f.value - f.mean) / f.mean * 100 if f.mean else 0
            extra = '' if f.mean is None else (
                f' ({change:+.1f} % from mean {_fmt(f.mean, f.unit)} of '
                f'n={f.n}; detection limit ±{_fmt(f.limit, f.unit)})')
            lines.append(f'  {f.verdict}: {vis(f.test)} {vis(f.metric)} '
                         f'{_fmt(f.value, f.unit)}, last good '
                         f'{_fmt(f.last_good, f.unit)}{extra}')
        for test in d.failed:
            lines.append(f'  failed without figures: {vis(test)}')
        for test in d.missing:
            lines.append(f'  no passing run before: {vis(test)}')
    if not diffs:
        lines.append('no run in the inputs')
    return '\n'.join(lines) + '\n'


def diff_json(diffs, left_out=False):
    return json.dumps({'false_alarm': FALSE_ALARM, 'min_runs': MIN_RUNS,
                       'status': diff_status(diffs, left_out),
                       'nodes': [d.as_dict() for d in diffs]}, indent=1,
                      sort_keys=True) + '\n'
