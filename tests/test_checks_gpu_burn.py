"""gpu-burn checks through ReFrame on perlmutter (4 A100 a node): the job
and build scripts of the session's --dry-run, and one replay of outputs
made from the real H100 ones (tests/gpu_burn_outputs.py): four healthy
GPUs, three GPUs of four, compute errors on one GPU."""
import pathlib
import subprocess
from types import SimpleNamespace

import pytest

from gpu_burn_outputs import more_gpus, real
from hpcval.benchmarks.gpu_burn import GpuBurnSource
from hpcval.benchmarks.source import _upstream_reachable
from replays import replay
from rfmrun import ROOT, by_name, one_case, perf


@pytest.fixture(scope='module')
def dry_stage(dry_run):
    proc, report, stage = dry_run('perlmutter')
    assert proc.returncode == 0, proc.stdout[-3000:]
    return report, stage / 'gpu' / 'cuda'


def test_job_and_build_scripts(dry_stage):
    report, stage = dry_stage
    cases = by_name(report, 'GpuBurnCudaCheck')
    assert {tc['result'] for tc in cases} == {'pass'} and len(cases) == 3
    lines = {tc['display_name']: (pathlib.Path(tc['stagedir']) /
                                  'rfm_job.sh').read_text().splitlines()
             for tc in cases}
    for name, opts in (('float', ''), ('double', '-d '),
                       ('float_tc', '-tc ')):
        job = lines[f'GpuBurnCudaCheck %precision={name}']
        assert job[-1].startswith('srun --cpus-per-task=128 '
                                  '--gpus-per-task=4 ')
        assert job[-1].endswith(f'/gpu-burn/gpu_burn {opts}-m 90% '
                                f'-stts 5 30')
        assert any(line.startswith('cp -- "$(dirname "$(command -v ') and
                   '/gpu-burn/gpu_burn)")/compare.fatbin" .' in line
                   for line in job)
    [build] = stage.glob('GpuBurnBuild_*/rfm_build.sh')
    assert 'make -C gpu-burn COMPUTE=80 CUDAPATH="$(dirname "$(dirname ' \
        '"$(command -v nvcc)")")"' in build.read_text()


@pytest.fixture(scope='module')
def replayed(tmp_path_factory):
    recordings = {
        'GpuBurnCudaCheck%precision=float': {
            'stdout': more_gpus(real('h100_float_20s'), 4)},
        'GpuBurnCudaCheck%precision=double': {
            'stdout': more_gpus(real('h100_double_20s'), 3)},
        'GpuBurnCudaCheck%precision=float_tc': {
            'stdout': more_gpus(real('h100_tc_float_20s'), 4,
                                errors={(2, -1): 14})},
    }
    proc, report = replay('perlmutter', recordings, ['checks/gpu_burn.py'],
                          [], tmp_path_factory.mktemp('gpu_burn_replay'))
    assert report, proc.stdout[-3000:] + proc.stderr[-3000:]
    return report


def test_healthy_gpus_give_per_gpu_figures(replayed):
    [tc] = [tc for tc in by_name(replayed, 'GpuBurnCudaCheck')
            if tc['display_name'].endswith('=float')]
    assert tc['result'] == 'pass', tc['fail_reason']
    values = perf(tc)
    assert values['gflops'][0] == 51316
    for gpu in range(4):
        assert values[f'gflops@gpu{gpu}'][0] == 51316
        assert values[f'gflops_vs_siblings@gpu{gpu}'][0] == \
            pytest.approx(1)
    assert tc['hpcval_measured_gpus'] == [0, 1, 2, 3]


def test_a_missing_gpu_is_named(replayed):
    tc = one_case(replayed, 'GpuBurnCudaCheck %precision=double')
    assert tc['result'] == 'fail'
    assert 'gpu-burn tested 3 of 4 GPUs: GPU 3 missing from its output' \
        in tc['fail_reason']
    assert tc['hpcval_measured_gpus'] == [0, 1, 2]


def test_compute_errors_fail_naming_the_gpu(replayed):
    tc = one_case(replayed, 'GpuBurnCudaCheck %precision=float_tc')
    assert tc['result'] == 'fail'
    assert 'GPU 2: 14 compute errors (repeated GEMMs on it gave different ' \
        'results)' in tc['fail_reason']


def test_a_public_faulty_output_fails_naming_the_gpus(tmp_path):
    """wilicc/gpu-burn issue 12's 16 GPUs, all FAULTY (tests/fixtures/
    public/gpu_burn/SOURCE.md): a copy without gpu-burn's header, so
    not judged, and its FAULTY GPUs named."""
    text = (ROOT / 'tests' / 'fixtures' / 'public' / 'gpu_burn' /
            'issue12_16gpus_faulty.txt').read_text()
    proc, report = replay(
        'perlmutter', {'GpuBurnCudaCheck%precision=float': {'stdout': text}},
        ['checks/gpu_burn.py'], [], tmp_path)
    assert report, proc.stdout[-3000:] + proc.stderr[-3000:]
    [tc] = [tc for tc in by_name(report, 'GpuBurnCudaCheck')
            if tc['display_name'].endswith('=float')]
    assert tc['result'] == 'fail'
    gpus = ', '.join(f'GPU {i}' for i in range(16))
    assert f'; gpu-burn called {gpus} FAULTY' in tc['fail_reason']


def test_cuda_that_did_not_start_is_named(tmp_path):
    """wilicc/gpu-burn issue 127's 8 x A100 (tests/fixtures/public/
    gpu_burn/SOURCE.md): CUDA error 802 before any GPU ran; the reason
    names CUDA's own line, not only the GPU test's that followed it."""
    public = ROOT / 'tests' / 'fixtures' / 'public' / 'gpu_burn'
    proc, report = replay('perlmutter', {'GpuBurnCudaCheck%precision=float': {
        'stdout': (public / 'issue127_8xa100_no_cuda.out').read_text(),
        'stderr': (public / 'issue127_8xa100_no_cuda.err').read_text(),
        'exit_code': '19\n'}}, ['checks/gpu_burn.py'], [], tmp_path)
    assert report, proc.stdout[-3000:] + proc.stderr[-3000:]
    [tc] = [tc for tc in by_name(report, 'GpuBurnCudaCheck')
            if tc['display_name'].endswith('=float')]
    assert tc['result'] == 'fail'
    assert 'gpu-burn printed no progress line: no GPU reported a result; ' \
        "Couldn't init CUDA: Error (gpu_burn-drv.cpp:304): system not yet " \
        'initialized (exit code 19)' in tc['fail_reason']


def test_a_commit_pin_is_fetched_alone(tmp_path):
    """gpu-burn tags no releases: its version is a commit, which clone
    --branch cannot take; the fetch of that commit and the probe work on a
    repository that has it (here a local one, as -S src_mirror gives)."""
    repo = tmp_path / 'upstream'
    git = ['git', '-c', 'user.name=t', '-c', 'user.email=t@t']
    subprocess.run(['git', 'init', '-q', str(repo)], check=True)
    (repo / 'Makefile').write_text('gpu_burn:\n')
    subprocess.run([*git, '-C', str(repo), 'add', '.'], check=True)
    subprocess.run([*git, '-C', str(repo), 'commit', '-qm', 'x'], check=True)
    sha = subprocess.run(['git', '-C', str(repo), 'rev-parse', 'HEAD'],
                         check=True, capture_output=True,
                         text=True).stdout.strip()
    source = SimpleNamespace(version=sha, tree='src', submodules=False)
    cmd = GpuBurnSource._clone_cmd(source, f'file://{repo}')
    subprocess.run(['bash', '-c', cmd], cwd=tmp_path, check=True)
    assert (tmp_path / 'src' / 'Makefile').exists()
    assert _upstream_reachable(f'file://{repo}', sha)
    assert not _upstream_reachable(f'file://{tmp_path}/none', sha)
