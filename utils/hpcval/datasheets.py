"""Datasheet bounds: a GPU figure no reference file judges (they always win),
judged by its model's published peak (references/hardware/datasheets.yaml)."""
import functools
import os
import re
from dataclasses import dataclass

from hpcval import paths, references, units
from hpcval.references import _fail, _mapping, _number, _shown, _text

PEAKS = ('hbm', 'host_link', 'gpu_pair', 'fp32')
_GPU = re.compile(r'\bGPU (\d+)\b')
_SUFFIX = re.compile(r'gpu(\d+)')
_PROVENANCE = re.compile(r'(.+) x(\d+)')


# the file is read and checked as a reference file is, its errors naming
# the file and key (docs/references.md)
DatasheetError = references.ReferenceFileError


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
        """(reference, lower, upper) in ``unit``, or ValueError."""
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
        _mapping(path, 'top level', data, {'sources', 'figures', 'models'})
        sources = data.get('sources')
        if not isinstance(sources, dict) or not sources:
            _fail(path, 'sources', 'must be a non-empty mapping')
        self.sources = sources
        self.figures = [_figure(path, f'figures[{i}]', f) for i, f in
                        enumerate(_list(path, 'figures', data.get('figures')))]
        self.models = [_model(path, f'models[{i}]', m, sources) for i, m in
                       enumerate(_list(path, 'models', data.get('models')))]

    @functools.cache        # a verdict asks per figure: by name, not case
    def model(self, name):
        """The Model whose names include ``name``, or None."""
        return next((m for m in self.models
                     if any(p.fullmatch(name) for p in m.match)), None)

    @functools.cache
    def peak_kind(self, lineage, metric, params=()):
        """The peak judging ``metric`` of a check by lineage and params."""
        values = {k: str(v) for k, v in params}
        return next((kind for checks, patterns, wanted, kind in self.figures
                     if checks & set(lineage) and
                     wanted.items() <= values.items() and
                     any(p.fullmatch(metric) for p in patterns)), None)

    def expected(self, lineage, case, metric, gpus):
        """The Peak judging ``metric`` of ``case`` (one GPU model), or None."""
        base, _, gpu = metric.partition('@')
        kind = self.peak_kind(lineage, base, tuple(case.params))
        if kind is None:
            return None
        names = _models_of(gpus, _indices(case, metric, gpu))
        if len(names) != 1:
            return None
        model = self.model(names.pop())
        return model.peaks.get(kind) if model else None


def _indices(case, metric, gpu):
    """{N} of the GPUs ``metric`` measures; empty for the node's together."""
    m = _SUFFIX.fullmatch(gpu)
    if m:
        return {int(m.group(1))}
    comps = case.extras.get('components')
    return gpu_indices([comps.get(metric)]) if isinstance(comps, dict) \
        else set()


def gpu_indices(names):
    """{N} of the GPUs named in ``names`` ('GPU 1', 'link GPU 0 -> GPU 1')."""
    return {int(n) for name in names if isinstance(name, str)
            for n in _GPU.findall(name)}


def gpu_models(case):
    """({index: model} of the health record's GPUs, provenance's one model)."""
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
    """{model name} of the GPUs ``indices`` (all where empty)."""
    listed, named = gpus
    if listed and all(i in listed for i in indices):
        return {listed[i] for i in indices} if indices \
            else set(listed.values())
    return {named} if named else set()


def _list(path, key, val, names=False):
    """``val``, a non-empty list (of non-empty strings where ``names``)."""
    if not isinstance(val, list) or not val or names and \
            not all(isinstance(v, str) and v for v in val):
        _fail(path, key, f'must be a non-empty list'
                         f'{" of names" if names else ""}, got {_shown(val)}')
    return val


def _patterns(path, key, val):
    try:
        return tuple(re.compile(v, re.IGNORECASE)
                     for v in _list(path, key, val, names=True))
    except re.error as err:
        _fail(path, key, str(err))


def _figure(path, key, fig):
    _mapping(path, key, fig, {'checks', 'metrics', 'params', 'peak'})
    if fig.get('peak') not in PEAKS:
        _fail(path, f'{key}.peak', f'one of {", ".join(PEAKS)}')
    # a check's parameters pick the peak (gpu-burn's precision)
    params = fig.get('params', {})
    if not isinstance(params, dict) or not all(
            isinstance(v, str) for v in params.values()):
        _fail(path, f'{key}.params', 'must map parameter names to text')
    return (frozenset(_list(path, f'{key}.checks', fig.get('checks'),
                            names=True)),
            _patterns(path, f'{key}.metrics', fig.get('metrics')),
            params, fig['peak'])


def _model(path, key, model, sources):
    _mapping(path, key, model, {'name', 'match', *PEAKS})
    name = _text(path, f'{key}.name', model.get('name'))
    peaks = {k: _peak(path, f'{key}.{k}', model[k], name, sources)
             for k in PEAKS if k in model}
    if not peaks:
        _fail(path, key, f'no peak ({", ".join(PEAKS)})')
    return Model(name, _patterns(path, f'{key}.match', model.get('match')),
                 peaks)


def _peak(path, key, peak, model, sources):
    _mapping(path, key, peak, {'what', 'peak', 'unit', 'fraction',
                               'sources'})
    value, fraction = (
        _number(path, f'{key}.{k}', peak.get(k), allow_null=False)
        for k in ('peak', 'fraction'))
    for k, number in (('peak', value), ('fraction', fraction)):
        if number <= 0:
            _fail(path, f'{key}.{k}', f'must be > 0, got {number}')
    # a bound above the peak would fail every healthy node
    if fraction > 1:
        _fail(path, f'{key}.fraction', 'at most 1')
    unit = _text(path, f'{key}.unit', peak.get('unit'))
    try:
        units.family(unit)
    except ValueError as err:
        _fail(path, f'{key}.unit', str(err))
    cited = _list(path, f'{key}.sources', peak.get('sources'), names=True)
    if not all(c in sources for c in cited):
        _fail(path, f'{key}.sources', 'must be keys of sources')
    return Peak(model, _text(path, f'{key}.what', peak.get('what')), value,
                unit, fraction, tuple(cited))


def default_path():
    return os.path.join(paths.references_dir(), 'hardware',
                        'datasheets.yaml')


def load(path=None):
    """The Datasheets of ``path`` (default: built-in), else DatasheetError."""
    return _load(path or default_path())


@functools.lru_cache(maxsize=4)
def _load(path):
    try:
        data = references.parse(references._read(path), path)
    except DatasheetError as err:
        raise DatasheetError(f'{path}: cannot read: '
                             f'{str(err).removeprefix(f"{path}: ")}'
                             ) from None
    return Datasheets(data, path)
