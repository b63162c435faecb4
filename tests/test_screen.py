"""hpcval.screen without Slurm: the peer rule and node coverage on cases
shaped as hpcval.publish.results makes them."""
import math
import pathlib
from types import SimpleNamespace

import pytest

from hpcval import drain, peers, screen


@pytest.fixture(autouse=True)
def _slurm_cluster_here(monkeypatch):
    """The screens below are of system mc: its Slurm cluster is here."""
    monkeypatch.setattr(drain, 'local_cluster', lambda: ('mc', ''))


def case(node, result='pass', reason='', extras=None,
         test='LikwidBenchCheck %kernel=peakflops'):
    return SimpleNamespace(
        test=f'{test} %.part=mc:cpu %.nid={node}', system='mc',
        partition='cpu', environ='gnu', result=result, reason=reason,
        extras=extras or {}, nodes=(node,))


def sample(metric, value, unit):
    return SimpleNamespace(metric=metric, value=value, unit=unit)


def judge(values, unit='MFLOP/s', metric='peakflops_rate',
          factor=screen.PEER_FACTOR):
    cases = [case(node) for node in values]
    figures = {id(c): [sample(metric, values[screen.node_of(c)], unit)]
               for c in cases}
    found = screen.peer_comparison(cases, lambda c: figures[id(c)], factor)
    return {screen.node_of(c): found[(id(c), metric)] for c in cases
            if (id(c), metric) in found}


def test_a_node_at_a_fifth_of_its_peers_fails_and_no_other():
    values = {f'n{i}': 20.0 + (i % 5) for i in range(1, 65)}
    values['n7'] = 4.0
    result = judge(values)
    assert [n for n, r in result.items() if not r.passed] == ['n7']
    assert 'peer median 22' in result['n7'].bound


def test_two_nodes_the_slow_one_fails_the_fast_one_passes():
    result = judge({'n1': 20.0, 'n2': 4.0})
    assert not result['n2'].passed and result['n1'].passed
    # a site with quiet nodes asks for less: half as fast fails
    result = judge({'n1': 20.0, 'n2': 9.0}, factor=2)
    assert not result['n2'].passed


def test_a_node_at_the_bound_passes():
    result = judge({'n1': 20.0, 'n2': 5.0}, factor=4)
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
             case('n4', result='fail', extras=dict(
                 recorded, job_fate=['blocked', 'down']), reason=(
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


def test_times_are_compared_only_among_enough_peers():
    # two healthy nodes of a loaded host: 6.5 us against 1.5 us is noise
    # that one peer cannot measure (seen in a real 2-node screen)
    assert judge({'n1': 6.45, 'n2': 1.54}, unit='us',
                 metric='latency_8B') == {}
    # among five peers and more a time is compared, higher is worse;
    # among 16 the spread is measured well enough to name a x6 time
    values = {f'n{i}': 1.0 + 0.01 * i for i in range(1, 17)}
    values['n17'] = 6.0
    result = judge(values, unit='us', metric='latency_8B')
    assert [n for n, r in result.items() if not r.passed] == ['n17']


# -- blame only what is broken, and what the admin does next ----------------

from hpcval import verdict  # noqa: E402
from hpcval.benchmarks import screening  # noqa: E402

# ReFrame's reason when sbatch could not reach the controller (several
# lines, read whole by hpcval.publish.results)
SBATCH_DOWN = ("command 'sbatch rfm_job.sh' failed with exit code 1: | "
               "--- stdout --- | --- stdout --- | --- stderr --- | "
               "sbatch: error: Batch job submission failed: Unable to "
               "contact slurm controller (connect failure) | --- stderr ---")
RECORDED = {'partition_nodes': {'partition': 'debug', 'nodes': 'n[1-4]',
                                'unavailable': {}}}


def screen_case(node, value=None, result='pass', reason='', time=1.0,
                session='s1', extras=None):
    c = case(node, result=result, reason=reason,
             extras=dict(RECORDED, **(extras or {})))
    c.session, c.time, c.label, c.phase = session, time, '', 'sanity'
    c.replay, c.deps = False, ()
    c.samples = [] if value is None else [
        SimpleNamespace(metric='peakflops_rate', value=value,
                        unit='MFLOP/s', reference=None, lower=None,
                        upper=None, case=c)]
    return c


def judge_cases(cases, **kw):
    loaded = SimpleNamespace(cases=cases, fixtures=[], problems=[],
                             damaged=[], conflicts=[],
                             samples=[s for c in cases for s in c.samples])
    return verdict.judge(loaded, **kw)


def test_not_the_nodes_fault_is_not_tested_not_failed():
    # the failure's words, and the job's fate the run recorded
    reasons = {
        'n2': (SBATCH_DOWN, screening.slurm_cause(SBATCH_DOWN)),
        'n3': ("run: usage error: time_limit=0:00:30 is below Slurm's "
               "shortest time limit, one minute", ['usage error', '']),
        'n4': ('sanity: sanity error: job 31 on n4 CANCELLED: cancelled '
               '(scancel, or an administrator); likwid-bench printed no '
               'MFlops/s', ['CANCELLED', '']),
    }
    cases = [screen_case('n1', 20.0)] + [
        screen_case(n, result='fail', reason=r, extras={'job_fate': fate})
        for n, (r, fate) in reasons.items()]
    v = judge_cases(cases)
    assert v.status == verdict.EXIT_INCOMPLETE and v.failures() == []
    cov = v.groups[0].coverage
    assert cov.untested == {
        'n2': 'not tested: controller unreachable',
        'n3': 'not tested: usage error',
        'n4': 'not tested: cancelled (scancel, or an administrator)'}


def test_what_failed_is_read_from_the_recorded_fate_not_the_words():
    """The job's fate the run recorded (hpcval_job_fate: Slurm's state by
    sacct, or the run's own cause) decides; the failure's words do not."""
    said = ('sanity: job 31 on n2 CANCELLED: cancelled (scancel, or an '
            'administrator); blocked due to reason: ReqNodeNotAvail')
    for fate, untested in (([], None), (['TIMEOUT', ''], None),
                           (['x', 'CANCELLED'], None),
                           (['PREEMPTED', ''], 'not tested: preempted'),
                           (['blocked', 'drained: fan'],
                            'job not started (drained: fan)')):
        v = judge_cases([screen_case('n1', 20.0),
                         screen_case('n2', result='fail', reason=said,
                                     extras={'job_fate': fate})])
        assert v.groups[0].coverage.untested.get('n2') == untested, fate
        assert [f.node for f in v.failures()] == ([] if untested else
                                                  ['n2']), fate
    # the words alone, of a case that recorded no fate: the node's failure
    c = screen_case('n2', result='fail', reason=SBATCH_DOWN)
    assert screen.not_tested(c) == ''
    assert screening.slurm_cause(SBATCH_DOWN) == ['controller unreachable',
                                                  '']


def test_a_broken_node_still_fails_and_a_timeout_is_the_node_s():
    hung = ('sanity: job 40 on n2 TIMEOUT: killed at its time limit '
            '(0:01:00); output file missing')
    v = judge_cases([screen_case('n1', 20.0),
                     screen_case('n2', result='fail', reason=hung,
                                 extras={'job_fate': ['TIMEOUT', '']})])
    assert v.status == verdict.EXIT_FAILED
    assert list(verdict.by_node(v)) == ['n2']


def test_a_multinode_job_names_every_node_it_ran_on():
    c = case('n1', result='fail', reason='sanity: rank 1 died',
             test='Mpi4pyPingPongCheck %layout=across_nodes')
    c.test = 'Mpi4pyPingPongCheck %layout=across_nodes'     # not pinned
    c.extras = {'job_nodes': ['n1', 'n2']}
    c.nodes = ('n1',)       # ReFrame's list: the batch host only
    c.session, c.time, c.label, c.phase, c.replay, c.deps = \
        's1', 1.0, '', 'sanity', False, ()
    c.samples = []
    v = judge_cases([c])
    assert [f.node for f in v.failures()] == ['n1+n2']
    # a name that is not a plain node name is not trusted
    c.extras = {'job_nodes': ['n1', 'n2; rm -rf /']}
    assert [f.node for f in judge_cases([c]).failures()] == ['n1']


def test_drain_line_and_rescreen_only_the_failed_nodes():
    cases = [screen_case(n, v) for n, v in
             (('n1', 20.0), ('n2', 21.0), ('n3', 2.0), ('n4', 20.5))]
    v = judge_cases(cases)
    steps = screen.next_steps(v)
    [drain] = steps['drain']
    assert drain.startswith('scontrol update nodename=n3 state=drain '
                            'reason="hpcval: LikwidBenchCheck peakflops_rate '
                            '2 MFLOP/s')
    assert drain.count('"') == 2 and '$' not in drain
    assert steps['rescreen'][0] == (
        "reframe -r --system mc:cpu --distribute=all -J "
        "exclude='n[1-2,4]' -n LikwidBenchCheck%kernel=peakflops "
        "--report-file rescreen.json")
    text = verdict.render_text(v)
    assert drain in text and 'exclude=' in text
    assert verdict.as_dict(v)['next_steps'] == steps


def test_drain_reason_keeps_no_shell_character():
    f = verdict.Failure('mc', 'cpu', 'n3', '', 'X %.nid=n3', '',
                        reason='sanity: `reboot` $(id) "q" \\ \'s\' ; & |')
    reason = screen.drain_reason(f)
    assert not set(reason) & set('`$"\\\';&|')
    assert reason.startswith('hpcval: X sanity: reboot (id) q s')


def test_a_rescreen_read_with_the_first_judges_by_the_latest_run():
    first = [screen_case(n, v) for n, v in
             (('n1', 20.0), ('n2', 21.0), ('n3', 2.0), ('n4', 20.5))]
    again = [screen_case('n3', 20.8, time=9.0, session='s2')]
    assert judge_cases(first).status == verdict.EXIT_FAILED
    assert judge_cases(again).status == verdict.EXIT_INCOMPLETE
    v = judge_cases(first + again, accept_unscreened=True)
    assert v.status == verdict.EXIT_OK, verdict.render_text(v)
    # a later run that did not test the node does not hide the failure
    lost = [screen_case('n3', result='fail', reason=SBATCH_DOWN, time=9.0,
                        session='s2', extras={'job_fate': [
                            'controller unreachable', '']})]
    assert judge_cases(first + lost).status == verdict.EXIT_FAILED


def test_accepted_out_nodes_let_the_rest_pass():
    recorded = {'partition_nodes': {
        'partition': 'debug', 'nodes': 'n[1-4]',
        'unavailable': {'n4': 'drained: DIMM replaced'}}}
    cases = [screen_case(n, v, extras=recorded) for n, v in
             (('n1', 20.0), ('n2', 21.0), ('n3', 20.4))]
    assert judge_cases(cases).status == verdict.EXIT_INCOMPLETE
    v = judge_cases(cases, accept_out=('n4',), accept_unscreened=True)
    assert v.status == verdict.EXIT_OK
    assert 'accepted as out: n4 (drained: DIMM replaced)' in \
        verdict.render_text(v)
    # accepting a node does not hide its failure
    bad = cases + [screen_case('n4', 1.0, extras=recorded)]
    assert judge_cases(bad, accept_out=('n4',)).status == \
        verdict.EXIT_FAILED


# -- the peer rule as a function (nodes, GPUs, links) -------------------------

def quiet(n, spread=0.01, centre=100.0):
    # a deterministic healthy spread of about ``spread`` (relative)
    return {f'n{i}': centre * (1 + spread * math.sin(7.3 * i))
            for i in range(1, n + 1)}


def test_a_node_10_percent_slow_among_quiet_peers_is_the_only_outlier():
    values = quiet(64)
    values['n9'] = values['n9'] * 0.9
    out = peers.outliers(values, 'flops')
    assert list(out) == ['n9']
    j = out['n9']
    assert j.peers == 63 and 1.10 < j.worse < 1.13 and j.limit < j.median
    # 4 % slow is inside the 5 % floor: not named
    values = quiet(64)
    values['n9'] *= 0.96
    assert peers.outliers(values, 'bandwidth') == {}


def test_a_noisy_group_widens_the_bound_and_keeps_its_false_alarms():
    values = quiet(64, spread=0.10)
    assert peers.outliers(values, 'flops') == {}
    j = peers.judge(values, 'flops')['n1']
    assert j.factor > 1.2        # spread, not the 5 % floor, sets it


def test_gpus_inside_a_node_few_peers_the_floor_judges():
    # 8 GPUs: too few peers for the spread to narrow the bound below
    # the floor, so a 20 % slow GPU is named, 3 % is not
    gpus = {f'GPU {i}': 3000.0 + i for i in range(8)}
    gpus['GPU 5'] = 2400.0
    assert list(peers.outliers(gpus, 'MB/s')) == ['GPU 5']
    gpus['GPU 5'] = 2920.0
    assert peers.outliers(gpus, 'MB/s') == {}


def test_times_are_worse_when_higher_and_need_five_peers():
    assert peers.judge({'a': 1.0, 'b': 9.0, 'c': 1.1}, 'us') == {}
    lat = {f'l{i}': 2.0 + 0.01 * i for i in range(10)}
    lat['l3'] = 3.0
    out = peers.outliers(lat, 'time')
    assert list(out) == ['l3'] and out['l3'].limit > out['l3'].median


def test_the_rule_refuses_what_it_cannot_judge():
    with pytest.raises(ValueError, match='no peer rule for'):
        peers.judge({'a': 1.0, 'b': 1.0}, 'points')
    with pytest.raises(ValueError, match='floor'):
        peers.judge({'a': 1.0, 'b': 1.0}, 'flops', floor=1.5)
    # zero, negative and non-finite values are not judged nor used
    out = peers.judge({'a': 10.0, 'b': 0.0, 'c': float('nan'),
                                  'd': 10.2}, 'flops')
    assert sorted(out) == ['a', 'd']


def test_k_of_peers_follows_the_simulated_table():
    assert peers.k_of_peers(3) is None
    assert peers.k_of_peers(64) == 4.44
    assert 4.0 < peers.k_of_peers(100) < 4.44
    assert 3.72 < peers.k_of_peers(10 ** 6) < 4.0
    assert peers.k_of_peers(1 << 31) == 3.72


def test_leave_one_out_median_is_exact():
    values = {'a': 1.0, 'b': 2.0, 'c': 3.0, 'd': 10.0}
    j = peers.judge(values, 'flops')
    assert j['a'].median == pytest.approx(3.0)
    assert j['d'].median == pytest.approx(2.0)
    assert j['b'].median == pytest.approx(3.0)
    # of an even count, the geometric mean of the middle two (log-values)
    j = peers.judge(dict(values, e=20.0), 'flops')
    assert j['e'].median == pytest.approx(math.sqrt(2.0 * 3.0))


def test_slurm_node_lists_expand_and_abbreviate_without_reframe():
    assert screen.expand('n[1-3,5],x7') == ['n1', 'n2', 'n3', 'n5', 'x7']
    assert screen.expand('g[08-10]-ib') == ['g08-ib', 'g09-ib', 'g10-ib']
    assert screen.expand('r[1-2]n[1-2]') == ['r1n1', 'r1n2', 'r2n1', 'r2n2']
    for bad in ('n[1-', 'n[3-1]', 'n[a]', 'n1,,n2', 'n]1['):
        with pytest.raises(ValueError):
            screen.expand(bad)
    names = [f'n{i}' for i in (1, 2, 3, 5, 9, 10)] + ['g08', 'g09', 'x']
    assert screen.abbrev(names) == 'g[08-09],n[1-3,5,9-10],x'
    assert screen.expand(screen.abbrev(names)) == sorted(
        names[6:8]) + names[:6] + ['x']
    assert screen.abbrev(['n4']) == 'n4'


# -- submissions that cannot double; blame by cause -------------------------

SLURM = pathlib.Path(__file__).parent / 'fixtures' / 'slurm'


def blocks(name):
    """{header: text} of a captured file's '== command' blocks."""
    out, head = {}, None
    for line in (SLURM / name).read_text().splitlines():
        if line.startswith('== '):
            head = line[3:]
            out[head] = ''
        elif head:
            out[head] += line + '\n'
    return out


def test_sbatchs_refusals_are_usage_errors_of_no_node():
    for cmd, text in blocks('sbatch_refusals.txt').items():
        fate, why = screening.submission_failure(text, 'none', [])
        assert why.startswith('usage error: sbatch refused the job: '), cmd
        c = screen_case('n1', result='fail', reason=f'run: reframe error: '
                                                    f'{why}',
                        extras={'job_fate': fate})
        assert screen.not_tested(c).startswith(
            'not tested: usage error (sbatch refused the job: '), cmd
    # every node's sbatch refused: a usage error of the screen, one line
    fate, why = screening.submission_failure(
        'sbatch: error: Invalid --time specification\n', 'none', [])
    v = judge_cases([screen_case(n, result='fail', reason=why,
                                 extras={'job_fate': fate})
                     for n in ('n1', 'n2', 'n3', 'n4')])
    assert v.status == verdict.EXIT_INPUT and v.failures() == []
    assert v.usage.startswith('usage error of the screen: its job failed '
                              'the same way on every node')
    assert 'Invalid --time' in v.usage
    # one node's refusal among passing ones: that node is not tested
    v = judge_cases([screen_case('n1', result='fail', reason=why,
                                 extras={'job_fate': fate})] +
                    [screen_case(n, 20.0) for n in ('n2', 'n3', 'n4')])
    assert v.status == verdict.EXIT_INCOMPLETE and not v.usage
    assert screen.next_steps(v)['drain'] == []


def test_a_stalled_submission_is_named_and_charges_no_node():
    text = next(iter(blocks('sbatch_stalled.txt').values()))
    fate, why = screening.submission_failure(text, 'cancelled', ['19'])
    assert why.startswith('controller stalled: sbatch got no answer '
                          '(sbatch: error: Batch job submission failed: '
                          'Socket timed out on send/recv operation)')
    assert 'job(s) 19 of it after all, cancelled' in why
    cases = [screen_case('n1', 20.0), screen_case('n2', 20.2),
             screen_case('n3', result='fail', reason=f'run: {why}',
                         extras={'job_fate': fate}),
             screen_case('n4', 20.1)]
    v = judge_cases(cases, accept_unscreened=True)
    assert v.status == verdict.EXIT_INCOMPLETE and v.failures() == []
    assert v.groups[0].coverage.untested == {'n3': (
        'not tested: controller stalled (the controller created job(s) 19 '
        'of it after all, cancelled)')}


def fake_tool(folder, name, script):
    path = folder / name
    path.write_text('#!/bin/sh\n' + script)
    path.chmod(0o755)


def test_a_failed_submission_is_reconciled_with_the_queue(tmp_path,
                                                          monkeypatch):
    """squeue times out while the controller is stopped, then lists the
    job it made of the timed-out sbatch (the captured outputs): that job
    is cancelled and named; a queue that never answers is said so."""
    from hpcval.benchmarks import screening
    said = blocks('sbatch_stalled.txt')
    stalled, resumed = [t for h, t in said.items() if h.startswith('squeue')]
    (tmp_path / 'stalled.txt').write_text(stalled.rsplit('exit', 1)[0])
    (tmp_path / 'resumed.txt').write_text(resumed.rsplit('exit', 1)[0])
    fake_tool(tmp_path, 'squeue', f'''cd {tmp_path}
if [ ! -e asked ]; then touch asked; cat stalled.txt >&2; exit 1; fi
cat resumed.txt
''')
    fake_tool(tmp_path, 'scancel', f'echo "$@" >> {tmp_path}/cancelled\n')
    monkeypatch.setenv('PATH', f'{tmp_path}:/usr/bin:/bin')
    comment = 'hpcval-submission:0123456789abcdef'
    assert screening.reconcile(comment, wait_s=5, settle_s=0, every=0) == \
        ('cancelled', ['19'])
    assert (tmp_path / 'cancelled').read_text() == '19\n'
    assert screening.reconcile('hpcval-submission:other', settle_s=0,
                               every=0) == ('none', [])
    fake_tool(tmp_path, 'squeue', 'exit 1\n')
    assert screening.reconcile(comment, wait_s=0, every=0) == \
        ('unknown', [])


# -- every partition screened, or said not to be -----------------------------

def spread_cases(count, sigma, slow=None):
    """``count`` nodes of healthy figures log-normal around 20 with
    ``sigma`` (fixed draws), ``slow``: (node, factor) of one node."""
    import random
    draw = random.Random(count)
    cases = [screen_case(f'n{i}', 20.0 * math.exp(draw.gauss(0, sigma)))
             for i in range(1, count + 1)]
    if slow:
        node, factor = slow
        cases[int(node[1:]) - 1].samples[0].value *= factor
    return cases


def test_each_partition_prints_what_its_screen_can_find():
    # 64 nodes at 1 % spread: a 0.8x node is named, and the screen says so
    v = judge_cases(spread_cases(64, 0.01, ('n7', 0.8)))
    [r] = v.groups[0].reach
    assert r.screened and r.peers == 63 and 1.05 <= r.bound < 1.12
    assert r.finds < 1.25
    assert [f.node for f in v.failures()] == ['n7']
    text = verdict.render_text(v)
    assert ('screen reach: LikwidBenchCheck %kernel=peakflops: '
            'peakflops_rate: 64 nodes: bound 0.9') in text


def test_a_small_partition_passes_at_the_wider_bound_it_states():
    # 8 nodes at 2 % spread: k(7) = 31 widens the bound past 0.8x (at
    # 1 % it is about 0.81x: the partition is screened only just)
    cases = spread_cases(8, 0.02, ('n3', 0.8))
    v = judge_cases(cases)
    [r] = v.groups[0].reach
    assert not r.screened and r.bound > 1.25
    # every node passed: exit 4, not 2 (untested), the bound stated
    assert v.failures() == [] and v.status == verdict.EXIT_WIDER == 4
    assert 'every node passed, at the bound stated' in \
        verdict.render_text(v)
    [why] = [w for w in v.incomplete if 'not screened' in w]
    assert why.startswith('mc:cpu: LikwidBenchCheck %kernel=peakflops: '
                          'peakflops_rate: 8 nodes: bound 0.')
    assert judge_cases(cases, accept_unscreened=True).status == \
        verdict.EXIT_OK
    # two nodes: no spread at all
    [r] = judge_cases(spread_cases(2, 0.01)).groups[0].reach
    assert r.finds is None and 'too few to measure their spread' in r.line()
    # an untested node besides: incomplete (2), whatever the bound
    lost = spread_cases(8, 0.02)[:7] + [screen_case(
        'n8', result='abort', reason='aborted due to KeyboardInterrupt')]
    assert judge_cases(lost).status == verdict.EXIT_INCOMPLETE


def test_a_small_partition_with_references_is_judged_by_them():
    cases = spread_cases(8, 0.02)
    for c in cases:
        s = c.samples[0]
        s.reference, s.lower, s.upper = 20.0, -0.1, None
    v = judge_cases(cases)
    [r] = v.groups[0].reach
    assert r.by_references and r.screened
    assert 'judged by the references instead' in r.line()
    assert not any('not screened' in w for w in v.incomplete)


# -- next steps that work as printed ------------------------------------------

def test_the_rescreen_carries_the_screens_settings_after_a_resume():
    cases = [screen_case(n, v) for n, v in
             (('n1', 20.0), ('n2', 21.0), ('n3', 2.0), ('n4', 20.5))]
    cmd = ("/venv/bin/reframe -c checks/likwid_bench.py --prefix /x -r "
           "--system minicluster --distribute=all -n "
           "LikwidBenchCheck%kernel=peakflops -S LikwidBenchCheck.repeats=3 "
           "-J account=proj1 -J exclude=n9 --report-file /x/r.json")
    loaded = SimpleNamespace(cases=cases, fixtures=[], problems=[],
                             damaged=[], conflicts=[], commands={'s1': cmd},
                             samples=[s for c in cases for s in c.samples])
    v = verdict.judge(loaded, peer_factor=4.0, accept_unscreened=True)
    steps = screen.next_steps(v)
    assert steps['resume'] == ['scontrol update nodename=n3 state=resume']
    assert steps['rescreen'] == [
        "reframe -r --system mc:cpu --distribute=all -S "
        "LikwidBenchCheck.repeats=3 -J account=proj1 -J "
        "exclude='n[1-2,4]' -n LikwidBenchCheck%kernel=peakflops "
        "--report-file rescreen.json",
        "hpcval verdict --peer-factor 4 --accept-unscreened SCREEN.json "
        "rescreen*.json  # SCREEN.json: the first screen's report; each "
        "node is judged by its latest run"]
    text = verdict.render_text(v)
    assert text.index('state=drain') < text.index('state=resume') < \
        text.index('reframe -r')
    # a fixed mode runs its suite: its name, no test named
    loaded.commands = {'s1': 'hpcval run -r --system minicluster --mode '
                             'screen --report-file /x/r.json'}
    [line, _] = screen.next_steps(verdict.judge(loaded))['rescreen']
    assert line == ("reframe -r --system mc:cpu --mode screen -J "
                    "exclude='n[1-2,4]' --report-file rescreen.json")


def test_the_rescreen_repeats_no_setting_that_is_not_plain():
    assert screen.rescreen_settings(
        "reframe -S 'x=$(reboot)' -S a.b=1 -c /tmp/evil -J 'q=`id`' "
        "--mode 'a;b' --exec-policy serial -Sc.d=2 -J nodelist=n1") == [
        '-S', 'a.b=1', '--exec-policy', 'serial', '-S', 'c.d=2']
    assert screen.rescreen_settings("reframe -S 'unbalanced") == []


def test_the_rule_on_a_real_clusters_memory_bandwidth_per_node():
    """Four real nodes' STREAM Triad (Intel Cluster Checker's output,
    tests/fixtures/documents/intel-clck-stream-per-host.txt): healthy, none is named; one
    lowered by 20 % (a mutation of the real figures) is named by the
    floor; with 3 peers the spread is not measured, so the partition says
    it was not screened for slowness."""
    import re
    text = (pathlib.Path(__file__).parent / 'fixtures' / 'documents' /
            'intel-clck-stream-per-host.txt').read_text()
    found = dict(re.findall(r"host (\S+) returned: '(\S+) MB/s'", text))
    values = {host: float(v) for host, v in found.items()}
    assert len(values) == 4
    assert all(r.passed for r in judge(values, unit='MB/s',
                                       metric='triad').values())
    values['compute-00-02'] *= 0.8
    result = judge(values, unit='MB/s', metric='triad')
    assert [n for n, r in result.items() if not r.passed] == \
        ['compute-00-02']
    cases = [case(n) for n in values]
    figures = {id(c): [sample('triad', values[screen.node_of(c)], 'MB/s')]
               for c in cases}
    [r] = screen.reach(cases, lambda c: figures[id(c)])
    # the floor's bound, stated; what it names is not
    assert r.finds is None and not r.screened
    assert r.line().startswith(
        "LikwidBenchCheck %kernel=peakflops: triad: 4 nodes: bound 0.95x "
        "the peers' median, the floor alone: 3 peer(s), too few")


def test_a_finished_jobs_node_list_is_asked_for_once():
    from hpcval.benchmarks import screening

    class Job:
        state, asked = 'RUNNING', 0

        @property
        def nodelist(self):
            self.asked += 1
            return ['n1']

    job = Job()
    screening.cache_job_nodelist(job)
    assert job.nodelist == ['n1'] and job.nodelist == ['n1']
    assert job.asked == 2           # running: asked each time
    job.state = 'COMPLETED'
    assert [job.nodelist for _ in range(19)] == [['n1']] * 19
    assert job.asked == 3 and isinstance(job, Job)


# -- a screen stopped, preempted, or refused as a whole -----------------------

STOPPED = 'run: aborted due to KeyboardInterrupt'
PREEMPTED = ('sanity: sanity error: job 15 on n3 PREEMPTED: preempted by a '
             'higher-priority job')


def test_a_stopped_or_preempted_case_is_not_tested_and_is_rescreened():
    """Ctrl-C after n1 and n2 (n3 aborted, n4 never started), or n3's job
    preempted: no failure, no drain line; the re-screen names the untested
    nodes with the screen's settings, and read with the first screen
    every node is judged."""
    cmd = ('reframe -c checks/likwid_bench.py -r --system minicluster '
           '--distribute=all -n LikwidBenchCheck%kernel=peakflops '
           '-J account=p1 --report-file /x/r.json')
    for why in (STOPPED, PREEMPTED):
        first = [screen_case('n1', 20.0), screen_case('n2', 20.5),
                 screen_case('n3', result='abort' if why == STOPPED
                             else 'fail', reason=why,
                             extras={'job_fate': [] if why == STOPPED
                                     else ['PREEMPTED', '']})]
        loaded = SimpleNamespace(cases=first, fixtures=[], problems=[],
                                 damaged=[], conflicts=[],
                                 commands={'s1': cmd},
                                 samples=[s for c in first
                                          for s in c.samples])
        v = verdict.judge(loaded, accept_unscreened=True)
        assert v.status == verdict.EXIT_INCOMPLETE and v.failures() == []
        cov = v.groups[0].coverage
        assert cov.tested == ['n1', 'n2'] and cov.rerun == ['n3', 'n4']
        assert cov.untested['n3'] == (
            'not tested: the screen was stopped'
            if why == STOPPED else 'not tested: preempted')
        steps = screen.next_steps(v)
        assert steps['drain'] == [] and steps['resume'] == []
        assert steps['rescreen'][0] == (
            "reframe -r --system mc:cpu --distribute=all -J account=p1 -J "
            "exclude='n[1-2]' -n LikwidBenchCheck%kernel=peakflops "
            "--report-file rescreen.json")
        assert '2 node(s) not tested (n[3-4])' in ' '.join(steps['notes'])
        again = [screen_case(n, 20.2, time=9.0, session='s2')
                 for n in ('n3', 'n4')]
        assert judge_cases(first + again, accept_unscreened=True).status \
            == verdict.EXIT_OK


def test_a_job_failing_the_same_way_on_every_node_is_a_usage_error():
    """-J chdir=/nonexistent: sbatch takes it, every node's job fails
    alike (the reason as ReFrame recorded it on the minicluster): one
    usage line naming the option, exit 3."""
    cases = [screen_case(n, result='fail', reason=(
        f'sanity: sanity error: job {i} on {n} FAILED: ended with a '
        f'non-zero exit code; output file missing: rfm_job.out'),
        extras={'job_fate': ['FAILED', '']})
        for i, n in enumerate(('n1', 'n2', 'n3', 'n4'), start=7)]
    cmd = ('reframe -r --system minicluster --distribute=all -J '
           'chdir=/nonexistent -n LikwidBenchCheck%kernel=peakflops')
    loaded = SimpleNamespace(cases=cases, fixtures=[], problems=[],
                             damaged=[], conflicts=[], commands={'s1': cmd},
                             samples=[])
    v = verdict.judge(loaded)
    assert v.status == verdict.EXIT_INPUT
    assert v.usage.endswith('its job options: -J chdir=/nonexistent; fix '
                            'what it names and screen again')
    # one node failing otherwise: each node's own failure
    cases[2].reason = 'sanity: likwid-bench printed no MFlops/s'
    assert judge_cases(cases).status == verdict.EXIT_FAILED
    # every node failed under its job: the nodes', however many
    for c in cases:
        c.reason = (f'sanity: job 3 on {screen.node_of(c)} NODE_FAIL: a '
                    f'node failed under the job')
        c.extras['job_fate'] = ['NODE_FAIL', '']
    assert judge_cases(cases).status == verdict.EXIT_FAILED


def test_a_screen_stopped_before_any_node_ended_is_rescreened_whole():
    v = judge_cases([screen_case(n, result='abort', reason=STOPPED)
                     for n in ('n1', 'n2', 'n3', 'n4')])
    assert v.status == verdict.EXIT_INCOMPLETE and not v.usage
    assert screen.next_steps(v)['rescreen'][0] == (
        'reframe -r --system mc:cpu --distribute=all -n '
        'LikwidBenchCheck%kernel=peakflops --report-file rescreen.json')


def test_what_a_failed_or_partial_screen_prints_is_acted_on():
    """Every failure has a next step, a node named slow is never beside
    "not screened for slowness", no resume line without a drain line,
    and 60 untested nodes of 64 make one range, not 60 entries."""
    # 4 nodes: the floor alone names n4 at 0.49x
    v = judge_cases([screen_case('n1', 20.0), screen_case('n2', 20.4),
                     screen_case('n3', 19.8), screen_case('n4', 9.8)])
    text = verdict.render_text(v)
    assert v.status == verdict.EXIT_FAILED and 'not screened' not in text
    assert 'named 1 node(s) below it; one at 0.80x' in text
    steps = screen.next_steps(v)
    assert [line.split()[2] for line in steps['drain']] == ['nodename=n4']
    # a failure of no recorded node: a step, no drain, no resume
    lost = screen_case('n1', result='fail', reason='printed no MFlops/s')
    lost.test, lost.nodes = 'LikwidBenchCheck %kernel=peakflops', ()
    steps = screen.next_steps(judge_cases([lost]))
    assert steps['drain'] == steps['resume'] == []
    assert steps['notes'] == ['LikwidBenchCheck failed on no recorded '
                              'node: nothing to drain; fix what its FAIL '
                              'lines name, run it again and judge its '
                              'report']
    # a screen of 64 nodes stopped after 4
    wide = dict(RECORDED, partition_nodes=dict(
        RECORDED['partition_nodes'], nodes='n[1-64]'))
    cases = [screen_case(f'n{i}', 20.0, extras=wide) for i in range(1, 5)]
    cases += [screen_case(f'n{i}', result='abort', reason=STOPPED,
                          extras=wide) for i in range(5, 65)]
    cov = judge_cases(cases).groups[0].coverage
    assert cov.line() == ('4 of 64 nodes tested; not tested: n[5-64] (not '
                          'tested: the screen was stopped)')
