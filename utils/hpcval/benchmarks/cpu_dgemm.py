"""DGEMM throughput per core, every core of a node at once: the figure a
node screen compares between peers.

Each rank (one per core, ``OPENBLAS_NUM_THREADS=1``) runs
``kernels/cpu_dgemm.py``, which needs only Python and numpy on the node.
Reports the slowest core's and the whole node's GFLOP/s, each core's taken
from its best slice of about 20 ms.
"""
import os

import reframe as rfm
from reframe.core.builtins import run_before, variable

from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.inputs import checked_path, checked_token
from hpcval.parsers.common import read_text
from hpcval.parsers.cpu_dgemm import parse_cpu_dgemm

KERNELS = os.path.join(os.path.dirname(__file__), 'kernels')


class CpuDgemm(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """``srun python3 cpu_dgemm.py -n N --seconds S``, one rank per core."""

    #: Matrix order: 256 (0.5 MiB per matrix) stays in the caches, so the
    #: figure is the core's, not the memory's.
    size = variable(int, value=256)

    #: Shortest time each rank measures, in seconds.
    seconds = variable(float, value=0.5)

    #: Python interpreter that has numpy on the compute nodes.
    python = variable(str, value='python3')

    sourcesdir = KERNELS
    num_tasks_per_core = 1
    tags = {'cpu_dgemm', 'screen'}

    @run_before('run')
    def set_command(self):
        proc = self.current_partition.processor
        self.num_tasks_per_node = proc.num_cores or 1
        self.num_tasks = self.num_tasks_per_node
        self.num_cpus_per_task = 1
        # one BLAS thread per rank: each rank measures its own core
        self.env_vars.update({name: '1' for name in (
            'OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS')})
        self.executable = (checked_path(self.python, 'python')
                           if '/' in self.python
                           else checked_token(self.python, 'python'))
        self.executable_opts = ['cpu_dgemm.py', '-n', str(self.size),
                                '--seconds', str(self.seconds)]

    def parse(self):
        return parse_cpu_dgemm(read_text(self.stdout.evaluate()),
                               self.num_tasks)

    def metrics(self, ranks):
        # each core's best ~20 ms slice: what it delivers when it runs
        # (a quota or a slow clock caps every slice; a neighbour's burst on
        # a shared host only some)
        return {
            'gflops_min': (min(r.best for r in ranks), 'GFLOP/s'),
            'gflops_node': (sum(r.best for r in ranks), 'GFLOP/s'),
        }
