"""`hpcval report --group-by KEY` and `hpcval diff` on the real 2x H200
validation runs (tests/fixtures/captured/h200x2/validation), before and
after a driver change.

The driver of those runs never changed (580.159.04 throughout), so the
"after" runs are real reports with one defect planted: their provenance's
driver string set to 580.95.05 (a mutation of a real document, one field).
Their figures are as measured: healthy09 a healthy rerun, gpu1_loaded the
run with a second process copying buffers on GPU 1.
"""
import contextlib
import io
import json
import math
import pathlib
import shutil
import types

import pytest

from hpcval import cli
from hpcval.publish import changes

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNS = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' / 'validation' / \
    'reports'
BEFORE = [*(f'baseline{i}' for i in range(1, 6)),
          *(f'healthy0{i}' for i in range(1, 9))]
OLD, NEW = '580.159.04', '580.95.05'


def driver_change(folder, after):
    """The BEFORE runs as recorded, and ``after`` with the new driver."""
    folder.mkdir()
    for name in BEFORE:
        shutil.copyfile(RUNS / f'{name}.json', folder / f'{name}.json')
    for name in after:
        text = (RUNS / f'{name}.json').read_text()
        assert f'"driver": "{OLD}"' in text
        (folder / f'{name}.json').write_text(
            text.replace(f'"driver": "{OLD}"', f'"driver": "{NEW}"'))
    return sorted(str(p) for p in folder.glob('*.json'))


def hpcval(*args):
    """hpcval's exit status and output, run in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main([str(a) for a in args])
        except SystemExit as done:
            status = done.code
    return types.SimpleNamespace(returncode=status, stdout=out.getvalue(),
                                 stderr=err.getvalue())


def test_welch_t_test_by_hand():
    t, df, p = changes.welch([1, 2, 3], [4, 5, 6])
    # means 2 and 5, variances 1: t = 3 / sqrt(2/3), df = 4
    assert t == pytest.approx(3 / math.sqrt(2 / 3))
    assert df == pytest.approx(4)
    assert p == pytest.approx(0.02131, abs=1e-4)    # t(4) two-sided
    assert changes.welch([1, 1], [1, 1])[2] == 1.0


def test_group_by_driver_names_both_drivers_with_n_and_p(tmp_path):
    reports = driver_change(tmp_path / 'runs', ['healthy09', 'gpu1_loaded'])
    proc = hpcval('report', *reports, '--group-by', 'driver')
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "Welch's two-sided t-test" in out
    copy1 = [line for line in out.splitlines()
             if '| copy@gpu1 |' in line]
    assert len(copy1) == 2
    assert f'| {OLD} | 13 |' in copy1[0] and 'baseline' in copy1[0]
    assert f'| {NEW} | 2 |' in copy1[1]
    csv_out = hpcval('report', *reports, '--group-by', 'driver',
                     '--format', 'csv').stdout.splitlines()
    assert csv_out[0].startswith('system,test,metric,unit,key,value,n')
    assert any(f',driver,{NEW},2,' in line for line in csv_out)


def test_group_by_a_key_no_run_recorded_names_the_recorded_ones(tmp_path):
    reports = driver_change(tmp_path / 'runs', ['healthy09'])
    proc = hpcval('report', *reports, '--group-by', 'vbios')
    assert proc.returncode == 2
    assert 'no selected run recorded it' in proc.stderr
    assert 'driver' in proc.stderr and 'Traceback' not in proc.stderr
    bad = hpcval('report', *reports, '--group-by', 'x;rm -rf /')
    assert bad.returncode == 3 and 'not a provenance key' in bad.stderr


def test_diff_after_a_driver_change_healthy_rerun(tmp_path):
    reports = driver_change(tmp_path / 'runs', ['healthy09'])
    proc = hpcval('diff', *reports)
    assert proc.returncode == changes.EXIT_OK, proc.stdout + proc.stderr
    assert f'changed driver: {OLD} -> {NEW}' in proc.stdout
    assert '0 moved of 46 judged' in proc.stdout


def test_diff_names_the_driver_and_the_figures_that_moved(tmp_path):
    reports = driver_change(tmp_path / 'runs', ['gpu1_loaded'])
    proc = hpcval('diff', *reports)
    assert proc.returncode == changes.EXIT_MOVED, proc.stderr
    assert f'changed driver: {OLD} -> {NEW}' in proc.stdout
    moved = [line for line in proc.stdout.splitlines()
             if line.startswith('  moved:')]
    assert any('copy@gpu1' in line and '-21.9 %' in line
               and 'x its minimum' in line for line in moved)
    assert any('all_reduce busbw_inplace_largest' in line for line in moved)
    # GPU 0 moved 0.6 %, beyond its noise but not the 5 % floor
    assert not any('@gpu0' in line for line in moved)
    data = json.loads(hpcval('diff', *reports, '--format', 'json').stdout)
    (node,) = data['nodes']
    assert node['node'] == 'vm'
    assert node['changed'] == {
        'driver': {'before': OLD, 'after': NEW}}
    assert data['status'] == 1 and data['false_alarm'] == changes.FALSE_ALARM
    copy1 = next(f for f in node['figures'] if f['metric'] == 'copy@gpu1')
    assert copy1['verdict'] == 'moved' and copy1['n'] == 13
    assert abs(copy1['value'] - copy1['baseline']) > copy1['minimum'] >= \
        0.05 * copy1['baseline']
    effects = [f['effect'] for f in node['figures']
               if f['verdict'] == 'moved']
    assert effects == sorted(effects, reverse=True) and min(effects) > 1


def test_diff_without_enough_history_is_incomplete(tmp_path):
    folder = tmp_path / 'two'
    folder.mkdir()
    for name in ('baseline1', 'baseline2'):
        shutil.copyfile(RUNS / f'{name}.json', folder / f'{name}.json')
    proc = hpcval('diff', *sorted(map(str, folder.glob('*.json'))))
    assert proc.returncode == changes.EXIT_INCOMPLETE
    assert 'not judged' in proc.stdout
    none = hpcval('diff')
    assert none.returncode == changes.EXIT_INPUT
    assert 'nothing to compare' in none.stderr


# hpcval diff on the real H100 runs of tests/fixtures/captured/h100_calib:
# 5 baselines, the calibration they made (local.yaml there), healthy01-14
# of which healthy11 failed one test case (ReFrame's own performance check)
H100 = ROOT / 'tests' / 'fixtures' / 'captured' / 'h100_calib'


def _h100(folder, names, new_driver=()):
    """The H100 runs ``names`` in ``folder``; those of ``new_driver``
    with their driver string set to NEW (one field mutated)."""
    folder.mkdir(exist_ok=True)
    for name in names:
        text = (H100 / 'reports' / f'{name}.json').read_text()
        if name in new_driver:
            assert f'"driver": "{OLD}"' in text
            text = text.replace(f'"driver": "{OLD}"', f'"driver": "{NEW}"')
        (folder / f'{name}.json').write_text(text)
    return [str(folder / f'{name}.json') for name in names]


def _diff(*argv):
    proc = hpcval('diff', *argv)
    return proc.returncode, proc.stdout, proc.stderr


BEFORE_H100 = [*(f'baseline{i}' for i in range(1, 6)),
               *(f'healthy{i:02d}' for i in range(1, 12))]


def test_last_good_is_a_session_that_passed(tmp_path):
    runs = _h100(tmp_path, [*BEFORE_H100, 'healthy12'])
    status, out, _ = _diff(*runs)
    assert status == changes.EXIT_OK, out
    # healthy11 failed its ping-pong: neither baseline nor noise
    assert f'run 2026-12-06 17:33 UTC ({runs[-1]}) against baseline ' \
        f'2026-12-06 17:32 UTC ({tmp_path / "healthy10.json"})' in out
    status, out, _ = _diff(*runs, '--all')
    assert 'the noise of 15 passing runs' in out


def test_provenance_against_the_baseline_given(tmp_path, monkeypatch):
    """After the driver change, healthy10 passed: the default baseline is
    that run; a time before the change, the last baseline file or the
    calibration each name the driver that changed."""
    runs = _h100(tmp_path, [*BEFORE_H100, 'healthy12'],
                 new_driver=('healthy10', 'healthy11', 'healthy12'))
    status, out, _ = _diff(*runs)
    assert status == 0 and 'provenance: as at the baseline' in out
    assert 'changed driver' not in out
    site = tmp_path / 'site'
    (site / 'references').mkdir(parents=True)
    shutil.copyfile(H100 / 'local.yaml', site / 'references' / 'local.yaml')
    monkeypatch.setenv('HPCVAL_SITE', str(site))
    for baseline, named in (
            ('2026-12-06T17:31+00:00', '17:30 UTC ('),
            (runs[4], f'17:26 UTC ({runs[4]})'),
            ('calibration', f'the calibration in {site}')):
        status, out, err = _diff(*runs, '--baseline', baseline)
        assert f'changed driver: {OLD} -> {NEW}' in out, (baseline, out)
        assert f'against baseline 2026-12-06 {named}' in out or \
            f'against baseline {named}' in out, out
        assert 'moved of' in out and 'Traceback' not in err
    # the calibration has no value for BabelStream OpenMP: not judged
    assert status == changes.EXIT_INCOMPLETE and ' not judged' in out


def test_moves_ranked_by_effect_against_the_calibration(tmp_path,
                                                        monkeypatch):
    site = tmp_path / 'site'
    (site / 'references').mkdir(parents=True)
    shutil.copyfile(H100 / 'local.yaml', site / 'references' / 'local.yaml')
    monkeypatch.setenv('HPCVAL_SITE', str(site))
    runs = _h100(tmp_path, ['healthy01', 'gpu0_loaded'])
    status, out, _ = _diff(*runs, '--baseline', 'calibration')
    assert status == changes.EXIT_MOVED
    moved = [line for line in out.splitlines() if line.startswith('  moved:')]
    # the 11 figures the verdict failed on that node: the loaded GPU's
    # kernels (-45 % to -70 %) first, the small-message all_reduce time
    # (+1896 %, 4.9 x its calibrated tolerance of +383 %) last
    assert len(moved) == 11 and 'triad' in moved[0], moved
    assert 'all_reduce time_outofplace_smallest' in moved[-1], moved
    assert all('its calibrated tolerance' in line for line in moved)
    effects = [float(line.split(', ')[1].split(' x ')[0]) for line in moved]
    assert effects == sorted(effects, reverse=True) and min(effects) > 1


@pytest.mark.parametrize('value, says', [
    ('yesterday', 'no such report file, not calibration, and not a time'),
    ('calibration', 'no reference file holds a calibrated value'),
    ('bad.json', 'bad.json: left out (named above)')])
def test_a_bad_baseline_is_one_line(tmp_path, value, says):
    runs = _h100(tmp_path, ['baseline1', 'baseline2'])
    (tmp_path / 'bad.json').write_text('{"session_info": {')
    value = str(tmp_path / value) if value.endswith('.json') else value
    status, out, err = _diff(*runs, '--baseline', value)
    assert status == changes.EXIT_INPUT and out == ''
    # the file's own problem, then the line naming it the baseline
    assert err.count('\n') == 1 + value.endswith('.json'), err
    assert says in err.splitlines()[-1], err


def test_a_newest_run_that_ran_nothing_is_named(tmp_path):
    runs = _h100(tmp_path, ['baseline1', 'baseline2', 'baseline3',
                            'baseline4', 'healthy01'])
    empty = json.loads(pathlib.Path(runs[-1]).read_text())
    empty['session_info'].update(uuid='empty', time_start_unix=1796590000)
    empty['runs'][0]['testcases'] = []
    (tmp_path / 'empty.json').write_text(json.dumps(empty))
    status, out, _ = _diff(*runs, tmp_path / 'empty.json')
    assert status == changes.EXIT_INCOMPLETE, out
    assert f'newest run without figures: {tmp_path / "empty.json"}' in out
