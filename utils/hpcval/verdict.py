"""``hpcval verdict``: is the system healthy, and if not, what is not
(docs/verdict.md: what it counts and names, its exit statuses; what the
checks record beside their figures: hpcval.records)."""
import json
import re
import shlex
from collections import Counter
from dataclasses import asdict, dataclass, field, replace

from hpcval import (drain, judgement, records, retries, screen, suites,
                    verdict_refs)
from hpcval.datasheets import gpu_indices as _gpu_indices
from hpcval.health import report as health
from hpcval.judgement import INPUT, Band, Failure, num as _num
from hpcval.verdict_refs import DATASHEET, with_datasheets

# 3 is the monitoring plugins' UNKNOWN (Nagios, Icinga, Naemon)
EXIT_OK, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INPUT = 0, 1, 2, 3
# a node screen whose every node passed, at a wider bound than the target
EXIT_WIDER = 4
STATUS = {EXIT_OK: 'PASSED', EXIT_FAILED: 'FAILED',
          EXIT_INCOMPLETE: 'INCOMPLETE', EXIT_INPUT: 'UNKNOWN',
          EXIT_WIDER: 'PASSED AT A WIDER BOUND'}
# provenance keys in the order they are shown
PROVENANCE_KEYS = ('gpu', 'driver', 'cuda', 'rocm', 'nccl', 'rccl', 'mpi',
                   'kernel', 'cpu', 'spack')


@dataclass
class Group:
    """The verdict's counts for one system and partition."""
    system: str
    partition: str
    cases_passed: int = 0
    cases_failed: int = 0
    cases_skipped: int = 0
    judged_passed: int = 0
    judged_failed: int = 0
    logged: int = 0           # figures without a reference
    diagnostic: int = 0       # figures logged on purpose (declared)
    failures: list = field(default_factory=list)
    # failed on its first run, passed its re-measure (hpcval.retries)
    intermittent: list = field(default_factory=list)
    skips: list = field(default_factory=list)       # (test, reason)
    unjudged: list = field(default_factory=list)    # (test, metric, why)
    nodes: list = field(default_factory=list)
    provenance: dict = field(default_factory=dict)  # key: [values]
    node_provenance: dict = field(default_factory=dict)  # {node: {key: v}}
    sessions: int = 0
    replays: int = 0
    # a node screen (hpcval.screen): its Coverage, peer-judged figures,
    # (test, metric, unit, node, value, median, mark) rows, Reach per
    # figure, and the one reason every node's job failed with
    coverage: object = None
    peer_judged: int = 0
    per_node: list = field(default_factory=list)
    reach: list = field(default_factory=list)
    same_failure: str = ''
    # the nodes' health (hpcval.health): what changed, information, and
    # {node: [{index, model, uuid, serial, vbios, bus_id}]}
    changes: list = field(default_factory=list)
    infos: list = field(default_factory=list)
    gpus: dict = field(default_factory=dict)
    # the reference file that judged, its stated false-alarm rate, and
    # each figure whose report bound differs (hpcval.verdict_refs.Cross)
    references: str = ''
    false_alarms: str = ''
    crosschecks: list = field(default_factory=list)
    datasheet: list = field(default_factory=list)   # Cross by a datasheet
    # 'slurm', 'local', 'mixed' or '', and {node: ran there by its job's
    # node list}: drain lines only under Slurm, only then (hpcval.drain)
    scheduler: str = ''
    # nodes without a health record where the inventory expects GPUs
    no_health: list = field(default_factory=list)
    ran_there: dict = field(default_factory=dict)

    @property
    def name(self):
        return f'{self.system}:{self.partition}'


@dataclass
class Verdict:
    status: int
    groups: list
    incomplete: list          # why the status is 2 (or 1 under strict)
    problems: list            # inputs left out, named
    distributed: bool = False
    options: dict = field(default_factory=dict)   # repeated by a re-screen
    usage: str = ''          # a node screen's usage error (EXIT_INPUT)

    @property
    def word(self):
        return STATUS[self.status]

    def failures(self):
        return [f for g in self.groups for f in g.failures]


# what can move a terminal's cursor, end a line or reorder text: C0 and C1
# controls, DEL, line and paragraph separators, bidirectional controls;
# the backslash too, so that an escape cannot be forged either
_UNSAFE = re.compile('[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e'
                     '\u2066-\u2069\ufeff\\\\]')
_NAMED = {'\n': '\\n', '\r': '\\r', '\t': '\\t', '\\': '\\\\'}


def escape(text):
    """``text`` on one line, every control character shown as its escape."""
    return _UNSAFE.sub(lambda m: _NAMED.get(m.group()) or (
        f'\\x{ord(m.group()):02x}' if ord(m.group()) < 0x100
        else f'\\u{ord(m.group()):04x}'), text)


def is_judged(sample):
    """Whether a reference judges this figure."""
    return Band.of_sample(sample) is not None


def node_label(case):
    # every node of the job by Slurm's accounting, else a screen's one node;
    # the squeue backend may record no node list ('None')
    ran = screen.job_nodes(case)
    if len(ran) > 1:
        return '+'.join(ran)
    return screen.node_of(case) or '+'.join(n for n in case.nodes
                                            if n != 'None')


def _skip_reason(case, fixtures):
    own = case.extras.get('skip_reason')
    if isinstance(own, str) and own:
        return own
    # a test is skipped when a fixture it needs was skipped or failed:
    # name the first such fixture, and its own reason
    seen, todo = set(), list(case.deps)
    for name in todo:       # breadth first: ``todo`` grows as it is read
        fix = fixtures.get((case.session, name))
        if name in seen or fix is None:
            continue
        seen.add(name)
        if fix.result in ('skip', 'fail', 'abort'):
            why = fix.extras.get('skip_reason') or fix.reason or fix.result
            deeper = _skip_reason(fix, fixtures) if fix.result == 'skip' \
                else ''
            return f'needs {fix.test}: {deeper or why}'
        todo.extend(fix.deps)
    return case.reason or 'skipped (the report gives no reason)'


def _provenance(group, case, last):
    """Add ``case``'s provenance to ``group``'s, unless it repeats the last."""
    prov = case.extras.get('provenance')
    if not prov or prov == last.get(group.name):
        return
    last[group.name] = prov
    nodes = prov.get(records.NODES)
    for node, record in (nodes.items() if isinstance(nodes, dict) else ()):
        if isinstance(record, dict):
            group.node_provenance[str(node)] = {
                k: v for k, v in record.items() if isinstance(v, str)}
    for key, val in prov.items():
        if val and isinstance(val, str):      # the per-node part: above
            seen = group.provenance.setdefault(key, [])
            if val not in seen:
                seen.append(val)


def _key(case):
    # the same session read from a report file and from the database
    return (case.session, case.test, case.system, case.partition,
            case.environ, case.time)


class _Groups(dict):
    """{(system, partition): Group}, each made at its first case."""

    def __init__(self):
        super().__init__()
        self.sessions = {}      # group name: {session uuid}
        self.node_sets = {}     # group name: {node}: 100,000 nodes stay fast
        self.provenance = {}    # group name: the provenance added last
        self.health_seen = {}       # group name: {node: left a record}
        self.expects_gpus = {}      # group name: GPUs its inventory expects

    def of(self, case):
        key = (case.label or case.system, case.partition)
        if key not in self:
            self[key] = Group(*key)
        return self[key]

    def note_health(self, g, case, label, healths):
        """Keep which nodes of ``g`` left a health record."""
        if case.replay or case.result in ('skip', 'fail_deps'):
            return
        seen = self.health_seen.setdefault(g.name, {})
        for node in (label.split('+') if label else ['']):
            seen[node] = seen.get(node, False) or \
                case.extras.get('health') is not None
        if g.name not in self.expects_gpus:
            try:
                expected = healths.expected(case) or {}
            except (ValueError, OSError):   # the references' load names it
                expected = {}
            gpus = expected.get('gpus', 0)
            self.expects_gpus[g.name] = gpus if isinstance(gpus, int) else 0


def judge(loaded, select=None, strict=False, allow_unjudged=False,
          peer_factor=screen.PEER_FACTOR, accept_out=(),
          accept_unscreened=False):
    """The Verdict of ``loaded`` (hpcval.publish.results.Loaded), of the
    cases ``select`` keeps; the options are hpcval verdict's."""
    chosen = select or (lambda case: True)
    # a re-measure (hpcval.retries) or a re-screen (hpcval.screen) judges
    # in place of the run before it
    earlier, first_runs = retries.runs(loaded.cases)
    # a GPU figure no reference has an entry for: its datasheet's bound
    with_datasheets(loaded)
    replaced = earlier | screen.superseded(
        [c for c in loaded.cases if id(c) not in earlier]
        if earlier else loaded.cases)

    def select(case):
        return id(case) not in replaced and chosen(case)
    fixtures = {(f.session, f.name): f for f in loaded.fixtures}
    samples = _by_case(loaded)

    def figures(case):
        return samples.get(id(case), [])
    screened = [c for c in loaded.cases
                if select(c) and screen.node_of(c) is not None]
    # the option, else the system's own where its file gives one
    refs = getattr(loaded, 'references', None)
    factor = peer_factor if peer_factor is not None else \
        verdict_refs.peer_factors(refs)
    peer = screen.peer_comparison(screened, figures, factor)

    groups, seen, judged = _Groups(), set(), []
    healths = health.Judge(refs)
    rebanded = getattr(loaded, 'rebanded', None) or {}
    for case in loaded.cases:
        if not select(case) or _key(case) in seen:
            continue
        seen.add(_key(case))
        judged.append(case)
        first = first_runs.get(id(case))
        _judge_case(groups, case, figures(case), peer, fixtures, healths,
                    rebanded, refs, first and (first, figures(first)))
    for case, node, comp, text in healths.between_nodes():
        groups.of(case).changes.append(_changed(node, comp, text))
    for g in groups.values():       # where the inventory expects GPUs
        if groups.expects_gpus.get(g.name):
            g.no_health = [n or 'node not recorded' for n, seen in
                           groups.health_seen.get(g.name, {}).items()
                           if not seen]
    _unmeasured(groups, judged)
    _failed_fixtures(groups, loaded.fixtures, select, seen)
    _untrusted(groups, loaded)
    _screens(groups, screened, figures, factor, accept_out)

    ordered = [groups[k] for k in sorted(groups)]
    incomplete = _incomplete(ordered, allow_unjudged)
    commands = getattr(loaded, 'commands', None) or {}
    incomplete += _not_the_suite(groups.sessions, commands, loaded.cases)
    wider = [] if accept_unscreened else [
        f'{g.name}: {r.line()}' for g in ordered for r in g.reach
        if not r.screened]
    problems, why = [str(p) for p in loaded.problems], incomplete + wider
    if any(g.failures for g in ordered) or (strict and why):
        status = EXIT_FAILED
    elif problems:
        status = EXIT_INPUT
    else:       # a screen passed only at the wider bound it states: 4
        status = EXIT_INCOMPLETE if incomplete else \
            EXIT_WIDER if wider else EXIT_OK
    usage = next((screen.usage_line(g.same_failure, commands)
                  for g in ordered if g.same_failure), '')
    return Verdict(EXIT_INPUT if usage else status, ordered, why, problems,
                   any('%.nid=' in c.test for c in loaded.cases),
                   {'peer_factor': peer_factor, 'accept_out': accept_out,
                    'accept_unscreened': accept_unscreened,
                    'commands': commands}, usage)


def _by_case(loaded):
    """{id(case): [its samples]}, reusing results.load's grouping if intact."""
    made = getattr(loaded, 'by_case', None)
    if made and len(made) == len(loaded.cases) and \
            sum(map(len, made.values())) == len(loaded.samples) and \
            all(id(c) in made for c in loaded.cases):
        return made
    samples = {}
    for s in loaded.samples:
        samples.setdefault(id(s.case), []).append(s)
    return samples


def _judge_case(groups, case, samples, peer, fixtures, healths, rebanded,
                refs, first=None):
    """Count one case into its group (``first``: its first run, samples)."""
    g = groups.of(case)
    if refs is not None and not g.references:
        g.references = refs.files.get(case.system, 'none')
        rate = refs.false_alarms.get(case.system)
        g.false_alarms = rate.text() if rate else ''

    groups.sessions.setdefault(g.name, set()).add(case.session)
    sched = drain.scheduler_of(case)
    if sched and g.scheduler != sched:
        g.scheduler = 'mixed' if g.scheduler else sched
    if screen.node_of(case) and (case.extras.get('screen_excluded') or
                                 screen.not_tested(case)):
        return          # not a node's result: counted by coverage
    g.replays += case.replay
    label = node_label(case)
    seen = groups.node_sets.setdefault(g.name, set())
    for node in label.split('+') if label else ():
        if node not in seen:
            seen.add(node)
            g.nodes.append(node)
    drain.note_case(g.ran_there, label, {*case.nodes,
                                         *screen.job_nodes(case)})
    _provenance(g, case, groups.provenance)
    # the node's inventory and health first (hpcval.health); a first
    # run's record is a fact of the node, never excused by its re-measure
    groups.note_health(g, case, label, healths)
    for ran in ((first[0], case) if first else (case,)):
        _health(groups, g, ran, node_label(ran), healths)
    if label and '+' not in label and label not in g.gpus:
        found = healths.gpus(case)
        if found:
            g.gpus[label] = found
    # fail_deps: a fixture it needs failed, counted in _failed_fixtures
    if case.result in ('skip', 'fail_deps'):
        g.cases_skipped += 1
        g.skips.append((case.test, _skip_reason(case, fixtures)))
        return

    failed_figure = refs_failed = False
    outcome, passed = judgement.outcome, judgement.PASS
    before = {s.metric: s for s in first[1]} if first else {}
    for s in samples:
        cross, why = rebanded.get(id(s), (None, None))
        source = ''
        if cross is not None:
            (g.datasheet if cross.judged_by == DATASHEET
             else g.crosschecks).append(replace(cross, node=label))
            source = cross.source if cross.judged_by == DATASHEET else ''
        by_peers = peer.get((id(case), s.metric)) if peer else None
        was = before.get(s.metric)
        if by_peers is None and outcome(s) == passed:
            g.judged_passed += 1        # _judge_figure's commonest case
            failed = False
        else:
            failed = _judge_figure(g, case, s, by_peers, healths, why, was,
                                   source)
        if not failed and was is not None and \
                outcome(was) == judgement.FAIL:
            f = _figure_failure(first[0], was, healths)
            g.intermittent.append(replace(
                f, first=f.shown, value=s.value,
                shown=Band.of_sample(s).value_text(s.value)))
        failed_figure |= failed
        # ReFrame passed the case by another bound than the references'
        refs_failed |= failed and id(s) in rebanded
    if case.result == 'pass' and not refs_failed:
        g.cases_passed += 1
        # a first run failed by its node's health is that FAIL already
        if first and first[0].result == 'fail' and \
                first[0].phase != 'performance' and \
                not _health_named(healths, *first):
            g.intermittent.append(_case_failure(
                first[0], f'{_reason(first[0])} on first run, passed on '
                          f're-measure'))
        return
    g.cases_failed += 1
    if not failed_figure and not _health_named(healths, case, samples):
        # a sanity failure, a crash, an abort: no figure to name
        g.failures.append(_case_failure(case, _remeasured(case, first)))


def _health(groups, g, case, label, healths):
    """Add what ``case``'s health record shows of its node to ``g``."""
    for node, comp, text in healths.failures(case, label):
        g.failures.append(Failure(case.system, case.partition, node, comp,
                                  '', '', reason=text, session=case.session))
    for found, out in ((healths.changes, g.changes), (healths.notes, g.infos)):
        out += [_changed(*x) for x in found(case, label)]


def _reason(case):
    phase = f'{case.phase}: ' if case.phase else ''
    return f'{phase}{case.reason or case.result}'


def _remeasured(case, first):
    """Why a re-measured ``case`` failed, beside its first run's reason."""
    if not first:
        return None
    now, then = _reason(case), _reason(first[0])
    if now == then:
        return f'{now} on first run and on re-measure'
    return f'{now} on re-measure; first run: {then}'


def _health_named(healths, case, samples):
    """Whether ``case`` failed only for what its health record names."""
    return case.phase in ('sanity', 'performance') and \
        not (samples and case.phase == 'sanity') and \
        case.extras.get('sanity_is_health') is True and \
        id(case) in healths.failed


def _unmeasured(groups, cases):
    """A failure per probed GPU that a per-GPU check did not measure."""
    missing = {}        # (group key, node): {gpu: [check]}
    for case in cases:
        rec = case.extras.get('health')     # the GPUs listed before the job
        probed = {g.index for g in rec.before.gpus} if rec is not None \
            else set()
        measured = _measured_gpus(case)
        if measured is None or not probed or \
                case.result in ('skip', 'fail_deps'):
            continue
        node = node_label(case)
        key = ((case.label or case.system, case.partition), node)
        why = '' if case.result == 'pass' else f' ({_few_words(case)})'
        for gpu in sorted(probed - measured):
            checks = missing.setdefault(key, {}).setdefault(gpu, [])
            if case.test + why not in checks:
                checks.append(case.test + why)
    for (gkey, node), gpus in missing.items():
        g = groups[gkey]
        for gpu, checks in sorted(gpus.items()):
            g.failures.append(Failure(
                g.system, g.partition, node, f'GPU {gpu}', '', '',
                reason=f'not measured by {", ".join(checks)}'))


def _measured_gpus(case):
    """{N} of the GPUs ``case`` measured; None if not GPU by GPU."""
    comps = case.extras.get('components')
    named = _gpu_indices(comps.values()) if isinstance(comps, dict) \
        else set()
    shown = case.extras.get('measured_gpus')
    if named or shown is None:
        return named or None
    return set(shown)


# the most of a check's failure shown beside a GPU it did not measure; a
# clause ends at ': ' only past 24 characters ('vm.gpu0: no table')
FEW_WORDS = 80
_CLAUSE_END = re.compile(r'; | \| |(?<=.{24}): ', re.S)


def _few_words(case):
    """The phase and the first clause of why ``case`` failed."""
    text = (case.reason or case.result).removeprefix('sanity error: ')
    text = _CLAUSE_END.split(text, 1)[0]
    text = f'{case.phase}: {text}' if case.phase else text
    if len(text) <= FEW_WORDS:
        return text
    return text[:FEW_WORDS].rsplit(' ', 1)[0] + '...'


def _changed(node, comp, text):
    return ' '.join(p for p in (f'node {node}' if node else
                                'node not recorded', comp) if p) + \
        f': {text}'


def _judge_figure(g, case, s, by_peers, healths, why=None, was=None,
                  source=''):
    """Count figure ``s`` against its band and peers; True if it failed."""
    by_band = judgement.outcome(s)
    if by_band is None and by_peers is None:
        own = case.extras.get('unjudged')
        own = own.get(s.metric) if isinstance(own, dict) else None
        why = why or (own if isinstance(own, str) else 'no reference')
        if why.startswith('diagnostic'):
            g.diagnostic += 1
        else:
            g.logged += 1
            g.unjudged.append((case.test, s.metric, why))
        return False
    peers_failed = by_peers is not None and not by_peers.passed
    if by_peers is not None:
        g.peer_judged += 1
    if peers_failed:
        g.failures.append(Failure(
            case.system, case.partition, node_label(case), 'vs peers',
            case.test, s.metric, s.value, s.unit, by_peers.bound,
            session=case.session, cause=_busy(case), clear=_clear(case)))
    if by_band == judgement.FAIL:
        g.failures.append(_figure_failure(case, s, healths, was, source))
    failed = peers_failed or by_band == judgement.FAIL
    g.judged_failed += failed
    g.judged_passed += not failed
    return failed


def _figure_failure(case, s, healths, was=None, source=''):
    """The Failure of figure ``s`` (``was``: its first run)."""
    band = Band.of_sample(s)
    digits = band.digits(s.value)
    component = case.extras.get('components', {}).get(s.metric, '')
    causes = (band.implausible(s.value),
              healths.cause(case, component, (s.metric, s.value, s.unit)),
              _busy(case))
    # a datasheet's bound names its peak and fraction, not '(ref ..)'
    return Failure(case.system, case.partition, node_label(case), component,
                   case.test, s.metric, s.value, s.unit,
                   band.bound_text(digits, source), session=case.session,
                   shown=band.value_text(s.value, digits),
                   deviation=band.deviation_text(s.value),
                   cause='; '.join(c for c in causes if c),
                   first=band.value_text(was.value) if was else '',
                   clear=_clear(case))


def _clear(case):
    """What to end on the node before its re-screen, if the policy clears."""
    load = case.extras.get('node_load')
    return records.listed(records.outside(load)) \
        if records.clears(load) else ''


def _busy(case):
    """'the node was busy at job start: ...' where the check recorded so."""
    load = case.extras.get('node_load')
    if load is not None and load.busy:
        return 'the node was busy at job start' + \
            (f': {load.why}' if load.why else '')
    return ''


def _case_failure(case, reason=None):
    # a failure of one GPU (a check's sanity error naming it) heads with it
    gpus = _gpu_indices([case.reason])
    return Failure(case.system, case.partition, node_label(case),
                   f'GPU {gpus.pop()}' if len(gpus) == 1 else '',
                   case.test, '', reason=reason or _reason(case),
                   session=case.session)


def _failed_fixtures(groups, fixtures, select, seen):
    """Failed fixtures (a build, a fetch) as failures, each by its last run."""
    earlier, first_runs = retries.runs(fixtures)
    for fix in fixtures:
        if id(fix) in earlier or not select(fix) or _key(fix) in seen:
            continue
        first = first_runs.get(id(fix))
        if fix.result in ('fail', 'abort'):
            seen.add(_key(fix))
            g = groups.of(fix)
            g.cases_failed += 1
            g.failures.append(_case_failure(
                fix, _remeasured(fix, first and (first, ()))))
        elif first is not None and fix.result == 'pass':
            groups.of(fix).intermittent.append(_case_failure(
                first, f'{_reason(first)} on first run, passed on retry'))


def _untrusted(groups, loaded):
    """Damaged cases that say they failed, and differing copies: failures."""
    bad = [Failure(*INPUT, '', '', d.test, '',
                   reason=f'{d.source}: says {d.result}, but cannot be '
                          f'trusted: {d.reason}')
           for d in loaded.damaged if d.result in ('fail', 'abort')]
    bad += [Failure(*INPUT, '', '', c.test, '',
                    reason=f'two copies of session {c.session} differ in '
                           f'{c.differs}: {c.first} and {c.second}',
                    session=c.session)
            for c in loaded.conflicts]
    if bad:
        g = groups.setdefault(INPUT, Group(*INPUT))
        g.cases_failed += len(bad)
        g.failures.extend(bad)


def _screens(groups, screened, figures, peer_factor, accept_out):
    """Each group's session count and, for a node screen, its peer figures."""
    for g in groups.values():
        g.sessions = len(groups.sessions.get(g.name, ()))
        mine = [c for c in screened
                if ((c.label or c.system), c.partition) ==
                (g.system, g.partition)]
        if mine:
            g.coverage = screen.accept_out(screen.coverage(mine),
                                           accept_out)
            g.per_node = screen.per_node(mine, figures, peer_factor)
            g.reach = screen.reach(mine, figures, peer_factor, is_judged)
            g.same_failure = screen.same_failure(mine, figures)


def _incomplete(groups, allow_unjudged):
    why = []
    if not groups:
        why.append('no test case in the input: nothing was validated')
    for g in groups:
        if g.cases_skipped:
            why.append(f'{g.name}: {g.cases_skipped} test case(s) skipped, '
                       f'not validated')
        if g.logged and not allow_unjudged:
            why.append(f'{g.name}: {g.logged} figure(s) without a reference '
                       f'(calibrate them, or declare them diagnostic)')
        if g.judged_passed + g.judged_failed == 0 and g.cases_failed == 0:
            why.append(f'{g.name}: no figure was judged')
        if g.intermittent:
            why.append(f'{g.name}: {len(g.intermittent)} result(s) failed '
                       f'on the first run and passed on re-measure '
                       f'(INTERMITTENT): not confirmed either way, re-run '
                       f'to confirm')
        if g.no_health:
            why.append(f'{g.name}: no health record of '
                       f'{_names(g.no_health, 8)}, where the '
                       f'inventory expects GPUs: their health is not judged '
                       f'(the probe was off, -S health_probe=no, or the '
                       f'records were removed)')
        if g.coverage is not None and (g.coverage.untested or
                                       not g.coverage.known):
            why.append(f'{g.name}: node screen: {g.coverage.line()}')
    return why


#: in place of the suite's files where a session recorded none: check
#: paths naming files, not the folder, then leave it out (fail closed)
UNRECORDED = 'the suite\'s other files (the run recorded none)'


def _narrowing(cmdline, names):
    try:
        argv = shlex.split(cmdline)
    except ValueError as err:
        return '?', [f'it cannot be split: {err}']
    # the first word is the program that ran (reframe, or its path)
    return suites.narrowing(argv[1:] if argv and not argv[0].startswith('-')
                            else argv, names)


def _suites(cases):
    """{session: the suite's check file names its cases recorded}."""
    out = {}
    for case in cases:
        names = case.extras.get('suite')
        if isinstance(names, list) and all(isinstance(n, str) and
                                           '/' not in n for n in names):
            out.setdefault(case.session, set()).update(names)
    return out


def _not_the_suite(sessions_of, commands, cases):
    """Why each session of ``sessions_of`` ({group: {uuid}}) that ran a fixed
    --mode narrowed is not that suite (docs/security.md, "modes")."""
    recorded = _suites(cases)
    out = []
    for group in sorted(sessions_of):
        for uuid in sorted(sessions_of[group]):
            cmdline = commands.get(uuid) or ''
            if not isinstance(cmdline, str) or '--mode' not in cmdline and \
                    not any(m in cmdline for m in suites.FIXED_MODES):
                continue
            found = _narrowing(cmdline,
                               sorted(recorded.get(uuid) or [UNRECORDED]))
            if found and found[0] == '?':
                out.append(f'{group}: session {uuid}: its command line '
                           f'cannot be read ({found[1][0]}): not validated '
                           f'as an acceptance or screen')
            elif found:
                mode, what = found
                out.append(f'{group}: session {uuid} ran --mode {mode} '
                           f'narrowed ({"; ".join(what)}): not the {mode} '
                           f'suite')
    return out


def as_dict(verdict):
    """The verdict as plain data (what ``--format json`` prints)."""
    out = {'status': verdict.status, 'verdict': verdict.word,
           'incomplete': verdict.incomplete, 'problems': verdict.problems,
           'partitions': []}
    for g in verdict.groups:
        d = asdict(g)
        for key in ('failures', 'intermittent', 'crosschecks', 'datasheet'):
            d[key] = [dict(asdict(x), line=x.line()) for x in getattr(g, key)]
        d['skips'] = [{'test': t, 'reason': r} for t, r in g.skips]
        d['unjudged'] = [{'test': t, 'metric': m, 'reason': r}
                         for t, m, r in g.unjudged]
        if g.node_provenance:
            head, differs = node_summary(g)
            d['nodes_and_gpus'], d['provenance_differs'] = head, differs
        out['partitions'].append(d)
    out['failures_by_node'] = by_node(verdict)
    out['next_steps'] = screen.next_steps(verdict)
    return out


def by_node(verdict):
    """{node: [failure line, ...]} over all partitions."""
    nodes = {}
    for f in verdict.failures():
        for node in (f.node.split('+') if f.node else ['(not recorded)']):
            nodes.setdefault(node, []).append(f.line())
    return nodes


def render_json(verdict):
    return json.dumps(as_dict(verdict), indent=2, sort_keys=False) + '\n'


#: keys every GPU has its own value of: not a difference between nodes
_OWN_KEYS = ('gpu_uuid', 'gpu_serial')


def node_summary(g):
    """('N nodes, M GPUs', {key: {node: value}} of keys that differ)."""
    nodes = g.nodes or sorted(g.node_provenance)
    counts = [g.node_provenance.get(n, {}).get('gpus') for n in nodes]
    known = [int(c) for c in counts if c and c.isdigit()]
    gpus = (f'{sum(known)} GPUs' if len(known) == len(nodes) else
            f'GPUs recorded on {len(known)} of {len(nodes)} nodes'
            + (f' ({sum(known)})' if known else ''))
    keys = sorted({k for n in nodes for k in g.node_provenance.get(n, {})
                   if k not in _OWN_KEYS and k != 'gpus'})
    differs = {}
    for key in keys:
        values = {n: g.node_provenance.get(n, {}).get(key, 'not recorded')
                  for n in nodes}
        if len(set(values.values())) > 1:
            differs[key] = values
    return f'{len(nodes)} node{"s" if len(nodes) != 1 else ""}, {gpus}', \
        differs


def _differing(values, most=8):
    """``{node: value}`` in words, the most common value counted, not named."""
    if len(values) <= most:
        return ', '.join(f'{escape(n)} {escape(v)}' for n, v in values.items())
    by_value = {}
    for node, value in values.items():
        by_value.setdefault(value, []).append(node)
    common, *odd = sorted(by_value.items(), key=lambda kv: -len(kv[1]))
    return '; '.join([f'{escape(common[0])} on {len(common[1])} nodes'] + [
        f'{escape(value)} on {_names(nodes, most)}' for value, nodes in odd])


def _names(nodes, most):
    shown = ', '.join(escape(n) for n in nodes[:most])
    return shown + (f' and {len(nodes) - most} more'
                    if len(nodes) > most else '')


def render_text(verdict, most=20, per_node=False):
    """The verdict on one screen (``most`` lines of each kind)."""
    lines = [f'hpcval verdict: {verdict.word} (exit {verdict.status})']
    if verdict.status == EXIT_INPUT:
        lines.append('(an input could not be read or trusted: see "inputs '
                     'left out")')
    for g in verdict.groups:
        if (g.system, g.partition) == INPUT:
            lines += ['', f'inputs that cannot be trusted: '
                          f'{len(g.failures)} test case(s)']
            lines += _capped([f'  FAIL {f.line()}' for f in g.failures], most)
            continue
        nodes, gpus = _names(g.nodes, 8), sum(map(len, g.gpus.values()))
        lines += [
            '',
            f'{g.name}: {g.cases_passed + g.cases_failed + g.cases_skipped} '
            f'test cases ({g.cases_passed} passed, {g.cases_failed} failed, '
            f'{g.cases_skipped} skipped) in {g.sessions} session(s)'
            + (f', {g.replays} replayed' if g.replays else '')
            + (f' on {len(g.nodes)} node(s)' if g.nodes else '')
            + (f', {gpus} GPU{"s" if gpus != 1 else ""}' if g.gpus else '')
            + (f': {nodes}' if g.nodes else ''),
            f'  figures: {g.judged_passed + g.judged_failed} judged '
            f'({g.judged_passed} passed, {g.judged_failed} failed), '
            f'{g.logged} logged without a reference, {g.diagnostic} '
            f'diagnostic (logged on purpose)',
        ]
        if g.coverage is not None:
            lines.append(f'  node screen: {g.coverage.line()}; '
                         f'{g.peer_judged} figures compared with their '
                         f'peers\' median')
            lines += _capped([f'  EXCLUDED {t}: {w}'
                              for t, w in g.coverage.excluded], most)
            lines += _capped([f'  screen reach: {r.line()}'
                              for r in g.reach], most)
        if g.node_provenance:
            head, differs = node_summary(g)
            lines.append(f'  {head}; provenance of every node recorded on '
                         f'{len(g.node_provenance)}')
            lines += [f'  DIFFERS between nodes: {escape(key)}: '
                      f'{_differing(values)}'
                      for key, values in differs.items()]
        if g.provenance:
            keys = [k for k in PROVENANCE_KEYS if k in g.provenance] + \
                sorted(k for k in g.provenance if k not in PROVENANCE_KEYS)
            lines.append('  provenance: ' + '; '.join(
                f'{k} {" | ".join(g.provenance[k])}' for k in keys))
        lines += _capped(_gpu_lines(g.gpus), most)
        if g.references:
            rate = f'; built for {g.false_alarms}' if g.false_alarms \
                else '' if g.references == 'none' else \
                '; no false-alarm rate stated'
            kinds = ', '.join(dict.fromkeys(c.peak for c in g.datasheet))
            sheet = f', datasheet ({len(g.datasheet)} figures: {kinds})' \
                if g.datasheet else ''
            lines.append(f'  bounds: the references ({g.references}{rate})'
                         f'{sheet}; '
                         f'{len(g.crosschecks)} differ from the report\'s')
        for shown in ([f'  FAIL {f.line()}' for f in g.failures],
                      [f'  INTERMITTENT {f.line()}' for f in g.intermittent],
                      [f'  CHANGED {c}' for c in g.changes],
                      [f'  INFO {c}' for c in g.infos],
                      [f'  SKIP {t}: {r}' for t, r in g.skips],
                      [f'  BOUND {c.line()}' for c in g.crosschecks],
                      _unjudged_lines(g.unjudged)):
            lines += _capped(shown, most)
        if per_node and g.per_node:
            lines.append('  per node (figure, peers\' median, verdict):')
            lines += [f'    {node} {test}: {metric} = {_num(value)} {unit}'
                      + (f', peers {_num(median)}' if median else '')
                      + (f' {mark}' if mark else '')
                      for test, metric, unit, node, value, median, mark
                      in g.per_node]

    nodes = by_node(verdict)
    if verdict.distributed or len(nodes) > 1:
        lines += ['', f'failures by node ({len(nodes)} node(s)):']
        for node in sorted(nodes):
            lines.append(f'  {node}: {len(nodes[node])} failure(s)')
            lines += _capped([f'    {line}' for line in nodes[node]], most)
    steps = screen.next_steps(verdict)     # node screen: drain, re-screen
    if steps['drain'] or steps['notes'] or steps['rescreen']:
        lines += ['', 'next steps (drain the failed nodes, fix them, then '
                      're-screen only them):']
        lines += [f'  {line}' for line in steps['drain'] +
                  steps['resume'] + steps['rescreen']]
        lines += [f'  # {note}' for note in steps['notes']]
    if verdict.incomplete:
        head = 'every node passed, at the bound stated (wider than the ' \
            'target; exit 4):' if verdict.status == EXIT_WIDER else \
            'not validated:'
        lines += ['', head] + [f'  {w}' for w in verdict.incomplete]
    if verdict.problems:
        lines += ['', 'inputs left out:'] + [f'  {p}'
                                             for p in verdict.problems]
    # every line is built as one line: what a name adds is escaped here
    return '\n'.join(escape(line) for line in lines) + '\n'


def _gpu_lines(gpus):
    """One line per node: its GPUs' model, VBIOS and UUIDs."""
    lines = []
    for node, found in gpus.items():
        kinds = Counter((g.get('model', '?'), g.get('vbios', '?'))
                        for g in found)
        what = ', '.join(f'{n} x {model} (VBIOS {vbios})'
                         for (model, vbios), n in sorted(kinds.items()))
        uuids = ' '.join(str(g.get('uuid') or g.get('serial') or '?')
                         for g in found)
        lines.append(f'  gpus node {node}: {what}: {uuids}')
    return lines


def _unjudged_lines(unjudged, shown=4):
    by_test = {}
    for test, metric, why in unjudged:
        # the same test in several runs: each metric once, in order
        by_test.setdefault((test, why), {})[metric] = None
    lines = []
    for (test, why), metrics in by_test.items():
        metrics = list(metrics)
        more = f' and {len(metrics) - shown} more' \
            if len(metrics) > shown else ''
        lines.append(f'  UNJUDGED {test}: {", ".join(metrics[:shown])}'
                     f'{more} ({why})')
    return lines


def _capped(lines, most):
    if len(lines) <= most:
        return lines
    return lines[:most] + [f'  ... and {len(lines) - most} more '
                           f'(--format json lists all)']
