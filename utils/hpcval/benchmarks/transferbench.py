"""TransferBench: copy bandwidth between the GPUs (and CPUs) of one node, each
link against its siblings (docs/benchmarks/transferbench.md)."""
import dataclasses
import os
import re
import shlex

import reframe as rfm
from reframe.core.builtins import (fixture, parameter, run_after, run_before,
                                   variable)

from hpcval import inputs, replay, suites
from hpcval.benchmarks import siblings
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.benchmarks.siblings import SiblingFigures
from hpcval.benchmarks.source import UpstreamBuild, UpstreamSource
from hpcval.inputs import InputError, checked_path, checked_token
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval import plotdata
from hpcval.parsers.transferbench import (AVERAGE_KINDS, config_tests,
                                          parse_a2a, parse_config_run,
                                          parse_p2p, unmeasured)

PRESETS = ('a2a', 'p2p', 'config')
#: the figures of p2p's two matrices, each judged against its siblings
P2P_FIGURES = ('uni', 'bidir')
#: p2p: the config of every ordered GPU pair, written by the job where a
#: link of the p2p matrices is an outlier, and TransferBench's run of it
REMEASURE_CFG, REMEASURE_OUT = 'remeasure.cfg', 'remeasure.out'
# reads p2p's matrices; prints one transfer per ordered GPU pair, each
# with all of a GPU's subexecutors (NUM_GPU_SE), where a GPU link is
# under 1/f of its matrix's median, else nothing.  Fixed text: only the
# checked factor reaches it, as a number
REMEASURE_AWK = r"""
function flush(   n, i, j, t, m, k) {
    n = 0
    for (k in val) sorted[++n] = val[k]
    for (i = 2; i <= n; i++) {
        t = sorted[i]
        for (j = i - 1; j >= 1 && sorted[j] > t; j--) sorted[j + 1] = sorted[j]
        sorted[j + 1] = t
    }
    if (n >= 2) {
        m = n % 2 ? sorted[(n + 1) / 2] : (sorted[n / 2] + sorted[n / 2 + 1]) / 2
        for (k in val) if (val[k] * f < m) low++
    }
    split("", val); split("", sorted)
}
$1 == "NUM_GPU_SE" { se = $3 }
/SRC.*DST/ {
    flush(); nc = 0
    for (i = 2; i < NF; i += 2) { nc++; kind[nc] = $i; idx[nc] = $(i + 1) + 0 }
    for (c = 1; c <= nc; c++) if (kind[c] == "GPU") gpu[idx[c]] = 1
    next
}
$1 == "GPU" && ($3 == "->" || $3 == "<-") && nc {
    for (c = 1; c <= nc && c + 3 <= NF; c++)
        if (kind[c] == "GPU" && idx[c] != $2 + 0 && $(c + 3) ~ /^[0-9.]+$/)
            val[NR " " c] = $(c + 3)
}
END {
    flush()
    if (!low || se !~ /^[0-9]+$/) exit
    for (s in gpu) for (d in gpu) if (s != d)
        printf "1 %d (G%d G%d G%d)\n", se, s, s, d
}
"""
MODELS = {'hip': 'TransferBench', 'cuda': 'TransferBenchCuda'}
EXAMPLE_CFG = 'example.cfg'


class TransferBenchSource(UpstreamSource):
    repo_url = 'https://github.com/ROCm/TransferBench.git'
    version = 'v1.52'


class TransferBenchBuild(UpstreamBuild):
    """Upstream ``src/Makefile``, target named (it otherwise picks nvcc)."""

    #: 'hip' (TransferBench) or 'cuda' (TransferBenchCuda).
    model = variable(str, value='hip')
    input_policy = {'model': inputs.TOKEN}

    source = fixture(TransferBenchSource, scope='session')

    @run_after('setup')
    def set_executables(self):
        checked_token(self.model, 'model', MODELS)
        self.executables = [MODELS[self.model]]

    def _make_vars(self):
        # -lnuma after the source: upstream puts it before, where
        # as-needed linkers drop it
        libs = 'LDFLAGS="-lpthread -lnuma"'
        if self.model == 'cuda':
            arch = self.target_cuda_arch()
            return ['NVCC="$(command -v nvcc)"',
                    f'NVFLAGS="-O3 -Iinclude -x cu -arch={arch}"', libs]

        return ['ROCM_PATH="${ROCM_PATH:-/opt/rocm}"', libs]

    def build_commands(self, src):
        exe = MODELS[self.model]
        # the Makefile writes into the tree: build a copy, not the shared src
        return [
            f'rm -rf tree && cp -a {src} tree',
            ' '.join([f'make -C tree/src -j {self.build_jobs} ../{exe}',
                      *self._make_vars()]),
            f'mkdir -p build && cp tree/{exe} tree/examples/{EXAMPLE_CFG} '
            f'build/'
        ]


def link_name(src, dst):
    """('GPU 03', 'GPU 05') -> 'gpu03_to_gpu05'."""
    return f'{src.replace(" ", "").lower()}_to_{dst.replace(" ", "").lower()}'


class TransferBench(SiblingFigures, ParsedBenchmark,
                    rfm.RunOnlyRegressionTest):
    """One TransferBench run over all GPUs of a node; leaves add the build."""

    preset = parameter(PRESETS)

    #: 'hip' or 'cuda', as the leaf's build.
    model = variable(str, value='hip')
    build_shared = ('model',)

    #: Bytes per transfer (2nd argument; K/M/G = 1024^n); '' leaves the
    #: tool's default (64M), as the guide runs it.
    num_bytes = variable(str, value='')

    #: a2a: CUs per transfer (3rd argument); 0 leaves the default (4).
    a2a_cus = variable(int, value=0)

    #: a2a/p2p: timed iterations per transfer (NUM_ITERATIONS; 0: the
    #: tool's 10): 50 halves p2p's healthy spread at no cost in time.
    iterations = variable(int, value=50)

    #: config preset: the config file; '' runs upstream examples/example.cfg.
    config_file = variable(str, value='')

    #: a2a/p2p: a GPU link this many times slower than its siblings' median
    #: on the node fails.
    sibling_factor = 1.6

    #: GPUs the node must show; 0: the partition's GPU count.
    num_gpus = variable(int, value=0)
    input_policy = {
        'model': inputs.TOKEN,
        'num_bytes': inputs.SIZE,
        'a2a_cus': inputs.COUNT,
        'iterations': inputs.COUNT,
        'config_file': inputs.PATH,
        'num_gpus': inputs.COUNT,
    }

    #: one link's bandwidth moves by 8-23 % between healthy runs: it is
    #: judged against its siblings of the same run instead
    diagnostics = {r'(uni_|bidir_)?gpu\d+_to_gpu\d+':
                   'one link\'s bandwidth, judged against its siblings on '
                   'the node (its *_vs_siblings@* figure)'}

    num_tasks = 1
    num_tasks_per_node = 1
    tags = {'transferbench'}

    def suites(self):
        # every GPU pair's copy bandwidth
        return {suites.QUICK_TAG, suites.SCREEN_TAG} \
            if self.preset == 'p2p' else set()

    def replay_inputs(self):
        return {'p2p': (REMEASURE_CFG, REMEASURE_OUT),
                'config': (self._config_name(),)}.get(self.preset, ())

    def _config_name(self):
        """The config file's name; the recording of a replay holds it."""
        return os.path.basename(self.config_file or EXAMPLE_CFG)

    def _config_path(self):
        if replay.active(self):
            return os.path.join(self.stagedir, self._config_name())

        if self.config_file:
            return checked_path(self.config_file, 'config_file')

        path = self.build.executable_path(EXAMPLE_CFG)
        if self.build.source.prebuilt_dir and not os.path.isfile(path):
            raise InputError(f'prebuilt_dir: no {EXAMPLE_CFG} in '
                             f'{self.build.bin_dir}; copy upstream '
                             f'examples/{EXAMPLE_CFG} there or set '
                             f'-S config_file=PATH')
        return path

    @run_before('run')
    def set_command(self):
        self.expected_gpus = self.gpus_or_skip(self.num_gpus)
        self.executable = self.build.command(MODELS[self.model])
        first = self._config_path() if self.preset == 'config' else self.preset
        args = [first]
        size = self.num_bytes
        if self.preset == 'a2a' and self.a2a_cus > 0:
            args += [size or '64M', str(self.a2a_cus)]
        elif size:
            args.append(size)
        self.executable_opts = [shlex.quote(a) for a in args]
        # a site-wide OUTPUT_TO_CSV=1 would leave nothing to parse
        self.env_vars['OUTPUT_TO_CSV'] = '0'
        if self.iterations and self.preset != 'config':
            self.env_vars['NUM_ITERATIONS'] = str(self.iterations)
        if self.preset == 'p2p':
            self._remeasure_outliers(size)

    def _remeasure_outliers(self, size):
        """After p2p, every pair alone again where a link is an outlier."""
        exe = self.build.command(MODELS[self.model])
        size = f' {shlex.quote(size)}' if size else ''
        # the job's exit status stays p2p's (or the re-measure's)
        self.postrun_cmds = [
            *self.postrun_cmds,
            'hpcval_rc=$?',
            f'awk -v f={min(map(self.sibling_factor_of, P2P_FIGURES))!r} '
            f'{shlex.quote(REMEASURE_AWK)} '
            f'{shlex.quote(self.job.stdout)} > {REMEASURE_CFG}',
            f'if [ "$hpcval_rc" = 0 ] && [ -s {REMEASURE_CFG} ]; then '
            f'{exe} {REMEASURE_CFG}{size} > {REMEASURE_OUT} 2>&1 || '
            f'hpcval_rc=$?; fi',
            'exit "$hpcval_rc"']
        self.keep_files = [*self.keep_files, 'remeasure.*']

    def parse(self):
        text = read_text(self.stdout.evaluate())
        if self.preset == 'a2a':
            result = parse_a2a(text)
            self._check_gpus(result.gpus, 'a2a matrix')
            self._check_measured(result.links, 'a2a matrix')
        elif self.preset == 'p2p':
            result = parse_p2p(text)
            for matrix in (result.uni, result.bidir):
                if matrix is None:
                    raise ParseError('p2p printed only one of the uni- and '
                                     'bidirectional matrices (P2P_MODE set?)')
                gpus = [d for d in matrix.devices if d.startswith('GPU')]
                self._check_gpus(gpus, f'p2p {matrix.direction} matrix')
                self._check_measured(_gpu_links(matrix.links),
                                     f'p2p {matrix.direction} matrix')
            self._remeasured = remeasured(REMEASURE_CFG, REMEASURE_OUT)
        else:
            cfg = read_text(self._config_path())
            result = parse_config_run(text, len(config_tests(cfg)))

        return result

    def measured_gpus(self):
        if self.preset == 'config':     # the config says what it measures
            return None
        return gpus_listed(read_text(self.stdout.evaluate()), self.preset)

    def sibling_groups(self, result):
        return {} if self.preset == 'config' else link_groups(result)

    def judge_siblings(self, result):
        """A failing p2p link is named only if its re-measure fails too."""
        again = getattr(self, '_remeasured', None)
        out = []
        for s in super().judge_siblings(result):
            alone = self._alone(s, again) if again and not s.judgement.passed \
                else None
            if alone is not None and alone.judgement.passed:
                s = dataclasses.replace(
                    s, component=f'{s.component} (re-measured alone)',
                    judgement=alone.judgement)
            out.append(s)
        return out

    def _alone(self, s, again):
        """The Sibling of ``s``'s link among the re-measured ones, or None."""
        member = s.metric.rpartition('@')[2]
        return next((a for a in siblings.compare(
            {'alone': {m: ('', v, 'GB/s') for m, v in again.items()}},
            self.sibling_factor_of(s.figure))
            if a.metric.rpartition('@')[2] == member), None)

    def _check_measured(self, links, what):
        missing = unmeasured(links)
        if missing:
            raise ParseError(f'{what}: {len(missing)} GPU link(s) not '
                             f'measured (N/A): {", ".join(missing)}')

    def _check_gpus(self, gpus, what):
        if len(gpus) != self.expected_gpus:
            raise ParseError(f'{what} lists {len(gpus)} GPUs '
                             f'({", ".join(gpus) or "none"}), expected '
                             f'{self.expected_gpus}: a GPU is missing or '
                             f'hidden (HIP/CUDA_VISIBLE_DEVICES?)')

    def metrics(self, result):
        return {**getattr(self, f'_{self.preset}_metrics')(result),
                **self.sibling_metrics(result)}

    def figure_data(self, result):
        return plotdata.transferbench(self.preset, result)

    def components(self, result, values):
        """The link each per-pair metric measures."""
        if self.preset == 'config':
            return {}
        found = {}
        for figure, links in link_groups(result).items():
            prefix = '' if figure == 'a2a' else f'{figure}_'
            found.update({prefix + name: comp
                          for name, (comp, _, _) in links.items()
                          if prefix + name in values})
        return {**found, **self.sibling_components(result)}

    def _a2a_metrics(self, r):
        measured = r.measured()
        values = {'avg_bw': (r.average_gpu, 'GB/s'),
                  'aggregate_gpu_bw': (r.aggregate_gpu, 'GB/s'),
                  'aggregate_cpu_bw': (r.aggregate_cpu, 'GB/s'),
                  'min_link_bw': (min(measured.values()), 'GB/s')}
        values.update({link_name(*pair): (bw, 'GB/s')
                       for pair, bw in measured.items()})
        return values

    def _p2p_metrics(self, r):
        values = {}
        for m in (r.uni, r.bidir):
            for kind in AVERAGE_KINDS:
                if m.averages[kind] is not None:
                    values[f'{m.direction}_{kind}'] = (m.averages[kind], 'GB/s')
            for pair, bw in _gpu_links(m.links).items():
                values[f'{m.direction}_{link_name(*pair)}'] = (bw, 'GB/s')
        return values

    def _config_metrics(self, tests):
        values = {}
        for t in tests:
            for tr in t.transfers:
                name = f'test{t.number}' if len(t.transfers) == 1 else \
                    f'test{t.number}_transfer{tr.index}'
                values[name] = (tr.bandwidth, 'GB/s')
        return values


def remeasured(cfg, out):
    """{'gpu00_to_gpu01': GB/s} of the job's re-measure, {} where none."""
    try:
        tests = config_tests(read_text(cfg))
    except FileNotFoundError:
        return {}
    if not tests:
        return {}
    try:
        run = parse_config_run(read_text(out), len(tests))
    except ParseError as err:
        raise ParseError(f'{out} (the re-measure of every GPU pair): '
                         f'{err}') from None
    return {link_name(_gpu_name(t.src), _gpu_name(t.dst)): t.bandwidth
            for test in run for t in test.transfers}


_GPU_DEVICE = re.compile(r'GPU ([0-9]{1,6})')


def gpus_listed(text, preset):
    """The GPU numbers a p2p or a2a output's matrices list."""
    if preset == 'a2a':
        names = [parse_a2a(text).gpus]
    else:
        result = parse_p2p(text)
        names = [m.devices for m in (result.uni, result.bidir)
                 if m is not None]
    listed = [{int(m.group(1)) for m in map(_GPU_DEVICE.fullmatch, devices)
               if m} for devices in names]
    return set.intersection(*listed) if listed else set()


def _gpu_name(short):
    """'G3' (a config's device) -> 'GPU 03' (the matrices')."""
    return f'GPU {int(short[1:]):02d}'


def link_groups(result):
    """{figure: {'gpu00_to_gpu01': (component, GB/s, 'GB/s')}}."""
    if hasattr(result, 'uni'):
        by_figure = {m.direction: (_gpu_links(m.links), f' ({m.direction})')
                     for m in (result.uni, result.bidir)}
    else:
        by_figure = {'a2a': (result.measured(), '')}
    return {figure: {link_name(src, dst): (f'link {src} -> {dst}{how}', bw,
                                           'GB/s')
                     for (src, dst), bw in links.items() if bw is not None}
            for figure, (links, how) in by_figure.items()}


def _gpu_links(links):
    return {pair: bw for pair, bw in links.items()
            if pair[0].startswith('GPU') and pair[1].startswith('GPU')}
