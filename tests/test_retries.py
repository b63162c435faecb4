"""Confirm before failing (issue 46): a failure ReFrame measured again in
its session (``--max-retries=1``) fails the node only where the re-measure
fails too, with both figures; one whose re-measure passed is INTERMITTENT,
never a pass nor a drain.  Judged on real captured reports: ReFrame's own
retried run (tests/fixtures/reports/retry), and reports whose runs are
real captures of a loaded and a healthy H100 (tests/fixtures/captured)."""
import copy
import json
import pathlib
from types import SimpleNamespace

import pytest

from hpcval import cli, inputs, preflight, retries, suites

FIX = pathlib.Path(__file__).resolve().parent / 'fixtures'
RETRY = FIX / 'reports' / 'retry'
H100 = FIX / 'captured' / 'h100_health' / 'reports'
X4 = FIX / 'captured' / 'h100x4'
SCREEN = FIX / 'reports' / 'minicluster-screen' / 'healthy-4-nodes.json'
STREAM = 'BabelStreamCudaCheck %build.model=cuda'


def _verdict(capsys, report, *args):
    status = cli.main(['verdict', str(report), '--format', 'json',
                       *map(str, args)])
    return status, json.loads(capsys.readouterr().out)


def _all(data, key):
    return [f for p in data['partitions'] for f in p[key]]


def _read(path):
    return json.loads(pathlib.Path(path).read_text())


def _retried(first, again, names, tmp_path):
    """A report: ``first``'s session as its run 0, and as run 1 the test
    cases ``names`` as ``again`` measured them (ReFrame's retry holds
    only the cases that failed)."""
    report = _read(first)
    cases = [copy.deepcopy(tc) for run in _read(again)['runs']
             for tc in run['testcases'] if tc['display_name'] in names]
    assert len(cases) == len(names)
    for tc in cases:
        tc['run_index'] = 1
    report['runs'].append({'run_index': 1, 'testcases': cases})
    path = tmp_path / 'retried.json'
    path.write_text(json.dumps(report))
    return path


def _failed(path):
    return {tc['display_name'] for tc in _read(path)['runs'][0]['testcases']
            if tc['result'] == 'fail' and not tc.get('fixture')}


def test_reframe_writes_each_run_and_its_figures():
    """What ReFrame 4.10 wrote for a retried case, as the verdict reads
    it: runs[0] and runs[1], each its run_index; the perflog one line per
    run."""
    report = _read(RETRY / 'mpi4py_retried.json')
    assert [r['run_index'] for r in report['runs']] == [0, 1]
    [first], [again] = (r['testcases'] for r in report['runs'])
    assert first['display_name'] == again['display_name']
    assert again['stagedir'].endswith('_retry1')
    assert again['job_completion_time_unix'] - \
        first['job_completion_time_unix'] == pytest.approx(12.8, abs=0.1)
    lines = (RETRY / 'mpi4py_retried.perflog').read_text().splitlines()
    assert len(lines) == 3 and lines[1].startswith('fail|2026-12-06T17:10:42')


def test_a_failure_confirmed_and_one_intermittent_in_reframes_report(capsys):
    status, data = _verdict(capsys, RETRY / 'mpi4py_retried.json',
                            '--references', RETRY / 'local.yaml')
    [fail] = _all(data, 'failures')
    assert fail['line'].startswith(
        'node vm: Mpi4pyPingPongCheck %placement=on_node: latency_8B = '
        '0.808397 us on first run, 2.6395 us on re-measure, +26295% vs ref '
        '0.01, bound <= 0.011 us')
    [part] = data['partitions']
    assert part['cases_failed'] == 1 and part['cases_passed'] == 0
    [flaky] = part['intermittent']
    assert flaky['line'].startswith(
        'node vm: Mpi4pyPingPongCheck %placement=on_node: bandwidth_4MiB = '
        '1121.52 MB/s on first run, 8626.67 MB/s on re-measure, -81.3% vs '
        'ref 6000, bound >= 1200 MB/s')
    assert 'the node was busy at job start' in flaky['cause']
    assert status == 1


def test_a_loaded_gpu_that_measures_healthy_again_is_intermittent(
        capsys, tmp_path):
    """Run 0: the capture with a competing process on GPU 0; its three
    failed cases re-measured as the healthy capture measured them."""
    names = _failed(H100 / 'gpu0_loaded.json')
    assert len(names) == 3
    path = _retried(H100 / 'gpu0_loaded.json', H100 / 'healthy.json', names,
                    tmp_path)
    status, data = _verdict(capsys, path, '--references',
                            H100 / 'local.yaml')
    assert _all(data, 'failures') == []
    lines = [f['line'] for f in _all(data, 'intermittent')]
    assert len(lines) == 12
    [copy_gpu0] = [line for line in lines if ': copy@gpu0 = ' in line]
    assert copy_gpu0.startswith(
        f'node vm GPU 0: {STREAM}: copy@gpu0 = 1.08203e+06 MB/s on first '
        f'run, ')
    assert ' MB/s on re-measure, -60.5% vs ref 2.73586e+06, bound >= ' \
        '2.59907e+06 MB/s' in copy_gpu0
    assert 'another process, python3 (pid 5504)' in copy_gpu0
    assert data['next_steps']['drain'] == []
    assert any('INTERMITTENT' in why and 're-run to confirm' in why
               for why in data['incomplete'])
    [part] = data['partitions']
    assert part['cases_passed'] == 6 and part['cases_failed'] == 0
    assert status == 2


def test_a_loaded_gpu_measured_loaded_again_fails_with_both(
        capsys, tmp_path):
    names = _failed(H100 / 'gpu0_loaded.json')
    path = _retried(H100 / 'gpu0_loaded.json', H100 / 'gpu0_loaded.json',
                    names, tmp_path)
    status, data = _verdict(capsys, path, '--references',
                            H100 / 'local.yaml')
    _, once = _verdict(capsys, H100 / 'gpu0_loaded.json', '--references',
                       H100 / 'local.yaml')
    lines = [f['line'] for f in _all(data, 'failures')]
    # the same failures as the run without a retry, each with both figures
    assert len(lines) == len(_all(once, 'failures')) == 12
    assert f'node vm GPU 0: {STREAM}: copy@gpu0 = 1.08203e+06 MB/s on ' \
        f'first run, 1.08203e+06 MB/s on re-measure, -60.5% vs ref ' \
        f'2.73586e+06' in '\n'.join(lines)
    assert _all(data, 'intermittent') == []
    assert data['partitions'][0]['cases_failed'] == 3
    assert status == 1


def test_a_sanity_failure_that_passes_its_retry_is_intermittent(
        capsys, tmp_path):
    """Run 0's BabelStream case failed its sanity (the real case, its
    result and reason changed); its retry passed."""
    broken = _read(H100 / 'healthy.json')
    for tc in broken['runs'][0]['testcases']:
        if tc['display_name'] == STREAM:
            tc.update(result='fail', fail_phase='sanity',
                      fail_reason='sanity error: no result table')
    first = tmp_path / 'first.json'
    first.write_text(json.dumps(broken))
    path = _retried(first, H100 / 'healthy.json', {STREAM}, tmp_path)
    status, data = _verdict(capsys, path, '--references',
                            H100 / 'local.yaml')
    assert _all(data, 'failures') == []
    [flaky] = _all(data, 'intermittent')
    assert flaky['line'] == (f'node vm: {STREAM}: sanity: sanity error: no '
                             f'result table on first run, passed on '
                             f're-measure')
    assert status == 2


def test_a_build_that_fails_its_retry_is_one_failure(capsys, tmp_path):
    """The 4 x H100 run whose nccl-tests build failed, retried by ReFrame
    with its two collectives (skipped for it): one FAIL, two skips."""
    src = X4 / 'reports' / 'healthy01.json'
    report = _read(src)
    again = [copy.deepcopy(tc) for tc in report['runs'][0]['testcases']
             if tc['result'] in ('fail', 'fail_deps')]
    assert len(again) == 3
    report['runs'].append({'run_index': 1, 'testcases': again})
    path = tmp_path / 'retried.json'
    path.write_text(json.dumps(report))
    status, data = _verdict(capsys, path, '--references', X4 / 'local.yaml')
    _, once = _verdict(capsys, src, '--references', X4 / 'local.yaml')
    [build] = [f for f in _all(data, 'failures')
               if f['test'].startswith('NcclTestsBuild')]
    assert build['reason'].endswith('on first run and on re-measure')
    [part], [was] = data['partitions'], once['partitions']
    assert (part['cases_failed'], part['cases_skipped']) == \
        (was['cases_failed'], was['cases_skipped'])
    assert status == 1


def _screen(tmp_path, again_fails):
    """The real 4-node screen with node n3's case failed on run 0 (its
    sanity: the case's result and reason changed) and retried: the real
    case, or failed again."""
    report = _read(SCREEN)
    [n3] = [tc for tc in report['runs'][0]['testcases']
            if tc['display_name'].endswith('%.nid=n3')]
    again = copy.deepcopy(n3)
    for tc in (n3, again) if again_fails else (n3,):
        tc.update(result='fail', fail_phase='sanity',
                  fail_reason='sanity error: no result table')
    again['run_index'] = 1
    report['runs'].append({'run_index': 1, 'testcases': [again]})
    path = tmp_path / 'screen.json'
    path.write_text(json.dumps(report))
    return path


def test_a_screened_node_that_passes_its_retry(capsys, tmp_path):
    """n3 intermittent; the other nodes judged against the same peers as
    in the screen without a retry (by the minicluster's own bound, x4:
    none fails there), so the verdict is incomplete, not failed."""
    status, data = _verdict(capsys, _screen(tmp_path, False))
    _, once = _verdict(capsys, SCREEN)
    assert _all(data, 'failures') == _all(once, 'failures')
    [flaky] = _all(data, 'intermittent')
    assert flaky['line'].startswith('node n3: LikwidBenchCheck')
    assert flaky['line'].endswith('no result table on first run, passed on '
                                  're-measure')
    assert data['next_steps']['drain'] == once['next_steps']['drain']
    assert status == 2


def test_a_screened_node_failing_its_retry(capsys, tmp_path):
    _, data = _verdict(capsys, _screen(tmp_path, True))
    lines = [f['line'] for f in _all(data, 'failures')
             if f['node'] == 'n3']
    assert lines == ['node n3: LikwidBenchCheck %kernel=peakflops '
                     '%.part=minicluster:cpu %.nid=n3: sanity: sanity '
                     'error: no result table on first run and on '
                     're-measure']
    assert _all(data, 'intermittent') == []


def _case(run, result, test='T'):
    return SimpleNamespace(session='s', source='r.json', hostname='h',
                           test=test, system='sys', partition='p',
                           environ='e', label='', run=run, result=result)


def test_a_rerun_after_a_pass_is_a_measurement_of_its_own():
    """--reruns repeats every case: only a run after a failed one is its
    retry; a retry that did not run leaves the first run to stand."""
    passed, failed = _case(0, 'pass'), _case(1, 'fail')
    assert retries.runs([passed, failed]) == (set(), {})
    first, again, third = _case(0, 'fail'), _case(1, 'fail'), \
        _case(2, 'pass')
    assert retries.runs([first, again, third]) == (
        {id(first), id(again)}, {id(third): first})
    failed, skipped = _case(0, 'fail'), _case(1, 'skip')
    assert retries.runs([failed, skipped]) == ({id(skipped)}, {})


def test_every_mode_measures_a_failure_again_once():
    """A fixed mode accepts its own retry, none (failures unconfirmed)
    and a threshold; more tries are refused (a node rerun until it
    passes)."""
    for mode in suites.MODES:
        assert suites.RETRY in mode['options'], mode['name']
    assert suites.parse([suites.RETRY])['max_retries'] == 1
    for given in ([suites.RETRY], ['--max-retries=0'],
                  ['--retries-threshold=10%']):
        preflight.check_command_line(['--mode', 'screen', '-r', *given], {})
    with pytest.raises(inputs.InputError, match='--max-retries 3: not the '
                                                'screen suite'):
        preflight.check_command_line(
            ['--mode', 'screen', '-r', '--max-retries=3'], {})


def test_a_fault_the_first_run_recorded_fails_whatever_the_retry(
        capsys, tmp_path):
    """nvidia-smi failed after the loaded run's BabelStream job (its
    record changed so); the re-measure passed: the node fails on the
    first run's record, its figures stay INTERMITTENT."""
    loaded = _read(H100 / 'gpu0_loaded.json')
    for tc in loaded['runs'][0]['testcases']:
        if tc['display_name'] == STREAM:
            tc['hpcval_health']['after'] = {'rc': 9, 'message': 'Unable to '
                                            'determine the device handle'}
    first = tmp_path / 'first.json'
    first.write_text(json.dumps(loaded))
    path = _retried(first, H100 / 'healthy.json',
                    _failed(H100 / 'gpu0_loaded.json'), tmp_path)
    status, data = _verdict(capsys, path, '--references',
                            H100 / 'local.yaml')
    [fault] = _all(data, 'failures')
    assert fault['line'].startswith('node vm') and 'exit 9' in fault['line']
    assert len(_all(data, 'intermittent')) == 12
    assert status == 1
