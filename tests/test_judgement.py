"""hpcval.judgement: one band, ReFrame's own, for every figure."""
import math
import subprocess

import pytest
from reframe.utility.sanity import reference_bounds

from hpcval import judgement
from hpcval.judgement import Band
from hpcval.publish.results import Sample
from rfmrun import ROOT

REFERENCES = (5.0, 0.0, -5.0, 1e-9, 3.5e6)
LOWERS = (None, 0.0, -0.05, -0.5, -1.0)
UPPERS = (None, 0.0, 0.1, 0.9, 1.0)


@pytest.mark.parametrize('ref', REFERENCES)
@pytest.mark.parametrize('lower', LOWERS)
@pytest.mark.parametrize('upper', UPPERS)
def test_limits_are_reframes(ref, lower, upper):
    try:
        want = reference_bounds(ref, lower, upper)
    except ValueError:
        assert Band(ref, lower, upper).problem()
        assert all(math.isnan(x) for x in Band(ref, lower, upper).limits())
        return
    low, high = Band(ref, lower, upper).limits()
    # shown as the decimal they mean: within 1e-15 of ReFrame's binary
    assert (-math.inf if low is None else low) == pytest.approx(want[0],
                                                                rel=1e-15)
    assert (math.inf if high is None else high) == pytest.approx(want[1],
                                                                 rel=1e-15)


@pytest.mark.parametrize('ref', REFERENCES)
@pytest.mark.parametrize('lower', LOWERS)
@pytest.mark.parametrize('upper', UPPERS)
def test_pass_is_reframes(ref, lower, upper):
    band = Band(ref, lower, upper)
    try:
        low, high = reference_bounds(ref, lower, upper)
    except ValueError:
        return
    for value in (ref, ref * 0.9, ref * 1.1, ref - 1, ref + 1, low, high):
        if math.isinf(value):
            continue
        # ReFrame's, less a figure no benchmark produces (1 vs ref 1e-9)
        plausible = not ref or abs(value) <= abs(ref) * judgement.IMPLAUSIBLE
        assert band.passes(value) == (low <= value <= high and plausible), \
            value


def test_wider_fractions_than_reframe_allows_pass_nothing():
    band = Band(5.0, -1.5, None)
    assert band.problem() and not band.passes(5.0)
    assert band.bound_text().startswith('invalid (reference 5: ')


def test_nan_never_passes():
    assert not Band(5.0, -0.5, 0.5).passes(math.nan)


@pytest.mark.parametrize('value', (1e300, math.inf, -math.inf, math.nan,
                                   900.0 * judgement.IMPLAUSIBLE + 1))
def test_a_figure_no_benchmark_produces_never_passes(value):
    """A lower bound alone leaves the top open: 1e300 GB/s, inf or more
    than IMPLAUSIBLE times the reference fail, and say why."""
    band = Band(900.0, -0.2, None, 'GB/s')
    assert not band.passes(value)
    assert judgement.outcome(_sample(value, 900.0, -0.2, None, 'pass')) \
        == 'fail'
    assert band.implausible(value).startswith('implausible: not a '
                                              'measurement')


def test_a_figure_within_the_plausible_range_is_judged_by_its_band():
    band = Band(900.0, -0.2, None, 'GB/s')
    assert band.passes(900.0 * judgement.IMPLAUSIBLE)
    assert band.implausible(900.0 * 25) == ''
    # a count of 0 errors against an upper bound stays a pass
    assert Band(3.0, None, 0.5).passes(0) and Band(0, None, 2).passes(1e300)\
        is False


def test_no_bound_is_no_band():
    # ReFrame records a figure without a reference as (0, None, None)
    assert Band.of(0, None, None) is None
    assert Band.of(None, -0.1, None) is None
    assert Band.of(0, None, 0.5) == Band(0, None, 0.5)


def test_deviation_is_signed_and_relative():
    assert Band(2.0, None, 9.0).deviation(5.77) == pytest.approx(1.885)
    assert Band(-4.0, -0.1, None).deviation(-5.0) == pytest.approx(-0.25)
    assert Band(0.0, None, 1.0).deviation(0.5) is None


def _sample(value, ref, lower, upper, result=None):
    return Sample(None, 'm', value, 'GB/s', ref, lower, upper, result)


def test_outcome_takes_the_stricter_of_band_and_record():
    assert judgement.outcome(_sample(5, 5, -0.1, None)) == 'pass'
    assert judgement.outcome(_sample(4, 5, -0.1, None)) == 'fail'
    # a report that recorded a failure is not overruled by its band ...
    assert judgement.outcome(_sample(5, 5, -0.1, None, 'fail')) == 'fail'
    # ... and one that says pass is not believed against it
    assert judgement.outcome(_sample(4, 5, -0.1, None, 'pass')) == 'fail'
    assert judgement.outcome(_sample(4, 0, None, None, 'pass')) is None


def test_no_band_arithmetic_outside_judgement():
    """The limits of a reference are computed in judgement.py alone."""
    found = subprocess.run(
        ['git', 'grep', '-nE', r'\(1 [+-] [a-z_.]*(lower|upper|thres)',
         '--', 'utils', 'checks', 'systems', ':!utils/hpcval/judgement.py'],
        cwd=ROOT, capture_output=True, text=True).stdout
    assert found == ''
