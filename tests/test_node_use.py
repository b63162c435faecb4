"""Measurements have their nodes to themselves (hpcval.benchmarks.nodeuse):
whole nodes in the job scripts of a Slurm and an LSF system, the cores a
CPU check uses requested, no measurement while a build of the session runs
on its host, and the node's load at job start in the record."""
import os
import pathlib
import re
import subprocess
import time
from types import SimpleNamespace

import pytest

from hpcval.benchmarks import nodeuse

LOADS = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / 'nodeload'
MEASURED = 'LikwidBench|BabelStream|[NR]cclTestsNodeCheck|Osu'


@pytest.fixture(scope='module')
def stage(dry_run):
    """``stage(system)``: the stage folder of the session's dry run of
    every check on ``system`` (conftest)."""
    return lambda system: dry_run(system)[2]


def _measured(stage):
    """The job scripts of the measurements (not of their sources)."""
    return [p for p in sorted(stage.rglob('rfm_job.sh'))
            if re.search(MEASURED, p.parent.name)
            and 'Source_' not in p.parent.name]


@pytest.mark.parametrize('system, directive', [
    ('kestrel', '#SBATCH --exclusive'), ('perlmutter', '#SBATCH --exclusive'),
    ('frontier', '#SBATCH --exclusive'), ('summit', '#BSUB -x')])
def test_every_measurement_asks_for_whole_nodes(stage, system, directive):
    measured = _measured(stage(system))
    assert measured
    for path in measured:
        lines = path.read_text().splitlines()
        assert lines.count(directive) == 1, (path, lines[:14])
        # a batch partition builds elsewhere: no lock
        assert 'flock' not in path.read_text()


def test_likwid_requests_the_cores_it_runs_on(stage):
    text = next((stage('kestrel') / 'cpu' / 'PrgEnv-gnu').glob(
        'LikwidBenchCheck_*/rfm_job.sh')).read_text()
    assert '#SBATCH --ntasks=1' in text.splitlines()
    assert '#SBATCH --cpus-per-task=104' in text.splitlines()
    assert re.search(r'^likwid-bench -t \w+ -W N:\w+:104\b', text, re.M)


def test_the_box_builds_and_measures_under_one_lock(stage):
    box = stage('mi300x')
    lock = str(box.parent / nodeuse.LOCK_NAME)
    [build] = (box / 'default' / 'rocm').glob('RcclTestsBuild_*/'
                                               'rfm_build.sh')
    assert (f'if command -v flock >/dev/null; then exec 9>>{lock} && '
            f'flock -s 9; fi') in build.read_text().splitlines()
    for path in _measured(box / 'default'):
        lines = path.read_text().splitlines()
        at = lines.index(f'if command -v flock >/dev/null; then exec '
                         f'9>>{lock} && flock -x 9; fi')
        # the lock before the load sample, both before the benchmark
        assert lines[at + 2].endswith(f'> {nodeuse.LOAD_FILE} 2>/dev/null '
                                      f'|| true')


def _box():
    return SimpleNamespace(current_partition=SimpleNamespace(
        scheduler=SimpleNamespace(registered_name='local')))


def test_a_measurement_waits_for_a_running_build(tmp_path, monkeypatch):
    monkeypatch.setattr(nodeuse, 'lock_file', lambda: str(tmp_path / 'lock'))
    log, release = tmp_path / 'log', tmp_path / 'release'
    build = '\n'.join([*nodeuse.build_commands(_box()),
                       f'echo build-started >> {log}',
                       f'while [ ! -e {release} ]; do sleep 0.05; done',
                       f'echo build-done >> {log}'])
    measure = '\n'.join([*nodeuse.measurement_commands(_box()),
                         f'echo measured >> {log}'])
    b = subprocess.Popen(['bash', '-c', build], cwd=tmp_path)
    while not log.exists():
        time.sleep(0.05)
    m = subprocess.Popen(['bash', '-c', measure], cwd=tmp_path)
    time.sleep(1)
    assert log.read_text() == 'build-started\n'     # still waiting
    release.touch()
    assert b.wait(timeout=60) == 0 and m.wait(timeout=60) == 0
    assert log.read_text().split() == ['build-started', 'build-done',
                                       'measured']
    text = (tmp_path / nodeuse.LOAD_FILE).read_text()
    record = nodeuse.read(text)
    assert record.waited_s >= 0 and record.cpus >= 1
    # the job's uid, and this process (which wrote the job's lines, as
    # ReFrame does) known as the screen's own: the job ran on its host
    assert record.uid == os.getuid()
    assert f'\nscreen={os.getpid()}\n' in text, text


class TestLoadRecord:
    def test_a_busy_host_says_so_naming_what_ran(self):
        record = nodeuse.read((LOADS / 'shared_host_3yes.txt').read_text())
        assert record.busy and record.cpus == 2
        assert record.others_running == 10
        assert record.why.startswith('10 other runnable tasks on 2 CPUs '
                                        'at job start; outside the screen: '
                                        'reframe (pids 12339 12313 12298 '
                                        '12328, uid ?, 90.8% CPU)')
        assert [p.command for p in record.processes].count('reframe') == 4

    def test_the_shared_host_as_it_was(self):
        record = nodeuse.read((LOADS / 'shared_host_busy.txt').read_text())
        assert record.busy and record.others_running == 4
        assert record.load1 == 6.55

    def test_whose_processes_decides_not_their_names(self):
        text = (LOADS / 'shared_host_busy.txt').read_text().replace(
            'self=12234', 'self=12234\nuid=0\nscreen=12254')
        record = nodeuse.read(text)
        # older ps lines carry no uid: never the job's user's
        assert [p.screen for p in record.processes][:2] == [True, False]
        assert "; the screen's own: reframe (pid 12254, uid ?" in record.why
        assert not nodeuse.clears(record)
        mine = re.sub(r'^ps=( *\d+ +\d+) ', r'ps=\1 0 ', text, flags=re.M)
        assert nodeuse.clears(nodeuse.read(mine))
        theirs = mine.replace('11969 11968 0', '11969 11968 1000')
        assert not nodeuse.clears(nodeuse.read(theirs))

    def test_a_quiet_node_is_not_busy(self):
        text = re.sub(r' \d+/(\d+) ', r' 1/\1 ',
                      (LOADS / 'shared_host_busy.txt').read_text())
        record = nodeuse.read(text)
        assert not record.busy and record.why == ''
        assert record.others_running == 0

    def test_junk_gives_no_record(self):
        assert nodeuse.read('') is None
        assert nodeuse.read('loadavg=a b c\ncpus=x\n') is None
        # a process name with control characters is not kept; the
        # process is, as '?'
        text = (LOADS / 'shared_host_busy.txt').read_text().replace(
            'likwid-bench', 'likwid\x1b[31m')
        record = nodeuse.read(text)
        assert 'likwid' not in str(record.processes)
        assert [p.pid for p in record.processes if p.command == '?'] == [
            12228]
