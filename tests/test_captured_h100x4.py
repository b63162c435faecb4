"""The validation loop as run on a real 4 x H100 NVLink node
(tests/fixtures/captured/h100x4, README.md there), replayed through
``hpcval verdict`` against the calibration made there, without a GPU."""
import json
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
D = ROOT / 'tests' / 'fixtures' / 'captured' / 'h100x4'
HEALTHY = sorted((D / 'reports').glob('healthy*.json'))
NCCL_BUILD = 'NcclTestsBuild ~local:default+cuda'


def verdict(report):
    proc = subprocess.run(
        [sys.executable, '-m', 'hpcval.cli', 'verdict', str(report),
         '--references', str(D / 'local.yaml'), '--format', 'json'],
        capture_output=True, text=True, cwd=ROOT, timeout=120)
    return proc.returncode, json.loads(proc.stdout)


def failures(data):
    return [f for p in data['partitions'] for f in p['failures']]


def judged_failures(data):
    """Failures other than the run's own carrying mistake: nccl-tests'
    executables were not all carried to the node (README.md)."""
    return [f for f in failures(data) if f['test'] != NCCL_BUILD]


@pytest.mark.parametrize('path', HEALTHY, ids=lambda p: p.stem)
def test_a_healthy_4_gpu_run_fails_no_figure(path):
    rc, data = verdict(path)
    [part] = data['partitions']
    assert part['judged_failed'] == 0 and part['judged_passed'] >= 80
    assert judged_failures(data) == []
    # what kept it from passing is named: the missing executables
    assert {f['test'] for f in failures(data)} == {NCCL_BUILD}
    assert rc == 1


def test_the_competing_process_is_named_on_gpu_3_with_its_cause():
    rc, data = verdict(D / 'reports' / 'gpu_last_loaded.json')
    found = judged_failures(data)
    assert rc == 1 and found
    assert {f['component'].split(' (')[0] for f in found} == {'GPU 3'}
    assert all('another process' in f['cause'] for f in found)
    lines = [f['line'] for f in found]
    assert all(line.startswith('node vm GPU 3') for line in lines)
    siblings = {f['metric'] for f in found if '_vs_siblings' in f['metric']}
    assert siblings == {f'{k}_vs_siblings@gpu3'
                        for k in ('copy', 'mul', 'add', 'triad', 'dot')}


def test_an_inactive_nvlink_fails_naming_that_gpu_and_link_only():
    rc, data = verdict(D / 'reports' / 'gpu1_nvlink_inactive.json')
    found = judged_failures(data)
    assert rc == 1 and found
    assert all(f['line'].startswith('node vm GPU 1: NVLink 3 inactive')
               for f in found)
