"""OSU checks through real ReFrame runs.

Job scripts are written with ``--dry-run`` on every system and read as a
sysadmin would.  OSU (host buffers) runs live on ``local`` where
HPCVAL_OSU_MIRROR names a copy of the OSU 7.4 source (the release tarball,
its folder, or a git repository with branch v7.4 such as a clone of
github.com/alex--m/osu); CI has none, so there it is skipped.
"""
import math
import os
import pathlib
import subprocess

import pytest

import systems
from hpcval.benchmarks.osu import CUDA13_COMPAT
from rfmrun import by_name, reframe

MIRROR = os.environ.get('HPCVAL_OSU_MIRROR')
SELECT = ('-n', 'Osu')
SYSTEMS = [mod.system['name'] for mod in systems.ALL]


def _job_lines(tc):
    return (pathlib.Path(tc['stagedir']) / 'rfm_job.sh').read_text()


@pytest.fixture(scope='module')
def dry_runs(dry_run):
    """{system: (proc, report)}: the session's --dry-run of every check
    per system (conftest), read here for the OSU checks."""
    return {name: dry_run(name)[:2] for name in SYSTEMS}


@pytest.mark.parametrize('system', SYSTEMS)
def test_dry_run(dry_runs, system):
    proc, report = dry_runs[system]
    assert proc.returncode == 0, proc.stdout[-3000:]
    results = {tc['display_name']: tc['result']
               for run in report['runs'] for tc in run['testcases']}
    assert any(name.startswith('OsuCpuCheck') for name in results)
    assert 'fail' not in results.values(), results


def test_local_binding_from_topology(dry_runs):
    _, report = dry_runs['local']
    [tc] = by_name(report, 'OsuCpuCheck %benchmark=osu_latency '
                           '%placement=same_socket')
    line = _job_lines(tc).splitlines()[-1]
    assert line.startswith('mpiexec -n 2 bash -c ')
    assert 'exec taskset -c "${cpus[${r:-0}]}" "$0" "$@"' in line
    assert line.endswith('/build/osu_latency -m 0:4194304')
    # a single-socket host cannot place ranks across sockets: skipped
    [cross] = by_name(report, 'OsuCpuCheck %benchmark=osu_latency '
                              '%placement=cross_socket')
    assert cross['result'] == 'skip'


def test_slurm_placement_by_distribution(dry_runs):
    _, report = dry_runs['perlmutter']
    lines = {}
    for placement in ('same_socket', 'cross_socket', 'across_nodes'):
        cases = [tc for tc in by_name(report, f'OsuCpuCheck %benchmark=osu_bw '
                                              f'%placement={placement}')
                 if tc['result'] == 'pass']
        lines[placement] = _job_lines(cases[0])
    assert 'srun --cpus-per-task=1 --distribution=block:block ' \
           '--cpu-bind=cores ' in lines['same_socket']
    assert '--distribution=block:cyclic --cpu-bind=cores' in \
        lines['cross_socket']
    assert '#SBATCH --nodes=2' in lines['across_nodes']
    assert '#SBATCH --ntasks-per-node=1' in lines['across_nodes']


def test_gpu_buffers_use_the_partitions_gpu_aware_settings(dry_runs):
    _, report = dry_runs['frontier']
    [tc] = by_name(report, 'OsuRocmCheck %benchmark=osu_latency '
                           '%placement=on_node')
    script = _job_lines(tc)
    assert 'export MPICH_GPU_SUPPORT_ENABLED=1' in script
    assert '#SBATCH --ntasks-per-node=2' in script
    assert script.splitlines()[-1].endswith(
        '/build/osu_latency -m 0:4194304 -d rocm D D')
    # no OSU GPU check runs where MPI is not declared GPU-aware: on this
    # GPU-less host each is listed and skipped, naming the missing GPU
    _, local = dry_runs['local']
    cuda = by_name(local, 'OsuCudaCheck')
    assert cuda and all(tc['result'] == 'skip' for tc in cuda), \
        [tc['result'] for tc in cuda]


def test_osu_cuda_build_carries_the_cuda13_shim(dry_runs, tmp_path):
    _, report = dry_runs['perlmutter']
    builds = [(pathlib.Path(tc['stagedir']) / 'rfm_build.sh').read_text()
              for tc in by_name(report, 'OsuBuild')]
    cuda = next(s for s in builds if '--enable-cuda' in s)
    assert "cat > obj/cuda13_compat.h <<'EOF'" in cuda
    configure = next(line for line in cuda.splitlines()
                     if '/configure ' in line)
    assert configure.endswith('--enable-cuda --with-cuda="${CUDA_HOME:-$('
                              'dirname "$(dirname "$(command -v nvcc)")")}" )')
    # at make time only: configure's link probes declare `char cudaFree();`,
    # which the header's CUDA declarations would contradict
    make = next(line for line in cuda.splitlines() if line.startswith('make'))
    cc = configure.split(' CC=', 1)[1].split()[0]
    assert make.endswith(f' CC="{cc} -include $PWD/obj/cuda13_compat.h"'), \
        make
    assert all('cuda13_compat' not in s for s in builds
               if '--enable-cuda' not in s)
    # without CUDA headers (host builds, configure probes) it is inert
    header = tmp_path / 'cuda13_compat.h'
    header.write_text(CUDA13_COMPAT)
    subprocess.run(['gcc', '-Wall', '-Werror', '-c', '-include', str(header),
                    '-x', 'c', '/dev/null', '-o', '/dev/null'], check=True)


@pytest.fixture(scope='module')
def from_image(tmp_path_factory):
    """{test name: job script} of a --dry-run with -S image= (an image
    provides OSU; nothing runs)."""
    tmp = tmp_path_factory.mktemp('osu-image')
    proc, report = reframe('--dry-run', '--system', 'local', '-n',
                           'OsuCpuCheck%benchmark=osu_latency'
                           '%placement=same_socket',
                           '-S', 'image=localhost/hpcval-bench:bookworm',
                           tmp_path=tmp, checks=('checks/osu.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    return {name: _job_lines(tc) for name in ('OsuSource', 'OsuCpuCheck')
            for tc in by_name(report, name)}


def test_an_image_providing_osu_fetches_no_tarball(from_image):
    assert 'the image provides it: nothing to fetch' in from_image['OsuSource']
    assert 'curl' not in from_image['OsuSource']


def test_an_image_runs_its_own_osu(from_image):
    run = from_image['OsuCpuCheck'].splitlines()[-1]
    assert '"$0" "$@"\' osu_latency -m 0:4194304' in run, run
    assert '/build/osu_latency' not in run


@pytest.mark.skipif(not MIRROR, reason='set HPCVAL_OSU_MIRROR to a copy of '
                                       'the OSU 7.4 source')
def test_live_on_local(tmp_path):
    proc, report = reframe('-r', '--system', 'local',
                           '-n', 'OsuCpuCheck%benchmark=osu_latency'
                                 '%placement=same_socket',
                           '-n', 'OsuCpuCheck%benchmark=osu_bw'
                                 '%placement=same_socket',
                           '-S', f'OsuSource.src_mirror={MIRROR}',
                           '-S', 'OsuCpuCheck.iterations=1000',
                           tmp_path=tmp_path, checks=('checks/osu.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    perf = {}
    for tc in by_name(report, 'OsuCpuCheck'):
        assert tc['result'] == 'pass', tc['fail_reason']
        perf.update({k.rsplit(':', 1)[-1]: v[0]
                     for k, v in tc['perfvalues'].items()})
    assert set(perf) == {'latency_8B', 'latency_1KiB', 'latency_64KiB',
                         'bandwidth_4MiB'}
    assert all(math.isfinite(v) and v > 0 for v in perf.values())
