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
