"""Habana hl_qual: host <-> device and device memory bandwidth on Gaudi, by
the manual's switch rules and pass criteria (docs/benchmarks/hl_qual.md)."""
import glob
import os
import shlex
from dataclasses import dataclass

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_before, variable

from hpcval import inputs
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.inputs import CARDS, InputError, checked_path, checked_token
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text
from hpcval.parsers.hl_qual import PCI_SUBTESTS, parse_hl_qual_report
from hpcval.units import link_bandwidth

GENERATIONS = ('gaudi', 'gaudi2')
PLUGINS = ('mb', 'p')
MODES = ('serial', 'parallel')
SUBSETS = ('memOnly', 'pciOnly', 'sramOnly')
PCI_GENS = ('gen3', 'gen4')            # the two modifiers the manual names

# The manual's host <-> device criteria: Gen3 x16 figures, other links
# scaled by ``BandWidth = (width / 8.0) * speed`` (hpcval's reading)
#: "the PCI test has a 10% allowable degradation"
DEGRADATION = 0.10

_DIRECTIONS = ('host_to_device', 'device_to_host', 'bidirectional')
HOST_TO_DEVICE, DEVICE_TO_HOST, BIDIRECTIONAL = _DIRECTIONS

#: GB/s on PCIe Gen3 x16, before the allowed degradation.
GEN3_X16 = {
    'memory_plugin': {HOST_TO_DEVICE: 11.9, DEVICE_TO_HOST: 12.9,
                      BIDIRECTIONAL: 19.5},
    'pci_plugin': {HOST_TO_DEVICE: 11.6, DEVICE_TO_HOST: 12.9,
                   BIDIRECTIONAL: 19.9},
}

#: "The load PCI plugin pass/fail criteria for this mode is 11.04GB/s"
PCI_LOAD_GEN3_X16 = 11.04


@dataclass(frozen=True)
class Criterion:
    test: str          # memory_plugin, pci_plugin or pci_load
    direction: str
    expected: float    # GB/s on this link
    floor: float       # GB/s: expected less the allowed degradation
    gen: str
    width: int

    def describe(self):
        return (f'{self.expected:.4g} GB/s {self.gen.capitalize()} '
                f'x{self.width} criterion less {DEGRADATION:.0%} = '
                f'{self.floor:.4g} GB/s')


def criterion(test, direction, gen='gen3', width=16):
    """The expected bandwidth and its floor for ``test`` on a link."""
    if test == 'pci_load':
        base = PCI_LOAD_GEN3_X16
    else:
        try:
            base = GEN3_X16[test][direction]
        except KeyError:
            raise ValueError(f'no criterion for {test} {direction}') from None
    expected = base * link_bandwidth(gen, width) / link_bandwidth('gen3', 16)
    return Criterion(test, direction, expected,
                     expected * (1 - DEGRADATION), gen, width)


def parallel_path_passes(bottleneck_gen, bottleneck_width, device_results):
    """Parallel mode: PASS if BandWidth(bottleneck) <= Sum(Test(D1) + ...)."""
    return link_bandwidth(bottleneck_gen, bottleneck_width) <= \
        sum(device_results)


_SUBSET_TESTS = {
    'memOnly': ('sram_to_hbm', 'hbm_to_sram', 'hbm_to_hbm'),
    'pciOnly': ('host_to_hbm', 'hbm_to_host', 'hbm_host_bidir'),
    'sramOnly': ('host_to_sram', 'sram_to_host', 'sram_host_bidir'),
}
# PCI sub-tests of either plugin -> direction of the manual's criteria
_MEMORY_PCI_DIRECTION = {key: way for s in ('pciOnly', 'sramOnly')
                         for key, way in zip(_SUBSET_TESTS[s], _DIRECTIONS)}
_PCI_DIRECTION = dict(zip(PCI_SUBTESTS, _DIRECTIONS))


class SwitchError(InputError):
    """A switch combination the hl_qual manual rules out."""


def hl_qual_args(generation, plugin, mode, subsets=(), bidirectional=False,
                 duration=0, size=0, pci_gen='', cards='all'):
    """hl_qual's switches, or SwitchError with the manual's reason."""
    checked_token(generation, 'generation', GENERATIONS)
    checked_token(plugin, 'plugin', PLUGINS)
    checked_token(mode, 'mode', MODES)
    for s in subsets:
        checked_token(s, 'subsets', SUBSETS)
    CARDS(cards, 'cards')

    args = [f'-{generation}', '-c', cards, '-rmod', mode]
    if plugin == 'mb':
        if duration or size or pci_gen:
            raise SwitchError('-t, -size and -gen are switches of the PCI '
                              'plugin (-p), not of the memory bandwidth '
                              'plugin (-mb)')
        if not subsets and mode == 'parallel':
            raise SwitchError('-mb without -memOnly, -pciOnly or -sramOnly '
                              'runs every test: "When a full mode run is '
                              'executed, the test must run in serial mode"')
        if set(subsets) & {'pciOnly', 'sramOnly'} and mode == 'parallel':
            why = ('"any combination of -memOnly that also includes '
                   '-sramOnly or -pciOnly must be run in serial mode"'
                   if 'memOnly' in subsets else
                   '"-sramOnly and -pciOnly must be run using serial mode '
                   '-rmod serial": the PCI link is common to all devices, '
                   'so parallel runs split its bandwidth and fail')
            raise SwitchError(f'-{" -".join(subsets)} in parallel mode: '
                              f'{why}')
        args += ['-mb', *(['-b'] if bidirectional else []),
                 *(f'-{s}' for s in subsets)]
        return args

    if subsets:
        raise SwitchError('-memOnly, -pciOnly and -sramOnly select tests of '
                          'the memory bandwidth plugin (-mb), not of -p')
    if duration < 0 or size < 0:
        raise SwitchError('-t and -size must be positive')
    if pci_gen:
        checked_token(pci_gen, 'pci_gen', PCI_GENS)
    args += ['-p', *(['-b'] if bidirectional else [])]
    args += ['-t', str(duration)] if duration else []
    args += ['-size', str(size)] if size else []
    args += ['-gen', pci_gen] if pci_gen else []
    return args


def expected_subtests(plugin, subsets, bidirectional):
    """The sub-tests a run with these switches must report."""
    if plugin == 'p':
        return [k for k in PCI_SUBTESTS
                if bidirectional or k != 'pci_bidirectional']
    keys = [k for s in (subsets or SUBSETS) for k in _SUBSET_TESTS[s]]
    return [k for k in keys if bidirectional or not k.endswith('_bidir')]


def criterion_for(plugin, key, pci_gen, width):
    """The manual's criterion for a sub-test, or None."""
    if plugin == 'p':
        return criterion('pci_plugin', _PCI_DIRECTION[key],
                         pci_gen or 'gen3', width)
    if key in _MEMORY_PCI_DIRECTION:
        return criterion('memory_plugin', _MEMORY_PCI_DIRECTION[key],
                         'gen3', width)
    return None


class HlQual(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """One hl_qual run over every card of a Gaudi node."""

    #: gaudi or gaudi2 (the -gaudi / -gaudi2 switch and the install folder).
    generation = variable(str, value='gaudi2')

    #: hl_qual executable; default /opt/habanalabs/qual/<generation>/bin/hl_qual.
    hl_qual = variable(str, value='')

    #: 'mb' (memory bandwidth plugin) or 'p' (PCI plugin).
    plugin = variable(str, value='mb')

    #: -rmod: serial or parallel.
    mode = variable(str, value='serial')

    #: Tests of the memory plugin: memOnly, pciOnly, sramOnly; none: all.
    subsets = variable(typ.List[str], value=[])

    #: -b: bidirectional tests too.
    bidirectional = variable(typ.Bool, value=True)

    #: PCI plugin: -t seconds per sub-test (0: hl_qual's 40 s).
    duration = variable(int, value=0)

    #: PCI plugin: -size bytes (0: hl_qual's default, 200 MB).
    size = variable(int, value=0)

    #: PCI plugin: -gen gen3|gen4; '' leaves it out (hl_qual assumes gen3).
    pci_gen = variable(str, value='')

    #: Lanes of the host link, for the criteria (the manual's -lanes
    #: switch has no documented value format, so it is not passed).
    pci_lanes = variable(int, value=16)

    #: -c: 'all' or one card's PCI bus id.
    cards = variable(str, value='all')
    input_policy = {
        'generation': inputs.TOKEN,
        'hl_qual': inputs.PATH,
        'plugin': inputs.TOKEN,
        'mode': inputs.TOKEN,
        'subsets': inputs.TOKENS,
        'bidirectional': inputs.FLAG,
        'duration': inputs.COUNT,
        'size': inputs.COUNT,
        'pci_gen': inputs.TOKEN,
        'pci_lanes': inputs.POSITIVE,
        'cards': inputs.CARDS,
    }

    num_tasks = 1
    tags = {'hl_qual', 'gaudi'}

    @run_before('run')
    def set_command(self):
        # the switches fail the test before its job script is written
        args = hl_qual_args(
            self.generation, self.plugin, self.mode, self.subsets,
            self.bidirectional, self.duration, self.size, self.pci_gen,
            self.cards)
        link_bandwidth(self.pci_gen or 'gen3', self.pci_lanes)
        exe = checked_path(self.hl_qual or f'/opt/habanalabs/qual/'
                           f'{self.generation}/bin/hl_qual', 'hl_qual',
                           must_exist=False)
        self.env_vars['__python_cmd'] = 'python3'
        # the report lands in the stage directory, one folder per test
        self.env_vars['HABANA_LOGS'] = '"$PWD/habana_logs"'
        self.prerun_cmds = [
            'mkdir -p "$HABANA_LOGS/qual"',
            f'if [ ! -x {shlex.quote(exe)} ]; then echo "hpcval: no hl_qual '
            f'at {exe} (set -S hl_qual=PATH)" >&2; exit 3; fi',
            # hl_qual reads its plugins and config files from its folder
            f'cd {shlex.quote(os.path.dirname(exe))}',
        ]
        # hl_qual drives every card itself: no MPI launcher in front
        self.job.launcher = getlauncher('local')()
        self.executable = shlex.quote(exe)
        self.executable_opts = args
        self.keep_files = ['habana_logs']

    def replay_inputs(self):
        return ('habana_logs/qual/*hl_qual_report*.log',)

    def _report(self):
        reports = sorted(glob.glob(os.path.join(
            self.stagedir, 'habana_logs', 'qual', '*hl_qual_report*.log')))
        if not reports:
            err = read_text(self.stderr.evaluate()).strip().splitlines()
            raise ParseError('no hl_qual report (*hl_qual_report*.log) in '
                             'habana_logs/qual' +
                             (f'; stderr: {err[-1]}' if err else ''))
        return read_text(reports[-1])

    def parse(self):
        if self.job.exitcode not in (0, None):
            raise ParseError(f'hl_qual exited with code {self.job.exitcode}'
                             f' (its verdict: failed); see habana_logs/qual')
        report = parse_hl_qual_report(
            self._report(),
            expected_subtests(self.plugin, self.subsets, self.bidirectional))
        if self.mode == 'serial':
            self._check_floors(report)
        return report

    def _check_floors(self, report):
        """Per device, the manual's criterion less 10% (serial mode only)."""
        for key, figures in report.figures.items():
            c = criterion_for(self.plugin, key, self.pci_gen, self.pci_lanes)
            for device, bw in figures if c else ():
                if bw < c.floor:
                    raise ParseError(f'{key}{" on " + device if device else ""}'
                                     f': {bw} GB/s is below the {c.describe()}')

    def metrics(self, report):
        return {key: (report.worst(key), 'GB/s') for key in report.figures}
