"""CPU memory bandwidth and peak flop rate with ``likwid-bench``, one thread
per physical core (docs/benchmarks/likwid_bench.md)."""
import functools
import re
import shlex
import shutil
import statistics
import subprocess

import reframe as rfm
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_after, run_before, variable

from hpcval import inputs, replay, suites
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.benchmarks.container import image_of
from hpcval.parsers.common import ParseError, read_text
from hpcval.parsers.likwid_bench import parse_likwid_bench

# each run's output begins with this banner
_RUN = re.compile(r'^LIKWID MICRO BENCHMARK$', re.MULTILINE)


# asked once per ReFrame run, not once per node of a screen: each test asks
# just before its submission, between one node's job and the next
@functools.lru_cache(maxsize=None)
def likwid_kernels():
    """Kernels this host's likwid-bench offers, or an empty set."""
    try:
        out = subprocess.run(['likwid-bench', '-a'], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return set()

    return {line.split(' - ')[0].strip() for line in out.splitlines()
            if ' - ' in line}


class LikwidBench(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """``likwid-bench -t <kernel>_<isa> -W N:<working_set>:<cores>``."""

    #: Kernel family: copy, stream (STREAM triad) or peakflops (FMAs on
    #: data in L1).
    kernel = parameter(['copy', 'stream', 'peakflops'])

    #: Instruction-set suffix: 'avx', 'avx512', 'sse', or '' for scalar.
    isa = variable(str, value='avx')

    #: Total working set, likwid syntax (kB, MB, GB); '' = the kernel's
    #: default (KERNEL_DEFAULTS).
    working_set = variable(str, value='')

    #: Iterations per thread (-i); 0 = likwid's own choice; None = the
    #: kernel's default.
    iterations = variable(int, type(None), value=None)
    input_policy = {
        'isa': inputs.TOKEN,
        'working_set': inputs.SIZE,
        'iterations': inputs.COUNT,
        'repeats': inputs.number(1, 100),
    }

    #: Runs of the kernel in the job: the figure is the best of them (as
    #: STREAM reports), their standard deviation ``<figure>_std``.
    repeats = variable(int, value=1)

    diagnostics = {r'\w+_std': 'the spread of the repeated runs in the '
                               'job describes the noise, no health signal '
                               'of its own'}
    zero_readings = {r'\w+_std': 'runs that printed the same figure'}

    #: kernel: (working set, iterations, the result line it reports, the
    #: seconds one node's run takes for a screen's time limit): copy/stream
    #: beyond the caches, peakflops inside L1 for about 0.2 s
    #: (docs/benchmarks/likwid_bench.md)
    KERNEL_DEFAULTS = {
        'copy': ('2GB', 0, 'MByte/s', 15),
        'stream': ('2GB', 0, 'MByte/s', 15),
        'peakflops': ('32kB', 400000, 'MFlops/s', 5),
    }

    executable = 'likwid-bench'
    num_tasks = 1
    tags = {'likwid', 'cpu-bandwidth'}

    def suites(self):
        # every core's flop rate: the CPU figure a screen compares
        return {suites.QUICK_TAG, suites.SCREEN_TAG} \
            if self.kernel == 'peakflops' else set()

    @property
    def test_name(self):
        return f'{self.kernel}_{self.isa}' if self.isa else self.kernel

    @run_after('init')
    def set_screen_duration(self):
        if self.screen_expected_s is None:
            self.screen_expected_s = self.KERNEL_DEFAULTS[self.kernel][3]

    @run_before('run')
    def set_command(self):
        default_set, default_iters, *_ = self.KERNEL_DEFAULTS[self.kernel]
        working_set = self.working_set or default_set
        iterations = (default_iters if self.iterations is None
                      else self.iterations)
        # a replay runs no likwid-bench; an image brings its own
        if not replay.active(self) and not image_of(self):
            self.skip_if(shutil.which('likwid-bench') is None,
                         'likwid-bench not found (Debian/Ubuntu package '
                         'likwid)')
            self.skip_if(self.test_name not in likwid_kernels(),
                         f'this likwid-bench has no {self.test_name} kernel')
        proc = self.current_partition.processor
        cores = proc.num_cores or 1
        # the scheduler must grant the cores likwid starts threads on
        self.num_cpus_per_task = proc.num_cpus or cores
        # likwid pins itself; a launcher would pin it again
        self.job.launcher = getlauncher('local')()
        self.executable_opts = ['-t', self.test_name,
                                '-W', f'N:{working_set}:{cores}']
        if iterations:
            self.executable_opts += ['-i', str(int(iterations))]
        # the same command again, on the node the job holds
        again = shlex.join([self.executable, *self.executable_opts])
        self.postrun_cmds = [again] * (self.repeats - 1) + \
            list(self.postrun_cmds)

    def parse(self):
        figure = self.KERNEL_DEFAULTS[self.kernel][2]
        text = read_text(self.stdout.evaluate())
        blocks = _RUN.split(text)[1:] or [text]
        want = 1 if self.replay_excerpt else self.repeats
        if len(blocks) < want:
            raise ParseError(f'likwid-bench printed {len(blocks)} of '
                             f'{want} runs: a repetition did not run')
        return [parse_likwid_bench(block, test=self.test_name,
                                   figure=figure) for block in blocks]

    def metrics(self, result):
        if self.kernel == 'peakflops':
            name, unit, values = 'peakflops_rate', 'MFLOP/s', \
                [r.mflops for r in result]
        else:
            name, unit, values = f'{self.kernel}_bandwidth', 'MB/s', \
                [r.bandwidth for r in result]
        out = {name: (max(values), unit)}
        if len(values) > 1:
            out[f'{name}_std'] = (statistics.stdev(values), unit)
        return out
