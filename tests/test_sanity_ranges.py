"""A figure outside its physical range fails sanity, naming the figure
(hpcval.units.outside_range, applied to every check's metrics by
hpcval.benchmarks.base): a time or rate that is negative, -0, 0 or below
its family's floor, and any non-finite figure.  A figure the tool prints
as 0 by design (a deviation of one sample, nccl-tests' busbw on one GPU)
is declared in the check's ``zero_readings``.

Inputs are real captured outputs (tests/fixtures/captured), changed only
where a case says so; every unchanged one must pass.
"""
import math
import pathlib
import types

import pytest
from reframe.core.exceptions import SanityError

from hpcval.benchmarks.base import ParsedBenchmark, out_of_range
from hpcval.benchmarks.elbencho import Elbencho
from hpcval.benchmarks.likwid_bench import LikwidBench
from hpcval.benchmarks.mpi4py_pingpong import Mpi4pyPingPong
from hpcval.benchmarks.nccl_tests import (BUSBW, ONE_GPU,
                                         CollectiveBandwidth as Collectives)
from hpcval.benchmarks.osu import OsuBenchmark as Osu
from hpcval.parsers.elbencho import parse_elbencho, phase
from hpcval.parsers.likwid_bench import parse_likwid_bench
from hpcval.parsers.mpi4py_pingpong import parse_pingpong
from hpcval.parsers.nccl_tests import parse_nccl_tests
from hpcval.parsers.osu import parse_osu
from hpcval.units import outside_range
from mutate import set_cell
from test_one_gpu import one_gpu

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured'
MPICH = CAPTURED / 'mpi4py412_mpich432_pingpong_n4194304.txt'
OPENMPI = CAPTURED / 'h200x2_hand' / 'mpi4py_pingpong_numpy.txt'
ALL_REDUCE = CAPTURED / 'h200x2' / 'check_nccl2196_all_reduce_g2.txt'
OSU = CAPTURED / 'osu'
ELBENCHO = (CAPTURED / 'elbencho' /
            'elbencho319_shared_file_seq_1m_t2_s256M.txt')
LIKWID = CAPTURED / 'likwid522_copy_avx_N2GB1.txt'

PINGPONG = types.SimpleNamespace(latency_sizes=[8, 1024], max_size=4 * 2**20)


def pingpong(text):
    return Mpi4pyPingPong.metrics(PINGPONG, parse_pingpong(text))


def nccl(text):
    return Collectives.metrics(None, parse_nccl_tests(text))


def osu(name, benchmark):
    check = types.SimpleNamespace(benchmark=benchmark, max_size=4 * 2**20,
                                  latency_sizes=[0, 8, 1024, 65536])
    table = parse_osu((OSU / name).read_text()).table()
    return Osu.metrics(check, table)


def elbencho(text):
    phases = parse_elbencho(text)
    return Elbencho.metrics(None, {op: phase(phases, op)
                                   for op in ('WRITE', 'READ')})


# -- real outputs pass ------------------------------------------------------

def test_real_outputs_are_in_range():
    likwid = [parse_likwid_bench(LIKWID.read_text())] * 2
    for values, zero in (
            (pingpong(MPICH.read_text()), Mpi4pyPingPong.zero_readings),
            (pingpong(OPENMPI.read_text()), Mpi4pyPingPong.zero_readings),
            (nccl(ALL_REDUCE.read_text()), Collectives.zero_readings),
            (osu('check_osu74_mpich432_latency_same_socket.txt',
                 'osu_latency'), Osu.zero_readings),
            (osu('check_osu74_mpich432_bw_same_socket.txt', 'osu_bw'),
             Osu.zero_readings),
            (elbencho(ELBENCHO.read_text()), Elbencho.zero_readings),
            # the same figure twice: a deviation of 0 is real
            (LikwidBench.metrics(types.SimpleNamespace(kernel='copy'),
                                 likwid), LikwidBench.zero_readings)):
        assert values and out_of_range(values, zero) == [], values


# -- the figure that could not have been measured ---------------------------

@pytest.mark.parametrize('size, column, cell, message', [
    (8, 3, '-5.0000000e-06', 'latency_8B = -5 us is negative: a time never '
                             'is'),
    (8, 3, '-0.0000000e+00', 'latency_8B = -0 us is negative'),
    (8, 3, '0.0000000e+00', 'latency_8B = 0 us: a time of 0 is no '
                            'measurement'),
    (1024, 3, '1e-300', 'latency_1KiB = 1e-294 us is below 1 ps, smaller '
                        'than any benchmark measures'),
    (4194304, 1, '0.00', 'bandwidth_4MiB = 0 MB/s: a bandwidth of 0 is no '
                         'measurement'),
    (4194304, 1, '-12202.49', 'bandwidth_4MiB = -12202.5 MB/s is negative'),
], ids=['-5us', '-0', '0', '1e-300', 'bw-0', 'bw-negative'])
def test_pingpong_figure_out_of_range(size, column, cell, message):
    values = pingpong(set_cell(MPICH.read_text(), size, column, cell))
    [why] = out_of_range(values, Mpi4pyPingPong.zero_readings)
    assert why.startswith(message), why


def test_a_deviation_of_zero_is_real_a_negative_one_is_not():
    text = set_cell(MPICH.read_text(), 8, 5, '0.0000e+00')
    assert out_of_range(pingpong(text), Mpi4pyPingPong.zero_readings) == []
    text = set_cell(MPICH.read_text(), 8, 5, '-1.0000e-07')
    assert out_of_range(pingpong(text), Mpi4pyPingPong.zero_readings) == [
        'latency_8B_std = -0.1 us is negative: a time never is']


def test_busbw_zero_only_on_one_gpu():
    """nccl-tests prints busbw 0.00 on one GPU by design (the check then
    declares it a zero reading); on two GPUs it measured nothing."""
    values = nccl(one_gpu(ALL_REDUCE.read_text()))
    assert out_of_range(values, {BUSBW: ONE_GPU}) == []
    why = out_of_range(values, Collectives.zero_readings)
    assert 'busbw_inplace_largest = 0 GB/s: a bandwidth of 0 is no ' \
        'measurement' in why
    assert 'avg_busbw = 0 GB/s: a bandwidth of 0 is no measurement' in why
    assert not [w for w in why if w.startswith('time_')]


def test_elbencho_elapsed_zero_is_under_a_millisecond():
    text = ELBENCHO.read_text()
    values = elbencho(text)
    values['read_elapsed'] = (0.0, 's')     # elbencho prints whole ms
    assert out_of_range(values, Elbencho.zero_readings) == []
    values['read_iops_last'] = (0, 'IOPS')
    assert out_of_range(values, Elbencho.zero_readings) == [
        'read_iops_last = 0 IOPS: a rate of 0 is no measurement']


@pytest.mark.parametrize('value, unit, message', [
    (math.nan, 'us', 'x = nan us is not a finite number'),
    (math.inf, 'GB/s', 'x = inf GB/s is not a finite number'),
    (-math.inf, 'x', 'x = -inf x is not a finite number'),
    (math.nan, '%', 'x = nan % is not a finite number'),
    (5e-324, 'IOPS', 'x = 4.94066e-324 IOPS is below 2.2e-308'),
    (1e-7, 'MFLOP/s', 'x = 1e-07 MFLOP/s is below 1 FLOP/s'),
    (-1.0, 'x', 'x = -1 x is negative: a ratio never is'),
])
def test_any_figure_must_be_finite(value, unit, message):
    assert outside_range('x', value, unit).startswith(message)


@pytest.mark.parametrize('value, unit', [
    (0.0, 'x'),         # a GPU's figure over its siblings' may be 0
    (-3.0, '%'),        # a unit hpcval does not know: finiteness only
    (0.5, 'IOPS'),      # one operation in two seconds
    (1e-12, 's'),
])
def test_in_range(value, unit):
    assert outside_range('x', value, unit) is None


def test_the_check_fails_sanity_naming_each_figure():
    """What validate_output raises, from the check's own metrics."""
    text = set_cell(set_cell(MPICH.read_text(), 8, 3, '-5.0000000e-06'),
                    4194304, 1, '0.00')
    check = types.SimpleNamespace(
        result=parse_pingpong(text), zero_readings={},
        metrics=lambda rows: Mpi4pyPingPong.metrics(PINGPONG, rows),
        _exit_status=lambda: '')
    err = ParsedBenchmark._checked_figures(check)
    assert isinstance(err, SanityError)
    assert str(err) == ('latency_8B = -5 us is negative: a time never is; '
                        'bandwidth_4MiB = 0 MB/s: a bandwidth of 0 is no '
                        'measurement')


def test_many_figures_out_of_range_are_counted_past_eight():
    """A run whose every link read 0 names eight and counts the rest."""
    values = {f'gpu{i:02d}_to_gpu{i + 1:02d}': (0.0, 'GB/s')
              for i in range(10)}
    check = types.SimpleNamespace(result=None, zero_readings={},
                                  metrics=lambda _: values,
                                  _exit_status=lambda: '')
    reason = str(ParsedBenchmark._checked_figures(check))
    assert reason.count('a bandwidth of 0 is no measurement') == 8
    assert reason.endswith('; and 2 more'), reason


def test_a_replay_excerpt_figure_it_does_not_show_is_not_judged():
    assert out_of_range({'latency_8B': (None, 'us')}, {}) == []
