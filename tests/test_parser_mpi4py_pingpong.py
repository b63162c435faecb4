"""mpi4py.bench pingpong parser on real outputs and on broken copies.

Inputs: numpy buffers on Open MPI 4.1.6 (2 x H200 node, up to 16 MiB), the
same with CuPy buffers on that non-CUDA-aware MPI (a segmentation fault),
this project's capture on PyPI mpich 4.3.2 (up to 4 MiB), and two MPI
singletons of that mpich started side by side into one file, as a launcher
without PMI starts two ranks.
"""
import pathlib

import pytest

from hpcval.parsers.common import ParseError
from hpcval.parsers.mpi4py_pingpong import parse_pingpong, row_at
from mutate import cut_after, set_cell

SHARED = pathlib.Path(__file__).resolve().parent / 'fixtures'
OPENMPI = SHARED / 'captured' / 'h200x2_hand' / 'mpi4py_pingpong_numpy.txt'
CUPY = SHARED / 'captured' / 'h200x2_hand' / 'mpi4py_pingpong_cupy.txt'
MPICH = (pathlib.Path(__file__).parent / 'fixtures' / 'captured' /
         'mpi4py412_mpich432_pingpong_n4194304.txt')
SINGLETONS = MPICH.with_name('mpi4py412_mpich432_pingpong_two_singletons.txt')


@pytest.fixture(scope='module')
def openmpi():
    return OPENMPI.read_text(encoding='utf-8')


# -- real outputs -----------------------------------------------------------

@pytest.mark.parametrize('path, rows, row_8, largest', [
    (OPENMPI, 25, (9.30, 8.5993725e-07, 2.0928e-07, 10000),
     (16777216, 10353.81, 1.6203901e-03, 10)),
    (MPICH, 23, (8.49, 9.4241490e-07, 5.6633e-07, 10000),
     (4194304, 12202.49, 3.4372525e-04, 10)),
], ids=['openmpi', 'mpich'])
def test_real_output(path, rows, row_8, largest):
    r = parse_pingpong(path.read_text(encoding='utf-8'))
    assert len(r) == rows
    assert [row.size for row in r] == [2**k for k in range(rows)]
    small = row_at(r, 8)
    assert (small.bandwidth, small.time_mean, small.time_std,
            small.samples) == row_8
    size, bandwidth, mean, samples = largest
    big = row_at(r, size)
    assert (big.bandwidth, big.time_mean, big.samples) == \
        (bandwidth, mean, samples)
    assert big is r[-1]


def test_bandwidth_is_size_over_one_way_time(openmpi):
    """MB/s = 10^6 B/s of size / mean one-way time (2 printed decimals)."""
    for row in parse_pingpong(openmpi):
        assert row.bandwidth == pytest.approx(row.size / row.time_mean / 1e6,
                                              abs=0.006)


# -- broken outputs ---------------------------------------------------------

def test_cupy_segfault():
    with pytest.raises(ParseError, match=r"no '# MPI PingPong Test' header.*"
                                         r'Signal: Segmentation fault \(11\)'):
        parse_pingpong(CUPY.read_text(encoding='utf-8'))


def test_cut_before_largest_size(openmpi):
    rows = parse_pingpong(cut_after(openmpi, '   8388608 '))
    assert rows[-1].size == 8388608
    with pytest.raises(ParseError, match=r'no result for 16777216 B \(sizes '
                                         r'printed: 1, 2, .*, 8388608\)'):
        row_at(rows, 16777216)


@pytest.mark.parametrize('make, message', [
    (lambda t: set_cell(t, 8, 1, 'nan'),
     "bandwidth at 8 B: 'nan' is not a finite number"),
    (lambda t: set_cell(t, 16777216, 1, '-nan'),
     "bandwidth at 16777216 B: '-nan' is not a finite number"),
    (lambda t: set_cell(t, 1024, 3, 'inf'),
     "mean time at 1024 B: 'inf' is not a finite number"),
    (lambda t: set_cell(t, 8, 5, 'N/A'),
     "time std at 8 B: 'N/A' is not a number"),
    (lambda t: cut_after(t, '# Size [B]'), 'no result rows after the header'),
    (lambda t: t.replace('# MPI PingPong Test\n', ''), 'no .* header'),
], ids=['nan', '-nan', 'inf', 'N/A', 'header-only', 'no-header'])
def test_broken(openmpi, make, message):
    with pytest.raises(ParseError, match=message):
        parse_pingpong(make(openmpi))


def test_died_after_header(openmpi):
    """The cupy crash report after a printed header: the message says so."""
    crash = CUPY.read_text(encoding='utf-8')
    with pytest.raises(ParseError, match=r'no result rows.*Segmentation '
                                         r'fault \(11\)'):
        parse_pingpong(cut_after(openmpi, '# Size [B]') + crash)


# -- one-rank jobs in place of one 2-rank communicator ----------------------

ONE_RANK_JOBS = (r"mpi4py.bench printed 2 '# MPI PingPong Test' headers: "
                 r'the launcher \(srun\) ran 2 one-rank jobs, not one 2-rank '
                 r'communicator')


def test_two_singletons_fail_naming_the_launcher():
    """Each singleton times a ping to itself, its lines interleaved with
    the other's: no latency between the ranks was measured."""
    with pytest.raises(ParseError, match=ONE_RANK_JOBS):
        parse_pingpong(SINGLETONS.read_text(encoding='utf-8'), 'srun')


def test_two_whole_outputs_one_after_the_other():
    """The same when the two jobs' outputs do not interleave."""
    text = MPICH.read_text(encoding='utf-8')
    with pytest.raises(ParseError, match=ONE_RANK_JOBS):
        parse_pingpong(text + text, 'srun')
    with pytest.raises(ParseError, match=r'the launcher ran 2 one-rank'):
        parse_pingpong(text + text)


def test_one_header_is_one_communicator():
    assert len(parse_pingpong(MPICH.read_text(encoding='utf-8'), 'srun')) \
        == 23
