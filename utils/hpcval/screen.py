"""Node screening: which nodes a screen covered, and how each node's
figures compare with those of its peers in the same run.

A screen is a run with ReFrame's ``--distribute``: one test case per node,
named ``... %.nid=<node>``.  Its checks record the partition's node list as
Slurm gave it at run time (``hpcval_partition_nodes``, see
hpcval.benchmarks.screening), so a verdict read anywhere later knows which
nodes were not tested, and why (drained, down, reserved).

Peer comparison (the rule, documented in docs/screening.md): within one
system, partition, environment and test (all parameters but the node), each
node's figure is compared with the median of the same figure on the other
nodes.  It fails when it is worse than the peers' median by more than
``PEER_FACTOR`` (4 by default, ``hpcval verdict --peer-factor``: below a
quarter of the median for bandwidths, rates and FLOP/s, above four times
the median for times) and, where there are at least
``MIN_PEERS_FOR_MAD`` peers, also beyond ``MAD_K`` robust standard
deviations (1.4826 x the median absolute deviation of the peers'
log-values) from it, so that a noisy figure widens its own bound.  Times
(latencies) are compared only among at least ``MIN_PEERS_FOR_MAD`` peers:
on fewer, a healthy node's tiny-message latency is often four times its
one peer's.  Spreads (``*_std``) and figures of unknown direction are not
compared.
"""
import math
import re
import statistics
from dataclasses import dataclass, field

from hpcval.units import better

PEER_FACTOR = 4.0
MIN_PEERS_FOR_MAD = 5
MAD_K = 3.0
# a job cancelled because its node could not take it: the node was not
# tested (ReFrame's words, then Slurm's)
_UNAVAILABLE = re.compile(r'blocked due to reason: (ReqNodeNotAvail|Nodes '
                          r'required for job are DOWN|.*Reserv)')
_NID = re.compile(r'\s%\.nid=(\S+)')
_SCREEN_PARAMS = re.compile(r'\s%\.(nid|part)=\S+')


def node_of(case):
    """The node a distributed test case was pinned to, or None."""
    m = _NID.search(case.test)
    # ReFrame prints the node list abbreviated ('n2'); a list's repr
    # ("['n2']") is read the same
    return m.group(1).strip("[]'\"") if m else None


def not_started(case):
    """Slurm's reason when a distributed case's job never started because
    its node could not take it (drained, down, reserved), else ''."""
    m = _UNAVAILABLE.search(case.reason or '')
    return m.group(1) if m else ''


def screen_test(case):
    """The test's name without the screen's own parameters."""
    return _SCREEN_PARAMS.sub('', case.test)


def expand(nodelist):
    """'n[1-3],x7' -> ['n1', 'n2', 'n3', 'x7'] (Slurm's syntax)."""
    from reframe.utility import nodelist_expand
    return nodelist_expand(nodelist)


@dataclass
class Coverage:
    """Which of a partition's nodes a screen tested."""
    partition_nodes: list          # [] when no check recorded them
    tested: list
    untested: dict                 # node: why
    excluded: list = field(default_factory=list)   # (test, why)

    @property
    def known(self):
        return bool(self.partition_nodes)

    def line(self):
        total = len(self.partition_nodes) if self.known else None
        head = (f'{len(self.tested)} of {total} nodes tested' if self.known
                else f'{len(self.tested)} nodes tested, the partition\'s '
                     f'node list was not recorded')
        if not self.untested:
            return head
        shown = [f'{n} ({why})' for n, why in sorted(
            self.untested.items(), key=lambda kv: _natural(kv[0]))]
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
    recorded, tested, untested, excluded = {}, set(), {}, []
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
        why = not_started(case)
        if case.result == 'skip':
            continue
        if why:
            untested.setdefault(node, f'job not started: {why}')
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
            elif node not in untested:
                untested[node] = 'no test case ran there'
    for node in tested:
        untested.pop(node, None)
    return Coverage(sorted(partition_nodes, key=_natural),
                    sorted(tested, key=_natural), untested,
                    sorted(set(excluded)))


def _worse(value, median, direction):
    """How many times worse than ``median`` ``value`` is (1: equal)."""
    if direction == 'higher':
        return median / value if value > 0 else math.inf
    return value / median if median > 0 else math.inf


def peer_comparison(cases, samples_of, factor=PEER_FACTOR):
    """{(id(case), metric): PeerResult} for the distributed ``cases``
    (``samples_of(case)``: its samples, objects with metric, value, unit);
    ``factor``: how many times worse than the peers' median fails."""
    groups = {}
    for case in cases:
        node = node_of(case)
        if node is None or case.result not in ('pass', 'fail'):
            continue
        for s in samples_of(case):
            if s.metric.endswith('_std') or better(s.unit) == 'unknown':
                continue
            key = (case.system, case.partition, case.environ,
                   screen_test(case), s.metric, s.unit)
            groups.setdefault(key, []).append((node, case, s.value))

    out = {}
    for key, entries in groups.items():
        direction = better(key[-1])
        for node, case, value in entries:
            peers = [v for n, _, v in entries if n != node and v > 0]
            if not peers or value <= 0:
                continue
            if direction == 'lower' and len(peers) < MIN_PEERS_FOR_MAD:
                # a time (latency) is the noisy kind: with too few peers
                # to measure its spread, noise cannot be told from a fault
                continue
            median = statistics.median(peers)
            worse = _worse(value, median, direction)
            bound = factor
            if len(peers) >= MIN_PEERS_FOR_MAD:
                logs = [math.log(v) for v in peers]
                mid = statistics.median(logs)
                mad = statistics.median(abs(x - mid) for x in logs)
                bound = max(bound, math.exp(MAD_K * 1.4826 * mad))
            limit = median / bound if direction == 'higher' \
                else median * bound
            cmp = '>=' if direction == 'higher' else '<='
            out[(id(case), key[4])] = PeerResult(
                node, value, key[-1], median, len(peers), worse <= bound,
                f'{cmp} {limit:.6g} {key[-1]} (peer median {median:.6g} '
                f'of {len(peers)} nodes, x{bound:.3g})')
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
