"""The checks' own outputs from the 2 x H200 run against hand runs of the
same binaries with the same flags (tests/fixtures/captured/h200x2)."""
import pathlib

import pytest

from hpcval.parsers.babelstream import CLASSIC_KERNELS, parse_babelstream
from hpcval.parsers.nccl_tests import check_devices, parse_nccl_tests

DIR = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / 'h200x2'


def _read(name):
    return (DIR / name).read_text()


@pytest.mark.parametrize('gpu', [0, 1])
def test_babelstream_check_matches_hand_run(gpu):
    check = parse_babelstream(_read(f'check_babelstream50_cuda_gpu{gpu}.txt'))
    hand = parse_babelstream(_read(f'hand_babelstream50_cuda_gpu{gpu}.txt'))
    assert check.device == 'NVIDIA H200' and check.version == '5.0'
    for kernel in CLASSIC_KERNELS:
        assert check.bandwidth(kernel) >= 0.98 * hand.bandwidth(kernel)

    assert check.bandwidth('Copy') == pytest.approx(3533230.966 if gpu == 0
                                                    else 3537e3, rel=1e-3)


@pytest.mark.parametrize('collective', ['all_reduce', 'all_gather'])
def test_nccl_check_matches_hand_run(collective):
    check = parse_nccl_tests(_read(f'check_nccl2196_{collective}_g2.txt'))
    hand = parse_nccl_tests(_read(f'hand_nccl2196_{collective}_g2.txt'))
    check_devices(check, 2)
    assert check.rows[-1].size == 8 * 2**30
    for place in ('in_place', 'out_of_place'):
        assert check.busbw_at_largest(place) >= \
            0.98 * hand.busbw_at_largest(place)


def test_recorded_figures():
    ar = parse_nccl_tests(_read('check_nccl2196_all_reduce_g2.txt'))
    assert ar.busbw_at_largest('in_place') == 346.82
    assert ar.busbw_at_largest('out_of_place') == 349.86
    ag = parse_nccl_tests(_read('check_nccl2196_all_gather_g2.txt'))
    assert ag.busbw_at_largest('in_place') == 314.89


@pytest.mark.parametrize('collective', ['all_reduce', 'all_gather'])
def test_rank_per_gpu_check_matches_hand_run(collective):
    """nccl-tests with MPI=1, one rank per GPU, through the check."""
    check = parse_nccl_tests(_read(f'check_nccl2196_{collective}_mpi_r2.txt'))
    hand = parse_nccl_tests(_read(f'hand_nccl2196_{collective}_mpi_r2.txt'))
    check_devices(check, 2)
    assert 'nThread 1 nGpus 1 ' in _read(
        f'check_nccl2196_{collective}_mpi_r2.txt')
    for place in ('in_place', 'out_of_place'):
        assert check.busbw_at_largest(place) >= \
            0.98 * hand.busbw_at_largest(place)


# -- TransferBenchCuda, OSU (host buffers) and Comm|Scope, same node kind ---

def test_transferbench_captures_parse():
    from hpcval.parsers import transferbench as tb
    a2a = tb.parse_a2a(_read('transferbench/check_tb152_a2a.txt'))
    assert a2a.version.startswith('1.52') and a2a.average_gpu == 84.894
    hand = tb.parse_a2a(_read('transferbench/hand_tb152_a2a.txt'))
    # TransferBench on this node moved by up to 20% between runs (84.9,
    # 98.8, 102.2, 105.3 GB/s): recorded, not a ratio the check can promise
    assert 0.8 < a2a.average_gpu / hand.average_gpu < 1.25
    p2p = tb.parse_p2p(_read('transferbench/check_tb152_p2p.txt'))
    assert p2p.uni.links[('GPU 00', 'GPU 01')] == 153.75
    runs = tb.parse_config_run(_read('transferbench/check_tb152_config.txt'),
                               expected_tests=6)
    assert len(runs) == 6


@pytest.mark.parametrize('bench, metric, size', [
    ('osu_latency', 'latency', 8), ('osu_bw', 'bandwidth', 4194304)])
def test_osu_check_matches_hand_run(bench, metric, size):
    from hpcval.parsers.osu import parse_osu
    check = parse_osu(_read(f'osu/check_osu74_{bench}_same_socket.txt'))
    hand = parse_osu(_read(f'osu/hand_osu74_{bench}_same_socket.txt'))
    ours = check.table().at(size).value
    theirs = hand.table().at(size).value
    if metric == 'latency':
        assert ours <= theirs / 0.98
    else:
        assert ours >= 0.98 * theirs


def test_comm_scope_capture_parses():
    from hpcval.parsers.comm_scope import parse_comm_scope
    runs = parse_comm_scope(_read('comm_scope/check_comm_scope0120_cuda.json'))
    assert all(r.repetitions == 3 for r in runs.values())
    h2d = [r for name, r in runs.items()
           if 'PinnedToGPU' in name and 'log2(N):27' in name]
    assert h2d and 50e9 < h2d[0].bytes_per_second < 60e9


# -- GPU buffers through Intel MPI 2021.19 (GPU-aware), same node kind ------

REPORTS = DIR.parents[1] / 'reports' / 'h200x2'


def _reported(report_name, prefix, metric):
    import json
    report = json.loads((REPORTS / report_name).read_text())
    [value] = [vals[0] for run in report['runs'] for tc in run['testcases']
               if tc['display_name'].startswith(prefix)
               for key, vals in tc['perfvalues'].items()
               if key.endswith(':' + metric)]
    return value


@pytest.mark.parametrize('bench, metric, size', [
    ('osu_latency', 'latency_8B', 8), ('osu_bw', 'bandwidth_4MiB', 4194304)])
def test_osu_device_buffers_check_matches_hand_run(bench, metric, size):
    from hpcval.parsers.osu import parse_osu
    gpu = 'gpu_aware_mpi'
    check = parse_osu(_read(f'{gpu}/check_osu74_{bench}_cuda_DD_impi.txt'))
    hand = parse_osu(_read(f'{gpu}/hand_osu74_{bench}_cuda_DD_impi.txt'))
    ours = check.table().at(size).value
    assert ours == _reported('osu-mpi4py-gpu-buffers.json',
                             f'OsuCudaCheck %benchmark={bench} ', metric)
    theirs = hand.table().at(size).value
    # one run each, a minute apart: within 10%
    assert ours == pytest.approx(theirs, rel=0.10)


def test_mpi4py_cupy_buffers_through_the_check():
    from hpcval.parsers.mpi4py_pingpong import parse_pingpong
    gpu = 'gpu_aware_mpi'
    script = _read(f'{gpu}/check_mpi4py_pingpong_cupy_impi.rfm_job.sh')
    assert 'export I_MPI_OFFLOAD=1' in script and '-a cupy' in script
    rows = {r.size: r for r in parse_pingpong(
        _read(f'{gpu}/check_mpi4py_pingpong_cupy_impi.txt'))}
    assert rows[4194304].bandwidth == _reported(
        'osu-mpi4py-gpu-buffers.json', 'Mpi4pyPingPongCheck',
        'bandwidth_4MiB')
    hand = {r.size: r for r in parse_pingpong(
        _read(f'{gpu}/hand_mpi4py_pingpong_cupy_impi.txt'))}
    assert rows[4194304].bandwidth == pytest.approx(
        hand[4194304].bandwidth, rel=0.10)
