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
import concurrent.futures
import json
import math
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from hpcval.drain import LOAD as LOAD_BLAMED
from hpcval.testing.minicluster import URGENT, MiniCluster
from conftest import require_minicluster
from rfmrun import (ROOT, VENV_BIN, cases, reframe, reframe_command,
                    reframe_env)

PEAKFLOPS = 'LikwidBenchCheck%kernel=peakflops'
SCREEN = ('--distribute=all', '-n', PEAKFLOPS)
LIKWID = ('checks/likwid_bench.py',)
NO_LIKWID = 'export PATH=/nonexistent'
# Tests of blame, coverage and next steps judge peers at x4 (LOOSE): the
# minicluster's nodes share one busy 2-core VM, where a healthy node's
# figure dipped to 0.85x its peers' median while other tests started
# processes beside it (its cores are not its own as a real node's are).
# What the default rule finds is measured by tests/bench_screen.py on 16
# and 64 nodes (docs/screening.md), not asserted on a shared host.
# A bound of x4 (or two nodes) cannot name a node at 0.8x: such a screen
# is not screened for slowness, which these tests accept (docs/screening.md)
LOOSE = ('--peer-factor', '4', '--accept-unscreened')
# the 16-node screen (one run per node, not the screen mode's best of
# two): single runs of healthy nodes dipped to 0.65x on a quiet host, to
# 0.3x beside another suite, which widened the rule's bound to 0.22x the
# median (a node at a quarter of its CPUs, 0.34x, was then not named).  A
# twentieth of its CPUs (0.11x under load alone) was not named once beside
# another suite either.  At a fiftieth n7 stays below such a bound: 0.04x
# beside six busy loops, its job 37 s against the others' 12-25 s, well
# within the partition's 10-minute limit (2026-12-07)
SLOW_FRACTION = 0.98
CI_HOST = ('--peer-factor', '2')
# the screen's size in the suite: the 64-node screen's time is
# tests/bench_screen.py's (docs/measurements.md); what these tests judge
# (coverage, blame, an interrupted screen finished) holds at 16
NODES = 16


def verdict(report_path, *args, cluster=None):
    """``hpcval verdict --format json``; with ``cluster``, where its Slurm
    answers (drain lines are printed only for the Slurm cluster here)."""
    proc = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict', '--format',
                           'json', *args, str(report_path)],
                          capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env=dict(
                              os.environ, **(cluster.env() if cluster
                                             else {})))
    return proc.returncode, json.loads(proc.stdout), proc


def screen(cluster, tmp_path, *args):
    start = time.monotonic()
    proc, report = reframe('-r', '--system', 'minicluster', *SCREEN, *args,
                           tmp_path=tmp_path, checks=LIKWID,
                           env=cluster.env())
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return report, time.monotonic() - start


@pytest.fixture(scope='module')
def cluster16(tmp_path_factory):
    """One 16-node cluster for this module's screens of many nodes, without
    planted faults before and after each test."""
    require_minicluster()
    # a short folder: slurmd's sockets live under it
    cluster = MiniCluster(tmp_path_factory.mktemp('mc16'), nodes=NODES)
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def many(cluster16):
    cluster16.clear_faults()
    yield cluster16
    cluster16.clear_faults()


def test_a_screen_names_exactly_the_two_bad_nodes(many, tmp_path):
    """n7 at a fiftieth of its CPUs, n12 broken: the verdict names those
    two and no other, covers 16 of 16 nodes and exits 1."""
    many.slow_node_by('n7', SLOW_FRACTION)
    many.inject_fault('n12', NO_LIKWID)
    report, wall = screen(many, tmp_path)
    assert len(cases(report)) == NODES

    status, result, proc = verdict(tmp_path / 'report.json', *CI_HOST)
    assert status == 1, proc.stdout + proc.stderr
    # a healthy node may be named beside them only where the verdict
    # names the load at its job start (a suite beside this one takes the
    # cores from under its job)
    named = result['failures_by_node']
    busy = {node for node, lines in named.items()
            if node not in ('n7', 'n12') and lines
            and all(LOAD_BLAMED in line for line in lines)}
    assert sorted(set(named) - busy) == ['n12', 'n7'], \
        json.dumps([named, *[(tc['name'], tc.get('perfvalues'))
                              for tc in cases(report)]], indent=1)
    [part] = result['partitions']
    cov = part['coverage']
    assert len(cov['partition_nodes']) == NODES and \
        len(cov['tested']) == NODES
    assert cov['untested'] == {}
    slow = result['failures_by_node']['n7']
    assert any('peakflops_rate' in line and 'peer median' in line
               for line in slow)
    assert any('printed no MFlops/s' in line
               for line in result['failures_by_node']['n12'])
    text = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict', *CI_HOST,
                           str(tmp_path / 'report.json')],
                          capture_output=True, text=True).stdout
    assert f'{NODES} of {NODES} nodes tested' in text

    runs = [tc['time_run'] for tc in cases(report)]
    print(f'\n{NODES}-node screen: {wall:.0f} s wall '
          f'({NODES / wall * 60:.1f} jobs/min); job run phase median '
          f'{sorted(runs)[NODES // 2]:.1f} s')
    # the wall time is recorded (docs/measurements.md), not judged: no
    # test depends on how fast the host is
    assert math.isfinite(wall) and wall > 0


def test_a_node_slowed_by_an_outside_process_is_named_with_it(faults,
                                                             tmp_path):
    """n2's job starts beside 16 busy processes (its task prolog's: the
    screen's own user, outside the screen), about a ninth of its CPUs
    left: n2 is named slow (at x2) with them as the cause, and the policy
    (docs/screening.md) clears and re-screens it, not drains it."""
    # four (a third) measured 0.645x n1 beside a second suite, whose bursts
    # fell on n1's job and not on n2's: not below x2 (2026-12-07)
    faults.compete('n2', 'cpu', 16)
    screen(faults, tmp_path)
    status, result, proc = verdict(tmp_path / 'report.json', '--peer-factor',
                                   '2', '--accept-unscreened',
                                   cluster=faults)
    assert status == 1 and list(result['failures_by_node']) == ['n2'], \
        proc.stdout
    [line] = result['failures_by_node']['n2']
    # the busiest three are named: beside a second suite its processes
    # may crowd the 16 loops out of them
    assert f'{LOAD_BLAMED}: ' in line and 'outside the screen: ' in line \
        and ('n2.compete (pids ' in line or line.count('(pid') >= 3), line
    steps = result['next_steps']
    assert steps['drain'] == [] and any(
        n.startswith('n2: slowed by processes outside the screen, of the '
                     'screen\'s own user: end ')
        for n in steps['notes']), steps
    assert "-J exclude=n1 " in steps['rescreen'][0], steps


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

    status, result, out = verdict(tmp_path / 'report.json', *LOOSE)
    assert status == 2, out.stdout
    [part] = result['partitions']
    assert part['coverage']['untested'] == {
        'n2': 'drained: after maintenance'}
    assert any('1 of 2 nodes tested' in why and 'n2 (drained: after '
               'maintenance)' in why for why in result['incomplete'])


def test_readme_minicluster_lines_work_from_a_fresh_shell(tmp_path):
    """The README's minicluster block, as written, in a login shell with
    nothing exported (its mktemp -d under a TMPDIR of this test's)."""
    require_minicluster()
    readme = (ROOT / 'README.md').read_text()
    block = readme.split('```sh\n. .venv/bin/activate && MC=', 1)[1]
    script = '. .venv/bin/activate && MC=' + block.split('```', 1)[0]
    assert 'MC=$(mktemp -d)' in script
    # short: the munge socket's path must fit in 108 bytes
    tmp = tempfile.mkdtemp(prefix='mc-', dir='/tmp')
    try:
        proc = subprocess.run(['env', '-i',
                               'PATH=/usr/sbin:/usr/bin:/sbin:/bin',
                               f'HOME={tmp_path}', f'TMPDIR={tmp}', 'bash',
                               '-c', script],
                              cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = proc.stdout + proc.stderr
    assert 'Ran 4/4 test case(s)' in out, out[-3000:]
    assert '4 of 4 nodes tested' in out, out[-3000:]
    # the block exits with the verdict's status, not the stop's: the
    # README's 4, every node passed, four nodes being too few peers to
    # screen for slowness at the target (the floor's bound stated)
    assert 'hpcval verdict: PASSED AT A WIDER BOUND (exit 4)' in out, \
        out[-3000:]
    assert 'the floor alone: 3 peer(s), too few to measure their spread' \
        in out, out[-3000:]
    assert 'stopped' in out and proc.returncode == 4, out[-3000:]


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

    status, result, out = verdict(tmp_path / 'report.json', *LOOSE)
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


def test_lifecycle_commands_after_a_controller_restart(waits):
    """restart-controller starts slurmctld again on its state; a
    controller an administrator started again by hand is adopted: status
    passes, restart-node (NODE after --dir, as the usage writes it) works
    and stop will end the new controller."""
    def cli(*args):
        return subprocess.run([str(VENV_BIN / 'python'), '-m',
                               'hpcval.testing.minicluster', *args],
                              capture_output=True, text=True, timeout=180)
    where = ('--dir', str(waits.root))
    old = waits.running()['slurmctld']
    restarted = cli('restart-controller', *where)
    assert restarted.returncode == 0, restarted.stderr
    assert waits.running()['slurmctld'] != old
    os.kill(waits.running()['slurmctld'], signal.SIGTERM)
    wait_until('slurmctld to end', lambda: 'slurmctld' in waits.dead(), 30)
    by_hand = subprocess.Popen(['slurmctld', '-D', '-f', str(waits.conf)],
                               env=dict(os.environ, **waits.env()),
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL,
                               start_new_session=True)
    wait_until('the controller to answer', lambda: waits.run(
        'scontrol', 'ping', check=False).returncode == 0, 60)
    status = cli('status', *where)
    assert status.returncode == 0, status.stdout
    assert f'slurmctld: pid {by_hand.pid}' in status.stdout
    node = cli('restart-node', *where, 'n2')
    assert node.returncode == 0, node.stderr
    # stop (the fixture's teardown) ends what running() names
    assert waits.running()['slurmctld'] == by_hand.pid


# -- blame only what is broken; what the admin does next ---------------------

def wait_until(what, predicate, timeout=120, every=0.5):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f'timed out after {timeout} s waiting for {what}')


def hanging_likwid(cluster, node):
    """likwid-bench on ``node`` hangs (a stand-in first on its PATH)."""
    hang = cluster.faults / 'hang-bin'
    hang.mkdir(exist_ok=True)
    stand_in = hang / 'likwid-bench'
    stand_in.write_text('#!/bin/sh\nexec sleep 3600\n')
    stand_in.chmod(0o755)
    cluster.inject_fault(node, f'export PATH={hang}:/usr/bin:/bin')


def running_job_on(cluster, node):
    out = cluster.run('squeue', '-h', '-t', 'R', '-o', '%i|%N').stdout
    return [j for j, n in (line.split('|') for line in out.splitlines())
            if n == node]


def _combined_verdict_passes(combined, first, again, folder):
    """The printed combined verdict line, run as written in ``folder``
    beside the screen's and the re-screen's reports, exits 0."""
    shutil.copy(first / 'report.json', folder / 'SCREEN.json')
    shutil.copy(again / 'report.json', folder / 'rescreen.json')
    both = subprocess.run(
        ['bash', '-c', combined], capture_output=True, text=True,
        cwd=folder, timeout=120,
        env=dict(os.environ, PATH=f'{VENV_BIN}:{os.environ["PATH"]}',
                 HPCVAL_ROOT=str(ROOT)))
    assert both.returncode == 0, both.stdout + both.stderr


# the hung node's screen runs on a waiting cluster, whose jobs yield the
# cores to every other test: its healthy n1 measured 0.24x the re-screened
# n2 beside another worker's run (load-blamed, and a failure all the same),
# so the flow from drain to re-screen is judged at x20, not for slowness
HUNG = ('--peer-factor', '20', '--accept-unscreened')


def test_a_hung_node_is_cut_off_drained_and_rescreened(waits, tmp_path):
    """likwid-bench hangs on n2: the screen's own one-minute limit ends
    its job (not the default 10 minutes), the verdict names n2 alone and
    prints a drain line that scontrol takes, and a re-screen of n2 alone
    once it is fixed, read with the first screen, exits 0."""
    hanging_likwid(waits, 'n2')
    first = tmp_path / 'first'
    first.mkdir()
    _, wall = screen(waits, first)
    # ended by the screen's one-minute limit, not the default ten minutes
    # (the limit itself: --time and TIMEOUT below); not a bound on how fast
    # this host is
    assert wall < 600, wall
    status, result, proc = verdict(first / 'report.json', *HUNG,
                                   cluster=waits)
    assert status == 1, proc.stdout
    assert list(result['failures_by_node']) == ['n2'], proc.stdout
    assert any('TIMEOUT: killed at its time limit (0:01:00)' in line
               for line in result['failures_by_node']['n2']), proc.stdout
    script = next(first.rglob('rfm_job.sh')).read_text()
    assert '#SBATCH --no-requeue' in script and '--time=0:1:0' in script

    [drain] = result['next_steps']['drain']
    assert drain.startswith('scontrol update nodename=n2 state=drain '
                            'reason="hpcval: LikwidBenchCheck ')
    try:
        ran = subprocess.run(['bash', '-c', drain], capture_output=True,
                             text=True, timeout=30,
                             env=dict(os.environ, **waits.env()))
        assert ran.returncode == 0, ran.stderr
        state, reason = waits.run('sinfo', '-h', '-n', 'n2', '-o',
                                   '%T|%E').stdout.strip().split('|', 1)
        assert state.startswith('drain') and reason.startswith(
            'hpcval: LikwidBenchCheck'), (state, reason)
        waits.clear_faults()
        # the printed lines, in order: resume, re-screen, verdict
        [resume] = result['next_steps']['resume']
        assert resume == 'scontrol update nodename=n2 state=resume'
        ran = subprocess.run(['bash', '-c', resume], capture_output=True,
                             text=True, timeout=30,
                             env=dict(os.environ, **waits.env()))
        assert ran.returncode == 0, ran.stderr
    finally:
        waits.run('scontrol', 'update', 'nodename=n2', 'state=resume',
                  check=False)

    rescreen, combined = result['next_steps']['rescreen']
    words = shlex.split(rescreen)
    assert words[:2] == ['reframe', '-r'] and '-J' in words
    args = words[1:words.index('--report-file')]
    # the fixed node's re-screen; once more where a busy shared host, not
    # n2, failed it (a job Slurm cancelled or could not start in time)
    for attempt in range(3):
        again = tmp_path / f'again{attempt}'
        again.mkdir()
        proc, report = reframe(*args, tmp_path=again, checks=LIKWID,
                               env=waits.env())
        assert [tc['display_name'][-2:] for tc in cases(report)] == ['n2']
        [tc] = cases(report)
        if tc['result'] == 'success':
            break
    # the printed verdict line, as written, beside the two reports
    assert combined.startswith(f'hpcval verdict {shlex.join(HUNG)} '
                               'SCREEN.json rescreen*.json')
    _combined_verdict_passes(combined, first, again, tmp_path)


@pytest.mark.parametrize('option, words', [
    ('time=abc', 'sbatch refused the job: Invalid --time specification'),
    # sbatch takes it; every node's job fails alike
    ('chdir=/nonexistent', 'output file missing: rfm_job.out')])
def test_a_job_option_no_job_can_honour_is_one_usage_line(waits, tmp_path,
                                                          option, words):
    """-J time=abc (sbatch refuses every job) or -J chdir=/nonexistent
    (sbatch accepts it, every job fails the same way): one usage line
    naming it, exit 3, no drain line, nothing else printed."""
    screen(waits, tmp_path, '-J', option)
    proc = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict', *LOOSE,
                           str(tmp_path / 'report.json')],
                          capture_output=True, text=True, cwd=ROOT,
                          timeout=120, env=dict(os.environ, **waits.env()))
    assert proc.returncode == 3 and proc.stdout == '', proc.stdout
    [line] = proc.stderr.splitlines()
    assert line.startswith('hpcval verdict: usage error of the screen: its '
                           'job failed the same way on every node') and \
        words in line and f'-J {option}' in line, line


def _preempt(cluster, job):
    cluster.run('sbatch', '-p', URGENT, '--exclusive', '-w', 'n1',
                '--output=/dev/null', '--wrap', 'true')


def _requeue(cluster, job):
    # --no-requeue refuses scontrol requeue until an administrator lifts it
    cluster.run('scontrol', 'update', f'jobid={job}', 'requeue=1')
    cluster.run('scontrol', 'requeue', job)


@pytest.mark.parametrize('fate, act', [('preempted', _preempt),
                                       ('requeued', _requeue)])
def test_a_preempted_or_requeued_job_ends_and_drains_nothing(waits, tmp_path,
                                                            fate, act):
    """A job of the URGENT partition preempts n1's screen job (cancelled,
    never requeued), or an administrator requeues it (Slurm would run it
    again two minutes later): the screen ends promptly, not waiting for
    it as pending; n1 is not tested (preempted, requeued), nothing is
    drained."""
    hanging_likwid(waits, 'n1')
    with concurrent.futures.ThreadPoolExecutor() as pool:
        run = pool.submit(screen, waits, tmp_path)
        [job] = wait_until('the job on n1 to run',
                           lambda: running_job_on(waits, 'n1'))
        act(waits, job)
        # ReFrame took PREEMPTED and a requeued job as pending and waited
        # forever: bounded here by what a poll takes, never the job's own
        # minute
        run.result(timeout=300)
    status, result, proc = verdict(tmp_path / 'report.json', *LOOSE,
                                   cluster=waits)
    assert status == 2 and result['failures_by_node'] == {}, proc.stdout
    [part] = result['partitions']
    assert part['coverage']['untested'] == {
        'n1': f'not tested: {fate}'}, proc.stdout
    steps = result['next_steps']
    assert steps['drain'] == [] and steps['resume'] == []
    assert "-J exclude=n2 -n LikwidBenchCheck%kernel=peakflops" in \
        steps['rescreen'][0], steps
    # nothing of it left to run again
    assert waits.run('squeue', '-h', '-t', 'PD,R,CG', '-j', job,
                     check=False).stdout.strip() == ''


def test_an_interrupted_screen_drains_nothing_and_is_finished(many,
                                                              tmp_path):
    """Ctrl-C after a few of 16 nodes' jobs: ReFrame writes its partial
    report and exits; no untested node is failed or drained, the verdict
    says how many were tested, and its printed re-screen of the others
    read with the first screen judges all 16."""
    first = tmp_path / 'first'
    first.mkdir()
    log = first / 'reframe.out'
    with open(log, 'w') as out:
        proc = subprocess.Popen(
            reframe_command('-r', '--system', 'minicluster', *SCREEN,
                            tmp_path=first, checks=LIKWID),
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
            env=reframe_env(first, many.env()))
        wait_until('three nodes screened',
                   lambda: log.read_text().count('OK') >= 3 or
                   proc.poll() is not None, timeout=300)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
    status, result, out = verdict(first / 'report.json', *LOOSE,
                                  cluster=many)
    assert status == 2 and result['failures_by_node'] == {}, out.stdout
    cov = result['partitions'][0]['coverage']
    tested = cov['tested']
    # under load a case printed OK may not reach the report before the
    # interrupt: one tested node is enough for what this test asks
    assert 1 <= len(tested) < 16, out.stdout
    assert f'{len(tested)} of 16 nodes tested' in out.stdout or \
        f'{len(tested)} of 16 nodes tested' in json.dumps(result)
    steps = result['next_steps']
    assert steps['drain'] == [] and steps['resume'] == []
    rescreen, combined = steps['rescreen']
    words = shlex.split(rescreen)
    again = tmp_path / 'again'
    again.mkdir()
    _, report = reframe(*words[1:words.index('--report-file')],
                        tmp_path=again, checks=LIKWID,
                        env=many.env())
    assert sorted(tc['display_name'].split('=')[-1]
                  for tc in cases(report)) == \
        sorted(set(cov['partition_nodes']) - set(tested))
    _combined_verdict_passes(combined, first, again, tmp_path)


def test_a_slurmd_killed_mid_job_names_its_node_with_node_fail(waits,
                                                              tmp_path):
    """n1's slurmd dies while its job runs: Slurm marks n1 down and
    ends the job NODE_FAIL; the verdict names n1 with Slurm's reason,
    whatever the job's output held."""
    hanging_likwid(waits, 'n1')
    try:
        with concurrent.futures.ThreadPoolExecutor() as pool:
            run = pool.submit(screen, waits, tmp_path, '-J', 'nodelist=n1')
            wait_until('the job on n1 to run',
                       lambda: running_job_on(waits, 'n1'))
            os.kill(waits.running()['slurmd-n1'], signal.SIGKILL)
            run.result(timeout=300)
    finally:
        waits.clear_faults()
        waits.restart_node('n1')
    status, result, proc = verdict(tmp_path / 'report.json', *LOOSE)
    assert status == 1, proc.stdout
    [line] = result['failures_by_node']['n1']
    assert 'NODE_FAIL: a node failed under the job (Slurm: n1 down' in \
        line, line


def test_an_operators_scancel_is_not_the_nodes_failure(waits, tmp_path):
    """An operator cancels n1's job while it runs: n1 is not tested (exit
    2, the cancel named), not failed."""
    hanging_likwid(waits, 'n1')
    with concurrent.futures.ThreadPoolExecutor() as pool:
        run = pool.submit(screen, waits, tmp_path)
        [job] = wait_until('the job on n1 to run',
                           lambda: running_job_on(waits, 'n1'))
        waits.run('scancel', job)
        report, _ = run.result(timeout=300)
    # read from the fate the run recorded: Slurm's job state by sacct
    assert [tc['hpcval_job_fate'] for tc in cases(report)
            if tc['display_name'].endswith('=n1')] == [['CANCELLED', '']]
    status, result, proc = verdict(tmp_path / 'report.json', *LOOSE)
    assert status == 2, proc.stdout
    assert result['failures_by_node'] == {}, proc.stdout
    [part] = result['partitions']
    assert part['coverage']['untested'] == {
        'n1': 'not tested: cancelled (scancel, or an administrator)'}


# the screen's second sbatch, first on PATH: it says it is about to submit
# and waits, at most two minutes, until the test has stopped the
# controller; then the real sbatch meets the stall, whatever the host's load
GATED_SBATCH = """#!/bin/sh
gate={gate}
if mkdir "$gate/first" 2>/dev/null; then exec {real} "$@"; fi
touch "$gate/submitting"
i=0
while [ ! -e "$gate/stopped" ] && [ "$i" -lt 1200 ]; do
    sleep 0.1; i=$((i + 1))
done
exec {real} "$@"
"""


def test_a_controller_outage_between_jobs_fails_no_node(waits, tmp_path):
    """slurmctld stops answering for 30 s (SIGSTOP) just as the screen
    submits its second job: sbatch gets no answer within MessageTimeout
    (10 s); the verdict fails no node, names the outage and exits 2.  A
    wrapper of sbatch (GATED_SBATCH) holds that submission until the stop
    has landed, so the two always meet."""
    ctld = waits.running()['slurmctld']
    gate, bindir = tmp_path / 'gate', tmp_path / 'bin'
    gate.mkdir()
    bindir.mkdir()
    path = os.pathsep.join((str(VENV_BIN), os.environ['PATH']))
    (bindir / 'sbatch').write_text(GATED_SBATCH.format(
        gate=shlex.quote(str(gate)),
        real=shlex.quote(shutil.which('sbatch', path=path))))
    (bindir / 'sbatch').chmod(0o755)
    env = dict(waits.env(), PATH=os.pathsep.join((str(bindir), path)))
    with concurrent.futures.ThreadPoolExecutor() as pool:
        run = pool.submit(reframe, '-r', '--system', 'minicluster', *SCREEN,
                          '--exec-policy=serial', tmp_path=tmp_path,
                          checks=LIKWID, env=env)
        wait_until('the second submission',
                   lambda: (gate / 'submitting').exists() or run.done(),
                   timeout=300, every=0.1)
        assert not run.done(), run.result()[0].stdout[-3000:]
        os.kill(ctld, signal.SIGSTOP)
        try:
            (gate / 'stopped').touch()
            time.sleep(30)
        finally:
            os.kill(ctld, signal.SIGCONT)
        proc, report = run.result(timeout=300)
    assert report is not None, proc.stdout[-3000:]
    # a flow test on the waiting cluster, whose jobs yield the cores:
    # judged at x20, as the hung node's (a healthy node fell to 1/6 of
    # its peer beside another suite)
    status, result, proc = verdict(tmp_path / 'report.json', *HUNG)
    assert result['failures_by_node'] == {}, proc.stdout
    assert status == 2, proc.stdout
    # the submission that met the stall is reconciled with the queue
    # (hpcval.benchmarks.screening): named as such, charging no node
    assert 'not tested: controller stalled' in proc.stdout or \
        'controller unreachable' in json.dumps(result), proc.stdout


def test_a_two_node_job_names_both_nodes(faults, tmp_path):
    """A ping-pong across n1 and n2 whose rank on n2 cannot start: the
    failure names the pair (Slurm's accounting), never n1 alone."""
    faults.inject_fault('n2', 'export PYTHONHOME=/nonexistent')
    proc, report = reframe('-r', '--system', 'minicluster', '-n',
                           'Mpi4pyPingPongCheck%placement=across_nodes',
                           '-S', 'max_size=1024', '-S', 'loops=100',
                           tmp_path=tmp_path,
                           checks=('checks/mpi4py_pingpong.py',),
                           env=faults.env())
    assert report is not None, proc.stdout[-3000:]
    [tc] = cases(report)
    assert tc['result'] == 'fail' and tc['hpcval_job_nodes'] == ['n1', 'n2'], \
        (tc['jobid'], tc['job_nodelist'], tc['fail_reason'],
         faults.run('sacct', '-P', '-j', tc['jobid'], '-o',
                    'JobID,State,NodeList,Submit').stdout)
    status, result, out = verdict(tmp_path / 'report.json', *LOOSE)
    assert status == 1
    assert [f['node'] for f in result['partitions'][0]['failures']] == \
        ['n1+n2'], out.stdout
    assert result['next_steps']['drain'] == []
    assert any('n1+n2 failed together' in n
               for n in result['next_steps']['notes'])


# -- faults of a set size ---------------------------------------------------

def test_faults_of_a_set_size_meet_their_node_only(faults):
    """n2 20 % slow (a quota of 0.8 of its two CPUs, every 10 ms) with a
    64 MiB memory stream beside its tasks: a task on n2 runs in the
    quota's group and beside the stream, which ends with the task; a task
    on n1 meets neither, and runs in its own group of the top weight."""
    from hpcval.testing.minicluster import processes_naming
    faults.slow_node_by('n2', 0.2)
    faults.compete('n2', 'memory', 64)
    # the stream runs dd after dd: look for up to 10 s, among the
    # children of this cluster's competitors only (a suite beside this one
    # runs streams of its own)
    mine = shlex.quote(f'^/bin/sh {faults.faults}/')
    dd = ('ps -o args= --ppid "$(pgrep -d, -f ' + mine + ')" '
          '| grep "^dd if=/dev/zero of=/dev/null bs=64M"')
    probe = ('cat /proc/self/cgroup; for i in $(seq 20); do sleep 0.5; '
             f'{dd} && break; done; pgrep -af {mine}; '
             f'echo "streams: $({dd} | wc -l)"')
    out = faults.run('srun', '-w', 'n2', '-N1', '-n1', 'sh', '-c', probe,
                     timeout=120).stdout
    group = faults.quota.base / 'n2'
    # v2: '0::/<base>/n2'; v1: '<k>:cpu,...:/<base>/n2'
    assert f'/{faults.quota.base.name}/n2\n' in out, out
    if faults.quota.version == 2:
        assert (group / 'cpu.max').read_text().split() == ['16000', '10000']
    else:
        assert (group / 'cpu.cfs_quota_us').read_text().strip() == '16000'
        assert (group / 'cpu.cfs_period_us').read_text().strip() == '10000'
    assert 'dd if=/dev/zero of=/dev/null bs=64M' in out, (
        out, (faults.root / 'etc' / 'task_prolog.sh').read_text(),
        sorted(p.name for p in faults.faults.iterdir()))
    wait_until('the stream to end with its step', lambda: not [
        p for p in processes_naming(faults.faults)])

    out = faults.run('srun', '-w', 'n1', '-N1', '-n1', 'sh', '-c', probe,
                     timeout=120).stdout
    assert f'/{faults.quota.base.name}/n2' not in out
    assert 'dd if=' not in out and out.strip().endswith('streams: 0'), out
    # every node's tasks get the host's CPUs first, n1's without a quota
    assert f'/{faults.quota.base.name}/n1\n' in out, out
    name, weight = faults.quota.WEIGHT[faults.quota.version]
    for group in (faults.quota.base, faults.quota.base / 'n1'):
        assert (group / name).read_text().strip() == weight
    assert faults.dedicated == {'n1': True, 'n2': True}


def test_a_screen_figure_is_the_best_of_repeated_runs(faults, tmp_path):
    """-S repeats=2 (as --mode screen sets it): each node's job runs
    likwid-bench twice; the figure is the best run, their spread a
    declared diagnostic that neither fails nor leaves the screen
    incomplete."""
    import re
    _, _ = screen(faults, tmp_path, '-S', 'LikwidBenchCheck.repeats=2')
    report = json.loads((tmp_path / 'report.json').read_text())
    for tc in cases(report):
        folder = pathlib.Path(tc['stagedir'] if tc['result'] == 'fail'
                              else tc['outputdir'])
        script = (folder / 'rfm_job.sh').read_text()
        assert script.count('likwid-bench -t peakflops') == 2
        names = {k.rsplit(':', 1)[-1]: v for k, v in tc['perfvalues'].items()}
        assert set(names) == {'peakflops_rate', 'peakflops_rate_std'}, names
        runs = [float(x) for x in re.findall(
            r'^MFlops/s:\s+(\S+)', (folder / 'rfm_job.out').read_text(),
            re.M)]
        assert len(runs) == 2 and names['peakflops_rate'][0] == max(runs)
    status, result, proc = verdict(tmp_path / 'report.json', *LOOSE)
    [part] = result['partitions']
    assert part['diagnostic'] == 2 and part['unjudged'] == [], proc.stdout
    assert part['peer_judged'] == 2, proc.stdout
