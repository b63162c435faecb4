"""`hpcval report --group-by KEY` and `hpcval diff` on the real 2x H200
validation runs (tests/fixtures/captured/h200x2/validation), before and
after a driver change.

The driver of those runs never changed (580.159.04 throughout), so the
"after" runs are real reports with one defect planted: their provenance's
driver string set to 580.95.05 (a mutation of a real document, one field).
Their figures are as measured: healthy09 a healthy rerun, gpu1_loaded the
run with a second process copying buffers on GPU 1.
"""
import json
import math
import pathlib
import shutil
import subprocess
import sys

import pytest

from hpcval.publish import changes

ROOT = pathlib.Path(__file__).resolve().parent.parent
RUNS = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' / 'validation' / \
    'reports'
BEFORE = [*(f'baseline{i}' for i in range(1, 6)),
          *(f'healthy0{i}' for i in range(1, 9))]
OLD, NEW = '580.159.04', '580.95.05'
HPCVAL = [sys.executable, '-m', 'hpcval.cli']


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
    return subprocess.run([*HPCVAL, *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


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
    assert '0 moved beyond noise of 46 judged' in proc.stdout


def test_diff_names_the_driver_and_the_figures_that_moved(tmp_path):
    reports = driver_change(tmp_path / 'runs', ['gpu1_loaded'])
    proc = hpcval('diff', *reports)
    assert proc.returncode == changes.EXIT_MOVED, proc.stderr
    assert f'changed driver: {OLD} -> {NEW}' in proc.stdout
    moved = [line for line in proc.stdout.splitlines()
             if line.startswith('  moved:')]
    assert any('copy@gpu1' in line and 'n=13' in line
               and 'detection limit' in line for line in moved)
    assert any('all_reduce busbw_inplace_largest' in line for line in moved)
    data = json.loads(hpcval('diff', *reports, '--format', 'json').stdout)
    (node,) = data['nodes']
    assert node['node'] == 'vm'
    assert node['provenance_changed'] == {
        'driver': {'before': OLD, 'after': NEW}}
    assert data['status'] == 1 and data['false_alarm'] == changes.FALSE_ALARM
    copy1 = next(f for f in node['figures'] if f['metric'] == 'copy@gpu1')
    assert copy1['verdict'] == 'moved' and copy1['n'] == 13
    assert abs(copy1['value'] - copy1['mean']) > copy1['detection_limit']


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
