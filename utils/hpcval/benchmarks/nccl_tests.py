"""nccl-tests and rccl-tests: collective bus bandwidth, one process driving a
node's GPUs or one rank per GPU (docs/benchmarks/nccl_tests.md)."""
import os
import re
import shlex

import reframe as rfm
from reframe.core.builtins import (fixture, parameter, run_after, run_before,
                                   variable)

from hpcval import features as ft, inputs, suites
from hpcval import layouts, provenance
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.layouts import gpu_arch
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.inputs import InputError, at_load, checked_path, checked_token
from hpcval.parsers.common import read_text
from hpcval import plotdata
from hpcval.parsers.nccl_tests import (IN_PLACE, OUT_OF_PLACE,
                                       check_collective, check_devices,
                                       check_gpus_per_process, check_sizes,
                                       check_tool, listed_devices,
                                       parse_nccl_tests, parse_size)

#: bus bandwidth counts the bytes moved between GPUs: 0 on one GPU
BUSBW = r'busbw_\w+|avg_busbw'
ONE_GPU = ('one GPU: nccl-tests\' bus bandwidth counts bytes moved between '
           'GPUs and is 0 by definition')

COLLECTIVES = ('all_reduce', 'all_gather', 'broadcast', 'reduce',
               'reduce_scatter', 'alltoall', 'sendrecv')
MODES = ('single_process', 'rank_per_gpu')


class NcclTestsSource(UpstreamSource):
    repo_url = 'https://github.com/NVIDIA/nccl-tests.git'
    version = 'v2.19.6'


class RcclTestsSource(UpstreamSource):
    repo_url = 'https://github.com/ROCm/rccl-tests.git'
    version = 'rocm-6.2.0'


class _CollectivesBuild(UpstreamBuild):
    """``make`` of nccl-tests / rccl-tests into ``build/``."""

    #: Build with MPI=1 for one rank per GPU across nodes.
    mpi = variable(bool, value=False)

    #: NCCL (or RCCL) installation; default: $NCCL_HOME of the environment.
    nccl_home = variable(str, value='')

    #: MPI installation for MPI=1; default: $MPI_HOME of the environment.
    mpi_home = variable(str, value='')
    input_policy = {
        'mpi': inputs.FLAG,
        'nccl_home': inputs.PATH,
        'mpi_home': inputs.PATH,
    }

    executables = [f'{c}_perf' for c in COLLECTIVES]

    def _home(self, value, name):
        if value:
            return shlex.quote(checked_path(value, name))

        return f'"${{{name.upper()}:?set {name.upper()} or -S {name}=DIR}}"'

    def _make_vars(self):
        make_vars = ['BUILDDIR="$PWD/build"',
                     f'NCCL_HOME={self._home(self.nccl_home, "nccl_home")}']
        if self.mpi:
            make_vars += ['MPI=1',
                          f'MPI_HOME={self._home(self.mpi_home, "mpi_home")}']

        return make_vars


class NcclTestsBuild(_CollectivesBuild):
    """``make CUDA_HOME=... NCCL_HOME=... [MPI=1 MPI_HOME=...]``."""

    source = fixture(NcclTestsSource, scope='session')

    def build_commands(self, src):
        cc = self.target_cuda_arch().replace('sm_', '')
        return [' '.join([
            f'make -C {src} -j {self.build_jobs}', *self._make_vars(),
            'CUDA_HOME="${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}"',
            f'NVCC_GENCODE="-gencode=arch=compute_{cc},code=sm_{cc}"'
        ])]


class RcclTestsBuild(_CollectivesBuild):
    """rccl-tests: ``make HIP_HOME=... NCCL_HOME=<rccl> [MPI=1 ...]``."""

    source = fixture(RcclTestsSource, scope='session')

    def build_commands(self, src):
        return [' '.join([
            f'make -C {src} -j {self.build_jobs}', *self._make_vars(),
            'HIP_HOME="${ROCM_PATH:-/opt/rocm}"'
        ])]


class CollectiveBandwidth(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """One collective of nccl-tests / rccl-tests; leaves add the build."""

    collective = parameter(['all_reduce', 'all_gather'])

    #: 'single_process' (one process, all GPUs of a node) or 'rank_per_gpu'.
    mode = variable(str, value='single_process')

    #: Nodes for rank_per_gpu (single_process is always one node).
    num_nodes = variable(int, value=1)

    #: GPUs per node; default: the partition's GPU count.
    gpus_per_node = variable(int, value=0)

    #: Message sizes: -b, -e (bytes, K/M/G suffixes) and factor -f.
    min_bytes = variable(str, value='8')
    max_bytes = variable(str, value='8G')
    step_factor = variable(int, value=2)

    #: Timed iterations (-n) and warm-up iterations (-w).
    iters = variable(int, value=20)
    warmup_iters = variable(int, value=5)

    #: Validate results (-c 1); 0 only to time without checking.
    check_results = variable(int, value=1)
    input_policy = {
        'mode': inputs.TOKEN,
        'num_nodes': inputs.POSITIVE,
        'gpus_per_node': inputs.COUNT,
        'min_bytes': inputs.SIZE,
        'max_bytes': inputs.SIZE,
        'step_factor': inputs.POSITIVE,
        'iters': inputs.POSITIVE,
        'warmup_iters': inputs.COUNT,
        'check_results': inputs.number(0, 1),
        'tool': inputs.TOKEN,
    }

    def suites(self):
        # the collectives over all of one node's GPUs
        return {suites.QUICK_TAG, suites.SCREEN_TAG} \
            if self.mode == 'single_process' else set()

    #: The tool whose output this is: 'nccl-tests' or 'rccl-tests'.
    tool = variable(str, value='nccl-tests')

    @run_after('init')
    def require_layout_features(self):
        with at_load(self):
            checked_token(self.mode, 'mode', MODES)
            checked_token(self.tool, 'tool', ('nccl-tests', 'rccl-tests'))
        if self.mode == 'rank_per_gpu':
            # one node is a valid size (the MPI path on a single GPU node)
            self.require_features(ft.MPI, *([ft.MULTINODE]
                                            if self.num_nodes > 1 else []))

    @run_before('run')
    def set_command(self):
        gpus = self.gpus_or_skip(self.gpus_per_node)
        self._sizes()

        part = self.current_partition
        if self.mode == 'single_process':
            self.num_tasks = self.num_tasks_per_node = 1
            per_process = gpus
            layout = layouts.gpu_layout(part, 'process_per_node')
        else:
            self.num_tasks_per_node = gpus
            self.num_tasks = gpus * self.num_nodes
            per_process = 1
            layout = layouts.gpu_layout(part, 'rank_per_gpu')
            if layout.one_visible_gpu:
                # nccl-tests picks device <local rank> unless told otherwise
                self.env_vars['NCCL_TESTS_DEVICE'] = '0'

        layouts.apply(self, layout, gpus=per_process)
        if self.num_nodes > 1:
            layouts.apply(self, layouts.settings(part,
                                                 'multinode_collectives'))

        self.gpus_per_process = per_process
        self.expected_gpus = per_process * self.num_tasks
        if self.expected_gpus == 1:
            self.diagnostics = {**self.diagnostics, BUSBW: ONE_GPU}
            self.zero_readings = {**self.zero_readings, BUSBW: ONE_GPU}
        self.executable = self.build.command(f'{self.collective}_perf')
        self.executable_opts = [
            '-b', self.min_bytes, '-e', self.max_bytes,
            '-f', str(self.step_factor), '-g', str(per_process),
            '-n', str(self.iters), '-w', str(self.warmup_iters),
            '-c', str(self.check_results)
        ]

    def _sizes(self):
        sizes = {name: parse_size(getattr(self, name))
                 for name in ('min_bytes', 'max_bytes')}
        for name, size in sizes.items():
            if size is None:
                raise InputError(f'-S {name}={getattr(self, name)!r}: a size '
                                 f'as nccl-tests reads it: 8, 64K, 8G')
        return sizes['min_bytes'], sizes['max_bytes']

    def parse(self):
        text = read_text(self.stdout.evaluate())
        # a quoted table (hpcval.replay): no footer, no device list
        result = parse_nccl_tests(text, require_footer=not self.replay_excerpt)
        check_collective(result, self.collective)
        check_tool(result, self.tool, gpu_arch(self.current_partition),
                   identified=not self.replay_excerpt)
        if not self.replay_excerpt:     # a quote may end at any row
            check_sizes(result, *self._sizes(), self.step_factor,
                        self.expected_gpus)
            check_gpus_per_process(result, self.gpus_per_process)
            check_devices(result, self.expected_gpus)
        return result

    def measured_gpus(self):
        # one node's GPUs in one process; a quoted table lists no device
        if self.mode != 'single_process' or self.replay_excerpt:
            return None
        return listed_devices(read_text(self.stdout.evaluate()))

    def provenance_of_output(self, result):
        # nccl-tests' first line: '... nccl-library=22809' (NCCL 2.28.9)
        text = read_text(os.path.join(self.stagedir, self.stdout.evaluate()))
        found = re.search(r'nccl-library=(\d{4,6})\b', text)
        if found:
            return {'nccl': provenance.nccl_version(found.group(1))}
        lib, version = result.library
        return {lib: version} if lib else {}

    def _references(self, metric_units):
        found = super()._references(metric_units)
        if getattr(self, 'expected_gpus', 0) != 1:
            return found
        # a reference for several GPUs never judges the figure of one
        return {m: ref for m, ref in found.items()
                if not re.fullmatch(BUSBW, m.partition('@')[0])}

    def metrics(self, result):
        values = {}
        for place, tag in ((IN_PLACE, 'inplace'), (OUT_OF_PLACE, 'outofplace')):
            if not result.has_block(place):
                continue        # rccl-tests -O 0 prints in-place only

            values[f'busbw_{tag}_largest'] = (result.busbw_at_largest(place),
                                              'GB/s')
            values[f'busbw_{tag}_max'] = (result.max_busbw(place), 'GB/s')
            values[f'time_{tag}_smallest'] = (result.time_at_smallest(place),
                                              'us')

        values['avg_busbw'] = (result.avg_bus_bandwidth, 'GB/s')
        return values

    def figure_data(self, result):
        return plotdata.collective(result)
