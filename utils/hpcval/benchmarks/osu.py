"""OSU micro-benchmarks 7.x: MPI latency and bandwidth, allreduce latency,
of host or device buffers (docs/benchmarks/osu.md)."""
import os
import shlex
import urllib.error
import urllib.request

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import (fixture, parameter, run_after, run_before,
                                   variable)

from hpcval import features as ft, inputs
from hpcval import layouts, replay
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.inputs import at_load, checked_token, checked_word_or_path
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval.parsers.common import device_buffer_error
from hpcval.parsers.osu import check_benchmark, check_largest, parse_osu
from hpcval.units import size_label

# executable -> folder of the 7.x build tree
BENCHMARKS = {
    'osu_latency': 'c/mpi/pt2pt/standard',
    'osu_bw': 'c/mpi/pt2pt/standard',
    'osu_bibw': 'c/mpi/pt2pt/standard',
    'osu_allreduce': 'c/mpi/collective/blocking',
}
PLACEMENTS = ('same_socket', 'cross_socket', 'across_nodes')
GPU_PLACEMENTS = ('on_node', 'across_nodes')
_TARBALL = ('https://mvapich.cse.ohio-state.edu/download/mvapich/'
            'osu-micro-benchmarks-{}.tar.gz')

# OSU 7.4's prefetch_data() passes cudaMemPrefetchAsync a device number,
# which CUDA 13 replaced by a cudaMemLocation: this macro, force-included,
# keeps its meaning (docs/benchmarks/osu.md, "CUDA 13")
CUDA13_COMPAT = r'''#ifndef HPCVAL_OSU_CUDA13_COMPAT
#define HPCVAL_OSU_CUDA13_COMPAT
#if defined(__has_include)
#if __has_include(<cuda_runtime_api.h>)
#include <cuda_runtime_api.h>
#if CUDART_VERSION >= 13000 && !defined(cudaMemPrefetchAsync)
static inline struct cudaMemLocation hpcval_mem_location(int device)
{
    struct cudaMemLocation loc;
    loc.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost
                                         : cudaMemLocationTypeDevice;
    loc.id = device == cudaCpuDeviceId ? 0 : device;
    return loc;
}
#define cudaMemPrefetchAsync(ptr, n, device, stream) \
    cudaMemPrefetchAsync((ptr), (n), hpcval_mem_location(device), 0, (stream))
#endif
#endif
#endif
#endif
'''
_PROBE_TIMEOUT_S = 20


def _reachable(url):
    try:
        req = urllib.request.Request(url, method='HEAD')
        with urllib.request.urlopen(req, timeout=_PROBE_TIMEOUT_S):
            return True
    except urllib.error.HTTPError as err:
        return err.code != 404      # a server refusing HEAD is still there
    except (OSError, ValueError):
        return False


class OsuSource(UpstreamSource):
    """The release tarball (``src_mirror``: tarball, folder or git)."""
    any_environ = True          # CPU checks build it too

    repo_url = _TARBALL.format('7.4')
    version = 'v7.4'

    @run_before('run')
    def choose_origin(self):
        # mirrors, prebuilt_dir, stack, image as every source; upstream is
        # a tarball
        if replay.active(self) or self._given() or self.src_mirror:
            return super().choose_origin()

        url = _TARBALL.format(checked_token(self.version, 'version')
                              .lstrip('v'))
        self.skip_if(not self.is_dry_run() and not _reachable(url),
                     f'{url} unreachable and no -S src_mirror=PATH or '
                     f'-S prebuilt_dir=DIR given')
        self.prerun_cmds = [
            'set -e', f'mkdir -p {self.tree}',
            f'curl -fsSL --retry 2 -o osu.tar.gz -- {shlex.quote(url)}',
            f'tar -xz -C {self.tree} --strip-components=1 -f osu.tar.gz'
        ]


class OsuBuild(UpstreamBuild):
    """``configure CC=mpicc CXX=mpicxx [--enable-cuda|rocm]; make``."""

    #: '' (host buffers only), 'cuda' or 'rocm'.
    accelerator = variable(str, value='')

    mpicc = variable(str, value='')
    mpicxx = variable(str, value='')

    #: Force-include the CUDA 13 shim (see CUDA13_COMPAT) in CUDA builds.
    cuda13_compat = variable(bool, value=True)
    input_policy = {
        'accelerator': inputs.TOKEN,
        'mpicc': inputs.WORD_OR_PATH,
        'mpicxx': inputs.WORD_OR_PATH,
        'cuda13_compat': inputs.FLAG,
    }

    executables = list(BENCHMARKS)
    source = fixture(OsuSource, scope='session')

    def _compiler(self, name):
        value = getattr(self, name) or \
            self.current_environ.extras.get(name, name)
        return shlex.quote(checked_word_or_path(value, name))

    def _accelerator_opts(self):
        checked_token(self.accelerator or 'none', 'accelerator',
                      ('none', 'cuda', 'rocm'))
        return {'cuda': ['--enable-cuda', '--with-cuda="${CUDA_HOME:-$('
                         'dirname "$(dirname "$(command -v nvcc)")")}"'],
                'rocm': ['--enable-rocm',
                         '--with-rocm="${ROCM_PATH:-/opt/rocm}"'],
                }.get(self.accelerator, [])

    def build_commands(self, src):
        built = ' '.join(f'obj/{folder}/{exe}'
                         for exe, folder in BENCHMARKS.items())
        compat, make_cc = [], ''
        if self.accelerator == 'cuda' and self.cuda13_compat:
            compat = [f"cat > obj/cuda13_compat.h <<'EOF'\n{CUDA13_COMPAT}EOF"]
            # at make time only: in configure's link probes (char
            # cudaFree();) the header's CUDA declarations would conflict
            make_cc = (f' CC="{self._compiler("mpicc")} -include '
                       f'$PWD/obj/cuda13_compat.h"')
        return [
            # a git checkout leaves configure older than configure.ac and
            # make would rerun automake; release tarballs have sane times
            f'find {src} -path "*/.git" -prune -o -exec touch -h -d '
            f'@1700000000 {{}} +',
            'mkdir -p obj build',
            *compat,
            ' '.join(['(cd obj &&', f'{src}/configure',
                      f'CC={self._compiler("mpicc")}',
                      f'CXX={self._compiler("mpicxx")}',
                      *self._accelerator_opts(), ')']),
            f'make -C obj -j {self.build_jobs}{make_cc}',
            f'cp {built} build/'
        ]

    def executable_path(self, name):
        # an installed OSU keeps them in libexec/osu-micro-benchmarks/mpi/
        # {pt2pt/standard,collective/blocking}: accept that as prebuilt_dir
        if self.source.prebuilt_dir and not (self.stack or self.in_image()):
            for sub in ('', 'pt2pt/standard', 'pt2pt', 'collective/blocking',
                        'collective'):
                path = os.path.join(self.bin_dir, sub, name)
                if os.access(path, os.X_OK):
                    return path

        return super().executable_path(name)


def _cpus(mask):
    value = int(mask, 16)
    return [i for i in range(value.bit_length()) if value >> i & 1]


def _sockets_and_cores(processor):
    """CPU lists per socket and core: detected, or x86's numbering."""
    topo = processor.topology or {}
    if topo.get('sockets') and topo.get('cores'):
        return ([_cpus(m) for m in topo['sockets']],
                [_cpus(m) for m in topo['cores']])

    sockets, per_socket = processor.num_sockets, processor.num_cpus_per_socket
    per_core = processor.num_cpus_per_core or 1
    if not sockets or not per_socket:
        return [], []

    cores_per_socket = per_socket // per_core
    ncores = sockets * cores_per_socket
    cores = [[c + k * ncores for k in range(per_core)] for c in range(ncores)]
    return ([sum(cores[s * cores_per_socket:(s + 1) * cores_per_socket], [])
             for s in range(sockets)], cores)


def first_cpus(processor, placement):
    """Two CPUs, one per rank, by placement; [] if topology unknown."""
    sockets, cores = _sockets_and_cores(processor)
    if not sockets or not cores:
        return []

    def core_starts(socket):
        return sorted(min(c) for c in cores if set(c) <= set(socket))

    if placement == 'cross_socket':
        if len(sockets) < 2:
            return []
        return [core_starts(s)[0] for s in sockets[:2]]

    starts = core_starts(sockets[0])
    return starts[:2] if len(starts) >= 2 else []


# Slurm places by its own view of the allocation (core specialization,
# reserved cores): ask it for the placement rather than for CPU numbers
_SRUN_PLACEMENT = {
    'same_socket': ['--distribution=block:block', '--cpu-bind=cores'],
    'cross_socket': ['--distribution=block:cyclic', '--cpu-bind=cores'],
    'across_nodes': ['--cpu-bind=cores'],
}


class OsuBenchmark(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """One OSU benchmark between two ranks (allreduce too)."""

    #: osu_latency, osu_bw, osu_bibw, osu_allreduce.
    benchmark = parameter(list(BENCHMARKS))

    #: Where the two ranks sit (GPU leaves: GPU_PLACEMENTS).
    placement = parameter(PLACEMENTS)

    #: '' for host buffers, 'cuda' or 'rocm' for device buffers (D D).
    accelerator = variable(str, value='')
    build_shared = ('accelerator',)

    #: Largest message size in bytes (-m; bandwidth is reported there).
    max_size = variable(int, value=4 * 2**20)

    #: Message sizes whose latency is reported; 0 only where printed.
    latency_sizes = variable(typ.List[int], value=[0, 8, 1024, 65536])

    #: Timed and warm-up iterations (-i, -x); 0: OSU's defaults.
    iterations = variable(int, value=0)
    warmup = variable(int, value=0)

    #: Check received data (-c); adds OSU's own Pass/Fail column.
    validate = variable(bool, value=False)

    #: Pin the two ranks to the CPUs the placement names.
    pin_ranks = variable(bool, value=True)
    input_policy = {
        'accelerator': inputs.TOKEN,
        'max_size': inputs.POSITIVE,
        'latency_sizes': inputs.numbers(0),
        'iterations': inputs.COUNT,
        'warmup': inputs.COUNT,
        'validate': inputs.FLAG,
        'pin_ranks': inputs.FLAG,
    }

    num_tasks = 2
    tags = {'osu', 'mpi'}

    @property
    def device_buffers(self):
        return bool(self.accelerator)

    @run_after('init')
    def require_layout_features(self):
        with at_load(self):
            checked_token(self.benchmark, 'benchmark', BENCHMARKS)
            checked_token(self.accelerator or 'none', 'accelerator',
                          ('none', 'cuda', 'rocm'))
        self.require_features(ft.MPI)
        if self.placement == 'across_nodes':
            self.require_features(ft.MULTINODE)
        if self.device_buffers:
            self.require_features(ft.GPU_AWARE_MPI)

    def _options(self):
        low = 0 if self.benchmark == 'osu_latency' else 1
        opts = ['-m', f'{low}:{self.max_size}']
        if self.iterations:
            opts += ['-i', str(self.iterations)]
        if self.warmup:
            opts += ['-x', str(self.warmup)]
        if self.validate:
            opts.append('-c')
        if self.device_buffers:
            opts += ['-d', self.accelerator]
            if self.benchmark != 'osu_allreduce':
                opts += ['D', 'D']
        return opts

    def _bind(self, exe):
        cpus = first_cpus(self.current_partition.processor, self.placement)
        self.skip_if(not cpus, f'{self.placement}: the processor topology of '
                               f'{self.current_partition.fullname} is '
                               f'unknown or has too few sockets or cores')
        if self.current_partition.launcher_type.registered_name == 'srun':
            self.num_cpus_per_task = 1
            self.job.launcher.options += _SRUN_PLACEMENT[self.placement]
            return exe, []

        if self.placement == 'across_nodes':
            cpus = cpus[:1] * 2

        # other launchers bind differently per MPI: pin each rank by its
        # node-local rank with taskset instead
        script = (f'{layouts.local_rank_shell()}; '
                  f'cpus=({" ".join(map(str, cpus))}); '
                  f'exec taskset -c "${{cpus[${{r:-0}}]}}" "$0" "$@"')
        return 'bash', ['-c', shlex.quote(script), shlex.quote(exe)]

    @run_before('run')
    def set_command(self):
        self.num_tasks_per_node = 1 if self.placement == 'across_nodes' else 2
        exe = self.build.executable_path(self.benchmark)
        prefix = []
        part = self.current_partition
        if self.device_buffers:
            layouts.apply(self, layouts.gpu_layout(part, 'rank_per_gpu'))
            layouts.apply(self, layouts.settings(part, 'gpu_aware_mpi'))
        elif self.pin_ranks:
            exe, prefix = self._bind(exe)

        self.executable = exe if prefix else shlex.quote(exe)
        self.executable_opts = prefix + self._options()

    def parse(self):
        text = read_text(self.stdout.evaluate())
        try:
            result = parse_osu(text)
        except ParseError as err:
            if not self.device_buffers:
                raise
            both = text + read_text(self.stderr.evaluate())
            raise device_buffer_error(
                err, both, f'-d {self.accelerator} D D buffers') from None

        if self.device_buffers and not result.accelerator:
            raise ParseError(f'asked for -d {self.accelerator} but the title '
                             f'names no accelerator: built without '
                             f'--enable-{self.accelerator}?')
        check_benchmark(result, self.benchmark)
        table = result.table()
        check_largest(table, self.max_size)
        self.metrics(table)     # every size reported must be there
        return table

    def metrics(self, table):
        if self.benchmark not in ('osu_latency', 'osu_allreduce'):
            row = table.at(self.max_size)
            return {f'bandwidth_{size_label(row.size)}': (row.value, 'MB/s')}

        printed = {r.size for r in table.rows}
        return {f'latency_{size_label(size)}': (table.at(size).value, 'us')
                for size in self.latency_sizes
                if size in printed or size != 0}
