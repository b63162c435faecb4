"""BabelStream v5.0: memory bandwidth of CPUs (OpenMP) and GPUs (CUDA, HIP),
every GPU of a node at once (docs/benchmarks/babelstream.md)."""
import glob
import os
import re
import shlex

import reframe as rfm
from reframe.core.builtins import fixture, run_after, run_before, variable

from hpcval import inputs, layouts, suites
from hpcval.benchmarks.siblings import SiblingFigures
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.layouts import gpu_arch
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.inputs import checked_token
from hpcval.parsers import ParseError
from hpcval.parsers.babelstream import (CLASSIC_KERNELS, check_run,
                                        parse_babelstream)
from hpcval.parsers.common import read_text
from hpcval import plotdata
from hpcval.parsers.devices import check_names

MODELS = ('omp', 'cuda', 'hip')
GPU_MODELS = ('cuda', 'hip')
_GPU_OUT = re.compile(r'stream\.(.+)\.gpu(\d+)\.out')


def missing_gpu_outputs(names, per_node, expected):
    """': missing stream.n1.gpu3.out, ...' of per-GPU outputs not written."""
    by_host = {}
    for name in names:
        m = _GPU_OUT.fullmatch(name)
        if m:
            by_host.setdefault(m.group(1), set()).add(int(m.group(2)))
    missing = [f'stream.{host}.gpu{gpu}.out'
               for host, gpus in sorted(by_host.items())
               for gpu in range(per_node) if gpu not in gpus]
    silent = max(expected // max(per_node, 1) - len(by_host), 0)
    parts = ([f'missing {", ".join(missing)}'] if missing else []) + \
        ([f'{silent} node(s) wrote none'] if silent else [])
    return f': {"; ".join(parts)}' if parts else ''


def _parse_output(out):
    """A per-GPU output's result, its stderr beside it."""
    return parse_babelstream(read_text(out), read_text(out[:-4] + '.err'))


class BabelStreamSource(UpstreamSource):
    any_environ = True          # CPU checks build it too
    repo_url = 'https://github.com/UoB-HPC/BabelStream.git'
    version = 'v5.0'


class BabelStreamBuild(UpstreamBuild):
    """``cmake -DMODEL=<model>``; produces ``<model>-stream``."""

    #: omp, cuda or hip.
    model = variable(str, value='omp')
    input_policy = {'model': inputs.TOKEN}

    source = fixture(BabelStreamSource, scope='session')

    @run_after('setup')
    def set_executables(self):
        checked_token(self.model, 'model', MODELS)
        self.executables = [f'{self.model}-stream']

    def _model_opts(self):
        if self.model == 'cuda':
            return ['-DMODEL=cuda', '-DCMAKE_CUDA_COMPILER=$(command -v nvcc)',
                    f'-DCUDA_ARCH={self.target_cuda_arch()}']

        if self.model == 'hip':
            return ['-DMODEL=hip', '-DCMAKE_CXX_COMPILER=hipcc']

        cxx = shlex.quote(self.current_environ.cxx or 'c++')
        return ['-DMODEL=omp', f'-DCMAKE_CXX_COMPILER={cxx}']

    def build_commands(self, src):
        return [
            ' '.join(['cmake', '-S', src, '-B', 'build',
                      '-DCMAKE_BUILD_TYPE=Release', *self._model_opts()]),
            f'cmake --build build --parallel {self.build_jobs}'
        ]


class BabelStream(SiblingFigures, ParsedBenchmark,
                  rfm.RunOnlyRegressionTest):
    """One BabelStream run per CPU node, or per GPU; leaves give the build."""

    #: Elements per array (a multiple of 1024 for GPU models).
    array_size = variable(int, value=2**25)

    #: Iterations of each kernel (the first is not timed).
    num_times = variable(int, value=100)

    model = variable(str, value='omp')
    build_shared = ('model',)

    #: Output format the references were made with: 'v5' (v4.0/v5.0) or
    #: 'main'; both print "Version: 5.0" but measure differently.
    expected_format = variable(str, value='v5')
    input_policy = {
        'array_size': inputs.POSITIVE,
        'num_times': inputs.POSITIVE,
        'model': inputs.TOKEN,
        'expected_format': inputs.TOKEN,
    }

    #: A GPU this many times slower than its siblings' median fails.
    sibling_factor = 1.1

    tags = {'babelstream'}

    def suites(self):
        return {suites.QUICK_TAG, suites.SCREEN_TAG}

    @property
    def is_gpu(self):
        return self.model in GPU_MODELS

    @run_before('run')
    def set_command(self):
        exe = self.build.executable_path(f'{self.model}-stream')
        args = ['-s', str(self.array_size), '-n', str(self.num_times)]
        if self.is_gpu:
            self._gpu_layout(exe, args)
        else:
            self._cpu_layout(exe, args)

    def _cpu_layout(self, exe, args):
        proc = self.current_partition.processor
        self.num_tasks = 1
        self.num_cpus_per_task = proc.num_cpus or 1
        self.env_vars.update({
            'OMP_NUM_THREADS': str(proc.num_cores or 1),
            'OMP_PLACES': 'cores',
            'OMP_PROC_BIND': 'spread',
        })
        self.executable = shlex.quote(exe)
        self.executable_opts = args

    def _gpu_layout(self, exe, args):
        self.num_tasks = self.num_tasks_per_node = self.gpus_or_skip()
        self.keep_files = ['stream.*.gpu*.out', 'stream.*.gpu*.err']
        layout = layouts.gpu_layout(self.current_partition, 'rank_per_gpu')
        layouts.apply(self, layout)
        # where the launcher shows each rank only its own GPU, that is device 0
        device = '0' if layout.one_visible_gpu else '"$r"'
        looked_for = ' '.join(layouts.LOCAL_RANK_VARS)
        # each rank: its device from its node-local rank, its own output
        self.executable = 'bash'
        self.executable_opts = ['-c', shlex.quote(
            f'{layouts.local_rank_shell()}; '
            f'if [ -z "$r" ]; then echo "no node-local rank variable set '
            f'(looked for {looked_for})" >&2; exit 3; fi; '
            f'exec {shlex.quote(exe)} --device {device} {" ".join(args)} '
            f'> "stream.$(hostname).gpu$r.out" 2> "stream.$(hostname).gpu$r.err"'
        )]

    def replay_inputs(self):
        return ('stream.*.gpu*.out', 'stream.*.gpu*.err') if self.is_gpu \
            else ()

    def _gpu_outputs(self):
        outs = sorted(glob.glob(os.path.join(self.stagedir,
                                             'stream.*.gpu*.out')))
        expected = self.num_tasks
        # an excerpt (hpcval.replay) shows some GPUs: judge those
        if len(outs) != expected and not (self.replay_excerpt and outs):
            raise ParseError(f'expected {expected} per-GPU outputs '
                             f'(stream.<host>.gpu<N>.out), found {len(outs)}'
                             + missing_gpu_outputs(
                                 [os.path.basename(o) for o in outs],
                                 self.num_tasks_per_node or expected,
                                 expected))

        results = {}
        for out in outs:
            key = re.sub(r'^stream\.|\.out$', '', os.path.basename(out))
            try:
                results[key] = _parse_output(out)
            except ParseError as err:
                raise ParseError(f'{key}: {err}') from None

        return results

    def measured_gpus(self):
        if not self.is_gpu:
            return None
        return gpus_with_results(
            glob.glob(os.path.join(self.stagedir, 'stream.*.gpu*.out')),
            self.model, self.num_times)

    def parse(self):
        if self.is_gpu:
            results = self._gpu_outputs()
        else:
            results = {'node': parse_babelstream(
                read_text(self.stdout.evaluate()),
                read_text(self.stderr.evaluate())
            )}

        for key, result in results.items():
            try:
                check_run(result, self.model, self.num_times)
            except ParseError as err:
                raise ParseError(f'{key}: {err}') from None
            if result.flavour != self.expected_format:
                raise ParseError(
                    f'{key}: output is in the BabelStream {result.flavour} '
                    f'format, expected {self.expected_format} (the version '
                    f'the references were made with); check src_mirror or '
                    f'prebuilt_dir, or set -S expected_format'
                )
            if self.is_gpu and result.device:
                check_names([result.device], gpu_arch(self.current_partition),
                            f'{key}: the output')

        return results

    def sibling_groups(self, results):
        return gpu_groups(results) if self.is_gpu else {}

    def figure_data(self, results):
        return plotdata.babelstream(results, CLASSIC_KERNELS) \
            if self.is_gpu else {}

    def metrics(self, results):
        """Per kernel the node's minimum, and each GPU's own figure."""
        values = {}
        for kernel in CLASSIC_KERNELS:
            worst = min(r.bandwidth(kernel) for r in results.values())
            values[kernel.lower()] = (worst, 'MB/s')
            if self.is_gpu:
                for key, r in results.items():
                    values[f'{kernel.lower()}@{_gpu(key)}'] = (
                        r.bandwidth(kernel), 'MB/s')

        return {**values, **self.sibling_metrics(results)}

    def components(self, results, values):
        if not self.is_gpu:
            return {}
        out = {}
        for kernel in CLASSIC_KERNELS:
            name = kernel.lower()
            slowest = min(results, key=lambda k: results[k].bandwidth(kernel))
            out[name] = (f'{_gpu_label(slowest)} (the slowest of '
                         f'{len(results)})')
            out.update({f'{name}@{_gpu(key)}': _gpu_label(key)
                        for key in results})
        return {**out, **self.sibling_components(results)}


def gpus_with_results(paths, model, num_times):
    """The GPU numbers N among ``paths`` whose output holds a complete run."""
    found = set()
    for out in paths:
        number = _GPU_OUT.fullmatch(os.path.basename(out))
        if number is None:
            continue
        try:
            check_run(_parse_output(out), model, num_times)
        except (ParseError, OSError, UnicodeDecodeError):
            continue
        found.add(int(number.group(2)))
    return found


def gpu_groups(results):
    """{kernel: {'gpu1': ('GPU 1', MB/s, 'MB/s')}} of a node's results."""
    several = len({key.rsplit('.', 1)[0] for key in results}) > 1
    members = {key: (key, f'{key.rsplit(".", 1)[0]} {_gpu_label(key)}')
               if several else (_gpu(key), _gpu_label(key))
               for key in results}
    return {kernel.lower(): {members[key][0]: (members[key][1],
                                               r.bandwidth(kernel), 'MB/s')
                             for key, r in results.items()}
            for kernel in CLASSIC_KERNELS}


def _gpu(key):
    """'<host>.gpu1' (a per-GPU output's name) -> 'gpu1'."""
    return key.rsplit('.', 1)[-1]


def _gpu_label(key):
    return _gpu(key).replace('gpu', 'GPU ', 1)
