"""The quick reading of ordinary test cases (results._usual_case and the
inline checks of results._samples) gives what the checked reading gives,
and leaves every unusual value to the checked reading."""
import copy
import json
import pathlib

import pytest

from hpcval.publish import results

REPORT = pathlib.Path(__file__).parent.parent / 'docs' / 'comparison' / \
    'reports' / 'mi300x-replay.json'
SESSION = {'uuid': 's', 'hostname': 'h', 'version': '4.7.4', 'time': 5.0}


def _case():
    report = json.loads(REPORT.read_text())
    return next(tc for run in report['runs'] for tc in run['testcases']
                if tc.get('perfvalues'))


def _checked(tc):
    try:
        case = results._checked_case(tc, 4, 'f', SESSION, 'w', 'l')
        return case.__dict__, [s.__dict__ for s in results._checked_samples(
            tc, 4, case, 'w')]
    except results._Bad as err:
        return str(err)


def _quick(tc):
    try:
        case = results._case(tc, 4, 'f', SESSION, 'w', 'l')
        return case.__dict__, [s.__dict__ for s in results._samples(
            tc, 4, case, 'w')]
    except results._Bad as err:
        return str(err)


ODD = [None, '', 0, 1, 2.5, True, float('nan'), float('inf'), 10**400,
       [], ['x'], [1], {}, {'a': 1}, 'text']
FIELDS = ['display_name', 'name', 'system', 'partition', 'environ',
          'result', 'filename', 'job_nodelist', 'nodelist', 'tags',
          'job_completion_time_unix', 'outputdir', 'job_stdout',
          'fail_phase', 'fail_reason', 'unique_name', 'fixture',
          'dependencies_actual', 'mode', 'num_nodes', 'hpcval_provenance']


@pytest.mark.parametrize('key', FIELDS)
def test_every_odd_field_value_reads_as_the_checked_reading(key):
    base = _case()
    assert _quick(base) == _checked(base)
    for odd in ODD + ['absent']:
        tc = copy.deepcopy(base)
        if odd == 'absent':
            tc.pop(key, None)
        else:
            tc[key] = copy.deepcopy(odd)
        assert repr(_quick(tc)) == repr(_checked(tc)), (key, odd)


def test_every_odd_figure_reads_as_the_checked_reading():
    base = _case()
    metric = next(iter(base['perfvalues']))
    for place in range(6):
        for odd in ODD + [-1e301, 1e300, -0.0, 7]:
            tc = copy.deepcopy(base)
            tc['perfvalues'][metric][place] = copy.deepcopy(odd)
            assert repr(_quick(tc)) == repr(_checked(tc)), (place, odd)
    for key in ['sys:part:', 'metric', ':', '']:
        tc = copy.deepcopy(base)
        tc['perfvalues'][key] = [1.0, 0, None, None, 'GB/s', 'pass']
        assert repr(_quick(tc)) == repr(_checked(tc)), key
    tc = copy.deepcopy(base)
    tc['perfvalues'][metric] = [1.0, 0, None, None]
    assert repr(_quick(tc)) == repr(_checked(tc))
