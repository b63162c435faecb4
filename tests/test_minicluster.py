"""Multi-node paths through a real Slurm: ``--system minicluster``.

The session's minicluster (tests/conftest.py) is two slurmd (n1, n2) of one
slurmctld on this host.  Every ReFrame run here submits real jobs with
sbatch, launches ranks with srun --mpi=pmi2 and judges the output:

- mpi4py ping-pong on one node and across the two, both passing;
- the MPI launch path of the multi-node nccl-tests check and of OSU
  across nodes (ranks per node, srun line), with stand-ins that only
  report where each rank runs;
- ``--distribute`` node screening that names the node that failed;
- faults: a rank that exits non-zero, a job killed at its time limit, a
  node taken down while a job waits for it;
- and, last, that stopping the cluster leaves no process and no file.

Faults on a node come from the cluster's task prolog (see
hpcval.testing.minicluster): n2's Python is broken (PYTHONHOME points nowhere), or
n1's Python hangs at start (a sitecustomize that sleeps, as on a stuck
file system).
"""
import concurrent.futures
import math
import os
import pathlib
import re
import stat
import time

import pytest

from hpcval.testing.minicluster import (MiniClusterError, job_processes,
                                        processes_naming)
from rfmrun import cases, reframe

pytestmark = pytest.mark.minicluster

PINGPONG_ON_NODE = 'Mpi4pyPingPongCheck %placement=on_node'
PINGPONG_ACROSS = 'Mpi4pyPingPongCheck %placement=across_nodes'
NCCL_MULTINODE = 'NcclTestsMultiNodeCheck %collective=all_reduce'
OSU_ACROSS = 'OsuCpuCheck %benchmark=osu_latency %placement=across_nodes'


def select(display_name):
    """-n pattern of one parameterised test: 'Test%param=value'."""
    return display_name.replace(' %', '%')


# the fault runs judge failures, not latency: fewer, smaller messages
QUICK = ('-S', 'max_size=1024', '-S', 'loops=100')


def run_on(cluster, tmp_path, *args, env=None):
    proc, report = reframe('-r', '--system', 'minicluster', *args,
                           tmp_path=tmp_path, env={**cluster.env(),
                                                   **(env or {})})
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, report


def only(report, name):
    found = [tc for tc in cases(report) if tc['display_name'] == name or
             tc['display_name'].startswith(name + ' ')]
    assert len(found) == 1, [tc['display_name'] for tc in cases(report)]
    return found[0]


def job_file(tc, key):
    """A test case's job output file (stage dir when it failed)."""
    folder = tc['stagedir'] if tc['result'] == 'fail' else tc['outputdir']
    return pathlib.Path(folder, tc[key])


def perf(tc):
    return {key.rsplit(':', 1)[-1]: vals[0]
            for key, vals in (tc['perfvalues'] or {}).items()}


def wait_until(what, predicate, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except MiniClusterError:
            value = None        # a busy slurmctld: ask again
        if value:
            return value
        time.sleep(0.5)

    raise AssertionError(f'timed out after {timeout} s waiting for {what}')


def resumed(cluster, node):
    """Resume ``node`` if it is still down; true once it is not.  Its slurmd
    may re-register and bring it back first, and scontrol then refuses to
    resume a node that is not down."""
    if cluster.node_states().get(node, '').startswith('down'):
        cluster.run('scontrol', 'update', f'nodename={node}', 'state=resume')
        return not cluster.node_states()[node].startswith('down')
    return True


def jobs(cluster):
    """[(name, state, nodes, reason)] of the cluster's queue, all states."""
    out = cluster.run('squeue', '-h', '-t', 'all',
                      '-o', '%j|%T|%N|%r').stdout
    return [tuple(line.split('|', 3)) for line in out.splitlines()]


def allocated(cluster, tc):
    """Slurm's node list of a test case's job ('n[1-2]'), asked from the
    cluster: ReFrame's squeue backend may not have seen it running."""
    return cluster.run('squeue', '-h', '-t', 'all', '-j', tc['jobid'],
                       '-o', '%N').stdout.strip()


def job_in_state(cluster, name_part, state):
    return [job for job in jobs(cluster)
            if name_part in job[0] and job[1] == state]


def broken_python(cluster, node):
    cluster.inject_fault(node, 'export PYTHONHOME=/nonexistent')


def hanging_python(cluster, node):
    hang = cluster.faults / 'hang'
    hang.mkdir(exist_ok=True)
    (hang / 'sitecustomize.py').write_text('import time\ntime.sleep(3600)\n')
    cluster.inject_fault(node, f'export PYTHONPATH={hang}')


# -- runs that pass ---------------------------------------------------------

def test_pingpong_on_one_node_and_across_two(minicluster,
                                             minicluster_pingpong):
    report = minicluster_pingpong.report
    on_node, across = only(report, PINGPONG_ON_NODE), only(report,
                                                           PINGPONG_ACROSS)
    for tc in (on_node, across):
        assert tc['result'] == 'pass', tc['fail_reason']
        for name in ('latency_8B', 'latency_1KiB', 'bandwidth_64KiB'):
            assert math.isfinite(perf(tc)[name]) and perf(tc)[name] > 0

    assert allocated(minicluster, on_node) in ('n1', 'n2')
    assert allocated(minicluster, across) == 'n[1-2]'
    script = job_file(across, 'job_stdout').with_name('rfm_job.sh').read_text()
    for line in ('#SBATCH --ntasks=2', '#SBATCH --ntasks-per-node=1',
                 '#SBATCH --nodes=2',
                 '#SBATCH --partition=debug', 'export SLURM_MPI_TYPE=pmi2',
                 'srun python3 -m mpi4py.bench pingpong -a numpy -n 65536'):
        assert line in script, script

    # every node of the job recorded its own provenance
    nodes = across['hpcval_provenance']['nodes']
    assert sorted(nodes) == ['n1', 'n2'], nodes
    for record in nodes.values():
        assert record['kernel'] and record['cpu'], record
    assert list(on_node['hpcval_provenance']['nodes']) == [
        allocated(minicluster, on_node)]

    print(f'\nminicluster latency_8B: on one node '
          f'{perf(on_node)["latency_8B"]:.2f} us, across n1/n2 '
          f'{perf(across)["latency_8B"]:.2f} us')


def stand_ins(folder, names):
    """Executables under upstream names that only say where each rank runs:
    the launch path is checked here, not a benchmark."""
    folder.mkdir(exist_ok=True)
    for name in names:
        exe = folder / name
        exe.write_text('#!/bin/sh\n'
                       'echo "stand-in rank $SLURM_PROCID of $SLURM_NTASKS '
                       'on $SLURMD_NODENAME: $0 $*"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)

    return folder


def ranks_and_nodes(tc, ntasks):
    text = job_file(tc, 'job_stdout').read_text()
    return sorted(re.findall(rf'^stand-in rank (\d+) of {ntasks} on (n\d):',
                             text, re.M))


def test_multinode_launch_paths(minicluster, tmp_path):
    """The multi-node nccl-tests check (one rank per declared GPU, two per
    node) and OSU across nodes (one rank per node) submit their real job
    scripts and start the right ranks on each node.  The stand-ins print no
    benchmark output, so both checks must fail sanity, not pass."""
    from hpcval.benchmarks.nccl_tests import COLLECTIVES
    from hpcval.benchmarks.osu import BENCHMARKS

    prebuilt = stand_ins(tmp_path / 'stand-in',
                         [*(f'{c}_perf' for c in COLLECTIVES), *BENCHMARKS])
    _, report = run_on(
        minicluster, tmp_path, '-n', select(NCCL_MULTINODE),
        '-n', select(OSU_ACROSS), '-S', f'prebuilt_dir={prebuilt}',
        env={'HPCVAL_MINICLUSTER_LAUNCH_GPUS': '2'}
    )
    nccl, osu = only(report, NCCL_MULTINODE), only(report, OSU_ACROSS)
    assert (nccl['partition'], nccl['environ']) == ('gpu-launch', 'cuda')
    assert (osu['partition'], osu['environ']) == ('cpu', 'gnu')
    for tc in (nccl, osu):
        assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity'

    script = job_file(nccl, 'job_stdout').with_name('rfm_job.sh').read_text()
    for line in ('#SBATCH --ntasks=4', '#SBATCH --ntasks-per-node=2',
                 'export SLURM_MPI_TYPE=pmi2',
                 f'srun {prebuilt}/all_reduce_perf -b 8 -e 8G -f 2 -g 1 '
                 f'-n 20 -w 5 -c 1'):
        assert line in script, script
    assert ranks_and_nodes(nccl, 4) == [('0', 'n1'), ('1', 'n1'),
                                        ('2', 'n2'), ('3', 'n2')]

    script = job_file(osu, 'job_stdout').with_name('rfm_job.sh').read_text()
    for line in ('#SBATCH --ntasks=2', '#SBATCH --ntasks-per-node=1',
                 f'srun --cpus-per-task=1 --cpu-bind=cores {prebuilt}/osu_latency -m '
                 f'0:4194304'):
        assert line in script, script
    assert ranks_and_nodes(osu, 2) == [('0', 'n1'), ('1', 'n2')]


# -- node screening and faults ----------------------------------------------

def test_distribute_names_the_failing_node_and_rank_failure(faults, tmp_path):
    """n2's Python is broken: screening one-node ping-pongs on every node
    passes n1 and fails n2; a ping-pong across both fails because its
    rank on n2 exits non-zero."""
    broken_python(faults, 'n2')
    with concurrent.futures.ThreadPoolExecutor() as pool:
        screen = pool.submit(run_on, faults, tmp_path / 'screen', '-n',
                             select(PINGPONG_ON_NODE), '--distribute=all', *QUICK)
        across = pool.submit(run_on, faults, tmp_path / 'across', '-n',
                             select(PINGPONG_ACROSS), *QUICK)
        _, screened = screen.result()
        _, across_report = across.result()

    by_node = {allocated(faults, tc): tc for tc in cases(screened)}
    assert sorted(by_node) == ['n1', 'n2']
    assert by_node['n1']['result'] == 'pass'
    failed = by_node['n2']
    assert failed['result'] == 'fail' and failed['fail_phase'] == 'sanity'
    assert '%.nid=n2' in failed['display_name']
    assert 'did not start' in failed['fail_reason']

    tc = only(across_report, PINGPONG_ACROSS)
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity'
    assert 'did not start' in tc['fail_reason']
    assert 'n2: task 1: Exited with exit code 1' in \
        job_file(tc, 'job_stderr').read_text()


def test_time_limit_and_node_down_while_waiting(waits, tmp_path):
    """n1's Python hangs: a one-node ping-pong pinned there runs into its
    1-minute limit (Slurm's shortest) and Slurm kills it.  Meanwhile a
    ping-pong across n1 and n2 waits for n1; n2 is taken down, and
    ReFrame cancels the waiting job and fails it with Slurm's reason."""
    hanging_python(waits, 'n1')
    with concurrent.futures.ThreadPoolExecutor() as pool:
        slow = pool.submit(run_on, waits, tmp_path / 'limit', '-n',
                           select(PINGPONG_ON_NODE), '-J', 'nodelist=n1',
                           '-S', 'time_limit=1m', *QUICK)
        wait_until('the job pinned to n1 to run',
                   lambda: job_in_state(waits, 'Mpi4pyPingPongCheck',
                                        'RUNNING'))
        waiting = pool.submit(run_on, waits, tmp_path / 'down', '-n',
                              select(PINGPONG_ACROSS), *QUICK)
        wait_until('the job across nodes to wait',
                   lambda: job_in_state(waits, 'Mpi4pyPingPongCheck',
                                        'PENDING'))
        waits.run('scontrol', 'update', 'nodename=n2', 'state=down',
                   'reason=test')
        try:
            _, down_report = waiting.result(timeout=120)
        finally:
            wait_until('n2 to resume', lambda: resumed(waits, 'n2'))

        _, limit_report = slow.result(timeout=180)

    tc = only(down_report, PINGPONG_ACROSS)
    assert tc['result'] == 'fail', tc
    # Slurm says either, depending on which of its schedulers saw it first
    assert re.search(r'job cancelled because it was blocked due to reason: '
                     r'(ReqNodeNotAvail, UnavailableNodes:n2|Nodes required '
                     r'for job are DOWN)', tc['fail_reason']), tc['fail_reason']
    # what the verdict reads: the fate the run recorded (hpcval.screen)
    assert tc['hpcval_job_fate'][0] == 'blocked', tc['hpcval_job_fate']

    tc = only(limit_report, PINGPONG_ON_NODE)
    assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity'
    assert allocated(waits, tc) == 'n1'
    # Slurm's account (sacct) first, then what the output lacks
    assert re.search(r'error: job \d+ on n1 TIMEOUT: killed at its time limit '
                     r'\(0:01:00\)[ ;]', tc['fail_reason']), tc['fail_reason']
    assert 'did not start' in tc['fail_reason']
    assert 'DUE TO TIME LIMIT' in job_file(tc, 'job_stderr').read_text()
    assert tc['hpcval_job_fate'] == ['TIMEOUT', ''], tc['hpcval_job_fate']
    wait_until('both nodes idle again', lambda: set(
        waits.node_states().values()) == {'idle'})


def test_scancel_is_named_as_such(waits, tmp_path):
    """A job cancelled while it runs fails as CANCELLED on its node, not
    as a benchmark that did not start."""
    hanging_python(waits, 'n2')
    with concurrent.futures.ThreadPoolExecutor() as pool:
        run = pool.submit(run_on, waits, tmp_path, '-n',
                          select(PINGPONG_ON_NODE), '-J', 'nodelist=n2',
                          *QUICK)
        [job] = wait_until('the job on n2 to run', lambda: job_in_state(
            waits, 'Mpi4pyPingPongCheck', 'RUNNING'))
        waits.run('scancel', '-n', job[0])
        _, report = run.result(timeout=120)

    tc = only(report, PINGPONG_ON_NODE)
    assert tc['result'] == 'fail'
    assert re.search(r'error: job \d+ on n2 CANCELLED: cancelled \(scancel',
                     tc['fail_reason']), tc['fail_reason']
    assert tc['hpcval_job_fate'] == ['CANCELLED', ''], tc['hpcval_job_fate']


def test_a_time_limit_below_slurms_minimum_is_refused(minicluster, tmp_path):
    """Slurm counts time limits in minutes: 5 s would silently become one
    minute, so the test fails before submitting, saying so."""
    _, report = run_on(minicluster, tmp_path, '-n', select(PINGPONG_ON_NODE),
                       '-S', 'time_limit=5s')
    tc = only(report, PINGPONG_ON_NODE)
    assert tc['result'] == 'fail' and tc['jobid'] is None
    assert "time_limit=0:00:05 is below Slurm's shortest time limit, one " \
        "minute" in tc['fail_reason']
    assert tc['hpcval_job_fate'] == ['usage error', '']


def test_a_45_s_controller_outage(waits, tmp_path):
    """slurmctld stops answering for 45 s (SIGSTOP) as soon as a job runs
    on n1: ReFrame keeps asking sacct (slurmdbd stays up) and the run ends
    with a clear result, and nothing is left in the queue or on the node."""
    import signal
    slow_start = waits.faults / 'slow-start'
    slow_start.mkdir(exist_ok=True)
    (slow_start / 'sitecustomize.py').write_text(
        'import time\ntime.sleep(10)\n')
    waits.inject_fault('n1', f'export PYTHONPATH={slow_start}')
    ctld = waits.running()['slurmctld']
    with concurrent.futures.ThreadPoolExecutor() as pool:
        # the ping-pong's ranks are Python started by srun: the outage
        # meets both the job and its step
        run = pool.submit(reframe, '-r', '--system', 'minicluster', '-n',
                          'Mpi4pyPingPongCheck%placement=on_node',
                          '-S', 'Mpi4pyPingPongCheck.max_size=65536',
                          '-J', 'nodelist=n1', tmp_path=tmp_path,
                          checks=('checks/mpi4py_pingpong.py',),
                          env=waits.env())
        wait_until('the job on n1 to run', lambda: job_in_state(
            waits, 'Mpi4pyPingPongCheck', 'RUNNING'))
        os.kill(ctld, signal.SIGSTOP)
        try:
            time.sleep(45)
        finally:
            os.kill(ctld, signal.SIGCONT)
        proc, report = run.result(timeout=300)

    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    [tc] = cases(report)
    assert 'Traceback' not in (tc['fail_reason'] or '')
    # the job either lived through it (its step had started) or srun lost
    # its controller: then Slurm's account and srun's own error say so
    if tc['result'] != 'pass':
        assert re.search(r'job \d+ on n1 FAILED: ended with a non-zero exit '
                         r'code \(srun: error: ', tc['fail_reason']), \
            tc['fail_reason']
    wait_until('an empty queue', lambda: not waits.run(
        'squeue', '-h', '-t', 'PD,R,CG').stdout.strip())
    assert job_processes(waits.conf) == []


# -- last: nothing left behind ------------------------------------------------

@pytest.mark.runs_last
def test_stop_leaves_no_process_and_no_file(minicluster):
    minicluster.stop()
    assert minicluster.running() == {}
    assert job_processes(minicluster.conf) == []
    assert processes_naming(minicluster.root) == []
    from conftest import snapshot
    assert snapshot() == minicluster.system_files_before
