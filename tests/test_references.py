"""Reference files: schema, units, provenance, and rejection at load."""
import ast
import copy
import re

import pytest
import yaml

from hpcval import references, units
from hpcval.references import ReferenceFileError
from rfmrun import ROOT, reframe

REF_DIR = ROOT / 'references'
REF_FILES = sorted(REF_DIR.glob('*.yaml'))


@pytest.mark.parametrize('path', REF_FILES, ids=lambda p: p.name)
def test_file_is_valid(path):
    refs = references.load(str(path))
    assert refs, f'{path.name} holds no reference'
    for ref in refs:
        assert ref.source.strip(), f'{ref.check}.{ref.metric}: no provenance'
        if ref.metric != '*':           # '*': the whole check is absent
            units.family(ref.unit)


def test_every_system_module_has_a_reference_file():
    modules = {p.stem for p in (ROOT / 'systems').glob('*.py')
               if not p.stem.startswith('_')}
    assert modules <= {p.stem for p in REF_FILES}


def _local_yaml():
    return yaml.safe_load((REF_DIR / 'local.yaml').read_text())


def _metric(data):
    return data['entries'][0]['metrics']['latency_8B']


BREAKAGES = {
    'typo in a bound': (lambda d: _metric(d).update(uper=1.0),
                        r'entries\[0\]\.metrics\.latency_8B: unknown key'),
    'no provenance': (lambda d: _metric(d).pop('source'),
                      r'latency_8B\.source: is required'),
    'unknown unit': (lambda d: _metric(d).update(unit='microseconds'),
                     r'latency_8B\.unit: unknown unit'),
    'positive lower bound': (lambda d: _metric(d).update(lower=0.5),
                             r'latency_8B\.lower: must be <= 0'),
    'nan value': (lambda d: _metric(d).update(value=float('nan')),
                  r'latency_8B\.value: must be a finite number'),
    'text value': (lambda d: _metric(d).update(value='fast'),
                   r'latency_8B\.value: must be a finite number'),
    'no bound at all': (lambda d: _metric(d).update(upper=None),
                        r'latency_8B: a reference with neither bound'),
    'undeclared rule': (lambda d: _metric(d).update(rule='guess'),
                        r"latency_8B\.rule: 'guess' is not one"),
    'wrong system name': (lambda d: d.update(system='frontier'),
                          r"system: must be 'local'"),
    'entries not a list': (lambda d: d.update(entries={}),
                           r'entries: must be a list'),
    # bands that are no pair of finite limits (references._band)
    'upper limit overflows': (
        lambda d: _metric(d).update(value=1.0e+308, upper=1.0),
        r'latency_8B\.upper: 1 above value 1e\+308 us puts the upper limit '
        r'at inf: no bound'),
    'overflows in another unit': (
        lambda d: _metric(d).update(value=1.0e+306, upper=1.0),
        r'latency_8B\.value: 1e\+306 us is inf in ns: beyond any float'),
    'upper overflows in another unit': (
        lambda d: _metric(d).update(value=1.0e+305, upper=1.0),
        r'latency_8B\.upper: 1 above value 1e\+305 us \(1e\+308 ns\) puts '
        r'the upper limit at inf'),
    'value underflows': (lambda d: _metric(d).update(value=1e-310),
                         r'latency_8B\.value: 1e-310 us is below the '
                         r'smallest normal float'),
    'value underflows in another unit': (
        lambda d: _metric(d).update(value=1e-300, unit='ns'),
        r'latency_8B\.value: 1e-300 ns \(1e-309 s\) is below the smallest '
        r'normal float'),
    # low > high needs a positive lower or a negative upper: refused
    'low above high': (lambda d: _metric(d).update(lower=0.5, upper=-0.5),
                       r'latency_8B\.lower: must be <= 0'),
    'negative upper': (lambda d: _metric(d).update(upper=-0.5),
                       r'latency_8B\.upper: must be >= 0'),
}


@pytest.mark.parametrize('breakage', BREAKAGES, ids=str)
def test_malformed_file_names_file_and_key(tmp_path, breakage):
    mutate, message = BREAKAGES[breakage]
    data = copy.deepcopy(_local_yaml())
    mutate(data)
    path = tmp_path / 'local.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ReferenceFileError, match=message) as err:
        references.load(str(path))

    assert str(path) in str(err.value)


def test_not_yaml_is_rejected(tmp_path):
    path = tmp_path / 'local.yaml'
    path.write_text('system: local\nentries: [\n')
    with pytest.raises(ReferenceFileError, match='not valid YAML'):
        references.load(str(path))


def test_reframe_refuses_a_malformed_file_at_load(tmp_path):
    root = tmp_path / 'root'
    (root / 'references').mkdir(parents=True)
    data = _local_yaml()
    _metric(data)['uper'] = 1.0
    (root / 'references' / 'local.yaml').write_text(yaml.safe_dump(data))
    proc, _ = reframe('-l', '--system', 'local', tmp_path=tmp_path,
                      env={'HPCVAL_ROOT': str(root)})
    assert proc.returncode != 0
    assert 'local.yaml: entries[0].metrics.latency_8B: unknown key' in \
        proc.stdout + proc.stderr


def _ref(**kw):
    base = dict(check='C', partition='*', where={}, metric='bw',
                value=4.8e6, lower=-0.1, upper=None, unit='MB/s', rule='r',
                source='s')
    base.update(kw)
    return references.Reference(**base)


def test_select_converts_units_and_matches_attributes():
    refs = [_ref(), _ref(where={'model': 'hip'}, value=3.0, unit='TB/s'),
            _ref(metric='lat', value=None, unit='us')]
    got = references.select(refs, ['C'], 'gpu', {'model': 'hip'},
                            {'bw': 'GB/s', 'lat': 'us'})
    # the later, more specific entry wins; 3 TB/s is 3000 GB/s
    assert got == {'bw': (pytest.approx(3000.0), -0.1, None, 'GB/s')}
    got = references.select(refs, ['C'], 'gpu', {'model': 'cuda'},
                            {'bw': 'GB/s'})
    assert got['bw'][0] == pytest.approx(4800.0)


def test_select_respects_partition_and_check_names():
    refs = [_ref(partition='gpu')]
    assert references.select(refs, ['C'], 'cpu', {}, {'bw': 'MB/s'}) == {}
    assert references.select(refs, ['D'], 'gpu', {}, {'bw': 'MB/s'}) == {}
    assert references.select(refs, ['D', 'C'], 'gpu', {}, {'bw': 'MB/s'})


def test_units_refuse_to_mix_families():
    assert units.convert(1, 'GB/s', 'MB/s') == 1000
    assert units.convert(2, 'us', 'ns') == pytest.approx(2000)
    with pytest.raises(ValueError, match='cannot convert'):
        units.convert(1, 'GB/s', 'us')


def test_every_referenced_check_exists():
    # an entry may name a leaf check or a benchmark base class
    defined = set()
    sources = [*(ROOT / 'checks').glob('*.py'),
               *(ROOT / 'utils' / 'hpcval' / 'benchmarks').glob('*.py')]
    for path in sources:
        defined |= {node.name for node in ast.walk(ast.parse(path.read_text()))
                    if isinstance(node, ast.ClassDef)}
    for path in REF_FILES:
        for ref in references.load(str(path)):
            assert ref.check in defined, f'{path.name}: no check {ref.check}'


def test_lower_bound_below_minus_one_is_rejected(tmp_path):
    data = _local_yaml()
    data['entries'][0]['metrics']['bandwidth_4MiB']['lower'] = -2
    path = tmp_path / 'local.yaml'
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ReferenceFileError, match=r'bandwidth_4MiB\.lower: '
                                                 r'must be >= -1'):
        references.load(str(path))


def test_cli_validates_references(tmp_path, capsys):
    from hpcval import cli
    assert cli.main(['references', '--system', 'local']) == 0
    assert 'local:' in capsys.readouterr().out
    (tmp_path / 'local.yaml').write_text('system: local\n')
    assert cli.main(['references', '--dir', str(tmp_path)]) == 1
    assert 'local.yaml: description' in capsys.readouterr().err


def test_a_whole_check_can_be_explicitly_absent(tmp_path):
    path = tmp_path / 'site.yaml'
    path.write_text('system: site\ndescription: d\nentries:\n'
                    '  - check: LikwidBenchCheck\n    absent: no figure\n')
    [ref] = references.load(str(path))
    assert (ref.metric, ref.value, ref.source) == ('*', None, 'no figure')
    assert references.select([ref], ['LikwidBenchCheck'], 'p', {},
                             {'copy_bandwidth': 'MB/s'}) == {}
    path.write_text(path.read_text() + '    metrics: {}\n')
    with pytest.raises(ReferenceFileError,
                       match=r'entries\[0\]: give either metrics or absent'):
        references.load(str(path))


def test_a_missing_metric_counts_only_where_it_looks_like_a_mistake():
    # one entry for both kernels: each variant reports one of its figures
    refs = [_ref(metric='copy_bandwidth', entry=0),
            _ref(metric='stream_bandwidth', entry=0),
            _ref(metric='latency_8b', unit='us', entry=1),
            _ref(metric='latency_1KiB', unit='us', entry=1),
            _ref(metric='gone', value=None, entry=2)]
    assert references.unreported(refs[:2], ['C'], 'p', {},
                                 {'copy_bandwidth'}) == []
    assert references.unreported(refs[:2], ['C'], 'p', {}, {'other'}) == [
        (0, 'copy_bandwidth', None), (0, 'stream_bandwidth', None)]
    assert references.unreported(refs[2:], ['C'], 'p', {},
                                 {'latency_8B', 'latency_1KiB'}) == [
        (1, 'latency_8b', 'latency_8B')]


def test_where_on_a_missing_or_none_attribute_matches_nothing():
    ref = _ref(where={'x': 'None'})
    assert references.select([ref], ['C'], 'p', {}, {'bw': 'MB/s'}) == {}
    assert references.select([ref], ['C'], 'p', {'x': None},
                             {'bw': 'MB/s'}) == {}
    assert references.select([ref], ['C'], 'p', {'x': 'None'},
                             {'bw': 'MB/s'})


@pytest.mark.parametrize('old, new, message', [
    ('value: 111.132\n        lower: -0.1194',
     'value: 1.0e+307\n        lower: -0.1194\n        upper: 1.0',
     'entries[9].metrics.avg_busbw.value: 1e+307 GB/s is inf in B/s'),
    ('value: 2.0\n        upper: 9.0', 'value: 1.0e+308\n        upper: 1.0',
     '.upper: 1 above value 1e+308 us puts the upper limit at inf'),
], ids=['value', 'upper'])
def test_a_band_without_finite_limits_is_bad_input(tmp_path, capsys, old,
                                                   new, message):
    """``hpcval verdict --references`` with such a file exits 3 in one
    line naming file, key and value (the real 2 x H200 validation run and
    its references)."""
    from hpcval import cli
    h200 = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' / 'validation'
    text = (h200 / 'local.yaml').read_text()
    assert old in text
    path = tmp_path / 'local.yaml'
    path.write_text(text.replace(old, new, 1))
    status = cli.main(['verdict', str(h200 / 'reports' / 'healthy01.json'),
                       '--references', str(path)])
    out, err = capsys.readouterr()
    assert (status, out) == (3, '')
    assert err.splitlines() == [err.strip()] and str(path) in err
    assert message in err, err


def test_the_false_alarm_rate_of_a_file_is_read_and_checked(tmp_path):
    """``false_alarms``: what calibrate built a file's bounds for, which
    the verdict repeats; a rate outside (0, 0.5) is bad input."""
    body = ('system: local\ndescription: d\n'
            'false_alarms: {node_rate: 0.005, figures: 104, '
            'per_figure: 4.82e-05}\nentries:\n'
            '  - check: Mpi4pyPingPongCheck\n    absent: none here\n')
    path = tmp_path / 'local.yaml'
    path.write_text(body)
    rate = references.ReferenceSet.of_files([str(path)]).false_alarms[
        'local']
    assert rate.text() == ('a node false-alarm rate of 1 in 200 healthy '
                           'runs over 104 figures, 4.82e-05 per figure')
    for bad in ('node_rate: 0.7', 'figures: 0', 'per_figure: -1'):
        key = bad.partition(':')[0]
        path.write_text(re.sub(rf'{key}: [^,}}]+', bad, body))
        with pytest.raises(references.ReferenceFileError,
                           match='false_alarms'):
            references.ReferenceSet.of_files([str(path)])
