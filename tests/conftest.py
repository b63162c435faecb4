"""Shared fixtures: the two-node Slurm minicluster, started once a session.

Without root, Slurm or munge the tests that use it are skipped with the
reason; with CI=true a missing prerequisite fails them instead, so that CI
cannot pass by skipping the only real Slurm runs it has.
"""
import collections
import os
import pathlib
import shutil

import pytest

from hpcval.testing.minicluster import MiniCluster, missing_prerequisites
from rfmrun import ROOT, reframe

# a real ReFrame run: its process, its JSON report, the report's path
Run = collections.namedtuple('Run', 'proc report path')

# where Debian's Slurm and munge keep files by default: the minicluster
# must leave all of them as it found them
SYSTEM_PATHS = ('/etc/slurm', '/etc/munge', '/run/munge', '/run/slurm',
                '/var/run/munge', '/var/lib/munge', '/var/lib/slurm',
                '/var/spool/slurmd', '/var/spool/slurmctld', '/var/spool/slurm',
                '/var/log/slurm', '/var/log/munge')


def snapshot(paths=SYSTEM_PATHS):
    """{file: (size, mtime)} of everything under ``paths``."""
    found = {}
    for top in map(pathlib.Path, paths):
        for path in [top, *top.rglob('*')] if top.exists() else []:
            try:
                stat = path.lstat()
            except OSError:
                continue
            found[str(path)] = (stat.st_size, stat.st_mtime_ns)

    return found


@pytest.fixture
def ref_dir(tmp_path):
    """A copy of the built-in references/ that a test may change."""
    target = tmp_path / 'references'
    shutil.copytree(ROOT / 'references', target)
    return target


def require_minicluster():
    """Skip the test where the minicluster cannot run here; fail it under
    CI=true, where a skip would hide the only real Slurm runs."""
    why = missing_prerequisites()
    if why:
        if os.environ.get('CI') == 'true':
            pytest.fail(f'CI=true, and the minicluster cannot run: {why}')

        pytest.skip(f'minicluster: {why}')


@pytest.fixture(scope='session')
def minicluster(tmp_path_factory):
    require_minicluster()
    cluster = MiniCluster(tmp_path_factory.mktemp('mc'))
    cluster.system_files_before = snapshot()
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def faults(minicluster):
    """The session's minicluster, without planted faults before and after
    (started again if a test stopped it: stop, then start, must work)."""
    if not minicluster.running():
        minicluster.start()
    minicluster.clear_faults()
    yield minicluster
    minicluster.clear_faults()


@pytest.fixture(scope='session')
def local_run(tmp_path_factory):
    """``reframe -r --system local``, the README's first command, once."""
    tmp = tmp_path_factory.mktemp('local')
    proc, report = reframe('-r', '--system', 'local', tmp_path=tmp)
    assert report is not None, proc.stdout + proc.stderr
    return Run(proc, report, tmp / 'report.json')


@pytest.fixture(scope='session')
def minicluster_pingpong(minicluster, tmp_path_factory):
    """The MPI ping-pong on one minicluster node and across two, once."""
    tmp = tmp_path_factory.mktemp('mc-pingpong')
    proc, report = reframe('-r', '--system', 'minicluster', '-n',
                           'Mpi4pyPingPongCheck', '-S', 'max_size=65536',
                           tmp_path=tmp, env=minicluster.env())
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Run(proc, report, tmp / 'report.json')


@pytest.fixture(scope='session')
def replay_reports(tmp_path_factory):
    """{system: report path}: the seeds' example outputs replayed through
    the checks (tests/replays.py)."""
    from replays import make_replay_reports
    return make_replay_reports(tmp_path_factory.mktemp('replays'))
