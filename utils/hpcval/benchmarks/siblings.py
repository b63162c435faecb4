"""One node's GPUs, or one node's links, compared with each other.

An absolute floor (a fraction of the reference) passes a GPU or link that
is much worse than its siblings on the same node, and siblings are the
best reference a node has.  The rule is the node screen's peer rule
(hpcval.screen.peer_comparison) applied with the node's components as the
peers: each figure against the median of its siblings, failing when worse
by more than the benchmark's ``factor`` and, among at least
``screen.MIN_PEERS_FOR_MAD`` siblings, also by more than ``screen.MAD_K``
robust standard deviations of their log-values.  The factor per benchmark,
with its measured false-alarm rate and detection limit, is in
docs/benchmarks/<benchmark>.md.
"""
from types import SimpleNamespace

from hpcval import screen
from hpcval.inputs import InputError


def check_factor(value):
    """Raise InputError unless ``value`` is a finite factor above 1."""
    if not 1 < value < float('inf'):
        raise InputError(f'-S sibling_factor={value}: must be a number '
                         f'above 1 (1.6: under 62.5% of the siblings\' '
                         f'median fails)')


def compare(groups, factor):
    """Failures, one line each, of ``groups``: {figure: {component:
    (value, unit)}}, e.g. {'triad': {'GPU 0': (3.98e6, 'MB/s'), ...}}."""
    cases, labels = [], {}
    for figure, members in groups.items():
        for i, (component, (value, unit)) in enumerate(members.items()):
            # the screen's peers are nodes named by '%.nid=': one per
            # component, its name kept aside (it may hold spaces)
            case = SimpleNamespace(
                system='', partition='', environ='', result='pass',
                test=f'{figure} %.nid=c{i}',
                samples=[SimpleNamespace(metric=figure, value=value,
                                         unit=unit)])
            cases.append(case)
            labels[id(case)] = component

    found = screen.peer_comparison(cases, lambda c: c.samples, factor)
    failures = []
    for case in cases:
        figure = case.samples[0].metric
        peer = found.get((id(case), figure))
        if peer is None or peer.passed:
            continue
        share = peer.value / peer.median
        # the screen's bound reads '>= 30.8 GB/s (peer median ..., x1.5)'
        bound, _, rest = peer.bound.partition(' (peer median')
        times = rest.rpartition(', ')[2].rstrip(')')
        failures.append(
            f'{labels[id(case)]}: {figure} {peer.value:.6g} {peer.unit} is '
            f'{share:.0%} of its {peer.peers} siblings\' median '
            f'{peer.median:.6g} (bound {bound}, {times})')
    return failures
