"""The DGEMM kernel's output (hpcval.parsers.cpu_dgemm) against real runs
(tests/fixtures/captured/cpu_dgemm)."""
import pathlib

import pytest

from hpcval.parsers import ParseError
from hpcval.parsers.cpu_dgemm import parse_cpu_dgemm

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / \
    'cpu_dgemm'
GOOD = (CAPTURED / 'minicluster_2ranks_n256.txt').read_text()


def test_every_rank_in_rank_order():
    ranks = parse_cpu_dgemm(GOOD, 2)
    assert [r.rank for r in ranks] == [0, 1]
    assert [r.gflops for r in ranks] == [15.935, 15.7]
    assert [r.best for r in ranks] == [25.0284, 25.1161]
    assert {r.node for r in ranks} == {'n1'}
    assert ranks[0].iterations == 239 and ranks[0].n == 256


def test_a_missing_rank_is_named():
    truncated = GOOD.splitlines(keepends=True)[1]      # rank 1 only
    with pytest.raises(ParseError, match=r'no result from rank 0 \(1 of 2'):
        parse_cpu_dgemm(truncated, 2)
    with pytest.raises(ParseError, match='rank 1 reported, but 1 ranks ran'):
        parse_cpu_dgemm(GOOD, 1)


def test_a_node_that_printed_nothing():
    empty = (CAPTURED / 'minicluster_broken_python.out.txt').read_text()
    with pytest.raises(ParseError, match=r'no result from rank 0, 1 \(0 of '
                                         r'2 ranks'):
        parse_cpu_dgemm(empty, 2)


@pytest.mark.parametrize('bad, message', [
    (' gflops=15.9350', ' gflops=nan'),
    ('iterations=239', 'iterations=0'),
    ('best_slice_gflops=25.0284', 'best_slice_gflops=-inf'),
    ('best_slice_gflops=25.0284', ''),
])
def test_junk_figures_are_refused(bad, message):
    text = GOOD.replace(bad, message)
    with pytest.raises(ParseError, match='rank 0'):
        parse_cpu_dgemm(text, 2)


def test_a_rank_twice():
    line = GOOD.splitlines(keepends=True)[0]
    with pytest.raises(ParseError, match='rank 0 reported twice'):
        parse_cpu_dgemm(GOOD + line, 2)
