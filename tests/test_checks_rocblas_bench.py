"""rocblas-bench checks through ReFrame on the MI300X box: the guide's
command lines in the job scripts, and real runs whose rocblas-bench replays
the AMD MI300X validation guide's example outputs from a prebuilt_dir."""
import pytest

from hpcval.benchmarks.rocblas_bench import GEMMS
from mi300x_guide import guide_outputs, replayer
from rfmrun import one_case, perf, reframe


def test_listing(tmp_path):
    proc, _ = reframe('-l', '-n', 'RocblasBench', '--system', 'mi300x',
                      tmp_path=tmp_path, checks=('checks/rocblas_bench.py',))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for gemm in GEMMS:
        assert f'RocblasBenchCheck %gemm={gemm}' in proc.stdout


def test_dry_run_job_scripts(tmp_path):
    proc, _ = reframe('--dry-run', '--system', 'mi300x', '-t', 'rocblas',
                      tmp_path=tmp_path, checks=('checks/rocblas_bench.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    stage = tmp_path / 'rfm' / 'stage' / 'mi300x' / 'default' / 'rocm'
    lines = [p.read_text().splitlines()[-1]
             for p in stage.glob('RocblasBenchCheck_*/rfm_job.sh')]
    assert len(lines) == len(GEMMS)
    for gemm, (args, _) in GEMMS.items():
        [line] = [v for v in lines if f' {args} ||' in v]
        assert line.startswith("mpirun -np 1 bash -c 'for rep in 1 2 3 4 5; "
                               "do echo \"hpcval repetition $rep\"; ")
        assert f'/rocblas-bench {args} || exit $?; done' in line
    [build] = stage.glob('RocblasBenchBuild_*/rfm_build.sh')
    assert './install.sh --clients-only --library-path ' \
        '"${ROCM_PATH:-/opt/rocm}"' in build.read_text()


@pytest.fixture(scope='module')
def guide_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('guide')
    bins = replayer(tmp / 'bin', guide_outputs())
    return reframe('-r', '--system', 'mi300x', '-t', 'rocblas',
                   '-x', 'RocblasBenchCheck%gemm=bf16_strided',
                   '-S', f'prebuilt_dir={bins}',
                   '-S', 'RocblasBenchCheck.repetitions=1',
                   # no MI300X here: the probe would fail the node
                   '-S', 'RocblasBenchCheck.health_probe=no', tmp_path=tmp,
                   checks=('checks/rocblas_bench.py',))


def test_guide_outputs_through_the_checks(guide_run):
    proc, report = guide_run
    assert report, proc.stdout + proc.stderr
    for gemm, gflops in (('fp32', 97190.6), ('f16_strided', 159783),
                         ('i8_strided', 177478)):
        tc = one_case(report, f'RocblasBenchCheck %gemm={gemm}')
        assert tc['result'] == 'pass', tc['fail_reason']
        assert perf(tc)['gflops'][0] == gflops
