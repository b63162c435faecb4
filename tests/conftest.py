"""Shared fixtures: the two-node Slurm minicluster, started once a session.

Without root, Slurm or munge the tests that use it are skipped with the
reason; with CI=true a missing prerequisite fails them instead, so that CI
cannot pass by skipping the only real Slurm runs it has.
"""
import os
import pathlib

import pytest

from hpcval.minicluster import MiniCluster, missing_prerequisites

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


@pytest.fixture(scope='session')
def minicluster(tmp_path_factory):
    why = missing_prerequisites()
    if why:
        if os.environ.get('CI') == 'true':
            pytest.fail(f'CI=true, and the minicluster cannot run: {why}')

        pytest.skip(f'minicluster: {why}')

    cluster = MiniCluster(tmp_path_factory.mktemp('mc'))
    cluster.system_files_before = snapshot()
    cluster.start()
    yield cluster
    cluster.stop()
