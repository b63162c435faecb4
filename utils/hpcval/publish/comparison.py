"""The cross-system table: benchmark metrics (rows) by system (columns)."""
import functools
import itertools
import math
import os
import re
from dataclasses import dataclass, field

from hpcval import judgement, plotdata, records, units
from hpcval.units import better  # noqa: F401 (a Row's direction)
from hpcval.publish import measures, sources

PASS, FAIL = judgement.PASS, judgement.FAIL
NO_REFERENCE, PUBLISHED = 'no reference', 'published'
# a replay reproduces the figure of the document it replays or not: no pass
REPRODUCES = 'reproduces the published figure'
DIFFERS = 'differs from the published figure'
# a run judged against another system's references: no mark
NOT_ITS_OWN = 'not judged'

# per-component metrics (gpu00_to_gpu01, copy@gpu3): heat maps and per-GPU
# bars show them, not table rows (the CSV keeps them)
LINK_METRIC = re.compile(r'(^|_)gpu\d+_to_gpu\d+$|@')


@dataclass(frozen=True)
class Row:
    benchmark: str
    test: str            # what is measured: mode, collective, preset...
    metric: str
    unit: str

    @property
    def better(self):
        return better(self.unit)


#: a cell's reference, in the row's unit
Reference = judgement.Band


@dataclass
class Cell:
    values: list
    reference: object = None     # Reference or None
    verdict: str = NO_REFERENCE
    spread: object = None        # published std (references-only view)
    runs: int = 0                # runs of the row's test in the column
    failed_runs: int = 0         # of them, failed: no figure, or out of bounds
    diagnostic: str = ''         # why every run logged it on purpose
    replay: bool = False
    judged_by: str = ''          # whose references the runs had, if not own
    gpus: object = None          # GPUs the runs used, where they name them
    nodes: object = None         # nodes a collective's runs spanned
    gpu_model: str = ''          # the GPU model the runs' nodes recorded
    latest: object = None        # unix time of the latest run with a figure
    inputs: tuple = ()           # the reports (file names) of its figures
    # (mean, std), computed once; given where only they are known (a CSV)
    stats: object = field(default=None, repr=False, compare=False)

    @property
    def n(self):
        return len(self.values)

    def _mean_std(self):
        # once per cell: tables of a hundred thousand runs ask repeatedly
        if self.stats is None:
            self.stats = mean_std(self.values)
        return self.stats

    @property
    def mean(self):
        return self._mean_std()[0] if self.values else None

    @property
    def std(self):
        if self.spread is not None:
            return self.spread
        return self._mean_std()[1] if self.n >= 2 else None

    @property
    def passed_runs(self):
        return self.runs - self.failed_runs


def mean_std(values):
    """(mean, sample standard deviation), exact as floats allow."""
    n = len(values)
    mean = math.fsum(values) / n
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1)) \
        if n > 1 else None
    return mean, std


@dataclass
class Table:
    title: str
    columns: list
    rows: list
    cells: dict                       # (Row, column) -> Cell
    notes: list = field(default_factory=list)
    checks: dict = field(default_factory=dict)  # (benchmark, column) -> {check}
    cases: list = field(default_factory=list)
    sources: list = field(default_factory=list)  # hpcval.publish.sources
    versions: dict = field(default_factory=dict)  # (benchmark, column) -> {v}
    cited_by: dict = field(default_factory=dict)  # replay column -> Document
    bounds: list = field(default_factory=list)   # runs' own bounds differing
    # {(benchmark, metric, unit family): the unit the tables print it in}
    shown_units: dict = field(default_factory=dict, repr=False,
                              compare=False)

    def sort(self):
        """Rows by benchmark, test, metric; measured columns before replays."""
        self.rows = sorted({r for r, _ in self.cells},
                           key=lambda r: (r.benchmark, r.test, r.metric))
        self.columns = sorted({c for _, c in self.cells},
                              key=lambda c: (c.endswith('(replay)'), c))

    def groups(self):
        """(benchmark, [rows]) of the rows shown: no link or vacuous rows."""
        shown = {r for (r, _), c in self.cells.items() if not vacuous(c)}
        out = []
        for row in self.rows:
            if LINK_METRIC.search(row.metric) or row not in shown:
                continue
            if not out or out[-1][0] != row.benchmark:
                out.append((row.benchmark, []))
            out[-1][1].append(row)
        return out


def _named(case):
    label = case.label or case.system
    if label == 'local' and case.hostname and not case.replay:
        # "local" is whatever host ReFrame ran on: name the host
        label += f'@{case.hostname}'
    return label


def column_of(case, multi_partition=(), per_node=False, hardware=''):
    """A case's column label: name, partition, nodes, hardware, replay."""
    label = _named(case)
    if (label, case.replay) in multi_partition:
        label += f':{case.partition}'
    if per_node:
        label += f' [{",".join(case.nodes) or "no node recorded"}]'
    if hardware:
        label += f' ({hardware})'
    return label + (' (replay)' if case.replay else '')


def columns(cases, per_node=False, splits=None):
    """{case: column label} (column_of) of ``cases``."""
    parts = {}
    for c in cases:
        parts.setdefault((_named(c), c.replay), set()).add(c.partition)
    multi = {key for key, p in parts.items() if len(p) > 1}
    base = {c: column_of(c, multi, per_node) for c in cases}
    configs = {}
    for c in cases:
        configs.setdefault(base[c], {})[c] = hardware_of(c)
    out = {}
    for col, of_case in configs.items():
        named = hardware_labels(set(of_case.values()))
        if named and splits is not None:
            splits[col] = sorted(set(named.values()))
        for c, hw in of_case.items():
            out[c] = column_of(c, multi, per_node, named.get(hw, ''))
    return out


@dataclass(frozen=True)
class Hardware:
    """What a run ran on: its nodes' GPU model(s), GPUs per node, nodes."""
    model: str
    per_node: int
    nodes: int

    def label(self, model=None):
        # per_node 0: the nodes differ, and the model says how
        text = f'{model or self.model}' + (f' x{self.per_node}'
                                           if self.per_node else '')
        return text + (f', {self.nodes} nodes' if self.nodes > 1 else '')


NOT_RECORDED = 'GPUs not recorded'
_BRAND = {'NVIDIA', 'AMD', 'Intel', 'Instinct', 'Tesla', 'GeForce',
          'Radeon', 'Habana'}
_MODEL_COUNT = re.compile(r'^(.*\S) x(\d+)$')


@functools.lru_cache(maxsize=256)
def _node_gpus(text):
    """(models, count) of a node's provenance ``gpu``, or None."""
    models, count = [], 0
    for part in text.split(','):
        found = _MODEL_COUNT.match(part.strip())
        if not found:
            return None
        models.append(found[1])
        count += int(found[2])
    return ' + '.join(sorted(set(models))), count


def hardware_of(case):
    """The Hardware a case's nodes recorded, or None."""
    prov = case.provenance if isinstance(case.provenance, dict) else {}
    per_node = set()
    for node in case.nodes or ('',):
        # one record for the job (the usual): no per-node walk
        gpu = records.of_node(prov, node).get('gpu') \
            if records.NODES in prov else prov.get('gpu')
        found = (_node_gpus(gpu) if gpu else None) or \
            _health_gpus(case.extras.get('health'))
        if found is None:
            return None
        per_node.add(found)
    if len(per_node) != 1:
        model = ' | '.join(f'{m} x{n}' for m, n in sorted(per_node))
        return Hardware(model, 0, len(case.nodes))
    model, count = per_node.pop()
    return Hardware(model, count, max(len(case.nodes), 1))


def _health_gpus(health):
    snap = getattr(health, 'before', None)
    if snap is None or snap.rc != 0 or not snap.gpus:
        return None
    models = {g.model for g in snap.gpus if isinstance(g.model, str)}
    return (' + '.join(sorted(models)), len(snap.gpus)) if models else None


def short_model(model):
    """'H100' of 'NVIDIA H100 80GB HBM3': the first word after the brand."""
    words = [w for w in model.split() if w not in _BRAND]
    return words[0] if words else model


def hardware_labels(configs):
    """{Hardware or None: label} where runs hold several configurations."""
    known = {h for h in configs if h is not None}
    if len(known) < 2:
        return {}
    shorts = {h.model: short_model(h.model) for h in known}
    unique = len(set(shorts.values())) == len(shorts)
    out = {h: h.label(shorts[h.model] if unique else None) for h in known}
    if None in configs:
        out[None] = NOT_RECORDED
    return out


def versions_of(cases, fixtures):
    """{id(case): the benchmark's version} its fixtures recorded."""
    by_name = {(f.session, f.name): f for f in fixtures}
    out = {}
    for case in cases:
        todo, seen = list(case.deps), set()
        while todo:
            name = todo.pop()
            f = by_name.get((case.session, name))
            if f is None or name in seen:
                continue
            seen.add(name)
            version = dict(f.attrs).get('version')
            if isinstance(version, str) and version:
                out[id(case)] = version
                break
            todo += f.deps
    return out


def build(samples, title='Cross-system comparison', cases=None,
          per_node=False, fixtures=()):
    """Aggregate ``samples`` and ``cases`` into a Table."""
    cases = list(dict.fromkeys(cases if cases is not None
                               else (s.case for s in samples)))
    splits = {}
    where = placed(cases, per_node, splits=splits)
    # column and measurement once per case, not per sample (millions)
    unit_of, groups = {}, {}
    for case, ss in _by_case(samples):
        col, test = where.get(id(case)) or placed([case], per_node, cases)[
            id(case)]
        units_of = unit_of.setdefault((case.benchmark, test), {})
        metrics = groups.setdefault((case.benchmark, test, col), {})
        for s in ss:
            # the usual sample: a metric seen before, in the same unit
            pairs = metrics.get(s.metric)
            if pairs is not None and units_of[s.metric] == s.unit:
                pairs.append((s.value, s))
                continue
            key, value, given = s.metric, s.value, s.unit
            unit = units_of.setdefault(key, given)
            if given != unit:
                try:
                    value = units.convert(value, given, unit)
                except ValueError:      # another family: a row of its own
                    key = (key, given)
            metrics.setdefault(key, []).append((value, s))
    table = Table(title, [], [], {})
    for col, configs in sorted(splits.items()):
        table.notes.append(
            f'{col}: runs on different hardware ({", ".join(configs)}, '
            f'from the GPUs each node recorded), shown in a column each and '
            f'never averaged; give each its own label (LABEL=REPORT) to '
            f'name them')
    runs, failed_of, versions = {}, {}, versions_of(cases, fixtures)
    for case in cases:
        col, test = where[id(case)]
        key = (case.benchmark, test, col)
        if case.result != 'skip':
            runs[key] = runs.get(key, 0) + 1
            if case.result != 'pass':
                failed_of.setdefault(key, []).append(case)
        table.checks.setdefault((case.benchmark, col), set()).add(case.check)
        if id(case) in versions:
            table.versions.setdefault((case.benchmark, col), set()).add(
                versions[id(case)])
    for (bench, test, col), metrics in groups.items():
        for key, pairs in metrics.items():
            metric, unit = (key, unit_of[(bench, test)][key]) \
                if isinstance(key, str) else key
            row = Row(bench, test, metric, unit)
            table.cells[(row, col)] = _cell(
                table, row, col, pairs, runs.get((bench, test, col), 0),
                failed_of.get((bench, test, col), []))
    # a column whose runs of a test failed without a figure still shows
    # that test's rows
    rows_of = {}
    for row, _ in table.cells:
        rows_of.setdefault((row.benchmark, row.test), set()).add(row)
    for (bench, test, col), got in failed_of.items():
        failed = len(got)
        for row in rows_of.get((bench, test), ()):
            if (row, col) not in table.cells:
                table.cells[(row, col)] = _judged(Cell(
                    [], runs=failed, failed_runs=failed, **_whence(got)))
    table.sort()
    table.cases = cases
    _cite_replays(table, cases, where)
    return table


def _cite_replays(table, cases, where):
    """Each replay column names the document its recordings come from."""
    for case in cases:
        doc = sources.REPLAYED_FROM.get(case.system) if case.replay else None
        col = where[id(case)][0]
        if doc is None or col in table.cited_by or col not in table.columns:
            continue
        table.cited_by[col] = doc
        if doc not in table.sources:
            table.sources.append(doc)
        table.notes.append(f'{col}: the example outputs printed in '
                           f'{doc.short} replayed through the checks; its '
                           f'cells say whether they reproduce the figures '
                           f'that document publishes')


def placed(cases, per_node=False, among=None, splits=None):
    """{id(case): (column, measurement label)} of ``cases`` among ``among``."""
    cases = list(cases)
    among = cases if among is None else list(among) + cases
    # the runs of one test in one column are many: each kind once
    first = {}
    for c in among:
        first.setdefault(_kind(c, per_node), c)
    kinds = list(first.values())
    column, label = columns(kinds, per_node, splits), measures.labels(kinds)
    place = {k: (column[c], label[c]) for k, c in first.items()}
    return {id(c): place[_kind(c, per_node)] for c in cases}


def _kind(case, per_node):
    """What decides a case's column and measurement label."""
    return (case.label, case.system, case.hostname, case.replay,
            case.partition, per_node and case.nodes, case.benchmark,
            case.check, case.params, case.fields, hardware_of(case))


def _by_case(samples):
    """[(case, [its samples])], oldest case first."""
    runs = [list(ss) for _, ss in itertools.groupby(
        samples, key=lambda s: id(s.case))]
    return sorted(((ss[0].case, ss) for ss in runs),
                  key=lambda group: group[0].time)


def _cell(table, row, col, pairs, runs, failed_runs):
    """The Cell of ``pairs`` ((value in the row's unit, Sample))."""
    # one pass: the values, the references judged by, runs outside theirs
    values, bounds, unreferenced, outside = [], set(), False, 0
    case = pairs[-1][1].case
    replay = case.replay
    judged_by = case.system if case.label and case.label != case.system \
        else ''
    for value, s in pairs:
        values.append(value)
        verdict = judgement.outcome(s)
        if verdict is None:
            unreferenced = True
            continue
        bounds.add((s.reference, s.lower, s.upper))
        outside += verdict == FAIL
    # None for ReFrame's default (0, None, None): the run had no reference
    latest = judgement.Band.of_sample(pairs[-1][1])
    if len(bounds) + unreferenced > 1:
        shown = 'none' if latest is None else f'{latest.reference:g}'
        table.notes.append(
            f'{col}, {row.test} {row.metric}: the runs were judged '
            f'against {len(bounds) + unreferenced} different references; '
            f'the latest, {shown}, is used')
    ref = None if latest is None else Reference(
        units.convert(latest.reference, pairs[-1][1].unit, row.unit),
        latest.lower, latest.upper)
    used = {s.case for _, s in pairs}
    # a run failed here: failed without this figure, or outside its bounds
    failed = sum(1 for c in failed_runs if c not in used)
    if replay or judged_by:
        # out of another file's or a document's band: no failure of this
        # system (a run that failed without a figure is)
        outside = 0
    gpus, nodes = collective_layout(used) or (gpus_used(used), None)
    models = sorted({h.model for h in map(hardware_of, used) if h})
    return _judged(Cell(values, ref, diagnostic=_diagnostic(pairs),
                        runs=max(runs, len(pairs)),
                        failed_runs=failed + outside, replay=replay,
                        judged_by=judged_by, gpus=gpus, nodes=nodes,
                        gpu_model=' | '.join(models), **_whence(used)))


def _whence(cases):
    """A Cell's ``latest`` and ``inputs`` of the runs ``cases``."""
    return {'latest': max(c.time for c in cases),
            'inputs': tuple(sorted({os.path.basename(c.source)
                                    for c in cases}))}


_GPU_COUNT = re.compile(r' x(\d+)$')


def collective_layout(cases):
    """(GPUs, nodes) of a collective's runs; None for other benchmarks."""
    for case in sorted(cases, key=lambda c: c.time, reverse=True):
        data = case.plot_data or {}
        if plotdata.CURVES not in data:
            return None
        ranks = data.get(plotdata.RANKS)
        if isinstance(ranks, dict) and all(
                isinstance(ranks.get(k), int) and ranks[k] > 0
                for k in ('devices', 'hosts')):
            return ranks['devices'], ranks['hosts']
        fields, attrs = dict(case.fields), dict(case.attrs)
        if fields.get('mode') == 'rank_per_gpu' and isinstance(
                attrs.get('num_tasks'), int) and isinstance(
                fields.get('num_nodes'), int):
            # one rank per GPU: the job's ranks are its GPUs
            return attrs['num_tasks'], fields['num_nodes']
        gpu = _GPU_COUNT.search((case.provenance or {}).get('gpu') or '')
        if gpu and case.nodes and not case.replay:
            return int(gpu[1]) * len(case.nodes), len(case.nodes)
        return None, 0          # a collective that recorded neither
    return None


def drawn_reference(cell):
    """The reference a figure may draw for ``cell``, or None if unjudged."""
    if cell.reference is None or cell.judged_by or cell.verdict not in (
            PASS, FAIL, REPRODUCES, DIFFERS):
        return None
    return cell.reference


def vacuous(cell):
    """A diagnostic figure that is 0 in every run: nothing measured."""
    return bool(cell.diagnostic) and bool(cell.values) and \
        not any(cell.values)


def scope(row):
    """What one figure of ``row`` is of: GPU, GPU pair, node or job."""
    if '@' in row.metric or row.test.startswith('GPU, every GPU'):
        return 'per GPU'
    if re.search(r'gpu\d+_to_gpu\d+$', row.metric):
        return 'per GPU pair'
    if WHOLE_NODE.search(row.metric) or row.test.startswith('CPU'):
        return 'per node'
    return ''


_GPU = re.compile(r'\bGPU (\d+)\b')


def gpus_used(cases):
    """How many GPUs the runs' recorded components name, or None."""
    found = set()
    for case in cases:
        for text in (case.extras or {}).get('components', {}).values():
            found.update(int(n) for n in _GPU.findall(text))
            slowest = re.search(r'the slowest of (\d+)', text)
            if slowest:
                found.update(range(int(slowest[1])))
    return len(found) or None


#: whole-node figures: also per GPU where columns' GPU counts differ
WHOLE_NODE = re.compile(r'^aggregate_')


def _diagnostic(pairs):
    """The check's reason where every run declared a diagnostic, else ''."""
    reasons = set()
    for _, s in pairs:
        why = (s.case.extras.get('unjudged') or {}).get(s.metric) \
            if isinstance(s.case.extras.get('unjudged'), dict) else None
        if not isinstance(why, str) or not why.startswith('diagnostic'):
            return ''
        # the reference file's own words are a citation, not a reason
        reasons.add('diagnostic: left out on purpose by the system\'s '
                    'reference file' if 'explicitly absent' in why else why)
    return reasons.pop() if len(reasons) == 1 else \
        ('diagnostic' if reasons else '')


def _judged(cell):
    if cell.failed_runs or not cell.values:
        cell.verdict = FAIL
    elif cell.reference is not None:
        verdict = PASS if cell.reference.passes(cell.mean) else FAIL
        if cell.judged_by:
            verdict = NOT_ITS_OWN
        elif cell.replay:
            verdict = REPRODUCES if verdict == PASS else DIFFERS
        cell.verdict = verdict
    return cell
