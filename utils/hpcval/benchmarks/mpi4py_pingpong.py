"""MPI ping-pong with mpi4py's own benchmark (``python -m mpi4py.bench``)."""
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import parameter, run_after, run_before, variable

from hpcval import features as ft, inputs, suites
from hpcval import layouts
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.inputs import checked_token, checked_word_or_path
from hpcval.parsers import ParseError
from hpcval.parsers.common import device_buffer_error, read_text
from hpcval.parsers.mpi4py_pingpong import parse_pingpong, row_at
from hpcval.units import size_label

PLACEMENTS = ('on_node', 'across_nodes')
ARRAYS = ('numpy', 'cupy', 'numba', 'none')
DEVICE_ARRAYS = ('cupy', 'numba')
#: mpi4py.bench's timed iterations per size from 16 KiB up to 1 MiB
MPI4PY_LOOP_LARGE = 1000


class Mpi4pyPingPong(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """Two-rank MPI ping-pong; ``placement`` says where the ranks sit."""

    #: 'on_node' (both ranks on one node) or 'across_nodes' (one per node).
    placement = parameter(PLACEMENTS)

    #: Buffer type: numpy (host), cupy or numba (device; needs GPU-aware MPI).
    array = variable(str, value='numpy')

    #: Largest message size in bytes; bandwidth is reported there.
    max_size = variable(int, value=4 * 2**20)

    #: Timed iterations per size (``-l``, and ``--loop-large`` where fewer
    #: than its 1000); 0 keeps mpi4py's defaults.
    loops = variable(int, value=0)

    #: Sizes in bytes whose latency is reported.
    latency_sizes = variable(typ.List[int], value=[8, 1024])

    #: Python interpreter that has mpi4py on the compute nodes.
    python = variable(str, value='python3')
    input_policy = {
        'array': inputs.TOKEN,
        'max_size': inputs.POSITIVE,
        'loops': inputs.COUNT,
        'latency_sizes': inputs.numbers(0),
        'python': inputs.WORD_OR_PATH,
    }

    num_tasks = 2
    tags = {'mpi4py', 'mpi'}

    def suites(self):
        # not screened: its latency and bandwidth vary by several times
        # between healthy nodes of a shared host (docs/screening.md)
        return {suites.QUICK_TAG} if self.placement == 'on_node' else set()

    diagnostics = {r'latency_\w+_std': 'the spread of the latency samples '
                                       'describes the noise, it is no health '
                                       'signal of its own'}
    #: mpi4py.bench prints a deviation of 0.0 for a size of one sample
    zero_readings = {r'latency_\w+_std': 'one sample, or identical ones'}

    @run_after('init')
    def require_layout_features(self):
        self.require_features(ft.MPI)
        if self.placement == 'across_nodes':
            self.require_features(ft.MULTINODE)

    @run_before('run')
    def set_command(self):
        checked_token(self.array, 'array', ARRAYS)
        self.skip_if(
            self.array in DEVICE_ARRAYS and
            ft.GPU_AWARE_MPI not in self.current_partition.features,
            f'-a {self.array} passes GPU buffers to MPI, and partition '
            f'{self.current_partition.fullname} does not declare '
            f'{ft.GPU_AWARE_MPI}: MPI is not GPU-aware here'
        )
        self.num_tasks_per_node = 2 if self.placement == 'on_node' else 1
        if self.array in DEVICE_ARRAYS:
            # (MPICH_GPU_SUPPORT_ENABLED=1 on Cray, say)
            layouts.apply(self, layouts.settings(self.current_partition,
                                                 'gpu_aware_mpi'))
        self.executable = shlex.quote(checked_word_or_path(self.python,
                                                           'python'))
        self.executable_opts = ['-m', 'mpi4py.bench', 'pingpong',
                                '-a', self.array, '-n', str(self.max_size)]
        if self.loops > 0:
            self.executable_opts += ['-l', str(self.loops)]
        if 0 < self.loops < MPI4PY_LOOP_LARGE:
            self.executable_opts += ['--loop-large', str(self.loops)]

    def parse(self):
        text = read_text(self.stdout.evaluate())
        try:
            return parse_pingpong(text, self._launcher())
        except ParseError as err:
            if self.array not in DEVICE_ARRAYS:
                raise
            both = text + read_text(self.stderr.evaluate())
            raise device_buffer_error(err, both,
                                      f'-a {self.array} buffers') from None

    def _launcher(self):
        """The launcher's command as the job script ran it ('srun', say)."""
        try:
            return self.job.launcher.run_command(self.job).strip()
        except Exception:       # noqa: BLE001 (the message only loses it)
            return ''

    def metrics(self, rows):
        values = {}
        for size in self.latency_sizes:
            row = row_at(rows, size)
            label = size_label(size)
            values[f'latency_{label}'] = (row.time_mean * 1e6, 'us')
            values[f'latency_{label}_std'] = (row.time_std * 1e6, 'us')

        largest = row_at(rows, self.max_size)
        values[f'bandwidth_{size_label(self.max_size)}'] = (largest.bandwidth,
                                                            'MB/s')
        return values
