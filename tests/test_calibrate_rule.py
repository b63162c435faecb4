"""calibrate's statistics (hpcval.publish.stats): Student's t without SciPy,
the prediction bound and its false-alarm rate, the floors per kind of
metric, and what calibrate leaves out or warns about.  Samples are taken
from the real 2 x H200 baseline (tests/fixtures/captured/h200x2/validation)
and changed in one place each."""
import math
import pathlib
import statistics

import msgspec
import pytest

from hpcval import references
from hpcval.publish import calibrate as cal
from hpcval.publish import results, stats

ROOT = pathlib.Path(__file__).resolve().parents[1]
V = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' / 'validation'


@pytest.mark.parametrize('p, df, t', [
    # Student's t quantiles from printed tables (Abramowitz & Stegun 26.10)
    (0.95, 4, 2.132), (0.999, 4, 7.173), (0.9999, 4, 13.034),
    (0.975, 9, 2.262), (0.9999, 9, 6.010), (0.95, 29, 1.699),
    (0.5, 7, 0.0), (0.025, 9, -2.262)])
def test_t_quantiles(p, df, t):
    assert stats.t_ppf(p, df) == pytest.approx(t, abs=1e-3)
    assert stats.t_cdf(stats.t_ppf(p, df), df) == pytest.approx(p, abs=1e-9)


@pytest.mark.parametrize('n', [2, 3, 5, 10, 30])
def test_the_prediction_factor_gives_its_false_alarm_rate(n):
    k = stats.prediction_factor(n, 1e-4)
    assert stats.false_alarm_rate(n, k) == pytest.approx(1e-4, rel=1e-6)
    # fewer runs, a wider bound
    assert k > stats.prediction_factor(n + 1, 1e-4)


def test_the_old_rule_had_a_false_alarm_rate_of_percents():
    # 3 runs, 3 std / mean: the false alarm of issue 15 was no accident
    assert stats.false_alarm_rate(3, 3.0) == pytest.approx(0.0608, abs=1e-3)
    assert stats.false_alarm_rate(5, stats.prediction_factor(5, 1e-4)) \
        < 1e-3


@pytest.mark.parametrize('metric, direction, floor', [
    ('time_outofplace_smallest', 'lower', 0.5), ('latency_8B', 'lower', 0.5),
    ('latency_1KiB', 'lower', 0.5), ('latency_64KiB', 'lower', 0.2),
    ('time', 'lower', 0.2), ('copy', 'higher', 0.05),
    ('busbw_inplace_largest', 'higher', 0.05)])
def test_floors_per_kind_of_metric(metric, direction, floor):
    assert stats.Rule().floor_of(metric, direction) == floor
    assert stats.Rule(floor=0.01).floor_of(metric, direction) == 0.01


@pytest.fixture
def baseline():
    return results.load(sorted(str(p) for p in
                               (V / 'reports').glob('baseline*.json')))


def _calibrate(samples, ref_dir, **kw):
    return cal.calibrate(samples, 'local', references.load_dir(str(ref_dir)),
                         ref_dir=str(ref_dir), **kw)


def _bound(text, tmp_path, check, metric, where=None):
    probe = tmp_path / 'probe'
    probe.mkdir(exist_ok=True)
    (probe / 'local.yaml').write_text(text)
    refs = references.load(str(probe / 'local.yaml'))
    return references.select(refs, [check], 'default', where or {},
                             {metric: 'GB/s' if 'busbw' in metric
                              else 'us'}).get(metric)


def test_bounds_follow_the_prediction_rule_and_the_floors(
        baseline, ref_dir, tmp_path):
    result = _calibrate(baseline.samples, ref_dir)
    runs = [s for s in baseline.samples
            if s.case.check == 'NcclTestsNodeCheck'
            and dict(s.case.params) == {'collective': 'all_reduce'}]
    bw = [s.value for s in runs if s.metric == 'busbw_outofplace_largest']
    lat = [s.value for s in runs if s.metric == 'time_outofplace_smallest']
    assert len(bw) == len(lat) == 5
    value, lower, upper, _ = _bound(result.text, tmp_path,
                                    'NcclTestsNodeCheck',
                                    'busbw_outofplace_largest',
                                    {'collective': 'all_reduce'})
    # the node's budget 1/200 over the 44 figures a run of it judges
    rule = result.rule
    assert (rule.budget, rule.judged) == (0.005, 44)
    assert rule.false_alarm == pytest.approx(1 - 0.995 ** (1 / 44))
    f = stats.prediction_factor(5, rule.false_alarm)
    logs = [math.log(x) for x in bw]
    bound = math.exp(statistics.fmean(logs) - f * statistics.stdev(logs))
    want = max(1 - bound / statistics.fmean(bw), 0.05)
    assert value == pytest.approx(statistics.fmean(bw), rel=1e-5)
    assert -lower == pytest.approx(want, abs=1e-4) and upper is None
    # a tighter spread than the floor allows: the floor
    quiet = [msgspec.structs.replace(s, value=100.0 + 0.01 * i)
             for i, s in enumerate(baseline.samples)
             if s.metric == 'time_outofplace_smallest']
    result = _calibrate(quiet, ref_dir)
    _, _, upper, _ = _bound(result.text, tmp_path, 'NcclTestsNodeCheck',
                            'time_outofplace_smallest',
                            {'collective': 'all_reduce'})
    assert upper == 0.5
    assert 'floor 0.5 (tiny-message latency)' in ' '.join(result.text.split())


def test_per_gpu_figures_and_diagnostics_are_left_out(baseline, ref_dir):
    result = _calibrate(baseline.samples, ref_dir)
    assert '@gpu' not in result.text
    assert 'latency_8B_std' not in result.text.split(cal.MARKER)[1]
    assert any('latency_8B_std explicitly absent' in n for n in result.notes)


def test_a_loose_bound_is_kept_with_a_warning(baseline, ref_dir):
    result = _calibrate(baseline.samples, ref_dir)
    notes = '\n'.join(result.notes)
    # 27 % spread over 5 runs: exp(13.8 std of ln) is 37 x the baseline
    assert ('warning: NcclTestsNodeCheck collective=all_gather (partition '
            'default) time_inplace_smallest judges little: it passes up to '
            '37.1 x the baseline (13.8 std of ln') in notes


def test_fewer_than_five_runs_are_refused(baseline, ref_dir):
    four = [s for s in baseline.samples
            if not s.case.source.endswith('baseline5.json')]
    result = _calibrate(four, ref_dir)
    assert 'nothing to calibrate' in result.notes[-1]
    assert any('4 sample(s), fewer than 5' in n for n in result.notes)
    assert _calibrate(four, ref_dir, min_samples=4).diff


def test_a_fixed_k_is_still_possible(baseline, ref_dir, tmp_path):
    result = _calibrate(baseline.samples, ref_dir, k=3, floor=0.05)
    assert 'bound 3 std / mean' in ' '.join(result.text.split())
    assert 'k = 3 standard deviations' in ' '.join(result.text.split())
