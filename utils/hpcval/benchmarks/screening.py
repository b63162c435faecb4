"""What a test records and guards when ReFrame's ``--distribute`` runs it
once per node (a node screen), for hpcval.screen to judge later: the
partition's nodes (``hpcval_partition_nodes``), why a multi-node layout is
not screened, every node of the job; submissions that cannot double; a
node failed, a job preempted or requeued (docs/screening.md, "Blame only
what is broken" and "A screen stopped, preempted, or wrong as a whole").
"""
import contextlib
import functools
import math
import os
import re
import secrets
import shlex
import subprocess
import time

import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, variable
from reframe.core.exceptions import (JobBlockedError, ReframeError,
                                     SanityError, SpawnedProcessError)
from reframe.utility import nodelist_abbrev, nodelist_expand

from hpcval import inputs
from hpcval.screen import NODE_FATES
from hpcval.benchmarks import fates
from hpcval.benchmarks.jobscript import NOTHING, Lines
from hpcval.benchmarks.lean_logging import LeanLogging

# node states in which a node takes a screening job (sinfo %T, long form);
# 'planned': the backfill scheduler holds it for a pending job, often the
# screen's own next one
_USABLE = {'idle', 'mixed', 'allocated', 'completing', 'planned'}
_JOBID = re.compile(r'[0-9]+')
_NODE = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,63}')
#: how long a failed submission waits for the controller to answer
#: before its queue is read (a stalled slurmctld: docs/screening.md)
RECONCILE_S = 120
#: how long the queue is watched once the controller answers again
SETTLE_S = 10
#: the comment that names one submission in Slurm's queue
SUBMISSION_TAG = 'hpcval-submission:'
#: a submission given up: its job, should the controller create it
#: later, leaves at once
ABANDONED = '.hpcval-submission-abandoned'
# sbatch's refusals of what it was asked (options, partition, account,
# QOS, time): usage errors of the run, never a node's failure
_REFUSED = re.compile(
    r'^sbatch: (?:error: )?(?!.*(Socket timed out|Unable to contact|Zero '
    r'Bytes|Transport endpoint))(.*([Ii]nvalid|[Uu]nrecognized|not '
    r'recognized|not a valid|Requested|violates|denied|not available|not '
    r'permitted|[Uu]nknown|[Uu]nable to allocate).*)$', re.MULTILINE)
# a controller that did not answer in time
_STALLED = re.compile(r'Socket timed out|Unable to contact slurm '
                      r'controller|Zero Bytes were transmitted|timed out '
                      r'after|[Tt]imeout', re.MULTILINE)
# node states of a node that failed (sinfo %T): down, failing, or not
# responding ('*' suffix)
_FAILED_NODE = re.compile(r'(down|fail|failing|not_responding)\b|\*$')
#: Slurm's job states that end a job submitted with --no-requeue, which
#: ReFrame's Slurm backend takes as pending
ENDED_UNREQUEUED = ('PREEMPTED',)
#: Slurm's states of a job requeued: hpcval cancels it, never waits
REQUEUED = ('REQUEUED', 'REQUEUE_HOLD', 'REQUEUE_FED')
# what Slurm's tools (srun in the job, ReFrame's sacct) say when the run,
# not the node, failed: its controller or accounting out of reach, srun
# refusing what the run asked for
_NOT_THE_NODE = (
    ('controller unreachable', re.compile(
        r'Unable to contact slurm controller|Socket timed out on send/recv|'
        r'slurm_load_(jobs|partitions|node) error|Zero Bytes were '
        r'transmitted or received')),
    ('accounting unreachable', re.compile(
        r'Problem talking to the database|slurmdbd|failed to open '
        r'persistent connection')),
    ('usage error', re.compile(
        r'\bsrun: error: (Invalid|invalid|Unable to allocate resources: '
        r'(Invalid|Requested|Job violates))|\bsrun: (unrecognized|invalid) '
        r'option')))


def slurm_cause(text):
    """[cause, ''] where Slurm's tools say in ``text`` that the run, not
    the node, failed; else []."""
    return next(([cause, ''] for cause, pattern in _NOT_THE_NODE
                 if pattern.search(text or '')), [])


def _slurm(cmd, timeout=30):
    """What a Slurm command printed, or None when it did not answer."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def _partition_option(options):
    words = [word for option in options for word in shlex.split(option)]
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
    """The nodes of the partition ``options`` name (else the default one),
    or {} when sinfo cannot tell."""
    partition = _partition_option(options)
    cmd = ['sinfo', '-h', '-N', '-o', '%N|%T|%E|%P']
    if partition:
        cmd += ['-p', partition]
    nodes, unavailable = [], {}
    for line in (_slurm(cmd, 60) or '').splitlines():
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
    """Every node of job ``jobid``'s allocation and steps (the allocation's
    alone may name only the batch host), or [] when sacct cannot tell."""
    if not _JOBID.fullmatch(str(jobid or '')):
        return []
    out = _slurm(['sacct', '-n', '-P', '-D', '-j', str(jobid), '-o',
                  'JobID,NodeList']) or ''
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


def queued_with_comment(comment):
    """Job ids in Slurm's queue whose comment is ``comment``, or None when
    squeue did not answer."""
    out = _slurm(['squeue', '-h', '-o', '%i|%k'], 20)
    if out is None:
        return None
    return [job for job, _, note in (line.partition('|') for line in
                                     out.splitlines())
            if note.strip() == comment and _JOBID.fullmatch(job.strip())]


def reconcile(comment, wait_s=RECONCILE_S, settle_s=SETTLE_S, every=1.0):
    """After a failed submission: ('cancelled', [job ids]) the controller
    made of it after all, ('none', []) when the queue held none for
    ``settle_s`` after it first answered, ('unknown', []) when it could not
    be read within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    answered, found = None, []
    while True:
        jobs = queued_with_comment(comment)
        now = time.monotonic()
        if jobs is not None:
            answered = answered or now
            for job in jobs:
                subprocess.run(['scancel', job], capture_output=True,
                               timeout=20, check=False)
            found += [j for j in jobs if j not in found]
            if now - answered >= settle_s:
                return ('cancelled', found) if found else ('none', [])
        elif answered is None and now >= deadline:
            return 'unknown', []
        time.sleep(every)


def submission_failure(err_text, outcome, jobs, wait_s=RECONCILE_S):
    """([cause, detail], the words) of a failed submission: a usage error,
    a stalled controller (with what reconciling the queue found), or
    sbatch's own message."""
    refused = _REFUSED.search(err_text)
    if refused:
        detail = f'sbatch refused the job: {refused.group(2)}'
        return ['usage error', detail], f'usage error: {detail}'
    found, more = {
        'cancelled': (f'the controller created job(s) {", ".join(jobs)} of '
                      f'it after all, cancelled', ' before they ran'),
        'none': ('no job of it in the queue', f' in the {SETTLE_S} s after '
                 f'the controller answered (a job made of it leaves at '
                 f'once: its submission was given up)'),
        'unknown': (f'the queue could not be read within {wait_s} s',
                    '; a job the controller creates of it later leaves at '
                    'once')}[outcome]
    errors = [line.strip() for line in err_text.splitlines()
              if line.strip().startswith('sbatch: error')]
    first = ' | '.join(dict.fromkeys(errors))[:300] or \
        ' '.join(err_text.split())[:300]
    if _STALLED.search(err_text):
        return ['controller stalled', found], (
            f'controller stalled: sbatch got no answer ({first}); '
            f'{found}{more}; no node is charged')
    return ['sbatch failed', found], f'sbatch failed: {first}; {found}{more}'


def node_states(nodes, failed=False):
    """{node: 'state: reason'} of ``nodes`` (``failed``: only those down,
    failing or not responding), or {} when sinfo cannot tell."""
    nodes = [n for n in nodes if _NODE.fullmatch(n)]
    if not nodes:
        return {}
    out = _slurm(['sinfo', '-h', '-N', '-n', ','.join(nodes), '-o',
                  '%N|%T|%E']) or ''
    found = {}
    for line in out.splitlines():
        node, _, rest = line.partition('|')
        state, _, reason = (w.strip() for w in rest.partition('|'))
        if node in nodes and (not failed or
                              _FAILED_NODE.search(state.lower())):
            found[node] = (f'{state}: {reason}'
                           if reason not in ('', 'none') else state)
    return found


def time_limit_for(expected_s):
    """A screen job's time limit: three times the benchmark's expected
    duration and half a minute to start, in whole minutes, at least one."""
    minute = fates.SLURM_MIN_TIME_LIMIT
    return max(minute, math.ceil((3 * expected_s + 30) / minute) * minute)


_SUBCLASSES = {}


def _extend(obj, flag, make):
    """Give ``obj`` the subclass ``make(its class)`` (made once) with
    ``flag`` set, unless its class has ``flag``."""
    base = type(obj)
    if getattr(base, flag, False):
        return
    cls = _SUBCLASSES.get((base, flag))
    if cls is None:
        cls = _SUBCLASSES[base, flag] = make(base)
        setattr(cls, flag, True)
        cls.__name__ = cls.__qualname__ = base.__name__
        cls.__module__ = base.__module__
    obj.__class__ = cls


def cache_job_nodelist(job):
    """Make ``job`` ask Slurm for its node list once it ended (ReFrame asks
    on every read: 19 times a job in a screen, tests/bench_screen.py)."""
    found = getattr(type(job), 'nodelist', None)
    if not isinstance(found, property):
        return
    from reframe.core.schedulers.slurm import slurm_state_completed

    def make(base):
        # a class statement: ReFrame's job metaclass prepares its namespace
        class Cached(base):
            @property
            def nodelist(self):
                cached = self.__dict__.get('_hpcval_nodelist')
                if cached is not None:
                    return cached
                nodes = found.fget(self)
                if self.state and slurm_state_completed(self.state):
                    self.__dict__['_hpcval_nodelist'] = nodes
                return nodes
        return Cached
    _extend(job, '_hpcval_cached', make)


def requeued(job):
    """Whether Slurm requeued ``job`` (any of its records)."""
    return any(s in REQUEUED for s in (job.state or '').split(','))


def _ended_unrequeued(job):
    from reframe.core.schedulers.slurm import slurm_state_completed

    states = (job.state or '').split(',')
    if requeued(job):       # cancelled: Slurm would run it again
        if _JOBID.fullmatch(str(job.jobid)):
            subprocess.run(['scancel', str(job.jobid)], capture_output=True,
                           timeout=20, check=False)
        return True
    return '--no-requeue' in job.options and \
        any(s in ENDED_UNREQUEUED for s in states) and \
        all(s in ENDED_UNREQUEUED or slurm_state_completed(s)
            for s in states)


def _record_fate(job, fate):
    record = job.__dict__.get('_hpcval_record')
    if record is not None:
        record(fate)


def end_preempted(job, record=None):
    """Make ``job``'s scheduler take it as ended once preempted unrequeued
    or requeued (cancelled), which ReFrame would poll forever;
    ``record([cause, detail])`` keeps a job blocked or sacct unreachable."""
    sched = job.scheduler
    job.__dict__['_hpcval_record'] = record
    # every record of a job: a requeued one's first shows it (sacct -D)
    if isinstance(getattr(sched, '_sacct', None), str) and \
            '-D' not in sched._sacct.split():
        sched._sacct += ' -D'

    def make(base):
        class Ending(base):
            def finished(self, job):
                done = super().finished(job) or _ended_unrequeued(job)
                if done and isinstance(job.exception, JobBlockedError):
                    # the pinned node's state now says why it took no job
                    _record_fate(job, ['blocked', ', '.join(
                        node_states(job.pin_nodes).values())])
                return done

            def poll(self, *jobs):
                try:
                    return super().poll(*jobs)
                except SpawnedProcessError as err:
                    for job in jobs:
                        _record_fate(job, slurm_cause(err.stderr) or
                                     ['accounting unreachable', ''])
                    raise
        return Ending
    _extend(sched, '_hpcval_ends_preempted', make)


def _write_marker(path):
    # the stage folder gone (OSError): its job script is gone too
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW,
                         0o600))


class ScreenRecord(LeanLogging):
    """The records above, kept in a ``--distribute`` run on Slurm."""

    #: The partition's nodes at run time, in a node screen: {'partition':
    #: P, 'nodes': 'n[1-64]', 'unavailable': {node: 'drained: reason'}}.
    hpcval_partition_nodes = variable(typ.Dict[str, object], value={},
                                      loggable=True)

    #: How the job ended, as the run learned it: [cause, detail], cause a
    #: Slurm job state (sacct) or the run's own (hpcval.screen.NOT_TESTED).
    hpcval_job_fate = variable(typ.List[str], value=[], loggable=True)

    #: Why this test is not part of a node screen ('' when it is).
    hpcval_screen_excluded = variable(str, value='', loggable=True)
    #: how -S values of these variables are checked (hpcval.inputs)
    input_policy = {
        **dict.fromkeys(('hpcval_partition_nodes', 'hpcval_screen_excluded',
                         'hpcval_job_nodes', 'hpcval_job_fate'),
                        inputs.RECORD),
        **dict.fromkeys(('screen_expected_s', 'screen_time_limit'),
                        inputs.POSITIVE)}

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
        # every Slurm check of a screen, hpcval's steps or not, asks for
        # its node list once (cache_job_nodelist)
        if self._on_slurm():
            cache_job_nodelist(self.job)
            if '--no-requeue' not in self.job.options:
                self.job.options += ['--no-requeue']
            end_preempted(self.job, functools.partial(
                setattr, self, 'hpcval_job_fate'))

    def submit_once(self):
        """Job-script step: tag the job, guard its script with its first
        command, and reconcile a failed sbatch with the queue."""
        if not self._on_slurm() or self.is_dry_run():
            return NOTHING
        comment = SUBMISSION_TAG + secrets.token_hex(8)
        marker = os.path.join(self.stagedir, ABANDONED)
        self.job.options += [f'--comment={comment}']
        guard = (f'if [ -e {shlex.quote(marker)} ]; then echo "hpcval: this '
                 f'submission was given up after sbatch failed; not run" '
                 f'>&2; exit 3; fi')
        job, submit = self.job, self.job.submit

        def submit_reconciled():
            try:
                return submit()
            except Exception as err:    # sbatch refused, failed or hung
                _write_marker(marker)
                text = f'{err} {getattr(err, "stderr", "") or ""}'
                if _REFUSED.search(text):
                    outcome, jobs = 'none', []
                else:
                    outcome, jobs = reconcile(comment)
                self.hpcval_job_fate, words = submission_failure(
                    text, outcome, jobs)
                raise ReframeError(words) from None
        job.submit = submit_reconciled
        return Lines(before=(guard,))

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
        """Every node of the job; a node that failed under it fails the
        case here, named with Slurm's reason, before its output is read."""
        if not self._on_slurm() or self.is_dry_run():
            return
        self.hpcval_job_nodes = slurm_job_nodes(self.job.jobid)
        state = (self.job.state or '').split()[0] if self.job.state else ''
        if state == 'COMPLETED':
            return
        nodes = self.hpcval_job_nodes or list(self.job.nodelist or ())
        state = 'REQUEUED' if requeued(self.job) else state
        self.hpcval_job_fate = slurm_cause(self._stage_text(
            self.stderr.evaluate(), 65536)) or [state, '']
        if state in ENDED_UNREQUEUED + ('REQUEUED',):   # whatever it wrote
            raise SanityError(f'job {self.job.jobid} on {",".join(nodes)} '
                              f'{state}: {fates.FATES[state]}')
        down = node_states(nodes, failed=True)
        if state in NODE_FATES or down:
            named = '; '.join(f'{n} {why}' for n, why in down.items())
            raise SanityError(
                f'job {self.job.jobid} on {",".join(nodes) or "its node"} '
                f'{state or "ended"}: a node failed under the job'
                + (f' (Slurm: {named})' if named else ''))

    @run_after('setup')
    def record_partition_nodes(self):
        if self._screened():
            self.hpcval_partition_nodes = slurm_partition_nodes(
                tuple(self.current_partition.access))

    def exclude_multinode_from_screen(self):
        """Job-script step: a layout of several nodes is skipped in a
        screen (the other node would be blamed on the pinned one)."""
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
