"""ReFrame's own results commands under hpcval's configuration.

ReFrame loads a configuration file inside ``temp_sys_path``, which removes
an entry of ``sys.path`` by position: a configuration that inserted its
folder at the front removed the virtual environment's site-packages, and
these commands then failed with "results storage requires polars".  Two
real sessions of the MPI ping-pong are stored, then listed and compared.
"""
import os
import subprocess
import sys

import pytest

from rfmrun import ROOT, reframe

CHECKS = ('checks/mpi4py_pingpong.py',)
RUN = ('-r', '--system', 'local', '-n', 'Mpi4pyPingPongCheck',
       '-S', 'Mpi4pyPingPongCheck.loops=100')


@pytest.fixture(scope='module')
def stored(tmp_path_factory):
    """Two sessions in one results database; the second asks for ReFrame's
    performance report (against the first)."""
    tmp = tmp_path_factory.mktemp('stored')
    env = {'RFM_SQLITE_DB_FILE': str(tmp / 'results.db')}
    runs = []
    for i, extra in enumerate(((), ('--performance-report',))):
        proc, report = reframe(*RUN, *extra, tmp_path=tmp / f'run{i}',
                               checks=CHECKS, env=env)
        assert report is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
        runs.append((proc, report))
    return tmp, env, runs


def _command(stored, *args):
    tmp, env, _ = stored
    proc, _ = reframe(*args, tmp_path=tmp / 'query', checks=CHECKS, env=env)
    out = proc.stdout + proc.stderr
    assert 'polars' not in out, out[-2000:]
    assert proc.returncode == 0, out[-2000:]
    return proc.stdout


def test_performance_report_after_a_run(stored):
    proc, _ = stored[2][1]
    assert 'polars' not in proc.stdout + proc.stderr
    assert 'PERFORMANCE REPORT' in proc.stdout, proc.stdout[-3000:]
    assert 'latency_8B' in proc.stdout


def test_list_stored_sessions(stored):
    out = _command(stored, '--list-stored-sessions')
    sessions = [s['session_info']['uuid'] for _, s in stored[2]]
    for uuid in sessions:
        assert uuid in out, out[-2000:]


def test_performance_compare(stored):
    first, second = (s['session_info']['uuid'] for _, s in stored[2])
    out = _command(stored, '--performance-compare',
                   f'{first}/{second}/mean:/+result')
    assert 'Mpi4pyPingPongCheck' in out and 'bandwidth_4MiB' in out, out


def test_loading_the_configuration_keeps_sys_path(tmp_path):
    """Loaded as ReFrame loads it, the configuration leaves ``sys.path`` as
    it found it: no entry added, none removed."""
    code = ('import sys\n'
            'from reframe.utility import import_module_from_file\n'
            'before = list(sys.path)\n'
            f'import_module_from_file({str(ROOT / "config" / "settings.py")!r},'
            ' load_parents=True)\n'
            'print(sys.path == before, sys.path, before)\n')
    proc = subprocess.run([sys.executable, '-c', code], cwd=tmp_path,
                          capture_output=True, text=True,
                          env=dict(os.environ, HPCVAL_ROOT=str(ROOT)))
    assert proc.stdout.startswith('True'), proc.stdout + proc.stderr
