"""Reference files, one per system under references/: every key checked,
an unknown one refused (docs/references.md has the schema); the entries
matching a test become ReFrame's reference tuples in the unit it reports."""
import difflib
import math
import os
import re
import reprlib
import stat
import sys
from dataclasses import dataclass, field

import yaml

from hpcval import bounded, judgement, paths, trust, units
from hpcval.health import inventory

_TOP_KEYS = {'system', 'description', 'rules', 'entries', 'inventory',
             'replace', 'false_alarms'}
_ENTRY_KEYS = {'check', 'partition', 'where', 'metrics', 'absent', 'notes'}
_METRIC_KEYS = {'value', 'lower', 'upper', 'unit', 'rule', 'source', 'notes',
                'spread'}


@dataclass(frozen=True)
class FalseAlarms:
    """The false-alarm rate a file's bounds were built for."""
    node_rate: object
    figures: int
    per_figure: float

    def text(self):
        node = '' if self.node_rate is None else (
            f'a node false-alarm rate of 1 in {1 / self.node_rate:.0f} '
            f'healthy runs over ')
        return (f'{node}{self.figures} figures, {self.per_figure:.3g} '
                f'per figure')


def _false_alarms(path, data):
    """The file's validated ``false_alarms``, or None."""
    got = data.get('false_alarms')
    if got is None:
        return None
    _mapping(path, 'false_alarms', got, {'node_rate', 'figures',
                                         'per_figure'})
    node = _number(path, 'false_alarms.node_rate', got.get('node_rate'), '+')
    per = _number(path, 'false_alarms.per_figure', got.get('per_figure'),
                  '+', allow_null=False)
    figures = got.get('figures')
    if isinstance(figures, bool) or not isinstance(figures, int) or \
            figures < 1:
        _fail(path, 'false_alarms.figures', f'must be a whole number >= 1, '
                                            f'got {_shown(figures)}')
    if not 0 < per < 0.5 or (node is not None and not 0 < node < 0.5):
        _fail(path, 'false_alarms', 'rates must be above 0 and below 0.5')
    return FalseAlarms(node, figures, per)


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
    entry: int = field(default=-1, compare=False)  # index in ``entries``
    origin: object = field(default=None, compare=False)  # Origin, layered

    def as_tuple(self, unit):
        """ReFrame's (value, lower, upper, unit) in ``unit``."""
        return (units.convert(self.value, self.unit, unit),
                self.lower, self.upper, unit)


def _fail(path, key, msg):
    raise ReferenceFileError(f'{path}: {key}: {msg}')


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 2, 60, 60
#: ``repr(val)`` cut short: a YAML alias may hold billions of elements
_shown = _SHOWN.repr


def _number(path, key, val, sign=None, allow_null=True):
    if val is None and allow_null:
        return None
    if isinstance(val, bool) or not isinstance(val, (int, float)) \
            or not _finite(val):
        _fail(path, key, f'must be a finite number'
                         f'{" or null" if allow_null else ""}, '
                         f'got {_shown(val)}')
    if sign == '+' and val < 0:
        _fail(path, key, f'must be >= 0, got {val}')
    if sign == '-' and val > 0:
        _fail(path, key, f'must be <= 0, got {val}')
    return float(val)


def _finite(val):
    try:
        return math.isfinite(val)
    except OverflowError:       # an integer beyond any float
        return False


def _text(path, key, val):
    if not isinstance(val, str) or not val.strip():
        _fail(path, key, f'must be a non-empty string, got {_shown(val)}')
    return val


def _mapping(path, key, data, allowed):
    """Refuse ``data`` unless a mapping of ``allowed`` keys only."""
    if not isinstance(data, dict):
        _fail(path, key, f'must be a mapping, got {_shown(data)}')
    extra = sorted(set(data) - allowed, key=str)
    if extra:
        _fail(path, key, f'unknown key(s) '
                         f'{", ".join(str(k)[:60] for k in extra)} '
                         f'(allowed: {", ".join(sorted(allowed))})')


def _metric(path, key, data, rules):
    _mapping(path, key, data, _METRIC_KEYS)
    for required in ('value', 'unit', 'source'):
        if required not in data:
            _fail(path, f'{key}.{required}', 'is required')

    unit = _text(path, f'{key}.unit', data['unit'])
    if unit not in units.KNOWN_UNITS:
        _fail(path, f'{key}.unit', f'unknown unit {_shown(unit)}')

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
            _fail(path, f'{key}.rule', f'{_shown(rule)} is not one of the '
                                       f'file\'s rules: {sorted(rules)}')
        if lower is None and upper is None:
            _fail(path, key, 'a reference with neither bound judges '
                             'nothing: give lower or upper, or value: null')
        _band(path, key, value, upper, unit)
    elif spread is not None:
        _fail(path, f'{key}.spread', 'a spread needs a value')

    return value, lower, upper, unit, rule, _text(path, f'{key}.source',
                                                  data['source']), spread


def _band(path, key, value, upper, unit):
    """Refuse a band not finite in some unit of its family."""
    if value == 0:      # ReFrame's limits are the fractions themselves
        return
    for other in dict.fromkeys((unit, *units.extremes(unit))):
        ref = units.convert(value, unit, other)
        there = '' if other == unit else f' ({ref:g} {other})'
        if not math.isfinite(ref):
            _fail(path, f'{key}.value', f'{value:g} {unit} is inf in '
                                        f'{other}: beyond any float')
        if abs(ref) < sys.float_info.min:
            _fail(path, f'{key}.value', f'{value:g} {unit}{there} is '
                                        f'below the smallest normal float: '
                                        f'no benchmark measures it')
        # an upper limit at inf: limits() leaves it out as unbounded
        if upper is not None and \
                judgement.Band(ref, None, upper).limits()[1] is None:
            _fail(path, f'{key}.upper', f'{upper:g} above value '
                                        f'{value:g} {unit}{there} puts '
                                        f'the upper limit at inf: no '
                                        f'bound; give a smaller upper, or '
                                        f'null for none')


class _UniqueKeyLoader(bounded.SAFE_LOADER):
    """safe_load, except that a key given twice in one mapping is an error."""

    def construct_mapping(self, node, deep=False):
        seen = {}
        for key_node, _ in node.value:
            if key_node.tag == 'tag:yaml.org,2002:merge':
                continue        # ``<<: *anchor`` merges are meant to repeat
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:   # an unhashable key: SafeLoader says so
                break
            if first is not key_node:
                raise yaml.constructor.ConstructorError(
                    None, None, f'duplicate key {key!r} (first given on '
                                f'line {first.start_mark.line + 1})',
                    key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def parse(text, path):
    """The YAML document of one reference file; a duplicate key is an error."""
    try:
        return bounded.load(text, _UniqueKeyLoader)
    except bounded.TooBig as err:
        raise ReferenceFileError(f'{path}: refused: {err}') from None
    except yaml.YAMLError as err:
        raise ReferenceFileError(f'{path}: not valid YAML: '
                                 f'{_yaml_problem(err)}') from None
    except RecursionError:
        raise ReferenceFileError(f'{path}: not valid YAML: nested too '
                                 f'deeply') from None


def _yaml_problem(err):
    """PyYAML's error on one line: what, and where in the file."""
    mark = getattr(err, 'problem_mark', None)
    what = ' '.join(x for x in (getattr(err, 'context', None),
                                getattr(err, 'problem', None)) if x)
    if not what:
        return ' '.join(str(err).split())
    return what + (f' (line {mark.line + 1}, column {mark.column + 1})'
                   if mark else '')


def _read(path):
    try:
        with open(path, encoding='utf-8') as fp:
            return fp.read()
    except (OSError, UnicodeDecodeError) as err:
        raise ReferenceFileError(f'{path}: cannot read: '
                                 f'{getattr(err, "strerror", None) or err}'
                                 ) from None


_WHERE_KEY = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def _where(path, key, where):
    if where is None:
        return {}
    if not isinstance(where, dict):
        _fail(path, key, 'must be a mapping')
    for name, val in where.items():
        if not isinstance(name, str) or not _WHERE_KEY.fullmatch(name):
            _fail(path, key, f'{_shown(name)} is not a test attribute name')
        # null would match any test lacking the attribute
        if isinstance(val, (dict, list)) or val is None:
            _fail(path, f'{key}.{name}', f'must be a string, number or '
                                         f'boolean, got {_shown(val)}')
    return where


def load(path, text=None):
    """Parse and validate one reference file (or its ``text``): References."""
    return _whole(path, _document(path, text))[1]


def _document(path, text=None):
    """The top-level mapping of one file, its keys and ``system`` checked."""
    data = parse(_read(path) if text is None else text, path)
    _mapping(path, '<top>', data, _TOP_KEYS)
    stem = os.path.splitext(os.path.basename(path))[0]
    if data.get('system') != stem:
        _fail(path, 'system', f'must be {stem!r} (the file name), '
                              f'got {_shown(data.get("system"))}')
    if 'replace' in data and not isinstance(data['replace'], bool):
        _fail(path, 'replace', f'must be true or false, got '
                               f'{_shown(data["replace"])}')
    return data


def _whole(path, data):
    """(inventory, References) of one file's validated document."""
    _text(path, 'description', data.get('description'))
    expected, rules = _inventory(path, data), _rules(path, data)
    return expected, _refs(path, _entries_of(path, data), rules)


def _inventory(path, data):
    """The file's validated inventory entries ([] when it has none)."""
    try:
        return inventory.validate(path, data.get('inventory'))
    except inventory.InventoryError as err:
        raise ReferenceFileError(str(err)) from None


def _entries_of(path, data):
    entries = data.get('entries')
    if not isinstance(entries, list):
        _fail(path, 'entries', 'must be a list')
    # a new system's file may hold its expected GPUs alone (hpcval site
    # init --from-slurm) until a calibration gives it figures
    if not entries and not data.get('inventory'):
        _fail(path, 'entries', 'is empty: a reference file judges and '
                               'records nothing without entries (an entry '
                               'with `absent:` says why a check has none)')
    return entries


def _rules(path, data):
    rules = data.get('rules') or {}
    if not isinstance(rules, dict):
        _fail(path, 'rules', 'must be a mapping of name to text')
    for name, text in rules.items():
        _text(path, f'rules.{name}', text)
    return rules


def _refs(path, entries, rules, keys=None, origins=None):
    """The References of ``entries``, named and traced for errors."""
    refs = []
    for i, entry in enumerate(entries):
        key = keys[i] if keys else f'entries[{i}]'
        check, partition, where = _entry_key(path, key, entry)

        if 'absent' in entry:
            # no figure for any metric of the check: say why, once
            if 'metrics' in entry:
                _fail(path, key, 'give either metrics or absent, not both')
            refs.append(Reference(check, partition, where, '*', None, None,
                                  None, '', '', _text(path, f'{key}.absent',
                                                      entry['absent']),
                                  entry=i,
                                  origin=origins and origins(i, '*')))
            continue

        metrics = entry.get('metrics')
        if not isinstance(metrics, dict) or not metrics:
            _fail(path, f'{key}.metrics', 'must be a non-empty mapping')

        for name, spec in metrics.items():
            fields = _metric(path, f'{key}.metrics.{name}', spec, rules)
            refs.append(Reference(check, partition, where, name, *fields,
                                  entry=i,
                                  origin=origins and origins(i, name)))

    return refs


def _entry_key(path, key, entry):
    """(check, partition, where) of one entry: what names it."""
    _mapping(path, key, entry, _ENTRY_KEYS)
    check = _text(path, f'{key}.check', entry.get('check'))
    partition = _text(path, f'{key}.partition', entry.get('partition', '*'))
    where = _where(path, f'{key}.where', entry.get('where'))
    return check, partition, where


def load_dir(dirname):
    """The ReferenceSet of every ``*.yaml`` under ``dirname``, unlayered."""
    return ReferenceSet.of_files(_yaml_files(dirname))


BUILT_IN, SITE, CALIBRATED = 'built-in', 'site', 'calibrated'
_CALIBRATED_RULE = 'calibrated'     # hpcval.publish.calibrate.RULE


@dataclass(frozen=True)
class Origin:
    """Where one figure of a layered reference set came from."""
    layer: str
    path: str
    entry: int
    changed: tuple = ()
    before: object = None
    before_path: str = ''


def load_over(below_path, path, text=None):
    """The references of ``path`` (or ``text``) layered over ``below_path``."""
    below = _Layered.whole(below_path, _document(below_path), BUILT_IN)
    return _layer_on(below, path, _document(path, text), SITE).references()


class ReferenceSet(dict):
    """{system: [Reference]}, inventory and file: what every reader reads."""

    def __init__(self, refs=(), inventory=None, files=None,
                 false_alarms=None):
        super().__init__(refs)
        self.inventory = inventory or {}
        self.files = files or {}
        #: {system: FalseAlarms} of the file that last stated one
        self.false_alarms = false_alarms or {}

    @classmethod
    def layered(cls, dirs):
        """Each system's references, a later folder's file changing an
        earlier one's entry by entry (docs/site.md), or replacing it."""
        layers, rates = {}, {}
        for depth, dirname in enumerate(dirs):
            layer = BUILT_IN if depth == 0 else SITE
            for path in _yaml_files(dirname):
                system = os.path.basename(path)[:-5]
                data = _document(path)
                layers[system] = _layer_on(layers.get(system), path, data,
                                           layer)
                rate = _false_alarms(path, data)
                if rate is not None or data.get('replace'):
                    rates[system] = rate
        return cls({s: lay.references() for s, lay in layers.items()},
                   {s: lay.inventory for s, lay in layers.items()},
                   {s: lay.path for s, lay in layers.items()},
                   {s: r for s, r in rates.items() if r is not None})

    @classmethod
    def of_files(cls, files):
        """Each file of ``files`` on its own, the system its name gives."""
        out = cls()
        for path in files:
            data = _document(path)
            system = data['system']
            out.inventory[system], out[system] = _whole(path, data)
            out.files[system] = path
            rate = _false_alarms(path, data)
            if rate is not None:
                out.false_alarms[system] = rate
        return out

    @classmethod
    def given(cls, given=()):
        """The trusted files or folders ``given``, else the installed."""
        if not given:
            refs = cls.layered(paths.references_dirs())
        else:
            files = []
            for path in given:
                if _kind(path) == 'folder':
                    files += _yaml_files(path)
                else:
                    files.append(path)
            for path in files:
                _kind(path, folder=False)
            refs = cls.of_files(files)
        refs.check_partitions(configured_partitions())
        return refs

    def expected(self, system, partition):
        """The inventory entry of ``system``'s ``partition``, or None."""
        return inventory.for_partition(self.inventory.get(system, ()),
                                       partition)

    def where_keys(self):
        """The test attributes the entries' ``where`` match on."""
        return sorted({k for refs in self.values() for r in refs
                       for k in r.where if not k.startswith('_')})

    def matching(self, system, check_names, partition, attrs):
        """``applying`` of ``system``'s entries."""
        return applying(self.get(system, ()), check_names, partition, attrs)

    def check_partitions(self, partitions_of):
        """Refuse an inventory partition its system does not have."""
        for system, entries in self.inventory.items():
            known = partitions_of.get(system)
            for i, entry in enumerate(entries):
                part = entry['partition']
                if known is not None and part != '*' and part not in known:
                    _fail(self.files.get(system, system),
                          f'inventory[{i}].partition',
                          f'{part!r} is no partition of system {system} '
                          f'(it has: {", ".join(sorted(known))})')


def configured_partitions(system_modules=None):
    """{system: its partitions' names} of hpcval's system modules."""
    if system_modules is None:
        if not os.path.isfile(os.path.join(paths.repo_root(), 'systems',
                                           '__init__.py')):
            return {}
        try:
            system_modules = paths.import_systems(paths.repo_root()).ALL
        except Exception as err:    # a site module ReFrame would refuse
            raise ReferenceFileError(f'the systems\' partitions cannot be '
                                     f'read: {type(err).__name__}: {err}'
                                     ) from None
    return {m.system['name']: [p['name'] for p in m.system['partitions']]
            for m in system_modules}


def _kind(path, folder=True):
    """'folder' or 'file' of a trusted path a user gave, else refused."""
    try:
        trust.check_path(path)
        mode = os.stat(path).st_mode
    except trust.UntrustedPath as err:
        raise ReferenceFileError(f'{path}: not trusted: {err}') from None
    except OSError as err:
        raise ReferenceFileError(f'{path}: cannot read: {err.strerror}'
                                 ) from None
    if folder and stat.S_ISDIR(mode):
        return 'folder'
    if stat.S_ISREG(mode):
        return 'file'
    raise ReferenceFileError(f'{path}: not a reference file or folder (a '
                             f'FIFO, device or socket): not read')


def _layer_on(below, path, data, layer):
    if below is not None and not data.get('replace'):
        return _overlay(below, path, data)
    return _Layered.whole(path, data, layer)


def _yaml_files(dirname):
    try:
        names = sorted(os.listdir(dirname))
    except OSError as err:
        raise ReferenceFileError(f'{dirname}: cannot list the reference '
                                 f'folder: {err.strerror}') from None
    return [os.path.join(dirname, f) for f in names if f.endswith('.yaml')]


@dataclass
class _Layered:
    """One system's entries, rules, origins and inventory as layered so far."""
    path: str
    entries: list
    rules: dict
    origins: list
    keys: list
    inventory: list

    @classmethod
    def whole(cls, path, data, layer):
        expected = _whole(path, data)[0]    # validated as a file of its own
        rules, entries = _rules(path, data), _entries_of(path, data)
        origins = [_own_origins(e, layer, path, i)
                   for i, e in enumerate(entries)]
        return cls(path, list(entries), dict(rules), origins,
                   [f'entries[{i}]' for i in range(len(entries))], expected)

    def references(self):
        return _refs(self.path, self.entries, self.rules, self.keys,
                     lambda i, m: self.origins[i].get(m))


def _own_origins(entry, layer, path, i):
    """{metric: Origin} of entry ``i`` of ``path``, its metrics all its own."""
    return {m: Origin(_layer(layer, spec), path, i, ('*',))
            for m, spec in _metric_specs(entry).items()}


def _metric_specs(entry):
    if 'absent' in entry:
        return {'*': entry}
    metrics = entry.get('metrics')
    return metrics if isinstance(metrics, dict) else {}


def _layer(layer, spec):
    rule = spec.get('rule') if isinstance(spec, dict) else None
    return CALIBRATED if rule == _CALIBRATED_RULE else layer


def _same_key(a, b):
    return a[:2] == b[:2] and {k: str(v) for k, v in a[2].items()} == \
        {k: str(v) for k, v in b[2].items()}


def _overlay(below, path, data):
    """``below`` changed by the site file ``path``, entry by entry."""
    if 'description' in data:
        _text(path, 'description', data['description'])
    rules = dict(below.rules)
    for name, text in _rules(path, data).items():
        if name in below.rules and text != below.rules[name]:
            _fail(path, f'rules.{name}',
                  f'is a rule of {below.path} with another text; name the '
                  f'site\'s rule differently (a figure citing the '
                  f'built-in rule would otherwise cite this text)')
        rules[name] = text

    entries, origins = list(below.entries), list(below.origins)
    site_entries = _entries_of(path, data)
    keys = list(below.keys)
    known = [_entry_key(below.path, k, e) for k, e in zip(keys, entries)]
    for j, entry in enumerate(site_entries):
        key = f'entries[{j}]'
        ident = _entry_key(path, key, entry)
        at = next((i for i in reversed(range(len(known)))
                   if _same_key(known[i], ident)), None)
        valueless = [n for n, spec in _metric_specs(entry).items()
                     if isinstance(spec, dict) and 'value' not in spec
                     and n != '*']
        if at is None and valueless:
            _fail(path, f'{key}.metrics.{valueless[0]}.value',
                  f'is required: no entry of {below.path} has this check, '
                  f'partition and where, so this entry is new and each '
                  f'metric needs its value, unit, rule and source')
        own = _own_origins(entry, SITE, path, j)
        if at is None or own and all(o.layer == CALIBRATED
                                     for o in own.values()):
            # a new entry follows the earlier ones (a calibrated one always
            # does: the last applicable entry wins, as in one file)
            entries.append(entry)
            origins.append(own)
            keys.append(key)
            known.append(ident)
            continue
        entries[at], origins[at] = _merge_entry(
            entries[at], origins[at], entry, path, j, key, below.path)
        keys[at] = key
    expected = _inventory(path, data) if 'inventory' in data \
        else below.inventory
    return _Layered(path, entries, rules, origins, keys, expected)


def _merge_entry(old, old_origins, new, path, j, key, below_path):
    """(entry, origins) of the earlier entry ``old`` changed by ``new``."""
    if 'absent' in new or 'absent' in old:
        # no figure, or figures where there were none: the site's whole
        return new, _own_origins(new, SITE, path, j)

    metrics = dict(old['metrics'])
    origins = dict(old_origins)
    new_metrics = new.get('metrics')
    if not isinstance(new_metrics, dict) or not new_metrics:
        _fail(path, f'{key}.metrics', 'must be a non-empty mapping')
    for name, spec in new_metrics.items():
        before = metrics.get(name)
        mkey = f'{key}.metrics.{name}'
        if before is None or not isinstance(spec, dict) or 'value' in spec:
            metrics[name], changed = spec, ('*',)
        else:
            _mapping(path, mkey, spec, _METRIC_KEYS)
            if 'unit' in spec and spec['unit'] != before.get('unit'):
                _fail(path, f'{mkey}.unit', f'changes the unit of '
                      f'{below_path}\'s value: give the value in it too')
            if before.get('value') is None and \
                    {'lower', 'upper', 'spread'} & set(spec):
                _fail(path, mkey, f'{below_path} has no value for it '
                      f'(value: null): a bound needs a value')
            metrics[name] = {**before, **spec}
            changed = tuple(k for k in spec if spec[k] != before.get(k))
        origins[name] = Origin(_layer(SITE, metrics[name]), path, j,
                               changed, before, below_path)
    merged = {**old, 'metrics': metrics}
    if 'notes' in new:
        merged['notes'] = new['notes']
    return merged, origins


def applies(ref, check_names, partition, attrs):
    """Whether the entry of ``ref`` applies to one test."""
    return ref.check in check_names and ref.partition in ('*', partition) \
        and all(_same(attrs.get(k), v) for k, v in ref.where.items())


def _same(attr, wanted):
    # an attribute the test lacks (or leaves None) matches no value: a
    # `where` on a misspelt attribute must not match every test
    return attr is not None and str(attr) == str(wanted)


def select(refs, check_names, partition, attrs, metric_units):
    """ReFrame reference tuples for one test, keyed by metric: the last
    entry's; an explicitly absent metric (value: null) left out."""
    return {name: ref.as_tuple(metric_units[name]) for name, ref in
            applying(refs, check_names, partition, attrs).items()
            if name in metric_units and ref.value is not None}


def applying(refs, check_names, partition, attrs):
    """{metric: Reference} of the entries of ``refs`` applying to one test."""
    return {ref.metric: ref for ref in refs
            if applies(ref, check_names, partition, attrs)}


@dataclass(frozen=True)
class TestShape:
    """What an entry can match of one loaded test."""
    names: tuple
    partitions: frozenset
    attrs: object
    params: frozenset = frozenset()


def unmatched(refs, tests, path, known_checks=None):
    """(errors, notes) about entries of ``refs`` that match no loaded test."""
    errors, notes, first = [], [], {}
    for ref in refs:
        first.setdefault(ref.entry, ref)
    for i, ref in first.items():
        found = _no_match(ref, tests, known_checks)
        if found:
            fatal, why = found
            where = ''.join(f', {k}={v}' for k, v in ref.where.items())
            # a layered entry is named in the file that last changed it
            at = (ref.origin.path, ref.origin.entry) if ref.origin \
                else (path, i)
            (errors if fatal else notes).append(EntryProblem(
                f'{at[0]}: entries[{at[1]}] ({ref.check}, partition '
                f'{ref.partition}{where}): {why}', ref.check))
    return errors, notes


class EntryProblem(str):
    """A message about one entry; ``check`` is the class it names."""

    def __new__(cls, text, check):
        self = super().__new__(cls, text)
        self.check = check
        return self


def _no_match(ref, tests, known_checks):
    family = [t for t in tests if ref.check in t.names]
    if not family:
        if known_checks is not None and ref.check in known_checks:
            return None
        return True, (f'no test of this system is a {ref.check} (a typo in '
                      f'the class name, or no such check runs here)')

    placed = [t for t in family if t.partitions and
              (ref.partition == '*' or ref.partition in t.partitions)]
    if not placed:
        parts = sorted({p for t in family for p in t.partitions})
        # a check that runs nowhere here (a GPU check on a host without
        # one) may run on the same system elsewhere: noted, not refused
        return bool(parts), (f'no {ref.check} test runs on partition '
                      f'{ref.partition!r} (it runs on: '
                      f'{", ".join(parts) or "none"})')

    for key in ref.where:
        if not any(t.attrs.get(key) is not None for t in placed):
            return True, (f'where: no {ref.check} test has an attribute '
                          f'{key!r}')

    def fits(test, variables):
        return all(_same(test.attrs.get(k), v) or
                   (variables and k not in test.params)
                   for k, v in ref.where.items())

    if any(fits(t, False) for t in placed):
        return None

    differ = {k: sorted({str(t.attrs.get(k)) for t in placed
                         if t.attrs.get(k) is not None})
              for k, v in ref.where.items()
              if not any(_same(t.attrs.get(k), v) for t in placed)}
    seen = '; '.join(f'{k} is {" or ".join(vals)}'
                     for k, vals in differ.items())
    if any(fits(t, True) for t in placed):
        return False, (f'judged only in runs that set '
                       f'{", ".join(f"{k}={ref.where[k]}" for k in differ)}'
                       f' (-S); by default {seen}')
    return True, (f'where: no {ref.check} test has these values ('
                  f'{seen or "no single test has all of them"})')


def unreported(refs, check_names, partition, attrs, reported):
    """(entry index, metric, what the test reports instead) of likely typos:
    none of the entry's metrics reported, or one of a close name."""
    by_entry = {}
    for ref in refs:
        if ref.value is not None and applies(ref, check_names, partition,
                                             attrs):
            by_entry.setdefault(ref.entry, []).append(ref.metric)
    found = []
    for entry, metrics in by_entry.items():
        missing = [m for m in metrics if m not in reported]
        for metric in missing:
            close = difflib.get_close_matches(metric, list(reported), n=1,
                                              cutoff=0.85)
            if close or len(missing) == len(metrics):
                found.append((entry, metric, close[0] if close else None))
    return found


def absent(refs, check_names, partition, attrs, metrics):
    """{metric: source} of the ``metrics`` explicitly without a reference."""
    return {name: ' '.join((ref.source or 'no reason given').split())
            for name, ref in applying(refs, check_names, partition,
                                      attrs).items()
            if name in metrics and ref.value is None}


def _cell(text):
    return re.sub(r'\s+', ' ', str(text)).strip().replace('|', '\\|')


def markdown(by_system):
    """Every reference of every system as one Markdown table."""
    rows = []
    for system, refs in sorted(by_system.items()):
        for ref in refs:
            value, bounds = 'absent', 'logged, not judged'
            if ref.value is not None:
                value = f'{ref.value:g} {ref.unit}'
                bounds = judgement.Band(ref.value, ref.lower,
                                        ref.upper).range_text()
            where = ', '.join(f'{k}={v}' for k, v in ref.where.items())
            metric = 'every metric' if ref.metric == '*' else ref.metric
            rows.append('| ' + ' | '.join(_cell(c) for c in (
                system, ref.check, ref.partition, where or 'any', metric,
                value, bounds, ref.rule or '-', ref.source)) + ' |\n')
    counts = ', '.join(
        f'{system} {sum(r.value is not None for r in refs)} judged / '
        f'{len(refs)}' for system, refs in sorted(by_system.items()))
    return ('# All references\n\nGenerated by `hpcval references --markdown '
            '> docs/reference-table.md` from references/*.yaml; a test fails '
            'when it is stale.  Bounds are absolute, in the reference\'s '
            f'unit.  Per system: {counts}.\n\n| system | check | partition '
            '| where | metric | value | bounds | rule | source |\n'
            '|---|---|---|---|---|---|---|---|---|\n' + ''.join(rows))
