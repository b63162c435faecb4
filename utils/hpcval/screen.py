"""Node screening (ReFrame's ``--distribute``, docs/screening.md): which
nodes a screen covered, each node's figures against its peers', and what
the admin does next (drain lines, a re-screen of the failed nodes)."""
import itertools
import math
import re
import shlex
import statistics
from dataclasses import dataclass, field

from hpcval import drain as drains, peers
from hpcval.units import better

#: the verdict's floor as a factor on the peers' median; None: the figure
#: kind's floor (hpcval.peers.PEER_RULES) with the spread term, the rule
#: whose false-alarm rate and detection limit docs/screening.md gives
PEER_FACTOR = None
#: a job's fate (hpcval_job_fate, recorded by the run:
#: hpcval.benchmarks.screening) that says nothing about its node: the
#: verdict's words, and whether a re-screen as it stands cannot test the
#: node (Slurm held it out, or its job was refused as asked)
NOT_TESTED = {
    'blocked': ('job not started', True),
    'usage error': ('not tested: usage error', True),
    'controller stalled': ('not tested: controller stalled', False),
    'sbatch failed': ('not tested: sbatch failed', False),
    'controller unreachable': ('not tested: controller unreachable', False),
    'accounting unreachable': ('not tested: accounting unreachable', False),
    'CANCELLED': ('not tested: cancelled (scancel, or an administrator)',
                  False),
    'PREEMPTED': ('not tested: preempted', False),
    'REQUEUED': ('not tested: requeued', False),
}
#: Slurm's job states that end a job because its node failed
NODE_FATES = ('NODE_FAIL', 'BOOT_FAIL')
_NID = re.compile(r'\s%\.nid=(\S+)')
_SCREEN_PARAMS = re.compile(r'\s%\.(nid|part)=\S+')


def node_of(case):
    """The node a distributed test case was pinned to, or None."""
    m = _NID.search(case.test)
    # ReFrame prints the node list abbreviated ('n2'); a list's repr
    # ("['n2']") is read the same
    return m.group(1).strip("[]'\"") if m else None


def job_fate(case):
    """(cause, detail) of the job's fate the run recorded, or ('', '')."""
    fate = case.extras.get('job_fate')
    if isinstance(fate, list) and len(fate) == 2 and \
            all(isinstance(w, str) for w in fate):
        return tuple(fate)
    return '', ''


def not_tested(case):
    """Why a distributed case says nothing about its node, or '': the
    screen was stopped, or the job's recorded fate is one of NOT_TESTED."""
    if case.result == 'abort':
        # ReFrame stopped before the case ended: Ctrl-C, SIGTERM, --maxfail
        return 'not tested: the screen was stopped'
    cause, detail = job_fate(case)
    if case.result != 'fail' or cause not in NOT_TESTED:
        return ''
    # one line: the report is data
    words, detail = NOT_TESTED[cause][0], ' '.join(detail.split())[:120]
    return f'{words} ({detail})' if detail else words


def screen_test(case):
    """The test's name without the screen's own parameters."""
    return _SCREEN_PARAMS.sub('', case.test)


_BRACKET = re.compile(r'\[([0-9,-]+)\]')
# one name or range of names; a node list is these joined by commas
_ITEM = r'(?:[^,\[\]]|\[[^\[\]]*\])+'
_NODELIST = re.compile(rf'{_ITEM}(?:,{_ITEM})*')
# more nodes than any partition has: a list naming more is not expanded
MAX_NODES = 200_000
_RANGE = re.compile(r'(\d+)(?:-(\d+))?')


def expand(nodelist):
    """'n[1-3],x7' -> ['n1', 'n2', 'n3', 'x7'], zero padding kept; without
    ReFrame, whose import costs more than a 1,000-node verdict.  ValueError
    for another syntax or more than MAX_NODES names (counted first)."""
    if nodelist_size(nodelist) > MAX_NODES:
        raise ValueError(f'node list of more than {MAX_NODES} nodes')
    text = nodelist.strip()
    if not _NODELIST.fullmatch(text):
        raise ValueError(f'{nodelist!r}: not a Slurm node list')
    return [name for item in re.findall(_ITEM, text)
            for name in _expand_one(item)]


def _expand_one(word):
    m = _BRACKET.search(word)
    if m is None:
        if '[' in word or ']' in word:
            raise ValueError(f'{word!r}: not a Slurm node range')
        return [word]
    head, tail = word[:m.start()], word[m.end():]
    names = []
    for part in m.group(1).split(','):
        lo, _, hi = part.partition('-')
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f'{word!r}: not a Slurm node range')
        hi = hi or lo
        if int(hi) < int(lo) or int(hi) - int(lo) > MAX_NODES:
            raise ValueError(f'{word!r}: range {part!r}')
        width = len(lo) if lo.startswith('0') else 0
        for i in range(int(lo), int(hi) + 1):
            for rest in _expand_one(tail):
                names.append(f'{head}{i:0{width}d}{rest}')
    return names


def abbrev(nodes):
    """['n1', 'n2', 'n3', 'x7'] -> 'n[1-3],x7' (what ``expand`` reads)."""
    groups, plain = {}, []
    for name in nodes:
        m = re.fullmatch(r'(.*?)(\d+)', name)
        if m is None:
            plain.append(name)
            continue
        digits = m.group(2)
        width = len(digits) if digits.startswith('0') and \
            len(digits) > 1 else 0
        groups.setdefault((m.group(1), width), set()).add(int(digits))
    parts = []
    for (head, width), numbers in sorted(groups.items()):
        # consecutive numbers share their difference to their index
        runs = [[n for _, n in run] for _, run in itertools.groupby(
            enumerate(sorted(numbers)), lambda pair: pair[1] - pair[0])]
        runs = [(run[0], run[-1]) for run in runs]
        text = ','.join(f'{a:0{width}d}' if a == b else
                        f'{a:0{width}d}-{b:0{width}d}' for a, b in runs)
        parts.append(f'{head}{text}' if len(numbers) == 1
                     else f'{head}[{text}]')
    return ','.join(parts + plain)


def nodelist_size(nodelist):
    """How many names a Slurm node list expands to, without expanding."""
    total = 0
    for item in re.findall(r'(?:[^,\[]|\[[^\]]*\])+', nodelist):
        size = 1
        for group in re.findall(r'\[([^\]]*)\]', item):
            size *= sum(int(m.group(2) or m.group(1)) - int(m.group(1)) + 1
                        for m in _RANGE.finditer(group)) or 1
        total += size
    return total


@dataclass
class Coverage:
    """Which of a partition's nodes a screen tested."""
    partition_nodes: list          # [] when no check recorded them
    tested: list
    untested: dict                 # node: why
    excluded: list = field(default_factory=list)   # (test, why)
    accepted: dict = field(default_factory=dict)   # node: why, out by intent
    # untested nodes Slurm held out (drained, down, reserved) or whose
    # job was refused as asked: a re-screen as it stands cannot test them
    held: list = field(default_factory=list)
    tests: list = field(default_factory=list)      # the screen's tests
    session: str = ''       # a session of the screen (its command line)

    @property
    def known(self):
        return bool(self.partition_nodes)

    @property
    def rerun(self):
        """The untested nodes a re-screen can test."""
        return [n for n in sorted(self.untested, key=_natural)
                if n not in self.held]

    def line(self):
        total = len(self.partition_nodes) if self.known else None
        head = (f'{len(self.tested)} of {total} nodes tested' if self.known
                else f'{len(self.tested)} nodes tested, the partition\'s '
                     f'node list was not recorded')
        if self.accepted:
            head += '; accepted as out: ' + ', '.join(
                f'{n} ({why})' for n, why in sorted(
                    self.accepted.items(), key=lambda kv: _natural(kv[0])))
        if not self.untested:
            return head
        by_why = {}     # one range per reason: bounded at any size
        for node in sorted(self.untested, key=_natural):
            by_why.setdefault(self.untested[node], []).append(node)
        shown = [f'{abbrev(ns)} ({why})' for why, ns in by_why.items()]
        more = f' and {len(shown) - 10} more' if len(shown) > 10 else ''
        return f'{head}; not tested: {", ".join(shown[:10])}{more}'


@dataclass
class PeerResult:
    """One figure of one node against its peers."""
    node: str
    value: float
    unit: str
    median: float
    peers: int
    passed: bool
    bound: str


def _natural(name):
    return [int(t) if t.isdigit() else t for t in re.split(r'(\d+)', name)]


def coverage(cases):
    """The Coverage of the distributed ``cases`` of one partition."""
    recorded, tested, untested, excluded, held = {}, set(), {}, [], set()
    tests = {screen_test(c) for c in cases}
    for case in cases:
        nodes = case.extras.get('partition_nodes')
        if isinstance(nodes, dict) and isinstance(nodes.get('nodes'), str):
            recorded = nodes
        node = node_of(case)
        if node is None:
            continue
        excl = case.extras.get('screen_excluded')
        if isinstance(excl, str) and excl:
            excluded.append((screen_test(case), excl))
            continue
        if case.result == 'skip':
            continue
        why = not_tested(case)
        if why and NOT_TESTED.get(job_fate(case)[0], ('', False))[1]:
            held.add(node)
        if why:
            # one case of the node not run is enough: its screen is partial
            untested.setdefault(node, f'{screen_test(case)}: {why}'
                                if len(tests) > 1 else why)
        else:
            tested.add(node)

    partition_nodes = []
    if recorded:
        try:
            partition_nodes = expand(recorded['nodes'])
        except Exception:       # a malformed list from elsewhere: unknown
            partition_nodes = []
        states = recorded.get('unavailable')
        states = states if isinstance(states, dict) else {}
        for node in partition_nodes:
            why = states.get(node)
            if node in tested:
                continue
            if isinstance(why, str) and why:
                untested[node] = why        # Slurm's state says most
                held.add(node)
            elif node not in untested:
                untested[node] = 'no test case ran there'
    tested -= set(untested)
    return Coverage(sorted(partition_nodes, key=_natural),
                    sorted(tested, key=_natural), untested,
                    sorted(set(excluded)),
                    held=sorted(held, key=_natural), tests=sorted(tests),
                    session=getattr(cases[0], 'session', '') if cases else '')


def _judged_groups(cases, samples_of, factor):
    """(key, [(node, case, sample)], {(node, id(case)): value}, judgements)
    of each figure the peer rule compares; key ends (test, metric, unit)."""
    groups = {}
    for case in cases:
        node = node_of(case)
        if node is None or case.result not in ('pass', 'fail'):
            continue
        for s in samples_of(case):
            if s.metric.endswith('_std') or better(s.unit) == 'unknown':
                continue
            try:
                peers.rule_for(s.unit)
            except ValueError:
                continue
            key = (case.system, case.partition, case.environ,
                   screen_test(case), s.metric, s.unit)
            groups.setdefault(key, []).append((node, case, s))
    for key, entries in groups.items():
        # factor: a number, None, or a function of a case and the metric
        given = factor(entries[0][1], key[4]) if callable(factor) else factor
        values = {(node, id(case)): s.value for node, case, s in entries}
        yield key, entries, values, peers.judge(
            values, key[-1], None if given is None else 1 - 1 / given)


def peer_comparison(cases, samples_of, factor=PEER_FACTOR):
    """{(id(case), metric): PeerResult} of the distributed ``cases``;
    ``factor``: PEER_FACTOR, or a function of (case, metric) giving it."""
    out = {}
    for key, entries, _, judged in _judged_groups(cases, samples_of, factor):
        unit = key[-1]
        cmp = '>=' if peers.rule_for(unit).better == 'higher' else '<='
        for node, case, _ in entries:
            j = judged.get((node, id(case)))
            if j is None:
                continue
            out[(id(case), key[4])] = PeerResult(
                node, j.value, unit, j.median, j.peers, j.passed,
                f'{cmp} {j.limit:.6g} {unit} (peer median {j.median:.6g} '
                f'of {j.peers} nodes, x{j.factor:.3g})')
    return out


# -- what a partition's screen can find ---------------------------------------

#: the slowdown a partition's screen must name to count as screened for
#: slowness, per figure kind: a node at 0.8x its peers (20 % slow) for
#: rates, 1.5x for times (the noisy kind, floor 20 %)
SCREEN_TARGET = {'flops': 1.25, 'bandwidth': 1.25, 'rate': 1.25,
                 'time': 1.5}
# the fewest peers whose spread the rule measures
_MIN_SPREAD_PEERS = next(n for n in range(1, 64)
                         if peers.k_of_peers(n) is not None)
# standard deviations of a node's own noise between the bound and a
# slowdown named in 99 % of screens (the 99th percentile of a normal)
_NAMED_IN_99 = 2.33


@dataclass
class Reach:
    """What one figure's screen of one partition can find, as 'x times
    worse' than the peers' median: ``bound``, the peer rule's (the largest
    over the nodes), ``finds``, the slowdown named in 99 % of screens
    (docs/screening.md, "What each partition's screen can find")."""
    test: str
    metric: str
    unit: str
    nodes: int
    peers: int
    bound: float            # None: no peers
    finds: float            # None: too few peers to measure a spread
    target: float
    by_references: bool
    screened: bool
    higher: bool = True     # higher is better (a rate), else a time
    named: int = 0          # nodes the rule named below the bound

    def line(self):
        head = f'{self.test}: {self.metric}: {self.nodes} nodes'
        if self.bound is None:
            reach = f'{self.peers} peers: nothing to compare with'
        elif self.finds is None:
            reach = (f'bound {self._at(self.bound)}, the floor alone: '
                     f'{self.peers} peer(s), too few to measure their '
                     f'spread (at least {_MIN_SPREAD_PEERS}), so neither '
                     f'its false-alarm rate nor what it names is stated')
        else:
            reach = (f'bound {self._at(self.bound)}, names a node at '
                     f'{self._at(self.finds)} in 99 % of screens')
        if self.by_references:
            return f'{head}: {reach}; judged by the references instead'
        if self.screened:
            return f'{head}: {reach}'
        if self.named:      # a node it named is slow whatever the bound
            return (f'{head}: {reach}: named {self.named} node(s) below it; '
                    f'one at {self._at(self.target)} may have passed')
        return (f'{head}: {reach}: not screened for slowness (a node at '
                f'{self._at(self.target)} must be named; no reference '
                f'for it)')

    def _at(self, factor):
        """A factor 'x times worse' as a fraction of the peers' median."""
        at = 1 / factor if self.higher else factor
        return f'{at:.2f}x the peers\' median'


def reach(cases, samples_of, factor=PEER_FACTOR, referenced=None):
    """[Reach] of each figure the distributed ``cases`` compare with their
    peers; ``referenced(sample)``: whether a reference judges it."""
    out = []
    for key, entries, values, judged in sorted(
            _judged_groups(cases, samples_of, factor),
            key=lambda group: group[0][3:5]):
        unit = key[-1]
        rule = peers.rule_for(unit)
        kind = next(k for k, r in peers.PEER_RULES.items() if r == rule)
        good = [v for v in values.values() if v > 0 and math.isfinite(v)]
        count = max(len(good) - 1, 0)
        bound = max((j.factor for j in judged.values()), default=None)
        finds = None        # too few peers: the floor alone judges
        if judged and peers.k_of_peers(count) is not None:
            logs = [math.log(v) for v in good]
            mid = statistics.median(logs)
            sigma = 1.4826 * statistics.median(abs(x - mid) for x in logs)
            finds = math.exp(math.log(bound) + _NAMED_IN_99 * sigma)
        target = SCREEN_TARGET[kind]
        by_refs = referenced is not None and all(
            referenced(s) for _, _, s in entries)
        screened = finds is not None and finds <= target
        out.append(Reach(key[3], key[4], unit, len(entries), count, bound,
                         finds, target, by_refs and not screened,
                         screened or by_refs, rule.better == 'higher',
                         sum(not j.passed for j in judged.values())))
    return out


def per_node(cases, samples_of, factor=PEER_FACTOR):
    """Rows for a per-node table: (test, metric, unit, node, value, peer
    median, 'pass'|'FAIL') for every figure of the distributed ``cases``,
    ordered by test, metric and node."""
    peer = peer_comparison(cases, samples_of, factor)
    rows = []
    for case in cases:
        node = node_of(case)
        if node is None:
            continue
        for s in samples_of(case):
            p = peer.get((id(case), s.metric))
            rows.append((screen_test(case), s.metric, s.unit, node, s.value,
                         p.median if p else None,
                         '' if p is None else 'pass' if p.passed else 'FAIL'))
    return sorted(rows, key=lambda r: (r[0], r[1], _natural(r[3])))


# what a drain reason keeps of a failure line: no quote, $, ` or backslash
_REASON_UNSAFE = re.compile(r'[^A-Za-z0-9 ._:,/+<>=%()-]+')
_REASON_CHARS = 120


def plain_node(name):
    """Whether ``name`` is a plain node name, safe on a command line."""
    return isinstance(name, str) and bool(drains.HOSTNAME.fullmatch(name))


def job_nodes(case):
    """Every node the case's job ran on, as Slurm's accounting recorded it
    (hpcval.benchmarks.screening), or []."""
    nodes = case.extras.get('job_nodes')
    if isinstance(nodes, list) and nodes and all(plain_node(n)
                                                 for n in nodes):
        return nodes
    return []


def superseded(cases):
    """ids of the distributed ``cases`` that a later run of the same test
    on the same node, one that tested it, replaces (a re-screen)."""
    best = {}
    for case in cases:
        node = node_of(case)
        if node is None or case.result == 'skip':
            continue
        key = (case.system, case.partition, case.environ,
               screen_test(case), node)
        rank = (not not_tested(case), case.time or 0.0)
        if key not in best or rank >= best[key][0]:
            best[key] = (rank, case)
    keep = {id(c) for _, c in best.values()}
    return {id(c) for c in cases if node_of(c) is not None
            and c.result != 'skip' and id(c) not in keep}


def accept_out(coverage, nodes):
    """Move the untested ``nodes`` (known to be out: drained for repair)
    from ``coverage.untested`` to ``coverage.accepted``."""
    for node in nodes:
        if node in coverage.untested:
            coverage.accepted[node] = coverage.untested.pop(node)
    return coverage


def drain_reason(failure):
    """'hpcval: <what failed>' for Slurm's node reason, without a
    character a shell or scontrol would read."""
    test = screen_test(failure).split()[0] if failure.test else ''
    if failure.metric:
        value = failure.value
        value = f'{value:.4g}' if isinstance(value, (int, float)) else value
        what = (f'{test} {failure.metric} {value} {failure.unit} '
                f'{failure.component} bound {failure.bound}')
    else:
        what = f'{test} {failure.reason}'
    text = _REASON_UNSAFE.sub(' ', f'hpcval: {what}')
    text = ' '.join(text.split())
    return text if len(text) <= _REASON_CHARS else \
        text[:_REASON_CHARS - 3].rstrip() + '...'


# what differs between nodes' words of one failure: job ids, numbers
_VARYING = re.compile(r'\d+')


def same_failure(cases, samples_of):
    """The reason of the first of the distributed ``cases`` where every
    node's job (two nodes or more) failed alike, none measuring a figure,
    up to its node's name and numbers: the screen's own fault; else ''."""
    found, first = set(), ''
    nodes = set()
    for case in cases:
        node = node_of(case)
        if node is None or case.result == 'skip' or \
                case.extras.get('screen_excluded'):
            continue
        # a node that failed under its job is the node's, however many
        # fail alike (a rack's power)
        cause = job_fate(case)[0]
        if case.result != 'fail' or samples_of(case) or \
                cause in NODE_FATES or \
                (cause in NOT_TESTED and cause != 'usage error'):
            return ''
        text = (case.reason or '').replace(node, '')
        found.add(_VARYING.sub('#', text))
        nodes.add(node)
        first = first or case.reason
    return first if len(nodes) > 1 and len(found) == 1 else ''


def usage_line(reason, commands):
    """The one line of a screen whose job failed the same way on every
    node, naming the job options its command lines gave."""
    given = sorted({f'-J {words[i + 1]}' for cmd in commands.values()
                    for words in [rescreen_settings(cmd)]
                    for i, w in enumerate(words[:-1]) if w == '-J'})
    return (f'usage error of the screen: its job failed the same way on '
            f'every node, so not for a node\'s fault (nothing drained): '
            f'{" ".join(reason.split())[:300]}'
            + (f'; its job options: {", ".join(given)}' if given else '')
            + '; fix what it names and screen again')


def next_steps(verdict):
    """What the admin does next for the failed nodes of a verdict:
    {'drain': [scontrol line], 'resume': [...], 'rescreen': [command],
    'notes': [...]}: drain, fix, resume, then the same screen on them."""
    alone, pairs, nodeless = {}, {}, set()
    for f in verdict.failures():
        nodes = f.node.split('+') if f.node else []
        if len(nodes) == 1:
            alone.setdefault(nodes[0], f)
        elif nodes:
            pairs.setdefault(f.node, f)
        elif f.where() != 'input':      # every failure gets a next step
            nodeless.add(f.test.split()[0] if f.test else 'a test')
    # which nodes get a line is hpcval.drain's alone: the re-screen too
    slurm = drains.lines(
        verdict, {n: alone[n] for n in sorted(alone, key=_natural)},
        drain_reason)
    notes = slurm['notes']
    for nodes in sorted(pairs):
        if not any(n in alone for n in nodes.split('+')):
            notes.append(f'nodes {nodes} failed together in one job: '
                         f'screen each alone before draining either')
    if nodeless:
        notes.append(f'{", ".join(sorted(nodeless))} failed on no recorded '
                     f'node: nothing to drain; fix what its FAIL lines '
                     f'name, run it again and judge its report')
    for g in verdict.groups:
        cov = g.coverage
        if cov is not None and cov.rerun:
            notes.append(f'{g.name}: {len(cov.rerun)} node(s) not tested '
                         f'({abbrev(cov.rerun)}): the re-screen line tests '
                         f'them, the verdict line judges them with this '
                         f'screen')
        held = [n for n in cov.untested if n in cov.held] if cov else []
        if held:
            notes.append(f'{g.name}: not tested and not re-screened: '
                         f'{abbrev(held)} (Slurm held them out, or their '
                         f'job was refused as asked): return them to '
                         f'service or fix the option, or give --accept-out')
    rescreen = _rescreen(verdict, slurm['admitted'])
    return {'drain': slurm['drain'],
            'resume': slurm['resume'] if rescreen else [],
            'rescreen': rescreen, 'notes': notes}


# what a re-screen repeats of the screen's command line: the option and
# the full match its value must be (a value from a report reaches a
# command line the admin runs)
_SETTING = re.compile(r'[A-Za-z0-9_.%]+=[A-Za-z0-9_.,:+/@%=-]*')
_CARRIED = {'--mode': re.compile(r'[A-Za-z0-9_-]+'),
            '-S': _SETTING, '--setvar': _SETTING, '-J': _SETTING,
            '--job-option': _SETTING,
            '--distribute': re.compile(r'[A-Za-z0-9_,-]*'),
            '--exec-policy': re.compile(r'async|serial')}
# -J options a re-screen sets itself
_OWN_JOB_OPTIONS = ('nodelist', 'exclude', 'w', 'x')


def rescreen_settings(cmdline):
    """The options of a screen's ReFrame ``cmdline`` that a re-screen
    repeats (_CARRIED), only where its value is plain; [] when the line
    cannot be read."""
    try:
        argv = shlex.split(cmdline or '')
    except ValueError:
        return []
    out, words = [], iter(argv)
    for word in words:
        name, eq, value = word.partition('=')
        if name in _CARRIED and eq:
            pass
        elif word == '--distribute':
            value = ''
        elif word in _CARRIED:
            value = next(words, None)      # the option's value
        elif word[:2] in ('-S', '-J') and len(word) > 2:
            name, value = word[:2], word[2:]
        else:
            continue
        if value is None or not _CARRIED[name].fullmatch(value):
            continue
        if name in ('-J', '--job-option') and \
                value.split('=')[0].lstrip('-') in _OWN_JOB_OPTIONS:
            continue
        short = {'--setvar': '-S', '--job-option': '-J'}.get(name, name)
        if short == '--distribute':
            out.append(f'--distribute={value}' if value else
                       '--distribute')
        else:
            out += [short, value]
    return out


def _rescreen(verdict, failed):
    """reframe lines that run the failed screen tests again on the
    ``failed`` nodes only, with the screen's own settings, and the verdict
    that reads them with the first screen.  The other nodes are excluded:
    ``-J nodelist`` would join every pinned job to all of its nodes."""
    options = getattr(verdict, 'options', None) or {}
    commands = options.get('commands') or {}
    lines = []
    for g in verdict.groups:
        if g.coverage is None:
            continue
        mine = {n: f for n, f in failed.items()
                if plain_node(n) and any(f is x for x in g.failures)}
        # as a failed node's: a Slurm partition of the cluster here
        here = drains.local_cluster()[0].lower()
        untested = [n for n in g.coverage.rerun if plain_node(n)] \
            if g.scheduler in drains.SLURM and here == g.system.lower() \
            else []
        nodes = sorted({*mine, *untested}, key=_natural)
        if not nodes:
            continue
        tests = {screen_test(f) for f in mine.values()}
        tests |= set(g.coverage.tests) if untested else set()
        first = mine[min(mine, key=_natural)] if mine else None
        settings = rescreen_settings(commands.get(
            first.session if first else g.coverage.session, ''))
        mode = '--mode' in settings
        if not any(w.startswith('--distribute') for w in settings) and \
                not mode:
            settings.append('--distribute=all')
        where = f'{first.system}:{first.partition}' if first else g.name
        head = (f'reframe -r --system {shlex.quote(where)} '
                + ' '.join(shlex.quote(w) for w in settings))
        # a fixed mode runs its whole suite: no test is named
        names = '' if mode else ' ' + ' '.join(
            f'-n {shlex.quote(t)}' for t in sorted(
                {t.replace(' %', '%') for t in tests}))
        others = [n for n in g.coverage.partition_nodes if n not in nodes]
        if others:
            lines.append(f'{head} -J exclude={shlex.quote(abbrev(others))}'
                         f'{names} --report-file rescreen.json')
        elif g.coverage.known:      # every node of the partition failed
            lines.append(f'{head}{names} --report-file rescreen.json')
        else:       # the partition's nodes unknown: one run per node
            lines += [f'{head} -J nodelist={n}{names} --report-file '
                      f'rescreen-{n}.json' for n in nodes]
    if lines:
        lines.append(f'hpcval verdict {_verdict_options(options)}'
                     f'SCREEN.json rescreen*.json  # SCREEN.json: the '
                     f'first screen\'s report; each node is judged by its '
                     f'latest run')
    return lines


def _verdict_options(options):
    """The verdict's own options, as its command line gives them."""
    words = []
    if options.get('peer_factor') is not None:
        words += ['--peer-factor', f'{options["peer_factor"]:g}']
    accepted = [n for n in options.get('accept_out') or () if plain_node(n)]
    if accepted:
        words += ['--accept-out', abbrev(accepted)]
    if options.get('accept_unscreened'):
        words.append('--accept-unscreened')
    return ''.join(f'{shlex.quote(w)} ' for w in words)
