"""The bounds every reader of a report judges by: the references', not
the report's, whose bound is a cross-check, one ``Cross`` where it differs
(docs/verdict.md has the rule and its exceptions)."""
import functools
import math
from dataclasses import dataclass

import msgspec

from hpcval import datasheets, judgement, peers
from hpcval.judgement import Band

REPORT, REFERENCES, NONE = 'report', 'references', 'none'
DATASHEET = 'datasheet'


@dataclass
class Cross:
    """A figure whose report bound differs from its reference's."""
    test: str
    metric: str
    report_bound: str        # 'none' where the report has none
    reference_bound: str     # 'none (why)' where no reference judges
    source: str              # the reference file and entry, or the file
    judged_by: str           # REFERENCES, DATASHEET or NONE
    node: str = ''           # the verdict's name of the case's node(s)
    peak: str = ''           # the datasheet's model and peak that judged

    def line(self):
        refs, by = self.reference_bound, (
            'the references judged it' if self.judged_by == REFERENCES
            else 'not judged (a bound in no reference file is not trusted)')
        if self.judged_by == DATASHEET:
            refs, by = (f'none (no entry for it); {self.reference_bound}',
                        'the datasheet judged it')
        return (f'{self.test}: {self.metric}: report bound '
                f'{self.report_bound}; references {refs} ({self.source}): '
                f'{by}')


def lineage(case):
    """``case``'s class and its bases' names, nearest first, as recorded."""
    found = case.extras.get('lineage')
    if isinstance(found, list) and found and \
            all(isinstance(n, str) for n in found):
        return tuple(found)
    return (case.check,)


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and
                      math.isclose(a, b, rel_tol=1e-9))


class Bounds:
    """Which bound judges each figure of a test case, by the references."""

    def __init__(self, refs):
        self.refs = refs
        self._entries = {}      # case key: _CaseJudge

    def of_case(self, case):
        """``judge(s, case)``: ``s``, or (sample, Cross, why unjudged)."""
        key = (case.system, case.partition, case.check, case.params,
               case.fields, case.attrs)
        judge = self._entries.get(key)
        if judge is None:
            applying = self.refs.matching(
                case.system, lineage(case), case.partition,
                {**dict(case.params), **dict(case.fields), **dict(case.attrs)})
            judge = self._entries[key] = _CaseJudge(
                applying, self.refs.files.get(
                    case.system, f'no reference file for {case.system}'))
        return judge


class _CaseJudge:
    """Bounds.of_case's judge of the test cases of one test."""
    __slots__ = ('refs', 'path', 'decided')

    def __init__(self, refs, path):
        self.refs, self.path = refs, path
        self.decided = {}       # (metric, unit, report band): decision

    def __call__(self, s, case):
        key = (s.metric, s.unit, s.reference, s.lower, s.upper)
        decision = self.decided.get(key)
        if decision is None:
            decision = self.decided[key] = _decide(
                self.path, self.refs.get(s.metric.partition('@')[0]), s)
        band, bound, source, why, report = decision
        if band is REPORT or (band is None and not report):
            return s        # as recorded: the same bound, or none judges
        value, lower, upper = band or (None, None, None)
        judged = msgspec.structs.replace(
            s, reference=value, lower=lower, upper=upper, result=None)
        return judged, Cross(case.test, s.metric, report or 'none', bound,
                             source, NONE if band is None else REFERENCES), \
            why if band is None else None


def _decide(path, ref, s):
    """(band, REPORT or None; its text, source, why unjudged, report's)."""
    recorded = Band.of_sample(s)
    report = recorded.bound_text() if recorded else ''
    if ref is None and peers.is_sibling_figure(s.metric):
        band = peers.trusted_band(s.reference, s.lower, s.upper)
        if band == (s.reference, s.lower, s.upper):
            return REPORT, '', '', None, report
        return (band, Band.of(*band, s.unit).bound_text(),
                'the sibling rule (hpcval.peers)', None, report)
    if ref is None:
        return None, 'none (no entry for it)', path, \
            f'no reference in {path}', report
    if ref.value is None:
        return None, 'none (explicitly absent)', path, \
            f'diagnostic: explicitly absent in {path}', report
    origin = ref.origin
    source = f'{origin.path} entries[{origin.entry}]' if origin \
        else f'{path} entries[{ref.entry}]'
    try:
        value = ref.as_tuple(s.unit)[0]
    except ValueError as err:
        return None, f'none ({err})', source, \
            f'its reference in {source} is in another unit: {err}', report
    # a reference has a bound on some side (references._metric)
    band = Band.of(value, ref.lower, ref.upper, s.unit)
    if recorded is not None and _same(s.reference, value) and \
            s.lower == ref.lower and s.upper == ref.upper:
        return REPORT, '', '', None, report
    return ((value, ref.lower, ref.upper), band.bound_text(), source,
            None, report)


def with_datasheets(loaded, sheets=None):
    """Judge each figure no reference has an entry for by its GPU datasheet."""
    refs, by_case = getattr(loaded, 'references', None), \
        getattr(loaded, 'by_case', None)
    if refs is None or not by_case:
        return
    try:
        sheets = sheets or datasheets.load()
    except datasheets.DatasheetError as err:
        # never judged without it: an input the verdict lacks (exit 3)
        loaded.problems.append(f'{err}: GPU figures no reference has an '
                               f'entry for are not judged by it')
        return
    bounds, changed = Bounds(refs), False
    for case in loaded.cases:
        samples, of_case = by_case.get(id(case)) or (), None
        gpus = datasheets.gpu_models(case)
        for i, s in enumerate(samples):
            if judgement.outcome(s) is not None or \
                    peers.is_sibling_figure(s.metric):
                continue
            of_case = of_case or bounds.of_case(case)
            if of_case.refs.get(s.metric.partition('@')[0]) is not None:
                continue
            peak = sheets.expected(lineage(case), case, s.metric, gpus)
            try:
                band = peak.band(s.unit) if peak else None
            except ValueError:      # a figure in another unit family
                band = None
            if band is None:
                continue
            cross = (loaded.rebanded.pop(id(s), None) or (None,))[0]
            samples[i] = msgspec.structs.replace(
                s, reference=band[0], lower=band[1], upper=band[2],
                result=None)
            loaded.rebanded[id(samples[i])] = (Cross(
                case.test, s.metric, cross.report_bound if cross else 'none',
                Band.of(*band, s.unit).bound_text(), peak.text(), DATASHEET,
                peak=f'{peak.model} {peak.what}'), None)
            changed = True
    if changed:
        loaded.samples = [s for c in loaded.cases
                          for s in by_case.get(id(c), ())]


def peer_factors(refs):
    """factor(case, metric): the references' ``<metric>_vs_peers`` factor."""
    @functools.lru_cache(maxsize=None)
    def of(system, names, partition, params, fields, attrs, metric):
        ref = refs.matching(system, names, partition,
                            {**dict(params), **dict(fields),
                             **dict(attrs)}).get(f'{metric}_vs_peers')
        # any lower fraction short of -1 (a screen of shared cores
        # tolerates more than a node's siblings)
        return None if ref is None else Band(
            ref.value, ref.lower, ref.upper, ref.unit).peer_factor(1 - 1e-12)

    def factor(case, metric):
        if refs is None:
            return None
        return of(case.system, lineage(case), case.partition, case.params,
                  case.fields, case.attrs, metric)
    return factor
