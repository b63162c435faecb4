"""The node's health as a test of its own: the probe alone, its record judged
as ``hpcval verdict`` judges it (hpcval.health.report)."""
import shutil

import reframe as rfm
import reframe.core.runtime as rt
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before

from hpcval import features as ft, records, suites
from hpcval.benchmarks.base import ParsedBenchmark
from hpcval.health import probe
from hpcval.health.report import failure_lines
from hpcval.parsers import ParseError


def _judged_here(part):
    """Whether ``part`` (a ReFrame SystemPartition) gets a health test."""
    if part.extras.get('replay'):
        return False        # a replay has no node to ask
    if set(ft.GPU_FEATURES) & set(part.features):
        return True
    return part.scheduler.registered_name == 'local' and \
        any(shutil.which(tool) for tool in probe.TOOLS)


class NodeHealth(ParsedBenchmark, rfm.RunOnlyRegressionTest):
    """The health probe alone, judged as ``hpcval verdict`` judges it."""

    # chosen per partition at init (select_partitions)
    valid_systems, valid_prog_environs = [], []
    executable = 'true'
    num_tasks = 1
    num_tasks_per_node = 1
    # the sampler measures a GPU under a benchmark's load: none here
    health_sampler = False
    tags = {'health'}

    def suites(self):
        return {suites.QUICK_TAG, suites.SCREEN_TAG}

    @run_before('sanity')
    def sanity_is_health(self):
        # a sanity failure here is the health record's judgement; a record
        # the test writes itself, never an input (inputs.RECORD)
        self.hpcval_sanity_is_health = True

    @run_after('init')
    def select_partitions(self):
        # by feature, or where the tool answers on this host; one case per
        # partition, in its first environment
        system = rt.runtime().system
        parts = [p for p in system.partitions if _judged_here(p)]
        self.valid_systems = [p.fullname for p in parts]
        self.valid_prog_environs = sorted(
            {p.environs[0].name for p in parts if p.environs})

    @run_before('run')
    def refuse_without_probe(self):
        self.skip_if(not self.health_probe,
                     '-S health_probe=no: the node\'s health is not judged')
        # the probe is the job's own script: no launcher in front of it
        self.job.launcher = getlauncher('local')()

    def parse(self):
        record = records.decode('health', self.hpcval_health)
        if record is None:
            raise ParseError('the health probe left no record '
                             f'({probe.PREFIX}node.txt missing)')
        lines = failure_lines(record, self.current_system.name,
                              self.current_partition.name)
        if lines:
            raise ParseError('; '.join(lines))
        return record

    def metrics(self, result):
        return {}

    def _busy_note(self):
        return ''       # the probe's verdict does not depend on load
