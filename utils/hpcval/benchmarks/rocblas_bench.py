"""rocblas-bench: GEMM throughput of one AMD GPU, the MI300X guide's way, the
best of ``repetitions`` runs (docs/benchmarks/rocblas_bench.md)."""
import shlex

import reframe as rfm
from reframe.core.builtins import fixture, parameter, run_before, variable

from hpcval import inputs
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval.parsers.rocblas_bench import (GFLOPS, check_shape,
                                          parse_rocblas_bench)

_STRIDED = ('-f gemm_strided_batched_ex --transposeA N --transposeB T '
            '-m 1024 -n 2048 -k 512 --a_type {ab} --lda 1024 --stride_a 4096 '
            '--b_type {ab} --ldb 2048 --stride_b 4096 --c_type {cd} '
            '--ldc 1024 --stride_c 2097152 --d_type {cd} --ldd 1024 '
            '--stride_d 2097152 --compute_type {cd} --alpha 1.1 --beta 1 '
            '--batch_count 5')
_STRIDED_SHAPE = {'M': 1024, 'N': 2048, 'K': 512, 'batch_count': 5}

#: gemm -> (rocblas-bench arguments, columns the result must show)
GEMMS = {
    # AMD MI300X validation guide, 5.3.1.1 FP32
    'fp32': ('-f gemm -r s -m 4000 -n 4000 -k 4000 --lda 4000 --ldb 4000 '
             '--ldc 4000 --transposeA N --transposeB T',
             {'M': 4000, 'N': 4000, 'K': 4000}),
    # AMD MI300X validation guide, 5.3.1.2 "BF16": --a_type h is fp16
    'f16_strided': (_STRIDED.format(ab='h', cd='s'), _STRIDED_SHAPE),
    # the true bf16 variant of the same GEMM
    'bf16_strided': (_STRIDED.format(ab='bf16_r', cd='s'), _STRIDED_SHAPE),
    # AMD MI300X validation guide, 5.3.1.3 INT8
    'i8_strided': (_STRIDED.format(ab='i8_r', cd='i32_r'), _STRIDED_SHAPE),
}
REPETITION_MARK = 'hpcval repetition'


class RocblasSource(UpstreamSource):
    repo_url = 'https://github.com/ROCm/rocBLAS.git'
    version = 'rocm-6.2.0'


class RocblasBenchBuild(UpstreamBuild):
    """rocBLAS clients against the installed library."""

    executables = ['rocblas-bench']
    build_bin = 'rocblas-build/release/clients/staging'
    source = fixture(RocblasSource, scope='session')

    def build_commands(self, src):
        # install.sh calls ./rmake.py: it must run from the source tree
        return [f'stage="$PWD"; (cd {src} && ./install.sh --clients-only '
                f'--library-path "${{ROCM_PATH:-/opt/rocm}}" '
                f'--build_dir "$stage/rocblas-build")']


class RocblasBench(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """One GEMM of ``GEMMS``, run ``repetitions`` times on one GPU."""

    gemm = parameter(list(GEMMS))

    #: Runs of the command; the best is reported (the guide's advice).
    repetitions = variable(int, value=5)

    #: GPU to run on (rocblas-bench --device).
    gpu_index = variable(int, value=0)
    input_policy = {
        'repetitions': inputs.number(1, 100),
        'gpu_index': inputs.COUNT,
    }

    num_tasks = 1
    num_tasks_per_node = 1
    tags = {'rocblas'}

    @run_before('run')
    def set_command(self):
        exe = shlex.quote(self.build.executable_path('rocblas-bench'))
        args = GEMMS[self.gemm][0]      # as the guide prints them
        if self.gpu_index:
            args += f' --device {self.gpu_index}'
        reps = ' '.join(str(i) for i in range(1, self.repetitions + 1))
        self.executable = 'bash'
        self.executable_opts = ['-c', shlex.quote(
            f'for rep in {reps}; do echo "{REPETITION_MARK} $rep"; '
            f'{exe} {args} || exit $?; done'
        )]

    def parse(self):
        text = read_text(self.stdout.evaluate())
        rows = parse_rocblas_bench(text)
        if len(rows) != self.repetitions:
            raise ParseError(f'{len(rows)} results for {self.repetitions} '
                             f'repetitions: a run died or printed nothing')
        check_shape(rows, **GEMMS[self.gemm][1])
        return rows

    def metrics(self, rows):
        best = max(rows, key=lambda row: row[GFLOPS])
        return {'gflops': (best[GFLOPS], 'GFLOP/s'),
                'gflops_worst': (min(r[GFLOPS] for r in rows), 'GFLOP/s'),
                'time_best': (best['us'], 'us')}
