"""A launcher that starts the ranks as separate one-rank jobs cannot pass
the ping-pong check (docs/benchmarks/mpi4py_pingpong.md, "One
communicator, not one-rank jobs"), nor nccl-tests' (its parser counts
tables and ranks).  OSU refuses to start on one rank itself (osu_latency,
osu_bw: "requires exactly two processes"; osu_allreduce: "at least two").

Two real ReFrame runs on ``local`` (about 3 s each on the loaded 2-core
host): in one, the launcher ``mpiexec -n 2`` starts a stand-in ``python``
twice and each copy prints the real mpich capture whole, as two MPI
singletons each print their own header and rows; in the other rank 0
alone prints that capture with the 8 B latency set to -5 us, a figure
outside its physical range.
"""
import pathlib
import stat

import pytest

from hpcval.parsers import ParseError
from hpcval.parsers.nccl_tests import parse_nccl_tests
from mutate import set_cell
from rfmrun import by_name, reframe
from test_one_gpu import one_gpu

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured'
MPICH = CAPTURED / 'mpi4py412_mpich432_pingpong_n4194304.txt'


def _pingpong(tmp_path, text, rank0_only):
    out = tmp_path / 'output.txt'
    out.write_text(text)
    python = tmp_path / 'python'
    only = '[ "${PMI_RANK:-0}" = 0 ] || exit 0\n' if rank0_only else ''
    python.write_text(f'#!/bin/sh\n{only}cat {out}\n')
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'Mpi4pyPingPongCheck%placement=on_node',
                           '-S', f'python={python}', '-S', 'health_probe=no',
                           tmp_path=tmp_path,
                           checks=('checks/mpi4py_pingpong.py',))
    assert report, proc.stdout[-3000:] + proc.stderr
    [case] = by_name(report, 'Mpi4pyPingPongCheck')
    return case


def test_two_one_rank_jobs_fail_sanity_naming_the_launcher(tmp_path):
    case = _pingpong(tmp_path, MPICH.read_text(), rank0_only=False)
    assert (case['result'], case['fail_phase']) == ('fail', 'sanity')
    assert "mpi4py.bench printed 2 '# MPI PingPong Test' headers: the " \
        "launcher (mpiexec -n 2) ran 2 one-rank jobs, not one 2-rank " \
        "communicator" in case['fail_reason'], case['fail_reason']


def test_a_latency_of_minus_5_us_fails_sanity(tmp_path):
    text = set_cell(MPICH.read_text(), 8, 3, '-5.0000000e-06')
    case = _pingpong(tmp_path, text, rank0_only=True)
    assert (case['result'], case['fail_phase']) == ('fail', 'sanity')
    assert 'latency_8B = -5 us is negative: a time never is' in \
        case['fail_reason'], case['fail_reason']
    assert not case.get('perfvalues'), case['perfvalues']


# -- nccl-tests refuses one-rank jobs itself --------------------------------

def test_nccl_tests_one_rank_jobs_print_two_tables():
    """Two one-rank jobs of the MPI build each print a banner with
    ``Rank 0`` and a table: the real 2-rank capture reduced to the
    one-rank output (tests/test_one_gpu.py's ``one_gpu``), twice.  The
    parser refuses it by its table count (and, interleaved, by rank 0
    listed twice; rank lines against the GPUs asked: check_devices)."""
    one = one_gpu((CAPTURED / 'h200x2' /
                   'check_nccl2196_all_reduce_mpi_r2.txt').read_text())
    assert len(parse_nccl_tests(one).ranks) == 1
    with pytest.raises(ParseError, match=r"2 result tables: .* a launcher "
                                         r"without the MPI's PMI started "
                                         r'each rank as a one-rank job'):
        parse_nccl_tests(one + one)
