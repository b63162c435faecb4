"""The bounds every reader of a report judges by: the references', not
the report's.

A run report carries the bound ReFrame applied to each figure, copied
from whatever references that run had.  Loading a report with a
hpcval.references.ReferenceSet (``results.load(..., bounds=...)``: the
files given with ``--references``, else the installed ones with the site
layer) re-bands each figure by it, matched to the test case as a run
matches them to a test (hpcval.references.applies: class and base
classes, partition, ``where`` attributes as the report recorded them).
The report's bound is a cross-check: where it differs, one ``Cross`` per
figure says both and which judged, in the same words for the verdict
and the comparison table.

- bounds agree: the figure is judged as recorded (ReFrame's own
  per-figure result included);
- a reference, and the report's bound differs or is absent: the
  reference's band judges (ReFrame's per-figure result was against the
  other bound and is not used; a case ReFrame failed stays failed);
- no reference (none, or explicitly absent), and the report has a bound:
  nothing judges the figure (logged, so the run is incomplete): a bound
  that is in no reference file is not trusted;
- a member's figure against its siblings on the node
  (``*_vs_siblings@*``, hpcval.peers) without a reference entry: the band
  its run recorded, where the peer rule could have made it, else the
  rule's loosest (``peers.trusted_band``);
- in the verdict (``with_datasheets``): no entry for it, and the
  datasheet of the node's GPU model has a bound for it
  (hpcval.datasheets): that bound judges, per GPU.
"""
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
        if self.judged_by == DATASHEET:
            return (f'{self.test}: {self.metric}: report bound '
                    f'{self.report_bound}; references none (no entry for '
                    f'it); {self.reference_bound} ({self.source}): the '
                    f'datasheet judged it')
        by = 'the references judged it' if self.judged_by == REFERENCES \
            else 'not judged (a bound in no reference file is not trusted)'
        return (f'{self.test}: {self.metric}: report bound '
                f'{self.report_bound}; references {self.reference_bound} '
                f'({self.source}): {by}')


def lineage(case):
    """``case``'s class and its bases' names, nearest first, as its run
    recorded them (hpcval_lineage), else its class alone."""
    found = case.extras.get('lineage')
    if isinstance(found, list) and found and \
            all(isinstance(n, str) for n in found):
        return tuple(found)
    return (case.check,)


def _same(a, b):
    return a == b or (isinstance(a, float) and isinstance(b, float) and
                      math.isclose(a, b, rel_tol=1e-9))


class Bounds:
    """Which bound judges each figure of a test case, by the
    hpcval.references.ReferenceSet ``refs``."""

    def __init__(self, refs):
        self.refs = refs
        self._entries = {}      # case key: _CaseJudge

    def of_case(self, case):
        """``judge(s, case)`` of ``case``'s figures: ``s`` where the
        report's bound agrees with the references' or neither judges,
        else (the sample to judge, its Cross, why it is unjudged or
        None).  One per distinct test (class, partition, parameters,
        attributes): its entries found once, each figure's bound decided
        once per band."""
        key = (case.system, case.partition, case.check, case.params,
               case.fields, case.attrs)
        judge = self._entries.get(key)
        if judge is None:
            applying = self.refs.matching(
                case.system, lineage(case), case.partition,
                {**dict(case.params), **dict(case.fields), **dict(case.attrs)})
            judge = self._entries[key] = _CaseJudge(self, applying,
                                                    case.system)
        return judge

    def apply(self, case, s, decision):
        """(the sample to judge, its Cross, why unjudged) of a figure whose
        report bound is not the references' (``decision``: decide's)."""
        band, bound, source, why, report = decision
        if band is None and not report:     # neither judges: as recorded
            return s
        value, lower, upper = band or (None, None, None)
        judged = msgspec.structs.replace(
            s, reference=value, lower=lower, upper=upper, result=None)
        return judged, Cross(case.test, s.metric, report or 'none', bound,
                             source, NONE if band is None else REFERENCES), \
            why if band is None else None

    def decide(self, system, ref, s):
        """(band, its text, its source, why unjudged, the report's bound
        text): band is REPORT where the report's agrees, a (value, lower,
        upper) tuple where the reference's judges, or None."""
        recorded = Band.of_sample(s)
        report = recorded.bound_text() if recorded else ''
        path = self.refs.files.get(system, f'no reference file for {system}')
        if ref is None and peers.is_sibling_figure(s.metric):
            band = peers.trusted_band(s.reference, s.lower, s.upper)
            if band == (s.reference, s.lower, s.upper):
                return REPORT, '', '', None, report
            return (band, Band.of(*band, s.unit).bound_text(),
                    'the sibling rule (hpcval.peers)', None, report)
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

def _datasheet(sheets, case, gpus, s, report):
    """(the sample judged by the datasheet of ``case``'s GPU model, its
    Cross) where that datasheet has a bound for ``s``, else None;
    ``gpus``: datasheets.gpu_models(case); ``report``: the report's
    bound as text, '' where none."""
    peak = sheets.expected(lineage(case), case, s.metric, gpus)
    if peak is None:
        return None
    try:
        band = peak.band(s.unit)
    except ValueError:      # a figure in another unit family
        return None
    judged = msgspec.structs.replace(
        s, reference=band[0], lower=band[1], upper=band[2], result=None)
    return judged, Cross(case.test, s.metric, report or 'none',
                         Band.of(*band, s.unit).bound_text(),
                         peak.text(), DATASHEET,
                         peak=f'{peak.model} {peak.what}')


def with_datasheets(loaded, sheets=None):
    """Each figure of ``loaded`` (re-banded by ``loaded.references``)
    that no reference has an entry for, judged by the datasheet of its
    node's GPU model where it has a bound for it; an entry, even one
    that says the figure has no reference, wins.  The verdict's, not the
    comparison's: a table cell says whose references judged it."""
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
            cross = (loaded.rebanded.get(id(s)) or (None,))[0]
            got = _datasheet(sheets, case, gpus, s, cross.report_bound
                             if cross and cross.report_bound != 'none'
                             else '')
            if got is not None:
                loaded.rebanded.pop(id(s), None)
                samples[i] = got[0]
                loaded.rebanded[id(got[0])] = (got[1], None)
                changed = True
    if changed:
        loaded.samples = [s for c in loaded.cases
                          for s in by_case.get(id(c), ())]


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
            decision = self.decided[key] = self.bounds.decide(
                self.system, self.refs.get(
                    metric.partition('@')[0] if '@' in metric else metric),
                s)
        if decision[0] is REPORT:
            return s
        return self.bounds.apply(case, s, decision)


def peer_factors(refs):
    """factor(case, metric) of a node screen (hpcval.screen): how many
    times worse than its peers' median a node's figure fails, where the
    system's references give ``<metric>_vs_peers`` (value 1, unit x,
    ``lower``: -0.75 for x4), else None (the figure kind's floor)."""
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

