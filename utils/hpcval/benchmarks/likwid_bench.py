"""CPU memory bandwidth with ``likwid-bench`` (Debian/Ubuntu ``likwid``).

One thread per physical core over the whole node (affinity domain ``N``),
on a working set far larger than the caches; reports MByte/s as likwid
counts it (the kernel's loads and stores).  The kernel's instruction-set
variant (``copy_avx``, ``copy_avx512``, ...) comes from ``isa``; the test
checks that this likwid build offers it before running.
"""
import shutil
import subprocess

import reframe as rfm
from reframe.core.backends import getlauncher
from reframe.core.builtins import parameter, run_before, variable

from hpcval import replay
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.inputs import checked_token
from hpcval.parsers.common import read_text
from hpcval.parsers.likwid_bench import parse_likwid_bench

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

    #: Kernel family: copy or stream (STREAM triad); likwid also has load,
    #: triad (four streams) and update.
    kernel = parameter(['copy', 'stream'])

    #: Instruction-set suffix: 'avx', 'avx512', 'sse', or '' for scalar.
    isa = variable(str, value='avx')

    #: Total working set, likwid syntax (kB, MB, GB): well above the caches.
    working_set = variable(str, value='2GB')

    executable = 'likwid-bench'
    num_tasks = 1
    tags = {'likwid', 'cpu-bandwidth'}

    @property
    def test_name(self):
        return f'{self.kernel}_{self.isa}' if self.isa else self.kernel

    @run_before('run')
    def set_command(self):
        checked_token(self.working_set, 'working_set')
        if not replay.active(self):     # a replay runs no likwid-bench
            self.skip_if(shutil.which('likwid-bench') is None,
                         'likwid-bench not found (Debian/Ubuntu package '
                         'likwid)')
            self.skip_if(self.test_name not in likwid_kernels(),
                         f'this likwid-bench has no {self.test_name} kernel')
        proc = self.current_partition.processor
        cores = proc.num_cores or 1
        # likwid pins itself; a launcher would pin it again
        self.job.launcher = getlauncher('local')()
        self.executable_opts = ['-t', self.test_name,
                                '-W', f'N:{self.working_set}:{cores}']

    def parse(self):
        return parse_likwid_bench(read_text(self.stdout.evaluate()))

    def metrics(self, result):
        return {f'{self.kernel}_bandwidth': (result.bandwidth, 'MB/s')}
