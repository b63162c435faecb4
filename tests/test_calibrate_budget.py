"""calibrate's false-alarm budget per node (calibrate.per_figure), its
floors for heavy-tailed figures and its sibling bands (calibrate.
sibling_band), on the real 4 x H100 and 2 x H200 reports: calibrated
from the five baselines, the healthy reruns must pass every judged figure
and the runs with a loaded GPU must still fail, naming it."""
import math
import pathlib

import msgspec
import pytest

from hpcval import references, verdict
from hpcval.publish import calibrate as cal, results

ROOT = pathlib.Path(__file__).resolve().parents[1]
CAPTURED = ROOT / 'tests' / 'fixtures' / 'captured'
NODES = {
    # reports, the loaded-GPU run, the GPU it loaded
    'h100x4': (CAPTURED / 'h100x4' / 'reports', 'gpu_last_loaded', 'GPU 3'),
    'h200x2': (CAPTURED / 'h200x2' / 'validation' / 'reports',
               'gpu1_loaded', 'GPU 1'),
}


def _calibrate(reports, tmp_path, samples=None, **kw):
    """Calibrate ``local`` from the baselines into a site folder layered
    over the built-in references, as `hpcval calibrate --write` does."""
    site = tmp_path / 'site'
    site.mkdir(exist_ok=True)
    if samples is None:
        samples = results.load(sorted(
            str(p) for p in reports.glob('baseline*.json'))).samples
    dirs = [str(ROOT / 'references'), str(site)]
    return cal.calibrate(samples, 'local',
                         references.ReferenceSet.layered(dirs),
                         ref_dir=str(site), base_dir=dirs[0], write=True,
                         **kw)


def _judge(path, written):
    """hpcval verdict PATH --references WRITTEN."""
    refs = references.ReferenceSet.given([written])
    return verdict.judge(results.load([str(path)], bounds=refs))


@pytest.fixture(scope='module', params=sorted(NODES))
def node(request, tmp_path_factory):
    reports, fault, gpu = NODES[request.param]
    result = _calibrate(reports, tmp_path_factory.mktemp(request.param))
    return request.param, reports, fault, gpu, result


def test_the_budget_is_shared_out_over_the_judged_figures():
    a = cal.per_figure(0.005, 92)
    assert (1 - a) ** 92 == pytest.approx(0.995, rel=1e-12)
    assert a == pytest.approx(5.45e-5, rel=1e-3)
    assert cal.per_figure(0.005, 1) == pytest.approx(0.005)


def test_healthy_runs_pass_and_a_loaded_gpu_fails(node):
    name, reports, fault, gpu, result = node
    healthy = sorted(reports.glob('healthy*.json'))
    assert len(healthy) == {'h100x4': 3, 'h200x2': 10}[name]
    judged = 0
    for path in healthy:
        [g] = _judge(path, result.path).groups
        assert g.judged_failed == 0, (path.name, [
            f.line() for f in _judge(path, result.path).failures()])
        judged += g.judged_passed
    # the calibrated figures, and the GPU links calibrate refused (too
    # noisy between runs) judged by the GPU model's datasheet instead
    assert judged == {'h100x4': 3 * (80 + 18), 'h200x2': 10 * (36 + 6)}[name]
    v = _judge(reports / f'{fault}.json', result.path)
    assert v.status == verdict.EXIT_FAILED
    stream = [f for f in v.failures() if f.test.startswith('BabelStream')]
    assert stream and all(f.component.startswith(gpu) for f in stream)


def test_the_file_states_the_budget_and_the_rate_per_figure(node):
    name, _, _, _, result = node
    rule = result.rule
    m = {'h100x4': 104, 'h200x2': 44}[name]
    assert (rule.budget, rule.judged) == (0.005, m)
    assert rule.false_alarm == pytest.approx(cal.per_figure(0.005, m))
    text = ' '.join(result.text.split())
    assert (f'fails any of the {m} figures it judges with probability at '
            f'most 0.005 (1 in 200 healthy runs)') in text
    assert f'= {rule.false_alarm:.3g}' in text
    assert any(n.startswith('bounds built for a node false-alarm rate of '
                            f'0.005 per healthy run (1 in 200) over the {m} '
                            'figures a run judges') for n in result.notes)


def test_sibling_bands_one_per_family(node, tmp_path):
    name, _, _, _, result = node
    refs = references.load(result.path)
    bands = {r.metric: (r.value, r.lower, r.upper, r.unit, r.rule)
             for r in refs if r.metric.endswith('_vs_siblings')}
    if name == 'h200x2':
        # two GPUs: no figure against siblings in these runs
        assert bands == {}
        return
    # BabelStream's GPUs sit within 1 % of each other: the tightest band;
    # a p2p link's first-pass ratio fell to 0.671 in a healthy run: the
    # loosest, the run's own 1/1.6
    assert bands == {
        **{f'{k}_vs_siblings': (1, -0.1, None, 'x', 'calibrated_siblings')
           for k in ('copy', 'mul', 'add', 'triad', 'dot')},
        **{f'{k}_vs_siblings': (1, -0.375, None, 'x', 'calibrated_siblings')
           for k in ('uni', 'bidir')}}
    assert 'calibrated_siblings: >' in result.text


def test_the_family_band_rule():
    # tight ratios: the tightest band; a low healthy ratio: 0.95 x it
    assert cal.sibling_band([0.999, 1.0, 1.001] * 5, 5, 1e-4)[0] == 0.9
    bound, how = cal.sibling_band([0.8] + [1.0] * 29, 30, 0.5)
    assert bound == pytest.approx(0.76) and how.startswith('lowest ratio')
    assert cal.sibling_band([0.3, 1.0, 1.0, 1.0, 1.0], 5, 1e-4)[0] == \
        pytest.approx(1 / 1.6)


def test_a_host_link_gets_the_wider_floor(tmp_path):
    """One real H100: 5 baselines of uni_gpu_to_cpu at 46.85-47.78 GB/s
    gave -10 % and a healthy run failed at 42.22; another H100's healthy
    run fell to 0.62 of its baselines.  A host link's floor is 0.4: both
    pass."""
    reports = NODES['h100x4'][0]
    loaded = results.load(sorted(str(p)
                                 for p in reports.glob('baseline*.json')))
    quiet = iter([46.85, 47.05, 47.30, 47.52, 47.78])
    samples = [msgspec.structs.replace(s, value=next(quiet))
               if s.metric == 'uni_gpu_to_cpu' else s
               for s in loaded.samples]
    result = _calibrate(reports, tmp_path, samples)
    got = references.select(references.load(result.path),
                            ['TransferBenchCudaCheck'], 'default',
                            {'preset': 'p2p'}, {'uni_gpu_to_cpu': 'GB/s'})
    value, lower, _, _ = got['uni_gpu_to_cpu']
    assert lower == -0.4 and value * 0.62 > value * (1 + lower) < 42.22
    assert 'floor 0.4 (host link)' in ' '.join(result.text.split())


def test_the_captured_host_link_dips_pass(tmp_path):
    """The real H100 of stats.HOST_LINK's comment (captured/h100_calib):
    calibrated from its five baselines, none of its 14 healthy runs fails
    uni_gpu_to_cpu, down to 29.39 GB/s (healthy11; a floor of 0.05 for
    all would fail it)."""
    reports = CAPTURED / 'h100_calib' / 'reports'
    result = _calibrate(reports, tmp_path)
    healthy = sorted(reports.glob('healthy*.json'))
    assert len(healthy) == 14
    failed = [f.line() for path in healthy
              for f in _judge(path, result.path).failures()
              if 'uni_gpu_to_cpu' in f.line()]
    assert failed == []


def test_a_larger_budget_tightens_and_a_rate_per_figure_replaces_it(
        tmp_path):
    reports = NODES['h200x2'][0]
    loaded = results.load(sorted(str(p)
                                 for p in reports.glob('baseline*.json')))

    def bound(**kw):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        result = _calibrate(reports, folder, loaded.samples, **kw)
        got = references.select(
            references.load(result.path), ['NcclTestsNodeCheck'], 'default',
            {'collective': 'all_reduce'}, {'avg_busbw': 'GB/s'})
        return got['avg_busbw'][1], result.rule

    tight, rule = bound(budget=0.05)
    default, _ = bound()
    assert rule.budget == 0.05 and default < tight < 0
    _, rule = bound(false_alarm=1e-3)
    assert rule.budget is None and rule.false_alarm == 1e-3
    with pytest.raises(cal.CalibrationError,
                       match=r'^expected budget from 1e-12 to below 0.5'):
        bound(budget=0.7)
    assert math.isclose(cal.per_figure(0.05, 44),
                        1 - 0.95 ** (1 / 44))


def test_a_budget_out_of_range_is_one_line(capsys, tmp_path):
    from hpcval import cli
    reports = sorted(str(p) for p in
                     NODES['h200x2'][0].glob('baseline*.json'))
    status = cli.main(['calibrate', '--system', 'local', '--ref-dir',
                       str(tmp_path), '--budget', '0.7', *reports])
    err = capsys.readouterr().err
    assert status == 3 and err == ('hpcval calibrate: expected budget from '
                                   '1e-12 to below 0.5 (got 0.7)\n')


def test_a_time_from_two_runs_is_refused_not_an_overflow(tmp_path):
    """Two runs (``--min-samples 2``) of a latency at 1 and 3 us: t with
    one degree of freedom makes the log bound 3,400 standard deviations
    wide, past any float.  The figure is refused (its bound would pass
    more than 1000 x the baseline), never an OverflowError."""
    reports = NODES['h200x2'][0]
    loaded = results.load(sorted(str(p) for p in
                                 reports.glob('baseline*.json'))[:2])
    two = iter([1.0, 3.0])
    samples = [msgspec.structs.replace(s, value=next(two))
               if s.metric == 'latency_8B' else s for s in loaded.samples]
    result = _calibrate(reports, tmp_path, samples, min_samples=2)
    assert any(n.startswith('refused Mpi4pyPingPongCheck') and
               'latency_8B:' in n and 'more than 1000 x the baseline' in n
               for n in result.notes), result.notes
