"""The typed reading of usual reports (hpcval.publish.typed_sessions, used
by ``hpcval report`` and ``verdict`` wherever a report fits its schema)
gives what the checked reading gives, and leaves every unusual value to
the checked reading, which names what is wrong."""
import copy
import json
import pathlib

import pytest
from msgspec.structs import asdict

from hpcval.publish import results, typed_sessions

ROOT = pathlib.Path(__file__).parent.parent
REAL = sorted([*(ROOT / 'docs' / 'comparison' / 'reports').glob('*.json'),
               *(ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' /
                 'validation' / 'reports').glob('*.json')])
BASE = ROOT / 'docs' / 'comparison' / 'reports' / 'mi300x-replay.json'


def _state(loaded):
    return ([asdict(c) for c in loaded.cases],
            [asdict(c) for c in loaded.fixtures],
            [{**asdict(s), 'case': s.case.test} for s in loaded.samples],
            [str(p) for p in loaded.problems], loaded.sources,
            loaded.duplicates)


def _readings(report):
    """(typed or not, what the reading used by hpcval gives, what the
    checked reading gives) of ``report`` stored as JSON text."""
    text = json.dumps(report)
    used = results._Collector('skip')
    results._read(text, 'f', used, 'l')
    checked = results._Collector('skip')
    parsed = results._json(text, 'f', checked)
    if parsed is not None:
        checked.report(parsed, 'f', 'l')
    return (typed_sessions.decode(text) is not None, _state(used.loaded),
            _state(checked.loaded))


def _base():
    return json.loads(BASE.read_text())


def _first_with_figures(report):
    return next(tc for run in report['runs'] for tc in run['testcases']
                if tc.get('perfvalues') and not tc.get('fixture'))


@pytest.mark.parametrize('path', REAL, ids=lambda p: p.name)
def test_real_reports_are_read_typed_and_alike(path):
    typed, used, checked = _readings(json.loads(path.read_text()))
    assert typed
    assert used == checked
    assert used[2], 'no figures read'


ODD = [None, '', 0, 1, 2.5, True, float('nan'), float('inf'), 10**400,
       [], ['x'], [1], {}, {'a': 1}, 'text']
FIELDS = ['display_name', 'name', 'system', 'partition', 'environ',
          'result', 'filename', 'job_nodelist', 'nodelist', 'tags',
          'job_completion_time_unix', 'outputdir', 'job_stdout',
          'fail_phase', 'fail_reason', 'unique_name', 'fixture',
          'dependencies_actual', 'mode', 'num_nodes', 'array',
          'perfvalues', *(f'hpcval_{name}' for name in results.EXTRAS)]


@pytest.mark.parametrize('key', FIELDS)
def test_every_odd_field_value_reads_as_the_checked_reading(key):
    kinds = set()
    for odd in ODD + ['absent']:
        report = _base()
        tc = _first_with_figures(report)
        if odd == 'absent':
            tc.pop(key, None)
        else:
            tc[key] = copy.deepcopy(odd)
        typed, used, checked = _readings(report)
        assert used == checked, (key, odd)
        kinds.add(typed)
    # both readings were compared: NaN and infinity are never read typed,
    # and some value of every field is
    assert kinds == {True, False}


@pytest.mark.parametrize('key', ['data_version', 'uuid', 'hostname',
                                 'version', 'time_start_unix'])
def test_every_odd_session_value_reads_as_the_checked_reading(key):
    for odd in ODD + ['absent', '3.1', '4', '5.0', 4.0]:
        report = _base()
        if odd == 'absent':
            report['session_info'].pop(key, None)
        else:
            report['session_info'][key] = copy.deepcopy(odd)
        _, used, checked = _readings(report)
        assert used == checked, (key, odd)


def test_every_odd_figure_reads_as_the_checked_reading():
    metric = next(iter(_first_with_figures(_base())['perfvalues']))
    kinds = set()
    for place in range(6):
        for odd in ODD + [-1e301, 1e300, -0.0, 7]:
            report = _base()
            _first_with_figures(report)['perfvalues'][metric][place] = \
                copy.deepcopy(odd)
            typed, used, checked = _readings(report)
            assert used == checked, (place, odd)
            kinds.add(typed)
    assert kinds == {True, False}
    for key in ['sys:part:', 'metric', ':', '', 'a:b:c:d']:
        report = _base()
        _first_with_figures(report)['perfvalues'][key] = \
            [1.0, 0, None, None, 'GB/s', 'pass']
        _, used, checked = _readings(report)
        assert used == checked, key
    for entry in ([1.0, 0, None, None], [1.0, 0, None, None, 'GB/s'],
                  [1.0, 0, None, None, 'GB/s', 'pass', 'more'], 'x', None):
        report = _base()
        _first_with_figures(report)['perfvalues'][metric] = entry
        _, used, checked = _readings(report)
        assert used == checked, entry


def test_odd_report_shapes_read_as_the_checked_reading():
    for change in (lambda r: r['runs'].append({}),
                   lambda r: r['runs'].append({'testcases': None}),
                   lambda r: r['runs'][0]['testcases'].append(5),
                   lambda r: r.update(runs={}),
                   lambda r: r.pop('session_info'),
                   lambda r: r['runs'].extend(copy.deepcopy(r['runs']))):
        report = _base()
        change(report)
        _, used, checked = _readings(report)
        assert used == checked


def test_every_record_a_check_logs_is_read_both_ways():
    """A new hpcval_* record must be read by both readings, or a report
    would silently lose it."""
    from hpcval import inputs
    from hpcval.benchmarks import base, screening, source
    logged = {name for cls in (base.ParsedBenchmark, screening.ScreenRecord,
                               source.Validation)
              for name, kind in inputs.policy_of(cls).items()
              if kind is inputs.RECORD}
    assert logged == {f'hpcval_{name}' for name in results.EXTRAS}
    assert logged <= set(typed_sessions.TestCase.__struct_fields__)
