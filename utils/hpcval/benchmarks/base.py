"""The parse-once pattern every hpcval check shares: a ParseError becomes
a sanity failure with the parser's and stderr's reasons."""
import functools
import os
import re
import shlex

import reframe.core.runtime as rt
import reframe.utility.osext as osext
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import (run_after, run_before, sanity_function,
                                   variable)
from reframe.core.exceptions import SanityError

from hpcval import (features, inputs, preflight, provenance, records,
                    reference_service, replay, stacks, units)
from hpcval.layouts import gpu_count
from hpcval.benchmarks import fates, nodeuse
from hpcval.benchmarks.container import ContainerRun, image_of
from hpcval.benchmarks.jobscript import NOTHING, Lines
from hpcval.health import probe as health_probe
from hpcval.health import report as health_report
from hpcval.benchmarks.screening import ScreenRecord
from hpcval.benchmarks.source import SourceSettings
from hpcval.parsers import ParseError
from hpcval.parsers.common import read_text, stderr_reason

_WHERE_UNUSABLE = f'+{features.UNUSABLE}'
_GPU_SPECS = {f'+{f}' for f in features.GPU_FEATURES}

#: launchers that are programs of their own, asked for their version
LAUNCHER_PROGRAMS = ('srun', 'mpirun', 'mpiexec', 'jsrun')
#: figures out of range a sanity failure names, the rest counted
SHOWN_OUT_OF_RANGE = 8


@functools.lru_cache(maxsize=None)
def _suite_files():
    return sorted({os.path.basename(f)
                   for f in reference_service.check_files()})


class ParsedBenchmark(ScreenRecord, SourceSettings, ContainerRun):
    """Mixin: subclasses give ``parse()`` (raising ParseError) and
    ``metrics(result)`` (``{name: (value, unit)}``)."""

    #: The job script's steps, in this order whatever the order of the bases
    JOB_SCRIPT_STEPS = ('exclude_multinode_from_screen', 'submit_once',
                        'stage_replay',
                        'record_provenance', 'load_stack', 'add_health_probe',
                        'run_in_container')

    #: In a replay of an excerpt: what the recording left out (hpcval.replay)
    replay_excerpt = ''
    #: Metrics logged on purpose, not health signals: {regex: why}
    #: (docs/verdict.md)
    diagnostics = {}
    #: Metrics the tool prints as 0 by design, {regex: why}; any other
    #: time or rate of 0 fails sanity (hpcval.units.outside_range).
    zero_readings = {}

    # The records of the run report that readers read (docs/verdict.md):
    #: the figures' data (hpcval.plotdata)
    hpcval_plot_data = variable(dict, value={})
    #: {metric: the component it measures} ('GPU 1', 'link GPU 00 -> GPU 01')
    hpcval_components = variable(dict, value={})
    #: the GPUs the output showed measured, kept through a sanity failure;
    #: None for a check of the whole node
    hpcval_measured_gpus = variable(typ.List[int], type(None), value=None)
    #: {metric: why no reference judges it}
    hpcval_unjudged = variable(dict, value={})
    #: what the node ran with (hpcval.provenance)
    hpcval_provenance = variable(dict, value={})
    #: this test's class and its non-ReFrame bases, nearest first
    hpcval_lineage = variable(typ.List[str], value=[])
    #: the file names of the suite's check files where it ran
    hpcval_suite = variable(typ.List[str], value=[])
    #: the case failed for its node's health record alone
    hpcval_sanity_is_health = variable(bool, value=False)
    #: ``-S health_probe=no`` leaves the health probe out (docs/health.md),
    #: ``-S health_sampler=no`` only its 1 Hz GPU sampler
    health_probe = variable(typ.Bool, value=True)
    health_sampler = variable(typ.Bool, value=True)
    #: the health probe's record (hpcval.records.Health)
    hpcval_health = variable(dict, value={})
    #: the node's load at job start (hpcval.benchmarks.nodeuse)
    hpcval_node_load = variable(dict, value={})
    input_policy = {
        **dict.fromkeys(('hpcval_plot_data', 'hpcval_components',
                         'hpcval_measured_gpus', 'hpcval_unjudged',
                         'hpcval_provenance', 'hpcval_lineage', 'hpcval_suite',
                         'hpcval_sanity_is_health', 'hpcval_health',
                         'hpcval_node_load'), inputs.RECORD),
        'health_probe': inputs.FLAG, 'health_sampler': inputs.FLAG}

    def require_features(self, *features):
        """Add ``+feature`` to every ``valid_systems`` spec."""
        # a listing where unusable is skipped there whatever else it needs
        self.valid_systems = [
            spec if _WHERE_UNUSABLE in spec.split() else
            ' '.join([spec, *(f'+{f}' for f in features
                              if f'+{f}' not in spec.split())])
            for spec in self.valid_systems
        ]

    @run_after('init')
    def list_where_unusable(self):
        # a GPU check is also listed on a partition that names environments
        # it cannot use, to skip there naming why (Validation)
        self.valid_systems = [*self.valid_systems, *(
            ' '.join([*(w for w in spec.split() if w not in _GPU_SPECS),
                      _WHERE_UNUSABLE])
            for spec in self.valid_systems if _GPU_SPECS & set(spec.split()))]

    def replay_inputs(self):
        """Globs of stage files ``parse()`` reads besides stdout/err."""
        return ()

    def parse(self):
        raise NotImplementedError

    def metrics(self, result):
        raise NotImplementedError

    def figure_data(self, result):
        """The figures' data of ``result`` (plain JSON); {}: none."""
        return {}

    def components(self, result, values):
        """{metric: component} of metrics of a GPU, GPU pair or link."""
        return {}

    def measured_gpus(self):
        """GPU numbers whose figures the output holds; None: the whole node.

        May raise ParseError or OSError for an output that shows no GPU."""
        return None

    def provenance_of_output(self, result):
        """Versions the benchmark printed itself ({key: value})."""
        return {}

    def suites(self):
        """The suites (hpcval.suites' tags) this test belongs to."""
        return set()

    @run_after('init')
    def join_suites(self):
        self.tags = self.tags | self.suites()

    @run_after('init')
    def record_lineage(self):
        self.hpcval_lineage = [c.__name__ for c in type(self).__mro__
                               if not c.__module__.startswith(
                                   ('reframe.', 'builtins'))]
        self.hpcval_suite = _suite_files()

    def record_provenance(self):
        """Step: the node's load and the versions it runs with, first."""
        if replay.active(self):
            return NOTHING
        stack = stacks.for_run(self)
        return Lines(before=(*nodeuse.measurement_commands(self),
                             provenance.command(*self._started_with(), (
                                 stack.provenance_probes() if stack else []))))

    def _started_with(self):
        """(benchmark's program, launcher's program) for MPI provenance."""
        try:
            exe = shlex.split(self.executable or '')[:1]
        except ValueError:
            exe = []
        if image_of(self):      # its libraries are the image's
            exe = []
        launcher = getattr(type(self.job.launcher), 'registered_name', '')
        return (exe[0] if exe else '',
                launcher if launcher in LAUNCHER_PROGRAMS else '')

    @run_after('init')
    def use_whole_nodes(self):
        # a measurement shares its nodes with no other job
        self.exclusive_access = True

    def gpus_or_skip(self, count=0):
        """``count``, else the partition's GPUs; the test skips without any."""
        count = count or gpu_count(self.current_partition)
        self.skip_if(count == 0, 'the partition declares no GPU devices')
        return count

    def uses_gpus(self):
        """Whether the test selects GPU partitions (its sampler runs)."""
        return any(_GPU_SPECS & set(spec.split())
                   for spec in self.valid_systems)

    def add_health_probe(self):
        """Step: the health probe last, closest to the benchmark."""
        if replay.active(self) or not self.health_probe:
            return NOTHING
        health_probe.write(self.stagedir)
        return Lines(after=tuple(health_probe.commands(
                         self.health_sampler and self.uses_gpus(),
                         self.prerun_cmds)),
                     keep=(f'{health_probe.PREFIX}*',))

    def _exit_status(self):
        code = self.job.exitcode
        return f' (exit code {code})' if code not in (0, None) else ''

    @run_after('init')
    def register_loaded(self):
        preflight.check_this_command_line()     # a narrowed mode runs none
        reference_service.register(self)

    @run_before('setup')
    def check_reference_entries(self):
        # every test is loaded by now: an entry meant for this check that
        # matches none of them (a misspelt where, say) fails it here
        reference_service.check_loaded(self)

    @run_after('setup')
    def label_replay(self):
        if replay.active(self):
            replay.label(self)

    def load_stack(self):
        """Step: the site's software stack, before the prerun commands."""
        stack = None if replay.active(self) else stacks.for_run(self)
        return Lines(before=tuple(stack.load_commands(
            rt.runtime().modules_system))) if stack else NOTHING

    def stage_replay(self):
        """Step: in a replay, the recording in place of the benchmark."""
        if replay.active(self):
            replay.stage(self)
        return NOTHING

    @run_before('run', always_last=True)
    def assemble_job_script(self):
        # each step's lines around the prerun, steps in their order
        added = [getattr(self, name)() for name in self.JOB_SCRIPT_STEPS]
        self.prerun_cmds = [*(c for a in added for c in a.before),
                            *self.prerun_cmds,
                            *(c for a in added for c in a.after)]
        self.keep_files = [*self.keep_files,
                           *(f for a in added for f in a.keep)]

    @run_before('run')
    def refuse_short_time_limit(self):
        fates.check_time_limit(self)

    def _once(self, attr, compute):
        if not hasattr(self, attr):
            # output paths are relative to the stage directory, the working
            # directory of sanity but not of the hooks before performance
            with osext.change_dir(self.stagedir):
                setattr(self, attr, compute())
        if isinstance(getattr(self, attr), SanityError):
            raise getattr(self, attr)
        return getattr(self, attr)

    @property
    def result(self):
        """The output, parsed once; SanityError when it lacks a figure."""
        return self._once('_parsed', self._parse_once)

    def _parse_once(self):
        # how Slurm ended the job comes first: the output's faults follow
        fate = fates.job_fate(self.job)
        if fate:        # with the error Slurm's own tools said, if any
            why = fates.slurm_error(
                self._stage_text(self.stderr.evaluate(), 65536))
            fate = f'{fate} ({why}); ' if why else f'{fate}; '
        try:
            return self.parse()
        except ParseError as err:
            return SanityError(f'{fate}{err}{self._exit_status()}'
                               f'{self._stderr_note(fate + str(err))}'
                               f'{self._busy_note()}')
        except FileNotFoundError as err:
            missing = err.filename or ''
            return SanityError(f'{fate}output file missing: {missing}'
                               f'{self._exit_status()}'
                               f'{self._stderr_note(fate + missing)}')

    def _read_node_load(self):
        return nodeuse.read(self._stage_text(nodeuse.LOAD_FILE, 65536))

    def _busy_note(self):
        load = self._read_node_load()
        return f'; the node was busy: {load.why}' if load and load.busy else ''

    def _stderr_note(self, reason):
        """'; stderr: <why>' from the job's stderr, unless already said."""
        try:
            why = stderr_reason(read_text(self.stderr.evaluate()))
        except OSError:
            return ''
        return f'; stderr: {why}' if why and why not in reason else ''

    @sanity_function
    def validate_output(self):
        # first: what the node ran with is worth keeping when sanity fails
        self.hpcval_provenance = provenance.read(
            self._stage_text(provenance.FILE))
        self.hpcval_health = records.builtins(health_probe.read(self.stagedir))
        self.hpcval_node_load = records.builtins(self._read_node_load())
        try:
            with osext.change_dir(self.stagedir):
                found = self.measured_gpus()
        except (ParseError, OSError, ValueError):
            found = ()      # the parse says why
        self.hpcval_measured_gpus = None if found is None else \
            sorted(set(found))
        # the image's digest, or why the run from it cannot be trusted
        self.hpcval_provenance = {**self.hpcval_provenance,
                                  **self.container_record()}
        self.result     # noqa: B018 (parses, or raises the reason)
        if self.job.exitcode not in (0, None):
            raise SanityError(f'the benchmark printed complete results but '
                              f'exited with code {self.job.exitcode}')

        self.figures    # noqa: B018 (or raises the figure out of range)
        return True

    @property
    def figures(self):
        """``metrics(result)`` once; SanityError naming impossible ones."""
        return self._once('_figures', self._checked_figures)

    def _checked_figures(self):
        result = self.result
        try:
            values = self.metrics(result)
        except ParseError as err:
            return SanityError(f'{err}{self._exit_status()}')

        wrong = out_of_range(values, self.zero_readings)
        if len(wrong) > SHOWN_OUT_OF_RANGE:     # a reason stays one line
            wrong[SHOWN_OUT_OF_RANGE:] = [
                f'and {len(wrong) - SHOWN_OUT_OF_RANGE} more']
        return SanityError('; '.join(wrong)) if wrong else values

    @run_before('performance')
    def publish_metrics(self):
        if self.is_dry_run():       # nothing ran, nothing was parsed
            return

        values = self.figures
        self.hpcval_plot_data = self.figure_data(self.result)
        reference_service.check_metrics(self, values)
        if self.replay_excerpt:     # figures the excerpt does not show
            values = {name: vu for name, vu in values.items()
                      if vu[0] is not None}
        self.perf_variables = {
            name: sn.make_performance_function(sn.defer(value), unit)
            for name, (value, unit) in values.items()
        }
        found = self._references({name: unit
                                  for name, (_, unit) in values.items()})
        self.reference = {self.current_partition.fullname: found}
        self.hpcval_unjudged = reference_service.unjudged(
            self, [name for name in values if name not in found],
            self.diagnostics)
        self.hpcval_components = dict(self.components(self.result, values))
        self.hpcval_provenance = {**self.hpcval_provenance,
                                  **self.provenance_of_output(self.result)}

    @run_after('performance')
    def fail_on_node_health(self):
        # as the verdict does (docs/health.md); after performance, so that
        # the figures are logged.  ReFrame runs the performance stage dry
        # after a failure, to log what it can: the case failed already, and
        # not for its health alone
        if self.is_dry_run():
            return
        try:
            record = records.decode('health', self.hpcval_health)
        except records.Unreadable as err:
            raise SanityError(str(err)) from None
        lines = health_report.failure_lines(
            record, self.current_system.name, self.current_partition.name,
            '+'.join(self.job.nodelist or ()))
        if lines:
            self.hpcval_sanity_is_health = True
            raise SanityError('; '.join(lines))

    def _references(self, metric_units):
        return reference_service.for_test(self, metric_units)


def out_of_range(values, zero_readings):
    """Why each of ``values`` cannot have been measured (None: not)."""
    def zero_ok(name):
        return any(re.fullmatch(regex, name.partition('@')[0])
                   for regex in zero_readings)

    found = (units.outside_range(name, value, unit, zero_ok(name))
             for name, (value, unit) in values.items() if value is not None)
    return [why for why in found if why]
