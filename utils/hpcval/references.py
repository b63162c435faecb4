"""Reference files: one YAML file per system under references/.

Schema (every key is checked; unknown keys are rejected so a typo such as
``uper`` cannot silently drop a bound)::

    system: local                 # must equal the file's stem
    description: ...              # what machine the numbers describe
    rules:                        # named tolerance rules, cited by entries
      floor: "..."                # text: how lower/upper were derived
    entries:
      - check: Mpi4pyPingPongCheck    # test class name
        partition: '*'                # optional: partition name or '*'
        where: {placement: on_node}   # optional: test attributes to match
        # absent: "why no figure"     # instead of metrics: none is judged
        metrics:
          latency_8B:
            value: 5.0                # null = explicitly no reference
            lower: null               # fraction (<= 0) or null: unbounded
            upper: 1.0                # fraction (>= 0) or null: unbounded
            unit: us
            rule: floor               # a key of ``rules``
            spread: 0.2               # optional: published std, same unit
            source: "Sandia Cluster 2023 poster Table 3 (...)" or "measured on HOST, DATE, by CMD"

The loader turns the matching entries into ReFrame's reference tuples
``(value, lower, upper, unit)``, converting each value into the unit the
check reports.  Why not ReFrame's own ``$ref`` YAML: its entries are bare
tuples keyed by class name, with no place for provenance or rules, and a
figure nobody can trace is one nobody can argue with.
"""
import math
import os
from dataclasses import dataclass

import yaml

from hpcval import units

_TOP_KEYS = {'system', 'description', 'rules', 'entries'}
_ENTRY_KEYS = {'check', 'partition', 'where', 'metrics', 'absent', 'notes'}
_METRIC_KEYS = {'value', 'lower', 'upper', 'unit', 'rule', 'source', 'notes',
                'spread'}


class ReferenceFileError(ValueError):
    """A reference file breaks the schema; the message names file and key."""


@dataclass(frozen=True)
class Reference:
    check: str
    partition: str
    where: dict
    metric: str
    value: object        # float, or None for an explicitly absent reference
    lower: object
    upper: object
    unit: str
    rule: str
    source: str
    spread: object = None  # published standard deviation, in ``unit``

    def as_tuple(self, unit):
        """ReFrame's (value, lower, upper, unit) in ``unit``."""
        return (units.convert(self.value, self.unit, unit),
                self.lower, self.upper, unit)


def _fail(path, key, msg):
    raise ReferenceFileError(f'{path}: {key}: {msg}')


def _number(path, key, val, sign=None, allow_null=True):
    if val is None and allow_null:
        return None

    if isinstance(val, bool) or not isinstance(val, (int, float)) \
            or not math.isfinite(val):
        _fail(path, key, f'must be a finite number'
                         f'{" or null" if allow_null else ""}, got {val!r}')

    if sign == '+' and val < 0:
        _fail(path, key, f'must be >= 0, got {val}')

    if sign == '-' and val > 0:
        _fail(path, key, f'must be <= 0, got {val}')

    return float(val)


def _text(path, key, val):
    if not isinstance(val, str) or not val.strip():
        _fail(path, key, f'must be a non-empty string, got {val!r}')

    return val


def _unknown(path, key, data, allowed):
    extra = sorted(set(data) - allowed)
    if extra:
        _fail(path, key, f'unknown key(s) {", ".join(extra)} '
                         f'(allowed: {", ".join(sorted(allowed))})')


def _metric(path, key, data, rules):
    if not isinstance(data, dict):
        _fail(path, key, 'must be a mapping')

    _unknown(path, key, data, _METRIC_KEYS)
    for required in ('value', 'unit', 'source'):
        if required not in data:
            _fail(path, f'{key}.{required}', 'is required')

    unit = _text(path, f'{key}.unit', data['unit'])
    if unit not in units.KNOWN_UNITS:
        _fail(path, f'{key}.unit', f'unknown unit {unit!r}')

    value = _number(path, f'{key}.value', data['value'], '+')
    lower = _number(path, f'{key}.lower', data.get('lower'), '-')
    if lower is not None and lower < -1:
        _fail(path, f'{key}.lower', f'must be >= -1 (a fraction of the '
                                    f'value), got {lower}')
    upper = _number(path, f'{key}.upper', data.get('upper'), '+')
    spread = _number(path, f'{key}.spread', data.get('spread'), '+')
    rule = data.get('rule', '')
    if value is not None:
        if rule not in rules:
            _fail(path, f'{key}.rule', f'{rule!r} is not one of the '
                                       f'file\'s rules: {sorted(rules)}')
        if lower is None and upper is None:
            _fail(path, key, 'a reference with neither bound judges '
                             'nothing: give lower or upper, or value: null')
    elif spread is not None:
        _fail(path, f'{key}.spread', 'a spread needs a value')

    return value, lower, upper, unit, rule, _text(path, f'{key}.source',
                                                  data['source']), spread


def load(path):
    """Parse and validate one reference file; return its Reference list."""
    try:
        with open(path) as fp:
            data = yaml.safe_load(fp)
    except yaml.YAMLError as err:
        raise ReferenceFileError(f'{path}: not valid YAML: {err}') from None

    if not isinstance(data, dict):
        _fail(path, '<top>', 'must be a mapping')

    _unknown(path, '<top>', data, _TOP_KEYS)
    stem = os.path.splitext(os.path.basename(path))[0]
    if data.get('system') != stem:
        _fail(path, 'system', f'must be {stem!r} (the file name), '
                              f'got {data.get("system")!r}')

    _text(path, 'description', data.get('description'))
    rules = data.get('rules') or {}
    if not isinstance(rules, dict):
        _fail(path, 'rules', 'must be a mapping of name to text')

    for name, text in rules.items():
        _text(path, f'rules.{name}', text)

    entries = data.get('entries')
    if not isinstance(entries, list):
        _fail(path, 'entries', 'must be a list')

    refs = []
    for i, entry in enumerate(entries):
        key = f'entries[{i}]'
        if not isinstance(entry, dict):
            _fail(path, key, 'must be a mapping')

        _unknown(path, key, entry, _ENTRY_KEYS)
        check = _text(path, f'{key}.check', entry.get('check'))
        partition = _text(path, f'{key}.partition',
                          entry.get('partition', '*'))
        where = entry.get('where') or {}
        if not isinstance(where, dict):
            _fail(path, f'{key}.where', 'must be a mapping')

        if 'absent' in entry:
            # no figure for any metric of the check: say why, once
            if 'metrics' in entry:
                _fail(path, key, 'give either metrics or absent, not both')
            refs.append(Reference(check, partition, where, '*', None, None,
                                  None, '', '', _text(path, f'{key}.absent',
                                                      entry['absent'])))
            continue

        metrics = entry.get('metrics')
        if not isinstance(metrics, dict) or not metrics:
            _fail(path, f'{key}.metrics', 'must be a non-empty mapping')

        for name, spec in metrics.items():
            fields = _metric(path, f'{key}.metrics.{name}', spec, rules)
            refs.append(Reference(check, partition, where, name, *fields))

    return refs


def load_dir(dirname):
    """Validate every ``*.yaml`` under ``dirname``; map system -> refs."""
    return {f[:-5]: load(os.path.join(dirname, f))
            for f in sorted(os.listdir(dirname)) if f.endswith('.yaml')}


def load_layered(dirs):
    """``load_dir`` of each folder of ``dirs`` in order, a file of a later
    folder replacing the one of the same name before it (a site's
    references over the built-in ones, hpcval.paths.references_dirs)."""
    by_system = {}
    for dirname in dirs:
        by_system.update(load_dir(dirname))
    return by_system


def _matches(ref, check_names, partition, attrs):
    if ref.check not in check_names:
        return False

    if ref.partition not in ('*', partition):
        return False

    return all(str(attrs.get(k)) == str(v) for k, v in ref.where.items())


def select(refs, check_names, partition, attrs, metric_units):
    """ReFrame reference tuples for one test, keyed by metric.

    ``check_names`` are the test's class and its bases (an entry may name a
    base class to cover its variants), ``attrs`` the test attributes the
    entries' ``where`` may constrain.  Later entries override earlier ones,
    so a specific entry follows a general one in the file.  Metrics whose
    reference is explicitly absent (value: null) are left out, and ReFrame
    logs them without judging.
    """
    chosen = {}
    for ref in refs:
        if ref.metric in metric_units and \
                _matches(ref, check_names, partition, attrs):
            chosen[ref.metric] = ref

    return {name: ref.as_tuple(metric_units[name])
            for name, ref in chosen.items() if ref.value is not None}
