"""Datasheet bounds: a GPU figure no reference file judges, judged by its
model's published peak (``references/hardware/datasheets.yaml``).

A node nobody has calibrated has no reference for its GPU figures; its
vendor's datasheet still says what the hardware can do.  Each bound is a
fraction of a peak (HBM, the host link, a GPU pair's link), far below
what a healthy node reaches, so that a GPU at a fraction of its datasheet
fails on day one.  The model is the run's own record of its node: the
health record's GPU list, else the provenance's ``gpu`` where it names a
single model.  Reference files always win (hpcval.verdict_refs).
"""
import functools
import math
import os
import re
from dataclasses import dataclass

import yaml

from hpcval import paths, units

PEAKS = ('hbm', 'host_link', 'gpu_pair')
_GPU = re.compile(r'\bGPU (\d+)\b')
_SUFFIX = re.compile(r'gpu(\d+)')
_PROVENANCE = re.compile(r'(.+) x(\d+)')


class DatasheetError(ValueError):
    """The datasheet file is not as docs/references.md describes it."""


@dataclass(frozen=True)
class Peak:
    """One published peak of a model and the bound drawn from it."""
    model: str
    what: str
    peak: float
    unit: str
    fraction: float
    sources: tuple

    def band(self, unit):
        """(reference, lower, upper) in ``unit``: the peak, down to
        ``fraction`` of it; ValueError for a unit of another family."""
        return units.convert(self.peak, self.unit, unit), \
            round(self.fraction - 1, 12), None

    def text(self):
        """'datasheet: H100 SXM5 HBM3 3.35 TB/s x 0.70'."""
        return (f'datasheet: {self.model} {self.what} {self.peak:g} '
                f'{self.unit} x {self.fraction:.2f}')


@dataclass(frozen=True)
class Model:
    name: str
    match: tuple            # compiled patterns of the tool's names
    peaks: dict             # PEAKS key: Peak


class Datasheets:
    """The models, and which figures each of their peaks judges."""

    def __init__(self, data, path):
        self.path = path
        _keys(data, {'sources', 'figures', 'models'}, path)
        sources = data.get('sources')
        if not isinstance(sources, dict) or not sources:
            raise DatasheetError(f'{path}: sources: a non-empty mapping')
        self.sources = sources
        self.figures = [_figure(f, i, path)
                        for i, f in enumerate(_list(data, 'figures', path))]
        self.models = [_model(m, i, path, sources)
                       for i, m in enumerate(_list(data, 'models', path))]
        # a verdict asks per figure: by name, never by case
        self._models, self._kinds = {}, {}

    def model(self, name):
        """The Model whose names include ``name``, or None."""
        if name not in self._models:
            self._models[name] = next(
                (m for m in self.models
                 if any(p.fullmatch(name) for p in m.match)), None)
        return self._models[name]

    def peak_kind(self, lineage, metric):
        """Which peak judges ``metric`` of a check whose class and base
        classes are ``lineage`` (hpcval.verdict_refs.lineage), or None."""
        key = (lineage, metric)
        if key not in self._kinds:
            self._kinds[key] = next(
                (kind for checks, patterns, kind in self.figures
                 if checks & set(lineage) and
                 any(p.fullmatch(metric) for p in patterns)), None)
        return self._kinds[key]

    def expected(self, lineage, case, metric, gpus=None):
        """The Peak that judges ``metric`` of ``case``, or None: a figure
        no rule names, a GPU whose model is not known or not here, or
        GPUs of different models.  ``gpus``: ``gpu_models(case)``, where
        the caller has it."""
        base, _, gpu = metric.partition('@')
        kind = self.peak_kind(lineage, base)
        if kind is None:
            return None
        names = _models_of(gpus or gpu_models(case),
                           _indices(case, metric, gpu))
        if len(names) != 1:
            return None
        model = self.model(names.pop())
        return model.peaks.get(kind) if model else None


def _indices(case, metric, gpu):
    """{N} of the GPUs ``metric`` measures: its '@gpuN', else those its
    component names ('GPU 2 (the slowest of 4)', 'link GPU 00 -> GPU
    01'); empty where it measures the node's GPUs together."""
    m = _SUFFIX.fullmatch(gpu)
    if m:
        return {int(m.group(1))}
    comps = case.extras.get('components')
    comp = comps.get(metric) if isinstance(comps, dict) else None
    if not isinstance(comp, str):
        return set()
    # 'GPU 2 (the slowest of 4)': the GPU named first
    if ' -> ' not in comp:
        found = _GPU.search(comp)
        return {int(found.group(1))} if found else set()
    return {int(n) for n in _GPU.findall(comp)}


def gpu_models(case):
    """({index: model} of the GPUs ``case``'s health record lists, the
    one model its provenance names or None)."""
    rec = case.extras.get('health')
    before = getattr(rec, 'before', None)
    listed = {g.index: g.model for g in getattr(before, 'gpus', ())
              if isinstance(getattr(g, 'model', None), str)}
    prov = case.extras.get('provenance')
    gpu = prov.get('gpu') if isinstance(prov, dict) else None
    # 'NVIDIA H100 80GB HBM3 x4'; two models are 'A x2, B x2'
    m = _PROVENANCE.fullmatch(gpu) if isinstance(gpu, str) else None
    return listed, m.group(1) if m and ', ' not in gpu else None


def _models_of(gpus, indices):
    """{model name} of the GPUs ``indices`` (all where empty), as the
    health record lists them, else as the provenance names the one
    model of the node (``gpus``: gpu_models')."""
    listed, named = gpus
    if listed and all(i in listed for i in indices):
        return {listed[i] for i in indices} if indices \
            else set(listed.values())
    return {named} if named else set()


def _keys(data, allowed, where):
    if not isinstance(data, dict):
        raise DatasheetError(f'{where}: a mapping')
    unknown = set(data) - allowed
    if unknown:
        raise DatasheetError(f'{where}: unknown key(s) '
                             f'{", ".join(sorted(map(str, unknown)))}')


def _list(data, key, path):
    value = data.get(key)
    if not isinstance(value, list) or not value:
        raise DatasheetError(f'{path}: {key}: a non-empty list')
    return value


def _patterns(values, where):
    if not isinstance(values, list) or not values or \
            not all(isinstance(v, str) and v for v in values):
        raise DatasheetError(f'{where}: a non-empty list of names')
    try:
        return tuple(re.compile(v, re.IGNORECASE) for v in values)
    except re.error as err:
        raise DatasheetError(f'{where}: {err}') from None


def _figure(fig, i, path):
    where = f'{path}: figures[{i}]'
    _keys(fig, {'checks', 'metrics', 'peak'}, where)
    checks = fig.get('checks')
    if not isinstance(checks, list) or not checks or \
            not all(isinstance(c, str) and c for c in checks):
        raise DatasheetError(f'{where}.checks: a non-empty list of names')
    if fig.get('peak') not in PEAKS:
        raise DatasheetError(f'{where}.peak: one of {", ".join(PEAKS)}')
    return (frozenset(checks), _patterns(fig.get('metrics'),
                                         f'{where}.metrics'), fig['peak'])


def _model(model, i, path, sources):
    where = f'{path}: models[{i}]'
    _keys(model, {'name', 'match', *PEAKS}, where)
    name = model.get('name')
    if not isinstance(name, str) or not name:
        raise DatasheetError(f'{where}.name: a non-empty string')
    peaks = {k: _peak(model[k], name, f'{where}.{k}', sources)
             for k in PEAKS if k in model}
    if not peaks:
        raise DatasheetError(f'{where}: no peak ({", ".join(PEAKS)})')
    return Model(name, _patterns(model.get('match'), f'{where}.match'),
                 peaks)


def _peak(peak, model, where, sources):
    _keys(peak, {'what', 'peak', 'unit', 'fraction', 'sources'}, where)
    what, value, unit = peak.get('what'), peak.get('peak'), peak.get('unit')
    fraction, cited = peak.get('fraction'), peak.get('sources')
    if not isinstance(what, str) or not what:
        raise DatasheetError(f'{where}.what: a non-empty string')
    for key, number in (('peak', value), ('fraction', fraction)):
        if isinstance(number, bool) or not isinstance(number, (int, float)) \
                or not math.isfinite(number) or number <= 0:
            raise DatasheetError(f'{where}.{key}: a finite number > 0')
    # a bound above the peak would fail every healthy node
    if fraction > 1:
        raise DatasheetError(f'{where}.fraction: at most 1')
    try:
        units.family(unit)
    except ValueError as err:
        raise DatasheetError(f'{where}.unit: {err}') from None
    if not isinstance(cited, list) or not cited or \
            not all(c in sources for c in cited):
        raise DatasheetError(f'{where}.sources: a non-empty list of keys '
                             f'of sources')
    return Peak(model, what, float(value), unit, float(fraction),
                tuple(cited))


def default_path():
    return os.path.join(paths.references_dir(), 'hardware',
                        'datasheets.yaml')


def load(path=None):
    """The Datasheets of ``path`` (default: the built-in file); an
    unreadable or malformed file is a DatasheetError: never judged
    without."""
    return _load(path or default_path())


@functools.lru_cache(maxsize=4)
def _load(path):
    try:
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as err:
        raise DatasheetError(f'{path}: cannot read: {err}') from None
    return Datasheets(data, path)
