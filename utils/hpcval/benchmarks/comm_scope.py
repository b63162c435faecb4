"""Comm|Scope: GPU control latencies, host/GPU and GPU/GPU copies, read from
its ``--benchmark_out`` JSON (docs/benchmarks/comm_scope.md)."""
import os
import re
import shlex

import reframe as rfm
from reframe.core.builtins import fixture, run_after, run_before, variable

from hpcval import inputs, layouts
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.inputs import checked_path, checked_token
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval.parsers.comm_scope import parse_comm_scope, why_no_file

MODELS = ('cuda', 'hip')
OUTPUT = 'comm_scope.json'

# Upstream names, Sandia's quantities; '{n}' is log2 of the size.  The
# CUDA peer copy is named ...PeerAsync_GPUToGPUPeer (peer access on); its
# sibling without peer access is misspelt upstream: PeerAync_GPUToGPU.
NAMES = {
    'kernel': 'Comm_{kernel}_kernel/{numa}/{gpu}/0/real_time/threads:1',
    'sync': 'Comm_{api}DeviceSynchronize/{numa}/{gpu}/real_time/threads:1',
    'h2d': 'Comm_{api}MemcpyAsync_PinnedToGPU/{numa}/{gpu}/log2(N):{n}/'
           'manual_time',
    'd2h': 'Comm_{api}MemcpyAsync_GPUToPinned/{numa}/{gpu}/log2(N):{n}/'
           'manual_time',
    'peer': 'Comm_{peer}/{src}/{dst}/log2(N):{n}/manual_time',
}
#: each model's words in NAMES
MODEL_NAMES = {
    'cuda': {'api': 'cuda', 'kernel': 'cudart',
             'peer': 'cudaMemcpyPeerAsync_GPUToGPUPeer'},
    'hip': {'api': 'hip', 'kernel': 'hip', 'peer': 'hipMemcpyAsync_GPUToGPU'},
}

# CUDA 13 takes a cudaMemLocation where v0.12.0's unified-memory benchmarks
# pass a device number (cudaMemPrefetchAsync, cudaMemAdvise); these
# overloads keep the old calls compiling, unchanged in meaning.  Inert
# below CUDA 13.
CUDA13_COMPAT = r'''#pragma once
#if defined(__cplusplus)
#include <cuda_runtime_api.h>
#if CUDART_VERSION >= 13000
static inline cudaMemLocation hpcval_location(int device) {
  cudaMemLocation loc = {};
  loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost
                                       : cudaMemLocationTypeDevice;
  loc.id = device == cudaCpuDeviceId ? 0 : device;
  return loc;
}
static inline cudaError_t cudaMemPrefetchAsync(const void *ptr, size_t n,
                                               int device,
                                               cudaStream_t stream = 0) {
  return cudaMemPrefetchAsync(ptr, n, hpcval_location(device), 0, stream);
}
static inline cudaError_t cudaMemAdvise(const void *ptr, size_t n,
                                        cudaMemoryAdvise advice, int device) {
  return cudaMemAdvise(ptr, n, advice, hpcval_location(device));
}
#endif
#endif
'''


class CommScopeSource(UpstreamSource):
    repo_url = 'https://github.com/c3sr/comm_scope.git'
    version = 'v0.12.0'
    submodules = True

    #: Folder of bare mirrors laid out as GitHub (<owner>/<name>.git) for
    #: the submodules; default: two levels above a git src_mirror.
    submodule_root = variable(str, value='')
    input_policy = {'submodule_root': inputs.PATH}

    def _clone_cmd(self, origin):
        cmd = super()._clone_cmd(origin)
        if not origin.startswith('file://'):
            return cmd

        root = checked_path(self.submodule_root or os.path.dirname(
            os.path.dirname(origin[len('file://'):].rstrip('/'))),
            'submodule_root')
        # git refuses file:// submodules unless allowed (CVE-2022-39253)
        return cmd.replace('git ', shlex.join([
            'git', '-c', 'protocol.file.allow=always', '-c',
            f'url.file://{root}/.insteadOf=https://github.com/']) + ' ', 1)


class CommScopeBuild(UpstreamBuild):
    """``cmake -DSCOPE_USE_CUDA=ON`` (or HIP) and ``comm_scope`` only."""

    #: cuda or hip.
    model = variable(str, value='cuda')

    #: Force-include the CUDA 13 overloads (see CUDA13_COMPAT).
    cuda13_compat = variable(bool, value=True)
    input_policy = {'model': inputs.TOKEN, 'cuda13_compat': inputs.FLAG}

    executables = ['comm_scope']
    source = fixture(CommScopeSource, scope='session')

    @run_after('setup')
    def check_model(self):
        checked_token(self.model, 'model', MODELS)

    def _model_opts(self):
        if self.model == 'hip':
            return ['-DSCOPE_USE_HIP=ON', '-DCMAKE_CXX_COMPILER=hipcc']

        arch = self.target_cuda_arch(default='sm_90').replace('sm_', '')
        opts = ['-DSCOPE_USE_CUDA=ON', f'-DCMAKE_CUDA_ARCHITECTURES={arch}',
                '-DCMAKE_CUDA_COMPILER="$(command -v nvcc)"']
        if self.cuda13_compat:
            opts.append('-DCMAKE_CUDA_FLAGS="-include $PWD/cuda13_compat.h"')
        return opts

    def build_commands(self, src):
        cmds = []
        if self.model == 'cuda' and self.cuda13_compat:
            cmds.append(f"cat > cuda13_compat.h <<'EOF'\n{CUDA13_COMPAT}EOF")
        return cmds + [
            ' '.join(['cmake', '-S', src, '-B', 'obj',
                      '-DCMAKE_BUILD_TYPE=Release',
                      # bundled spdlog predates CMake 4's minimum policy
                      '-DCMAKE_POLICY_VERSION_MINIMUM=3.5',
                      # NVTX ranges only serve profilers; CUDA 13 dropped
                      # the nvToolsExt library they link
                      '-DSCOPE_USE_NVTX=OFF',
                      # never download libnuma during a build
                      '-DSCOPE_TRY_DOWNLOAD_NUMA=OFF', *self._model_opts()]),
            f'cmake --build obj --target comm_scope --parallel '
            f'{self.build_jobs}',
            'mkdir -p build', 'cp obj/comm_scope build/'
        ]


class CommScope(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """One ``comm_scope`` process driving every GPU of one node."""

    model = variable(str, value='cuda')
    build_shared = ('model',)

    #: log2 of the copy size for latencies and for bandwidths (2^27 = 128
    #: MiB; upstream sweeps 2^8 to 2^33).
    latency_log2 = variable(int, value=8)
    bandwidth_log2 = variable(int, value=27)

    #: --benchmark_repetitions: metrics are the mean, with the std logged.
    repetitions = variable(int, value=5)

    #: NUMA node of the host buffers and launching threads.
    numa_node = variable(int, value=0)
    input_policy = {
        'model': inputs.TOKEN,
        'latency_log2': inputs.COUNT,
        'bandwidth_log2': inputs.COUNT,
        'repetitions': inputs.number(1, 100),
        'numa_node': inputs.COUNT,
    }

    num_tasks = 1
    tags = {'comm_scope'}

    def _name(self, key, **fields):
        return NAMES[key].format(numa=self.numa_node,
                                 **MODEL_NAMES[self.model], **fields)

    def _filter(self):
        """One regex: this NUMA node, any GPU, the two copy sizes."""
        sizes = f'({self.latency_log2}|{self.bandwidth_log2})'
        patterns = [re.escape(self._name(key, gpu='@G', src='@G', dst='@G',
                                         n='@N'))
                    .replace('@G', '[0-9]+').replace('@N', sizes)
                    for key in NAMES]
        return f'^({"|".join(patterns)})$'

    @run_before('run')
    def set_command(self):
        self.gpus = self.gpus_or_skip()
        self.num_tasks_per_node = 1
        layouts.apply(self, layouts.gpu_layout(self.current_partition,
                                               'process_per_node'),
                      gpus=self.gpus)
        self.executable = self.build.command('comm_scope')
        self.executable_opts = [
            shlex.quote(f'--benchmark_filter={self._filter()}'),
            f'--benchmark_out={OUTPUT}', '--benchmark_out_format=json',
            f'--benchmark_repetitions={self.repetitions}',
            '--benchmark_report_aggregates_only=true',
            f'--numa {self.numa_node}'
        ]
        self.keep_files = [OUTPUT]

    def replay_inputs(self):
        return (OUTPUT,)

    def _get(self, runs, key, **fields):
        name = self._name(key, **fields)
        if name not in runs:
            raise ParseError(f'no result for {name} in {OUTPUT} (GPU not '
                             f'visible, or peer access between the GPUs '
                             f'unsupported)')
        return runs[name]

    def parse(self):
        path = os.path.join(self.stagedir, OUTPUT)
        if not os.path.exists(path):
            console = (read_text(self.stdout.evaluate()) +
                       read_text(self.stderr.evaluate()))
            raise ParseError(f'comm_scope wrote no {OUTPUT}: '
                             f'{why_no_file(console)}')
        runs = parse_comm_scope(read_text(path))
        self.metrics(runs)      # every figure reported must be there
        return runs

    def _bandwidth(self, run, name):
        if not run.bytes_per_second:
            raise ParseError(f'{name}: no bytes_per_second')
        return run.bytes_per_second / 1e9

    def metrics(self, runs):
        gpus = range(self.gpus)
        big, small = self.bandwidth_log2, self.latency_log2
        worst = {}

        def keep(metric, value, unit, higher_is_better):
            pick = min if higher_is_better else max
            old = worst.get(metric)
            worst[metric] = (value if old is None else pick(old[0], value),
                             unit)

        for gpu in gpus:
            keep('kernel_launch', self._get(runs, 'kernel', gpu=gpu).time_us,
                 'us', False)
            keep('device_sync', self._get(runs, 'sync', gpu=gpu).time_us,
                 'us', False)
            for key in ('h2d', 'd2h'):
                run = self._get(runs, key, gpu=gpu, n=big)
                keep(f'{key}_bandwidth', self._bandwidth(run, key), 'GB/s',
                     True)
                keep(f'{key}_latency',
                     self._get(runs, key, gpu=gpu, n=small).time_us, 'us',
                     False)
            for dst in gpus:
                if dst == gpu:
                    continue
                run = self._get(runs, 'peer', src=gpu, dst=dst, n=big)
                keep('gpu_gpu_bandwidth', self._bandwidth(run, 'peer'),
                     'GB/s', True)
                keep('gpu_gpu_latency', self._get(
                    runs, 'peer', src=gpu, dst=dst, n=small).time_us, 'us',
                     False)

        # Sandia's Host/GPU figure is the mean of the two directions
        for what in ('bandwidth', 'latency'):
            h2d, d2h = worst[f'h2d_{what}'][0], worst[f'd2h_{what}'][0]
            worst[f'host_gpu_{what}'] = ((h2d + d2h) / 2,
                                         worst[f'h2d_{what}'][1])
        return worst
