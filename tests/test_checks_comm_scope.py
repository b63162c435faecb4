"""Comm|Scope checks through real ReFrame runs: job and build scripts
written with ``--dry-run`` and read as a sysadmin would, and the source
fetched with its submodules from a local mirror.  Comm|Scope needs a GPU:
its captured runs are in tests/fixtures/captured/comm_scope."""
import pathlib
import subprocess

import pytest

from lmodenv import system_env
from rfmrun import by_name, reframe


def _job_lines(tc):
    return (pathlib.Path(tc['stagedir']) / 'rfm_job.sh').read_text()


@pytest.fixture(scope='module')
def dry_runs(dry_run):
    """{system: (proc, report)}: the session's --dry-run of every check on
    perlmutter (conftest), read here for Comm|Scope."""
    return {'perlmutter': dry_run('perlmutter')[:2]}


def test_dry_run_passes(dry_runs):
    proc, report = dry_runs['perlmutter']
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert {tc['result'] for tc in by_name(report, 'CommScope')} == {'pass'}


def test_comm_scope_job_script(dry_runs):
    _, report = dry_runs['perlmutter']
    [tc] = by_name(report, 'CommScopeCudaCheck')
    line = _job_lines(tc).splitlines()[-1]
    assert "'--benchmark_filter=^(Comm_cudart_kernel/0/[0-9]+/0/real_time/" \
           "threads:1|" in line
    assert 'Comm_cudaMemcpyPeerAsync_GPUToGPUPeer/[0-9]+/[0-9]+/log2\\(N\\)' \
           ':(8|27)/manual_time)$' in line
    assert line.endswith('--benchmark_out=comm_scope.json '
                         '--benchmark_out_format=json '
                         '--benchmark_repetitions=5 '
                         '--benchmark_report_aggregates_only=true --numa 0')
    [build] = by_name(report, 'CommScopeBuild')
    script = (pathlib.Path(build['stagedir']) / 'rfm_build.sh').read_text()
    assert '-DSCOPE_USE_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=80' in script
    assert '-include $PWD/cuda13_compat.h' in script


def test_comm_scope_submodules_from_a_mirror(tmp_path):
    root = tmp_path / 'github'
    repo = root / 'c3sr' / 'comm_scope.git'
    repo.mkdir(parents=True)
    subprocess.run(['git', 'init', '-q', '--bare', str(repo)], check=True)
    proc, report = reframe('--dry-run', '--system', 'perlmutter', '-n',
                           'CommScopeCudaCheck', '-S',
                           f'CommScopeSource.src_mirror={repo}',
                           tmp_path=tmp_path,
                           env=system_env(tmp_path / 'modulefiles'),
                           checks=('checks/comm_scope.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    [source] = by_name(report, 'CommScopeSource')
    script = _job_lines(source)
    assert (f'git -c protocol.file.allow=always -c url.file://{root}/'
            f'.insteadOf=https://github.com/ -c advice.detachedHead=false '
            f'clone --quiet --depth 1 --branch v0.12.0 --recurse-submodules '
            f'--shallow-submodules -- file://{repo} src') in script
