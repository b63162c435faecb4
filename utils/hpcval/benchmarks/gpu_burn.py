"""gpu-burn: cuBLAS GEMM rate and compute errors of every NVIDIA GPU at once,
each judged against its siblings (docs/benchmarks/gpu_burn.md)."""
import statistics

import reframe as rfm
from reframe.core.builtins import (fixture, parameter, run_after,
                                   run_before, variable)

from hpcval import inputs, layouts, peers
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.benchmarks.siblings import Sibling, SiblingFigures
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.health import probe as health_probe
from hpcval.health.common import BUSY_PCT, clean
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
#: the shortest burn-in: three windows of 20 s, each several reports long
MIN_BURNIN_S = 60
#: seconds a burn-in's job may run beyond it (set-up, probe, the stop)
BURNIN_SETUP_S = 600
#: the windows a burn-in compares: its first and last minute, a third of
#: a shorter run each
WINDOW_S = 60
#: sampled figures of a burn-in (nvidia-smi record key: unit), each
#: logged per GPU as min / median / max over its busy samples
SAMPLED = {'sm_mhz': 'MHz', 'power_w': 'W', 'temp_c': 'C'}
#: those judged against the GPU's siblings (power is logged only: a GPU
#: at its power cap draws what its siblings draw whatever its health)
SIBLING_SAMPLED = ('sm_mhz', 'temp_c')


class GpuBurnSource(UpstreamSource):
    repo_url = 'https://github.com/wilicc/gpu-burn.git'
    version = '3ead140434da9473582b68452f7115967a7a0581'


class GpuBurnBuild(UpstreamBuild):
    """``make COMPUTE=<cc>`` in a copy of the shared source."""

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

    #: Seconds of burning (the rate needs two reports after the first,
    #: each about 5 s apart on an H100 in float).
    duration = variable(int, value=30)

    #: Share of each GPU's free memory gpu-burn fills with results (-m N%).
    memory_percent = variable(int, value=90)
    #: Seconds of a burn-in, which replace ``duration`` (at least
    #: MIN_BURNIN_S; ``--mode burnin`` sets it); 0: none.
    burnin = variable(int, value=0)
    input_policy = {
        'duration': inputs.number(10, 86400),
        'memory_percent': inputs.number(1, 95),
        'burnin': inputs.number(0, 86400),
    }

    #: A GPU this many times slower than its siblings' median fails; so
    #: does a burn-in's last minute against its first.
    sibling_factor = 1.1
    #: a GPU this many times hotter (C) than its siblings' median: about
    #: 10 C at the 60-70 C of a loaded H100
    sibling_factors = {'temp_c': 1.15}
    diagnostics = {
        r'gflops_(min|max|first|last)|(sm_mhz|power_w|temp_c)_'
        r'(min|median|max)': 'a burn-in\'s time series, per GPU; judged '
        'by its last minute against its first and against its siblings'}
    #: a burn-in's rate is judged against itself and its siblings; against
    #: a reference only where the system's file gives one
    BURNIN_RATE = {r'gflops': 'a burn-in\'s rate, judged by its last '
                   'minute against its first and against its siblings'}

    num_tasks = 1
    num_tasks_per_node = 1
    tags = {'gpu-burn'}

    @run_after('init')
    def set_burnin(self):
        if not self.burnin:
            return
        with inputs.at_load(self):
            if self.burnin < MIN_BURNIN_S:
                raise inputs.InputError(
                    f'-S burnin={self.burnin}: a burn-in lasts at least '
                    f'{MIN_BURNIN_S} s (its first and last windows)')
        self.duration = self.burnin
        self.tags = self.tags | {'burnin'}
        self.diagnostics = {**self.diagnostics, **self.BURNIN_RATE}
        if self.time_limit is not None:
            self.time_limit = max(self.time_limit, self.burnin + BURNIN_SETUP_S)

    def replay_inputs(self):
        # a burn-in reads the health probe's samples besides the output
        return (f'{health_probe.PREFIX}*',) if self.burnin else ()

    @run_before('run')
    def set_command(self):
        self.expected_gpus = self.gpus_or_skip()
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
        err = self._stage_text(self.stderr.evaluate(), 65536)
        result = parse_gpu_burn(read_text(self.stdout.evaluate()), err)
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
        if self.burnin:
            result.burnin = burnin_series(result, health_probe.read('.'), '.')
        return result

    def measured_gpus(self):
        return gpus_reported(read_text(self.stdout.evaluate()))

    def sibling_groups(self, result):
        # a group without members (no burn-in) is compared with nothing
        series = getattr(result, 'burnin', {})
        groups = {'gflops': {f'gpu{i}': (f'GPU {i}', gpu.gflops, 'GFLOP/s')
                             for i, gpu in result.gpus.items()},
                  'gflops_last': {
                      f'gpu{i}': (f'GPU {i}', s['gflops_last'], 'GFLOP/s')
                      for i, s in series.items()}}
        for key in SIBLING_SAMPLED:
            groups[key] = {f'gpu{i}': (f'GPU {i}', s[key][1], SAMPLED[key])
                           for i, s in series.items()}
        return groups

    def judge_siblings(self, result):
        """Siblings' rule, and a burn-in's last minute against its first."""
        found = super().judge_siblings(result)
        factor = self.sibling_factor_of('gflops')
        for i, s in getattr(result, 'burnin', {}).items():
            judged = peers.judge({'first': s['gflops_first'],
                                  'last': s['gflops_last']}, 'GFLOP/s',
                                 1 - 1 / factor, spread=False)
            if 'last' in judged:
                found.append(Sibling(f'gflops_last_vs_first@gpu{i}',
                                     'gflops_last', f'GPU {i}', 'GFLOP/s',
                                     judged['last']))
        return found

    def metrics(self, result):
        """Slowest GPU's ``gflops``, each ``gflops@gpuN``; burn-in series."""
        values = {f'gflops@gpu{i}': (gpu.gflops, 'GFLOP/s')
                  for i, gpu in result.gpus.items()}
        values['gflops'] = (min(v for v, _ in values.values()), 'GFLOP/s')
        for i, s in getattr(result, 'burnin', {}).items():
            rates = result.gpus[i].rates[1:]
            values.update({
                f'gflops_min@gpu{i}': (min(rates), 'GFLOP/s'),
                f'gflops_max@gpu{i}': (max(rates), 'GFLOP/s'),
                f'gflops_first@gpu{i}': (s['gflops_first'], 'GFLOP/s'),
                f'gflops_last@gpu{i}': (s['gflops_last'], 'GFLOP/s')})
            for key, unit in SAMPLED.items():
                for word, v in zip(('min', 'median', 'max'), s[key]):
                    values[f'{key}_{word}@gpu{i}'] = (v, unit)
        return {**values, **self.sibling_metrics(result)}

    def components(self, result, values):
        slowest = min(result.gpus.values(), key=lambda g: g.gflops)
        out = {name: f'GPU {name.partition("@gpu")[2]}' for name in values
               if '@gpu' in name}
        out['gflops'] = (f'GPU {slowest.index} (the slowest of '
                         f'{len(result.gpus)})')
        return {**out, **self.sibling_components(result)}


def _window(gpu, start, width):
    """Median rate of ``gpu`` within [start, start + width] s, or None."""
    rates = [r for t, r in zip(gpu.times[1:], gpu.rates[1:])
             if start <= t <= start + width]
    return statistics.median(rates) if rates else None


def burnin_series(result, record, stagedir):
    """{GPU: {gflops_first, gflops_last, SAMPLED key: (min, median, max)}}."""
    if record is None:
        raise ParseError('burn-in not judged: no health record (a burn-in '
                         'needs the probe: not -S health_probe=no)')
    width = min(WINDOW_S, result.seconds / 3)
    rows = {}
    for row in health_probe.sampled(stagedir, record.tool):
        util = row.get('util_pct')
        if isinstance(util, (int, float)) and util >= BUSY_PCT:
            rows.setdefault(row['index'], []).append(row)
    out, missing = {}, []
    for phase in ('before', 'after'):   # another process on a GPU
        snap = getattr(record, phase)
        index = {g.uuid: g.index for g in snap.gpus}
        for app in snap.apps:
            idx = app.index if app.index is not None else \
                index.get(app.uuid, '?')
            missing.append(f'GPU {idx}: another process, '
                           f'{clean(app.name, 100)} (pid {app.pid}), on it '
                           f'{phase} the burn-in')
    for i, gpu in result.gpus.items():
        first = _window(gpu, gpu.times[0], width)
        last = _window(gpu, result.seconds - width, width)
        if first is None or last is None:
            missing.append(f'GPU {i}: no report within {width:g} s after '
                           f'its first' if first is None else
                           f'GPU {i}: no report in the last {width:g} s')
            continue
        mine = rows.get(i, [])
        series = {key: sorted(r[key] for r in mine
                              if isinstance(r.get(key), (int, float)))
                  for key in SAMPLED}
        empty = [key for key, vals in series.items() if not vals]
        if empty:
            missing.append(f'GPU {i}: {len(mine)} samples at {BUSY_PCT}%+ '
                           f'use with {", ".join(empty)} (the 1 Hz sampler '
                           f'saw it idle, or did not run)')
            continue
        out[i] = {'gflops_first': first, 'gflops_last': last,
                  **{key: (v[0], statistics.median(v), v[-1])
                     for key, v in series.items()}}
    if missing:
        raise ParseError('burn-in not judged: ' + '; '.join(missing))
    return out
