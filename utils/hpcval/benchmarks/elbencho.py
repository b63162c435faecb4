"""elbencho: storage throughput and IOPS from CPU or GPU buffers, in a fresh
folder under the partition's scratch_dir (docs/benchmarks/elbencho.md)."""
import re
import shlex

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import (fixture, parameter, run_before,
                                   sanity_function, variable)
from reframe.core.exceptions import SanityError

from hpcval import features as ft, inputs
from hpcval import replay
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.layouts import gpu_count
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.inputs import SHELL_PATH, InputError, checked_token
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval.parsers.elbencho import parse_elbencho, phase

LAYOUTS = ('shared_file', 'file_per_thread')
#: pattern -> (block size, random offsets)
PATTERNS = {'seq_1m': ('1M', False), 'rand_4k': ('4K', True)}
BUFFERS = ('cpu', 'gpu')
DEFAULT_CPU_MIB = 1024
PREFIX = 'hpcval:'             # lines the build and job scripts explain with

# header -> Debian / RHEL package, for the build's preflight
_HEADERS = {
    'boost/program_options.hpp': 'libboost-program-options-dev / boost-devel',
    'boost/thread.hpp': 'libboost-thread-dev / boost-devel',
    'boost/filesystem.hpp': 'libboost-filesystem-dev / boost-devel',
    'libaio.h': 'libaio-dev / libaio-devel',
    'numa.h': 'libnuma-dev / numactl-devel',
}
_SIZE = re.compile(r'([0-9]+)([MG])')


def size_mib(value, name):
    """'512M' or '2G' -> MiB, or InputError."""
    m = _SIZE.fullmatch(value)
    if not m or int(m[1]) == 0:
        raise InputError(f'-S {name}={value!r}: a size in MiB or GiB, '
                         f'e.g. 512M or 2G')
    return int(m[1]) * (1024 if m[2] == 'G' else 1)


class ElbenchoSource(UpstreamSource):
    any_environ = True          # CPU checks build it too
    repo_url = 'https://github.com/breuner/elbencho.git'
    version = 'v3.1-9'

    # `make externals` leaves Simple-Web-Server and FTXUI untracked
    prepared_inputs = ('external/Simple-Web-Server', 'external/ftxui')


class ElbenchoBuild(UpstreamBuild):
    """``make`` in a copy of the source tree; ``bin/elbencho`` to build/."""

    #: Build with CUDA_SUPPORT=1 (GPU buffers); otherwise CUDA_SUPPORT=0.
    cuda = variable(bool, value=False)
    input_policy = {'cuda': inputs.FLAG}

    executables = ['elbencho']
    source = fixture(ElbenchoSource, scope='session')

    def _preflight(self, src):
        headers = dict(_HEADERS)
        if self.cuda:
            headers['cuda_runtime.h'] = 'the CUDA toolkit (nvcc on PATH)'
        checks = [
            f'echo "#include <{h}>" | {self._cxx} $ELB_INC -E -x c++ - '
            f'>/dev/null 2>&1 || missing="$missing {h} ({p});"'
            for h, p in headers.items()
        ]
        return [
            'missing=""',
            *checks,
            f'if [ -n "$missing" ]; then echo "{PREFIX} missing build '
            f'dependencies:$missing" >&2; exit 1; fi',
            f'for ext in Simple-Web-Server ftxui; do [ -d {src}/external/$ext ]'
            f' || echo "{PREFIX} no external/$ext in the source tree: '
            f'elbencho\'s make clones it now, which fails offline (give '
            f'-S src_mirror= a tree where make externals ran)" >&2; done',
        ]

    @property
    def _cxx(self):
        return shlex.quote(self.current_environ.cxx or 'g++')

    def build_commands(self, src):
        cuda = ['CUDA_SUPPORT=0']
        inc = ''
        if self.cuda:
            home = '"${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}"'
            cuda = ['CUDA_SUPPORT=1', f'CUDA_INCLUDE_PATH={home}/include',
                    f'CUDA_LIB_PATH={home}/lib64']
            inc = f'-I{home}/include'
        return [
            f'ELB_INC={inc}' if inc else 'ELB_INC=',
            *self._preflight(src),
            # the session's source tree is shared by the CPU and CUDA builds
            f'cp -a {src}/. tree/',
            # BACKTRACE_SUPPORT=0: without a system libbacktrace (Debian,
            # Ubuntu) make would clone one from github.com at build time
            ' '.join(['make -C tree', f'-j {self.build_jobs}',
                      f'CXX={self._cxx}', *cuda,
                      'CUFILE_SUPPORT=0', 'S3_SUPPORT=0',
                      'BACKTRACE_SUPPORT=0']),
            'mkdir -p build && cp tree/bin/elbencho build/',
        ]

    @sanity_function
    def validate_build(self):
        if replay.active(self) or self.in_image() or \
                not self._missing_executables():
            return True
        explained = self.said(PREFIX)
        raise SanityError(f'no executable elbencho in {self.bin_dir} after '
                          f'the build' + (f': {"; ".join(explained)}'
                                          if explained else
                                          '; see rfm_build.err'))


class Elbencho(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """Write then read with elbencho; leaves set ``buffers`` and the build."""

    #: one file shared by all threads, or one file per thread
    layout = parameter(LAYOUTS)

    #: 1 MiB sequential or 4 KiB random offsets
    pattern = parameter(list(PATTERNS))

    #: elbencho prints whole milliseconds: a phase under 1 ms reads 0
    zero_readings = {r'\w+_elapsed': 'a phase under 1 ms'}

    #: 'cpu' (host buffers) or 'gpu' (--gpuids)
    buffers = variable(str, value='cpu')

    #: I/O threads (-t); 0: one per GPU of the partition, or 1 without GPUs.
    threads = variable(int, value=0)

    #: Asynchronous I/O depth per thread (--iodepth).
    iodepth = variable(int, value=1)

    #: O_DIRECT (--direct): measure the storage, not the page cache.
    direct_io = variable(typ.Bool, value=True)

    #: Data per thread, e.g. 2G; '': 10% of the smallest GPU's memory on
    #: NVIDIA GPU partitions, 1G elsewhere.
    file_size = variable(str, value='')

    #: Random cases: data moved per file at most (--randamount).
    rand_amount = variable(str, value='1G')

    #: GPUs for GPU buffers, e.g. 0,1; '': every GPU of the partition.
    gpu_ids = variable(str, value='')

    #: Target folder; '': the partition's extras['scratch_dir'].
    scratch_dir = variable(str, value='')
    input_policy = {
        'buffers': inputs.TOKEN,
        'threads': inputs.COUNT,
        'iodepth': inputs.POSITIVE,
        'direct_io': inputs.FLAG,
        'file_size': inputs.SIZE,
        'rand_amount': inputs.SIZE,
        'gpu_ids': inputs.GPU_IDS,
        'scratch_dir': inputs.SHELL_PATH,
    }

    num_tasks = 1
    tags = {'elbencho', 'storage'}

    def _threads(self):
        return self.threads or max(1, gpu_count(self.current_partition))

    def _target_dir_cmds(self):
        base = self.scratch_dir or \
            self.current_partition.extras.get('scratch_dir', '')
        if base:
            try:        # double-quoted in the script: $VARS expand
                SHELL_PATH(base, 'scratch_dir')
            except InputError as err:
                raise InputError(f'scratch_dir {base!r}: letters, digits, '
                                 f'_ . , : = + @ % / - and $VARIABLES only '
                                 f'({err})') from None
            where = f'"{base}"'
            note = []
        else:
            where = '"$PWD"'
            note = [f'echo "{PREFIX} the partition has no extras '
                    f'scratch_dir: writing to the stage directory $PWD"']
        return note + [
            f'ELB_DIR=$(mktemp -d {where}/hpcval-elbencho.XXXXXX) || '
            f'{{ echo "{PREFIX} cannot create a folder in {base or "$PWD"}"'
            f' >&2; exit 3; }}',
            # removed however the job ends
            'trap \'rm -rf "$ELB_DIR"\' EXIT',
        ]

    def _size_cmds(self, threads):
        if self.file_size:
            per = [f'PER_THREAD_MIB={size_mib(self.file_size, "file_size")}']
        elif ft.NVGPU in self.current_partition.features:
            per = [
                'GPU_MIB=$(nvidia-smi --query-gpu=memory.total '
                '--format=csv,noheader,nounits | sort -n | head -n1)',
                f'case "$GPU_MIB" in ""|*[!0-9]*) echo "{PREFIX} nvidia-smi '
                f'gave no GPU memory size ($GPU_MIB); set -S file_size" >&2; '
                f'exit 3;; esac',
                'PER_THREAD_MIB=$((GPU_MIB / 10))',
            ]
        else:
            per = [f'PER_THREAD_MIB={DEFAULT_CPU_MIB}']
        files = threads if self.layout == 'shared_file' else 1
        rand = size_mib(self.rand_amount, 'rand_amount')
        return per + [
            f'FILE_MIB=$((PER_THREAD_MIB * {files}))',
            f'RAND_MIB=$(( {rand} < FILE_MIB ? {rand} : FILE_MIB ))',
            f'echo "{PREFIX} {threads} thread(s), $PER_THREAD_MIB MiB per '
            f'thread, files of $FILE_MIB MiB in $ELB_DIR"',
        ]

    @run_before('run')
    def set_command(self):
        checked_token(self.buffers, 'buffers', BUFFERS)
        threads = self._threads()
        block, random = PATTERNS[self.pattern]
        self.prerun_cmds = self._target_dir_cmds() + self._size_cmds(threads)
        opts = ['-w', '-r', '-t', str(threads), '--iodepth',
                str(self.iodepth), '-b', block, '-s', '"${FILE_MIB}M"',
                '--nolive', '--jsonfile', 'elbencho.json']
        if self.direct_io:
            opts.append('--direct')
        if random:
            opts += ['--rand', '--randamount', '"${RAND_MIB}M"']
        if self.buffers == 'gpu':
            ids = self.gpu_ids or ','.join(
                map(str, range(self.gpus_or_skip())))
            opts += ['--gpuids', shlex.quote(ids)]
        if self.layout == 'shared_file':
            opts.append('"$ELB_DIR/shared_file"')
        else:
            opts += ['-d', '-n', '1', '-N', '1', '"$ELB_DIR"']
        # one process with its own threads: no MPI launcher in front
        self.job.launcher = getlauncher('local')()
        self.executable = self.build.command('elbencho')
        self.executable_opts = opts
        self.keep_files = ['elbencho.json']

    def parse(self):
        stdout = read_text(self.stdout.evaluate())
        try:
            phases = parse_elbencho(stdout)
        except ParseError as err:
            errors = [line.strip() for line in
                      read_text(self.stderr.evaluate()).splitlines()
                      if 'ERROR' in line or line.startswith(PREFIX)]
            if errors:
                raise ParseError(f'{err}; stderr: {errors[0]}') from None
            raise
        return {op: phase(phases, op) for op in ('WRITE', 'READ')}

    def metrics(self, phases):
        values = {}
        for op, p in phases.items():
            name = op.lower()
            for which in ('first', 'last'):
                values[f'{name}_throughput_{which}'] = (
                    p.throughput_mib_s(which), 'MiB/s')
                values[f'{name}_iops_{which}'] = (p.value('IOPS', which),
                                                  'IOPS')
            values[f'{name}_elapsed'] = (p.elapsed_ms[1] / 1000, 's')
        return values
