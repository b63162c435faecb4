"""gpu-burn: cuBLAS GEMM rate and compute errors of every NVIDIA GPU.

Built with upstream's Makefile from wilicc/gpu-burn at ``GpuBurnSource``'s
pinned commit (upstream tags no releases).  One gpu-burn process burns all
GPUs of the node at once (a child per GPU), so each GPU's rate is measured
under the node's full power and heat, and a slow GPU is judged against its
siblings.  A GPU whose repeated GEMMs disagree, or whose process died,
fails the run by name.
"""
import shlex

import reframe as rfm
from reframe.core.builtins import fixture, parameter, run_before, variable

from hpcval import inputs, layouts
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.benchmarks.siblings import SiblingFigures
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.layouts import gpu_count
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval.parsers.gpu_burn import (gpus_reported, parse_gpu_burn,
                                     problems)

#: precision -> (gpu-burn options, what its GPU processes announce)
PRECISIONS = {
    'float': ([], 'FLOATS'),
    'double': (['-d'], 'DOUBLES'),
    # cuBLAS' deprecated TENSOR_OP_MATH: SGEMM with fp16 tensor-core math
    'float_tc': (['-tc'], 'FLOATS, Tensor Cores'),
}
#: the compare kernel gpu-burn loads from its working directory
COMPARE_KERNEL = 'compare.fatbin'
#: seconds gpu-burn waits after SIGTERM before SIGKILL; upstream's 30
#: would add half a minute of idle GPUs to every run
SIGTERM_WAIT_S = 5


class GpuBurnSource(UpstreamSource):
    repo_url = 'https://github.com/wilicc/gpu-burn.git'
    version = '3ead140434da9473582b68452f7115967a7a0581'


class GpuBurnBuild(UpstreamBuild):
    """``make COMPUTE=<cc>`` in a copy of the source (the Makefile builds
    in place, and the source tree is shared); gives ``gpu_burn`` and
    ``compare.fatbin`` in ``gpu-burn/``."""

    executables = ['gpu_burn']
    build_bin = 'gpu-burn'
    source = fixture(GpuBurnSource, scope='session')

    def build_commands(self, src):
        cc = self.target_cuda_arch(default='sm_90').replace('sm_', '')
        return [
            f'mkdir -p gpu-burn && cp -a -- {src}/. gpu-burn/',
            # the Makefile looks for nvcc in /usr and /usr/local/cuda only
            f'make -C gpu-burn COMPUTE={cc} '
            'CUDAPATH="$(dirname "$(dirname "$(command -v nvcc)")")"',
        ]


class GpuBurn(SiblingFigures, ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """One gpu-burn run of ``duration`` seconds over all GPUs of a node."""

    precision = parameter(list(PRECISIONS))

    #: Seconds of burning.  Each GPU reports once per batch of GEMMs
    #: filling ``memory_percent`` of its memory (about 5 s on an H100 in
    #: float); the rate needs two reports after the first.
    duration = variable(int, value=30)

    #: Share of each GPU's free memory gpu-burn fills with results (-m N%).
    memory_percent = variable(int, value=90)
    #: how -S values of these variables are checked (hpcval.inputs)
    input_policy = {
        'duration': inputs.number(10, 86400),
        'memory_percent': inputs.number(1, 95),
    }

    #: A GPU this many times slower than its siblings' median on the node
    #: fails (hpcval.benchmarks.siblings; docs/benchmarks/gpu_burn.md).
    sibling_factor = 1.1

    num_tasks = 1
    num_tasks_per_node = 1
    tags = {'gpu-burn'}

    @run_before('run')
    def set_command(self):
        self.expected_gpus = gpu_count(self.current_partition)
        self.skip_if(self.expected_gpus == 0,
                     'the partition declares no GPU devices')
        # one process sees every GPU of the node (srun --gpus-per-task=N)
        layouts.apply(self, layouts.gpu_layout(self.current_partition,
                                               'process_per_node'),
                      gpus=self.expected_gpus)
        exe = self.build.command('gpu_burn')
        # gpu-burn reads the kernel from its working directory; -c PATH is
        # not used: it would take a '-d' or '-l' inside PATH for an option
        self.prerun_cmds = [
            *self.prerun_cmds,
            f'cp -- "$(dirname "$(command -v {exe})")/{COMPARE_KERNEL}" . '
            f'|| {{ echo "no {COMPARE_KERNEL} beside gpu_burn" >&2; '
            f'exit 1; }}']
        self.executable = exe
        # options first: gpu-burn takes the argument after them as seconds
        self.executable_opts = [*PRECISIONS[self.precision][0],
                                '-m', f'{self.memory_percent}%',
                                '-stts', str(SIGTERM_WAIT_S),
                                str(self.duration)]

    def parse(self):
        result = parse_gpu_burn(read_text(self.stdout.evaluate()))
        wanted = PRECISIONS[self.precision][1]
        if result.modes and result.modes != {wanted}:
            ran = ', '.join(sorted(result.modes))
            raise ParseError(f'gpu-burn ran {ran}, expected {wanted}')
        missing = [f'GPU {i}' for i in range(self.expected_gpus)
                   if i not in result.gpus]
        if missing:
            raise ParseError(f'gpu-burn tested {len(result.gpus)} of '
                             f'{self.expected_gpus} GPUs: {", ".join(missing)}'
                             f' missing from its output')
        failed = problems(result)
        if failed:
            raise ParseError('; '.join(failed))
        return result

    def measured_gpus(self):
        return gpus_reported(read_text(self.stdout.evaluate()))

    def sibling_groups(self, result):
        return {'gflops': {f'gpu{i}': (f'GPU {i}', gpu.gflops, 'GFLOP/s')
                           for i, gpu in result.gpus.items()}}

    def metrics(self, result):
        """The node's slowest GPU as ``gflops`` and each GPU's rate as
        ``gflops@gpuN``, with its ratio to its siblings' median."""
        values = {f'gflops@gpu{i}': (gpu.gflops, 'GFLOP/s')
                  for i, gpu in result.gpus.items()}
        values['gflops'] = (min(v for v, _ in values.values()), 'GFLOP/s')
        return {**values, **self.sibling_metrics(result)}

    def components(self, result, values):
        slowest = min(result.gpus.values(), key=lambda g: g.gflops)
        out = {f'gflops@gpu{i}': f'GPU {i}' for i in result.gpus}
        out['gflops'] = (f'GPU {slowest.index} (the slowest of '
                         f'{len(result.gpus)})')
        return {**out, **self.sibling_components(result)}
