"""What a test records when ReFrame's ``--distribute`` runs it once per node
(a node screen), for hpcval.screen to judge coverage later, anywhere:

- ``hpcval_partition_nodes``: the partition's nodes as Slurm lists them at
  run time (``sinfo``), ``{'partition': P, 'nodes': 'n[1-64]',
  'unavailable': {node: 'drained: reason', ...}}``;
- ``hpcval_screen_excluded``: why a multi-node layout is not screened.  A
  test that needs more than one node, pinned to one node, would also run
  on another and blame the pinned one; it is skipped with this reason.
"""
import functools
import itertools
import math
import re
import shlex
import subprocess

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, variable
from reframe.utility import nodelist_abbrev, nodelist_expand

from hpcval import inputs
from hpcval.benchmarks.jobscript import NOTHING

# node states in which a node takes a screening job (sinfo %T, long form);
# 'planned': the backfill scheduler holds it for a pending job, often the
# screen's own next one
_USABLE = {'idle', 'mixed', 'allocated', 'completing', 'planned'}
_JOBID = re.compile(r'[0-9]+')
_NODE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,63}')
#: Slurm counts time limits in whole minutes
_MINUTE = 60


def _partition_option(options):
    words = list(itertools.chain.from_iterable(shlex.split(o)
                                               for o in options))
    for i, word in enumerate(words):
        if word.startswith('--partition='):
            return word.split('=', 1)[1]
        if word in ('-p', '--partition') and i + 1 < len(words):
            return words[i + 1]
        if word.startswith('-p') and len(word) > 2:
            return word[2:]
    return None


@functools.lru_cache(maxsize=None)
def slurm_partition_nodes(options):
    """The nodes of the Slurm partition named in ``options`` (a job's
    ``--partition``; else the default partition), or {} when sinfo cannot
    tell."""
    partition = _partition_option(options)
    cmd = ['sinfo', '-h', '-N', '-o', '%N|%T|%E|%P']
    if partition:
        cmd += ['-p', partition]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True,
                             timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return {}

    nodes, unavailable = [], {}
    for line in out.splitlines():
        parts = line.split('|')
        if len(parts) != 4:
            continue
        node, state, reason, part = parts
        if not partition and not part.endswith('*'):
            continue        # not the default partition
        if node in nodes:
            continue
        nodes.append(node)
        state = state.rstrip('*~#!%$@^-')
        if state not in _USABLE:
            unavailable[node] = (f'{state}: {reason}'
                                 if reason and reason != 'none' else state)
    if not nodes:
        return {}

    return {'partition': partition or part.rstrip('*'),
            'nodes': nodelist_abbrev(nodes), 'unavailable': unavailable}


def slurm_job_nodes(jobid):
    """Every node of job ``jobid`` as Slurm's accounting records it: its
    allocation and every step's nodes (the allocation's record alone has
    been seen naming only the batch host of a two-node job whose step ran
    on both), or [] when sacct cannot tell."""
    if not _JOBID.fullmatch(str(jobid or '')):
        return []
    try:
        out = subprocess.run(['sacct', '-n', '-P', '-j', str(jobid),
                              '-o', 'JobID,NodeList'], capture_output=True,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    nodes = []
    for line in out.splitlines():
        step, _, spec = line.strip().partition('|')
        if step.split('.')[0] != str(jobid) or not spec or \
                spec.startswith('None'):
            continue
        try:
            found = nodelist_expand(spec)
        except Exception:       # not Slurm's syntax: nothing trusted
            return []
        if not all(_NODE.fullmatch(n) for n in found):
            return []
        nodes += [n for n in found if n not in nodes]
    return nodes


def time_limit_for(expected_s):
    """A screen job's time limit: three times the benchmark's expected
    duration and half a minute to start, in whole minutes, at least one."""
    return max(_MINUTE,
               math.ceil((3 * expected_s + 30) / _MINUTE) * _MINUTE)


class ScreenRecord(rfm.RegressionTestPlugin):
    """Mixin of hpcval's benchmark bases: the records above, only in a
    ``--distribute`` run on a Slurm partition."""

    #: The partition's nodes at run time, in a node screen (see above).
    hpcval_partition_nodes = variable(typ.Dict[str, object], value={},
                                      loggable=True)

    #: Why this test is not part of a node screen ('' when it is).
    hpcval_screen_excluded = variable(str, value='', loggable=True)
    #: how -S values of these variables are checked (hpcval.inputs)
    input_policy = {
        'hpcval_partition_nodes': inputs.RECORD,
        'hpcval_screen_excluded': inputs.RECORD,
        'hpcval_job_nodes': inputs.RECORD,
        'screen_expected_s': inputs.POSITIVE,
        'screen_time_limit': inputs.POSITIVE,
    }

    #: Every node the job ran on, from Slurm's accounting (see above).
    hpcval_job_nodes = variable(typ.List[str], value=[], loggable=True)

    #: The benchmark's expected duration on one node, in seconds (None:
    #: unknown, the job keeps its time limit in a screen).
    screen_expected_s = variable(float, int, type(None), value=None)

    #: A screen job's time limit in seconds (None: from
    #: ``screen_expected_s``); -S screen_time_limit=600 gives a slow node
    #: more.
    screen_time_limit = variable(int, type(None), value=None)

    def _on_slurm(self):
        return not self.local and \
            self.current_partition.scheduler.registered_name in ('slurm',
                                                                 'squeue')

    def _screened(self):
        return hasattr(self, '.nid') and self._on_slurm()

    @run_before('run')
    def no_requeue(self):
        if self._on_slurm() and '--no-requeue' not in self.job.options:
            self.job.options += ['--no-requeue']

    @run_before('run')
    def screen_limit(self):
        if not self._screened():
            return
        limit = self.screen_time_limit
        if limit is None and self.screen_expected_s:
            limit = time_limit_for(self.screen_expected_s)
        if limit is not None:
            self.time_limit = limit

    @run_before('sanity')
    def record_job_nodes(self):
        if self._on_slurm() and not self.is_dry_run():
            self.hpcval_job_nodes = slurm_job_nodes(self.job.jobid)

    @run_after('setup')
    def record_partition_nodes(self):
        if self._screened():
            self.hpcval_partition_nodes = slurm_partition_nodes(
                tuple(self.current_partition.access))

    def exclude_multinode_from_screen(self):
        """Job-script step: a layout of several nodes is skipped in a
        screen; it adds no line."""
        if not self._screened() or self.is_dry_run():
            return NOTHING
        per_node = self.num_tasks_per_node or self.num_tasks
        if self.num_tasks and per_node and self.num_tasks > per_node:
            self.hpcval_screen_excluded = (
                f'needs {-(-self.num_tasks // per_node)} nodes: a node '
                f'screen pins one node per test case, so the other node '
                f'would be blamed on it; run it without --distribute')
            self.skip(self.hpcval_screen_excluded)
        return NOTHING
