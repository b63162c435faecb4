"""Node screens on a real Slurm (hpcval.testing.minicluster), judged by
``hpcval verdict``: every node accounted for, a slow node found by its
peers, a broken node named, nothing else blamed.

The screen is ``LikwidBenchCheck %kernel=peakflops`` (likwid-bench's flop
rate on every core of a node) under ReFrame's ``--distribute``.  A node is
made slow honestly: its slurmd, and so every job it starts, is put under a
CPU quota (a cgroup); a node is broken by its task prolog, whose exports
reach the batch script too: PATH points nowhere, so likwid-bench cannot be
run there.
"""
import json
import math
import subprocess
import time

import pytest

from hpcval.testing.minicluster import MiniCluster
from conftest import require_minicluster
from rfmrun import ROOT, VENV_BIN, cases, reframe

PEAKFLOPS = 'LikwidBenchCheck%kernel=peakflops'
SCREEN = ('--distribute=all', '-n', PEAKFLOPS)
LIKWID = ('checks/likwid_bench.py',)
NO_LIKWID = 'export PATH=/nonexistent'
# tight enough to show through a loaded 2-core host (where every healthy
# node gets well under one core), still a quota: the node runs, slowly
SLOW_PERCENT = 5
# 64 nodes' jobs share the host's two cores with each other and with
# whatever else runs (another pytest-xdist worker): the slowed node gets a
# quota its peers stay well above however busy the host is (it must run at
# under a quarter of their median to fail: screen.PEER_FACTOR)
SLOW_PERCENT_64 = 2


def verdict(report_path):
    proc = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict', '--format',
                           'json', str(report_path)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    return proc.returncode, json.loads(proc.stdout), proc


def screen(cluster, tmp_path, *args):
    start = time.monotonic()
    proc, report = reframe('-r', '--system', 'minicluster', *SCREEN, *args,
                           tmp_path=tmp_path, checks=LIKWID,
                           env=cluster.env())
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return report, time.monotonic() - start


@pytest.fixture(scope='module')
def cluster64(tmp_path_factory):
    require_minicluster()
    cluster = MiniCluster(tmp_path_factory.mktemp('mc64'), nodes=64)
    cluster.start()
    yield cluster
    cluster.stop()


def test_64_node_screen_names_exactly_the_two_bad_nodes(cluster64, tmp_path):
    """n7 slowed by a CPU quota, n42 broken: the verdict names those two
    and no other, covers 64 of 64 nodes and exits 1."""
    cluster64.slow_node('n7', SLOW_PERCENT_64)
    cluster64.inject_fault('n42', NO_LIKWID)
    report, wall = screen(cluster64, tmp_path)
    assert len(cases(report)) == 64

    status, result, proc = verdict(tmp_path / 'report.json')
    assert status == 1, proc.stdout + proc.stderr
    assert sorted(result['failures_by_node']) == ['n42', 'n7'], \
        json.dumps(result['failures_by_node'], indent=1)
    [part] = result['partitions']
    cov = part['coverage']
    assert len(cov['partition_nodes']) == 64 and len(cov['tested']) == 64
    assert cov['untested'] == {}
    slow = result['failures_by_node']['n7']
    assert any('peakflops_rate' in line and 'peer median' in line
               for line in slow)
    assert any('printed no MFlops/s' in line
               for line in result['failures_by_node']['n42'])
    text = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict',
                           str(tmp_path / 'report.json')],
                          capture_output=True, text=True).stdout
    assert '64 of 64 nodes tested' in text

    runs = [tc['time_run'] for tc in cases(report)]
    print(f'\n64-node screen: {wall:.0f} s wall for 64 jobs '
          f'({64 / wall * 60:.1f} jobs/min); job run phase median '
          f'{sorted(runs)[32]:.1f} s')
    # the wall time is recorded (docs/measurements.md), not judged: no
    # test depends on how fast the host is
    assert math.isfinite(wall) and wall > 0


def test_two_node_screen_names_the_slow_node(faults, tmp_path):
    """Issue 15 on the two-node cluster: n2 under a CPU quota fails against
    its one peer; n1 passes; exit 1."""
    faults.slow_node('n2', SLOW_PERCENT)
    screen(faults, tmp_path)
    status, result, proc = verdict(tmp_path / 'report.json')
    assert status == 1, proc.stdout
    assert list(result['failures_by_node']) == ['n2'], proc.stdout
    [line] = result['failures_by_node']['n2'][:1]
    assert 'vs peers' in line and 'peer median' in line


def test_a_drained_node_leaves_the_screen_incomplete(faults, tmp_path):
    """n2 drained: ReFrame's default --distribute (idle nodes) runs on n1
    only and passes; the verdict says 1 of 2 nodes tested, names n2 with
    Slurm's reason and exits 2."""
    faults.run('scontrol', 'update', 'nodename=n2', 'state=drain',
               'reason=after maintenance')
    try:
        proc, report = reframe('-r', '--system', 'minicluster',
                               '--distribute', '-n', PEAKFLOPS,
                               tmp_path=tmp_path, checks=LIKWID,
                               env=faults.env())
    finally:
        faults.run('scontrol', 'update', 'nodename=n2', 'state=resume')
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert [tc['display_name'][-2:] for tc in cases(report)] == ['n1']

    status, result, out = verdict(tmp_path / 'report.json')
    assert status == 2, out.stdout
    [part] = result['partitions']
    assert part['coverage']['untested'] == {
        'n2': 'drained: after maintenance'}
    assert any('1 of 2 nodes tested' in why and 'n2 (drained: after '
               'maintenance)' in why for why in result['incomplete'])


def test_readme_minicluster_lines_work_from_a_fresh_shell(tmp_path):
    """The README's minicluster block, as written, in a login shell with
    nothing exported (only its --dir moved under tmp_path)."""
    require_minicluster()
    readme = (ROOT / 'README.md').read_text()
    block = readme.split('```sh\n. .venv/bin/activate && eval', 1)[1]
    block = '. .venv/bin/activate && eval' + block.split('```', 1)[0]
    assert '/tmp/mc' in block
    script = block.replace('/tmp/mc', str(tmp_path / 'mc'))
    proc = subprocess.run(['env', '-i', 'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
                           f'HOME={tmp_path}', 'bash', '-c', script],
                          cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert 'Ran 4/4 test case(s)' in out, out[-3000:]
    assert '4 of 4 nodes tested' in out, out[-3000:]
    assert 'stopped' in out and proc.returncode == 0, out[-3000:]


def test_quick_suite_with_a_source_unreachable_is_incomplete(faults,
                                                              tmp_path):
    """Issue 15 on the minicluster: git cannot reach GitHub (every
    https://github.com/ URL rewritten to a closed local port), so the quick
    suite's BabelStream is skipped; the verdict exits 2 and names it with
    the reason."""
    unreachable = {'GIT_CONFIG_COUNT': '1',
                   'GIT_CONFIG_KEY_0': 'url.https://127.0.0.1:9/.insteadOf',
                   'GIT_CONFIG_VALUE_0': 'https://github.com/'}
    proc, report = reframe('-r', '--system', 'minicluster', '--mode', 'quick',
                           '-S', 'Mpi4pyPingPongCheck.max_size=65536',
                           tmp_path=tmp_path,
                           env={**faults.env(), **unreachable})
    assert report is not None, proc.stdout[-3000:]
    names = {tc['display_name'].split()[0] for tc in cases(report)
             if not tc.get('fixture')}
    assert {'BabelStreamCpuCheck', 'Mpi4pyPingPongCheck',
            'LikwidBenchCheck'} <= names, names

    status, result, out = verdict(tmp_path / 'report.json')
    assert status == 2, out.stdout
    [part] = result['partitions']
    skipped = {s['test'].split()[0]: s['reason'] for s in part['skips']}
    assert 'unreachable' in skipped['BabelStreamCpuCheck'], skipped
    assert any('skipped, not validated' in why
               for why in result['incomplete'])


def test_status_restart_node_and_start_after_a_crash(tmp_path):
    """A dead slurmd is flagged by status (exit 1) and brought back by
    restart-node; after a crash (controller and a node killed) start
    cleans what was left and every node comes back idle, without the old
    cluster's drain or faults."""
    require_minicluster()
    import os
    import signal

    def cli(*args):
        return subprocess.run([str(VENV_BIN / 'python'), '-m',
                               'hpcval.testing.minicluster', *args,
                               '--dir', str(tmp_path / 'mc')],
                              capture_output=True, text=True, timeout=180)

    cluster = MiniCluster(tmp_path / 'mc', nodes=3)
    cluster.start()
    try:
        os.kill(cluster.running()['slurmd-n2'], signal.SIGKILL)
        status = cli('status')
        assert status.returncode == 1
        assert 'slurmd-n2: DEAD' in status.stdout, status.stdout
        assert cli('restart-node', 'n2').returncode == 0
        assert cli('status').returncode == 0
        assert 'slurmd-n2: pid' in cli('status').stdout

        cluster.run('scontrol', 'update', 'nodename=n3', 'state=drain',
                    'reason=left over')
        cluster.inject_fault('n1', NO_LIKWID)
        for name in ('slurmctld', 'slurmd-n1'):
            os.kill(cluster.running()[name], signal.SIGKILL)
        started = cli('start')
        assert started.returncode == 0, started.stderr
        assert cluster.node_states() == {'n1': 'idle', 'n2': 'idle',
                                         'n3': 'idle'}
        assert not (cluster.faults / 'n1').exists()
    finally:
        cluster.stop()
    assert cluster.running() == {}
