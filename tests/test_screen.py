"""hpcval.screen without Slurm: the peer rule and node coverage on cases
shaped as hpcval.publish.results makes them."""
from types import SimpleNamespace

from hpcval import screen


def case(node, result='pass', reason='', extras=None, test='CpuDgemmCheck'):
    return SimpleNamespace(
        test=f'{test} %.part=mc:cpu %.nid={node}', system='mc',
        partition='cpu', environ='gnu', result=result, reason=reason,
        extras=extras or {}, nodes=(node,))


def sample(metric, value, unit):
    return SimpleNamespace(metric=metric, value=value, unit=unit)


def judge(values, unit='GFLOP/s', metric='gflops_min',
          factor=screen.PEER_FACTOR):
    cases = [case(node) for node in values]
    figures = {id(c): [sample(metric, values[screen.node_of(c)], unit)]
               for c in cases}
    found = screen.peer_comparison(cases, lambda c: figures[id(c)], factor)
    return {screen.node_of(c): found[(id(c), metric)] for c in cases}


def test_a_node_at_a_fifth_of_its_peers_fails_and_no_other():
    values = {f'n{i}': 20.0 + (i % 5) for i in range(1, 65)}
    values['n7'] = 4.0
    result = judge(values)
    assert [n for n, r in result.items() if not r.passed] == ['n7']
    assert 'peer median 22' in result['n7'].bound


def test_two_nodes_the_slow_one_fails_the_fast_one_passes():
    result = judge({'n1': 20.0, 'n2': 4.0})
    assert not result['n2'].passed and result['n1'].passed
    # a time: higher is worse
    result = judge({'n1': 1.0, 'n2': 5.0}, unit='us', metric='latency_8B')
    assert not result['n2'].passed and result['n1'].passed
    # a site with quiet nodes asks for less: half as fast fails
    result = judge({'n1': 20.0, 'n2': 9.0}, factor=2)
    assert not result['n2'].passed


def test_a_node_at_the_bound_passes():
    result = judge({'n1': 20.0, 'n2': 5.0})
    assert result['n2'].passed and 'x4' in result['n2'].bound


def test_a_noisy_figure_widens_its_own_bound():
    # peers spread by a factor 3 around the median: x2 alone would fail
    # the slowest healthy node; 3 robust sigmas do not
    values = {f'n{i}': v for i, v in enumerate(
        [10, 30, 12, 25, 15, 20, 18, 22, 9, 28, 14, 16], start=1)}
    result = judge(values, factor=2)
    assert all(r.passed for r in result.values())


def test_spreads_and_unknown_units_are_not_compared():
    cases = [case('n1'), case('n2')]
    figures = {id(cases[0]): [sample('latency_8B_std', 1.0, 'us'),
                              sample('score', 1.0, 'points')],
               id(cases[1]): [sample('latency_8B_std', 90.0, 'us'),
                              sample('score', 90.0, 'points')]}
    assert screen.peer_comparison(cases, lambda c: figures[id(c)]) == {}


def test_coverage_names_what_was_not_tested():
    recorded = {'partition_nodes': {
        'partition': 'debug', 'nodes': 'n[1-4]',
        'unavailable': {'n3': 'drained: fan', 'n4': 'down'}}}
    cases = [case('n1', extras=recorded),
             case('n4', result='fail', extras=recorded, reason=(
                 'job blocked error: [jobid=9] job cancelled because it was '
                 'blocked due to reason: ReqNodeNotAvail, '
                 'UnavailableNodes:n4'))]
    cov = screen.coverage(cases)
    assert cov.tested == ['n1']
    assert cov.untested == {'n2': 'no test case ran there',
                            'n3': 'drained: fan', 'n4': 'down'}
    assert cov.line().startswith('1 of 4 nodes tested; not tested: n2 ')


def test_coverage_without_a_recorded_node_list_is_unknown():
    cov = screen.coverage([case('n1')])
    assert not cov.known
    assert 'node list was not recorded' in cov.line()


def test_multinode_cases_are_excluded_not_blamed():
    why = 'needs 2 nodes: ...'
    cov = screen.coverage([case('n1', result='skip',
                                extras={'screen_excluded': why},
                                test='Mpi4pyPingPongCheck')])
    assert cov.excluded == [('Mpi4pyPingPongCheck', why)]
    assert cov.tested == []
