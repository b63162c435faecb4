"""The bounds a verdict judges by: the references', not the report's.

A run report carries the bound ReFrame applied to each figure, copied
from whatever references that run had.  ``hpcval verdict`` judges each
figure by the references instead: the files given with ``--references``
(a file or folder), else the installed ones with the site layer
(hpcval.paths.references_dirs), matched to the test case as a run
matches them to a test (class and base classes, partition, ``where``
attributes as the report recorded them).  The report's bound is a
cross-check: where it differs, one ``Cross`` per figure says both and
which judged.

- bounds agree: the figure is judged as recorded (ReFrame's own
  per-figure result included);
- a reference, and the report's bound differs or is absent: the
  reference's band judges (ReFrame's per-figure result was against the
  other bound and is not used; a case ReFrame failed stays failed);
- no reference (none, or explicitly absent), and the report has a bound:
  nothing judges the figure (logged, so the run is incomplete): a bound
  that is in no reference file is not trusted.
"""
import ast
import functools
import glob
import math
import os
import stat
from dataclasses import dataclass

import msgspec

from hpcval import references
from hpcval.judgement import Band

REPORT, REFERENCES, NONE = 'report', 'references', 'none'


class Unusable(ValueError):
    """The references cannot be read; the message names the file."""


@dataclass
class Cross:
    """A figure whose report bound differs from its reference's."""
    test: str
    metric: str
    node: str
    report_bound: str        # 'none' where the report has none
    reference_bound: str     # 'none (why)' where no reference judges
    source: str              # the reference file and entry, or the file
    judged_by: str           # REFERENCES or NONE

    def line(self):
        by = 'the references judged it' if self.judged_by == REFERENCES \
            else 'not judged (a bound in no reference file is not trusted)'
        return (f'{self.test}: {self.metric}: report bound '
                f'{self.report_bound}; references {self.reference_bound} '
                f'({self.source}): {by}')


def load(given=()):
    """({system: [Reference]}, {system: the file read}) of the files or
    folders ``given``, else of the installed references and the site's
    (the last layer's file named)."""
    try:
        if not given:
            from hpcval import paths
            dirs = paths.references_dirs()
            return references.load_layered(dirs), {
                name[:-5]: os.path.join(d, name)
                for d in dirs for name in references._yaml_names(d)}
        out, files = {}, {}
        for path in given:
            if _kind(path) == 'folder':
                for name in references._yaml_names(path):
                    _kind(os.path.join(path, name), folder=False)
                for system, refs in references.load_dir(path).items():
                    out[system] = refs
                    files[system] = os.path.join(path, f'{system}.yaml')
            else:
                system = os.path.splitext(os.path.basename(path))[0]
                out[system], files[system] = references.load(path), path
        return out, files
    except references.ReferenceFileError as err:
        raise Unusable(str(err)) from None


def _kind(path, folder=True):
    """'folder' or 'file'; Unusable for anything else (a FIFO would block
    the verdict, a device never end)."""
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        raise Unusable(f'{path}: cannot read: {err.strerror}') from None
    if folder and stat.S_ISDIR(mode):
        return 'folder'
    if stat.S_ISREG(mode):
        return 'file'
    raise Unusable(f'{path}: not a reference file or folder (a FIFO, '
                   f'device or socket): not read')


def where_keys(by_system):
    """The test attributes the references' ``where`` match on (a name
    starting with _ is no attribute a report records)."""
    return sorted({k for refs in by_system.values() for r in refs
                   for k in r.where if not k.startswith('_')})


@functools.lru_cache(maxsize=None)
def _bases():
    """{class name: [base class names]} of the checks and hpcval's
    benchmarks, read (never imported) from their files."""
    from hpcval import reference_service
    here = os.path.dirname(os.path.abspath(__file__))
    files = [*(f for d in reference_service.checks_dirs() for f in (
               [d] if d.endswith('.py') else
               glob.glob(os.path.join(d, '*.py')))),
             *glob.glob(os.path.join(here, 'benchmarks', '*.py'))]
    bases = {}
    for path in files:
        try:
            with open(path, encoding='utf-8') as fp:
                tree = ast.parse(fp.read(), path)
        except (OSError, SyntaxError, ValueError):
            continue        # ReFrame names such a file when it loads it
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases.setdefault(node.name, [
                    b.id if isinstance(b, ast.Name) else b.attr
                    for b in node.bases
                    if isinstance(b, (ast.Name, ast.Attribute))])
    return bases


@functools.lru_cache(maxsize=None)
def lineage(check):
    """``check`` and its base classes' names, nearest first."""
    out, todo = [], [check]
    while todo:
        name = todo.pop(0)
        if name not in out:
            out.append(name)
            todo.extend(_bases().get(name, ()))
    return tuple(out)


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and
                      math.isclose(a, b, rel_tol=1e-9))


class Bounds:
    """Which bound judges each figure of a test case."""

    def __init__(self, by_system, files):
        self.by_system = by_system
        self.files = files
        self._entries = {}      # case key: _CaseJudge

    def _refs_of(self, case):
        """{metric: Reference} of the entries that apply to ``case``."""
        values = {**dict(case.params), **dict(case.fields),
                  **dict(case.attrs)}
        names = lineage(case.check)
        got = {}
        for ref in self.by_system.get(case.system, ()):
            if ref.check in names and \
                    ref.partition in ('*', case.partition) and \
                    all(k in values and str(values[k]) == str(v)
                        for k, v in ref.where.items()):
                got[ref.metric] = ref       # the last entry wins
        return got

    def judged(self, case, s):
        """``s`` where the report's bound agrees with the references';
        else (the sample to judge, a Cross or None, why it is unjudged or
        None) for the figure ``s`` of ``case``."""
        return self.of_case(case)(s, case)

    def of_case(self, case):
        """judged(case, s) as ``of_case(case)(s, case)``: one per distinct
        test (class, partition, parameters, attributes), its entries
        found once and each figure's bound decided once per band."""
        key = (case.system, case.partition, case.check, case.params,
               case.fields, case.attrs)
        judge = self._entries.get(key)
        if judge is None:
            judge = self._entries[key] = _CaseJudge(
                self, self._refs_of(case), case.system)
        return judge

    def apply(self, case, s, decision):
        """(the sample to judge, its Cross, why unjudged) of a figure whose
        report bound is not the references' (``decision``: _decide's)."""
        band, bound, source, why, report = decision
        if band is None:
            if not report:      # neither judges: as recorded
                return s, None, None
            judged = msgspec.structs.replace(
                s, reference=None, lower=None, upper=None, result=None)
            return judged, self._cross(case, s, NONE, bound, source,
                                       report), why
        judged = msgspec.structs.replace(
            s, reference=band[0], lower=band[1], upper=band[2], result=None)
        return judged, self._cross(case, s, REFERENCES, bound, source,
                                   report or 'none'), None

    @staticmethod
    def _cross(case, s, by, bound, source, report):
        from hpcval import verdict
        return Cross(case.test, s.metric, verdict.node_label(case), report,
                     bound, source, by)

    def _decide(self, system, ref, s):
        """(band, its text, its source, why unjudged, the report's bound
        text): band is REPORT where the report's agrees, a (value, lower,
        upper) tuple where the reference's judges, or None."""
        recorded = Band.of_sample(s)
        report = recorded.bound_text() if recorded else ''
        path = self.files.get(system, f'no reference file for {system}')
        if ref is None or ref.value is None:
            if ref is None:
                return None, 'none (no entry for it)', path, \
                    f'no reference in {path}', report
            return None, 'none (explicitly absent)', path, \
                f'diagnostic: explicitly absent in {path}', report
        origin = ref.origin
        source = f'{origin.path} entries[{origin.entry}]' if origin \
            else f'{path} entries[{ref.entry}]'
        try:
            value = ref.as_tuple(s.unit)[0]
        except ValueError as err:
            return None, f'none ({err})', source, \
                f'its reference in {source} is in another unit: {err}', \
                report
        band = Band.of(value, ref.lower, ref.upper, s.unit)
        if band is None:        # no bound on either side: judges nothing
            return None, 'none (unbounded)', source, \
                f'its reference in {source} has no bound', report
        if recorded is not None and _same(s.reference, value) and \
                s.lower == ref.lower and s.upper == ref.upper:
            return REPORT, '', '', None, report
        return ((value, ref.lower, ref.upper), band.bound_text(), source,
                None, report)


class _CaseJudge:
    """Bounds.judged for the test cases of one test."""
    __slots__ = ('bounds', 'refs', 'system', 'decided')

    def __init__(self, bounds, refs, system):
        self.bounds, self.refs, self.system = bounds, refs, system
        self.decided = {}       # (metric, unit, report band): decision

    def __call__(self, s, case):
        key = (s.metric, s.unit, s.reference, s.lower, s.upper)
        decision = self.decided.get(key)
        if decision is None:
            metric = s.metric
            decision = self.decided[key] = self.bounds._decide(
                self.system, self.refs.get(
                    metric.partition('@')[0] if '@' in metric else metric),
                s)
        if decision[0] is REPORT:
            return s
        return self.bounds.apply(case, s, decision)
