"""The configuration: every system lists its checks (tests/test_systems.py
dry-runs them and reads the job scripts)."""
import pytest

import systems
from lmodenv import system_env
from rfmrun import reframe

SYSTEMS = [mod.system['name'] for mod in systems.ALL]


def test_local_matches_any_host_and_comes_last():
    assert systems.ALL[-1].system['hostnames'] == ['.*']


@pytest.mark.parametrize('system', SYSTEMS)
def test_lists_checks(tmp_path, system):
    proc, _ = reframe('-l', '--system', system, tmp_path=tmp_path,
                      env=system_env(tmp_path / 'modulefiles'))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'Found 0 check' not in proc.stdout


def test_local_job_scripts(dry_run):
    """What a sysadmin reads: the launcher and binding of each local job."""
    proc, _, stage = dry_run('local')
    assert proc.returncode == 0, proc.stdout[-3000:]
    stage = stage / 'default'
    [pingpong] = stage.rglob('Mpi4pyPingPongCheck*/rfm_job.sh')
    assert 'mpiexec -n 2 python3 -m mpi4py.bench pingpong -a numpy ' \
        '-n 4194304' in pingpong.read_text()
    for script in stage.rglob('LikwidBenchCheck*/rfm_job.sh'):
        line = script.read_text().splitlines()[-1]
        # likwid pins its own threads: no MPI launcher in front of it
        assert line.startswith('likwid-bench -t '), line
        if 'peakflops' in line:
            # inside L1, a fixed iteration count: a second, not seven
            assert line.endswith(' -W N:32kB:2 -i 400000'), line
        else:
            assert ' -W N:2GB:' in line and ' -i ' not in line, line


def test_check_tags_select_benchmarks(tmp_path):
    for tag, expected in (('mpi4py', 'Mpi4pyPingPongCheck'),
                          ('likwid', 'LikwidBenchCheck'),
                          ('babelstream', 'BabelStreamCpuCheck')):
        proc, _ = reframe('-l', '--system', 'local', '-t', tag,
                          tmp_path=tmp_path)
        assert expected in proc.stdout, (tag, proc.stdout)


def test_layouts_add_the_features_they_need():
    from types import SimpleNamespace

    from hpcval.benchmarks.base import ParsedBenchmark
    test = SimpleNamespace(valid_systems=['+nvgpu', '+cpu +mpi'])
    ParsedBenchmark.require_features(test, 'mpi', 'multinode')
    assert test.valid_systems == ['+nvgpu +mpi +multinode',
                                  '+cpu +mpi +multinode']


@pytest.mark.parametrize('system, rate', [('minicluster', '4'),
                                          ('local', '0.1')])
def test_a_system_module_sets_its_own_general_options(tmp_path, system,
                                                      rate):
    """minicluster's poll rate (its own slurmdbd answers fast), ReFrame's
    default elsewhere."""
    proc, _ = reframe('--show-config', 'general/0/poll_rate_min',
                      '--system', system, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == rate
