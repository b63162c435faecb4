"""nccl-tests / rccl-tests parser on real outputs and on broken copies of them.

Inputs: the 2 x H200 fixtures (nccl-tests 2.19.6), the MI300X guide's RCCL
all_reduce example (rccl-tests develop:ae3e635) and NREL Kestrel's
all_reduce / all_gather outputs (64 H100 on 16 nodes).  Broken
variants are made from that text here, one defect at a time.
"""
import pathlib
import re
import statistics

import pytest

import seedtext
from hpcval.parsers.common import ParseError
from hpcval.parsers.nccl_tests import check_devices, parse_nccl_tests
from mutate import cut_after, set_cell

SHARED = pathlib.Path(__file__).resolve().parent / 'fixtures'
H200 = SHARED / 'captured' / 'h200x2_hand'
MI300X = SHARED / 'documents' / 'amd-mi300x-validation-guide.txt'
KESTREL = SHARED / 'documents' / 'nrel-kestrel-collective-benchmark.txt'

# row token indices in the current format
TIME_OOP, BUSBW_OOP, WRONG_OOP = 5, 7, 8
TIME_IP, BUSBW_IP, WRONG_IP = 9, 11, 12
GiB = 2**30


@pytest.fixture(scope='module')
def h200():
    return (H200 / 'nccl_all_reduce_g2.txt').read_text()


@pytest.fixture(scope='module')
def h200_nocheck():
    return (H200 / 'nccl_all_reduce_g2_nocheck.txt').read_text()


@pytest.fixture(scope='module')
def mi300x():
    return seedtext.rst_output(MI300X, '# nThread 1 nGpus 8',
                               '# Avg bus bandwidth')


@pytest.fixture(scope='module')
def kestrel_all_reduce():
    return seedtext.fenced_block(KESTREL, '### AllReduce reference')


@pytest.fixture(scope='module')
def kestrel_all_gather():
    return seedtext.fenced_block(KESTREL, '### AllGather reference')


# -- transformations of real text ------------------------------------------



def map_table(text, row, header=None):
    """Apply ``row`` to every row's tokens and ``header`` to the header's
    labels (both return the new token list); other lines stay."""
    out = []
    for line in text.splitlines():
        tokens = line.split()
        if tokens and tokens[0].isdigit():
            line = '  '.join(row(tokens))
        elif header and tokens[:2] == ['#', 'size']:
            line = '#  ' + '  '.join(header(tokens[1:]))
        out.append(line)
    return '\n'.join(out) + '\n'




def drop_line(text, marker):
    return ''.join(line for line in text.splitlines(keepends=True)
                   if marker not in line)


def insert_after(text, marker, new):
    return text.replace(marker, marker + new, 1)


# -- real outputs -----------------------------------------------------------

def test_h200_all_reduce(h200):
    r = parse_nccl_tests(h200)
    assert (r.tool, r.version, r.collective) == \
        ('nccl-tests', '2.19.6', 'all_reduce_perf')
    assert r.devices == 2
    assert [(k.rank, k.host, k.device, k.bus_id, k.name) for k in r.ranks] \
        == [(0, 'vm', 0, '0000:00:06', 'NVIDIA H200'),
            (1, 'vm', 1, '0000:00:07', 'NVIDIA H200')]
    assert len(r.rows) == 31
    assert (r.rows[0].size, r.rows[-1].size) == (8, 8 * GiB)
    last = r.rows[-1]
    assert (last.count, last.type, last.redop, last.root) == \
        (2147483648, 'float', 'sum', -1)
    assert last.out_of_place.time_us == 24708.4
    assert last.in_place.time_us == 24529.3
    assert r.busbw_at_largest('in_place') == 350.19   # README: about 350
    assert r.busbw_at_largest('out-of-place') == 347.65
    # the peak is not at the largest size
    assert r.max_busbw('out_of_place') == 348.67
    assert r.max_busbw('in_place') == 350.19
    assert r.time_at_smallest('out_of_place') == 13.86
    assert r.time_at_smallest('in_place') == 13.40
    assert all(row.in_place.wrong == 0 and row.out_of_place.wrong == 0
               for row in r.rows)
    assert r.avg_bus_bandwidth == 112.366
    assert r.out_of_bounds_ok is True
    check_devices(r, 2)


def test_avg_footer_is_mean_busbw_of_both_blocks(h200, mi300x):
    """The footer averages every busbw printed: proves no row was lost."""
    for text in (h200, mi300x):
        r = parse_nccl_tests(text)
        mean = statistics.mean(b.busbw for row in r.rows
                               for b in (row.out_of_place, row.in_place))
        assert mean == pytest.approx(r.avg_bus_bandwidth, abs=5e-4)


def test_h200_validation_off(h200_nocheck):
    r = parse_nccl_tests(h200_nocheck)
    assert [row.size for row in r.rows] == [4**k * 2**20 for k in range(6)]
    assert all(row.out_of_place.wrong is None and row.in_place.wrong is None
               for row in r.rows)
    assert r.busbw_at_largest() == 331.49
    assert r.busbw_at_largest('out_of_place') == 332.24
    assert r.time_at_smallest() == 27.78
    assert r.avg_bus_bandwidth == 209.006


def test_mi300x_rccl_example(mi300x):
    r = parse_nccl_tests(mi300x)
    assert (r.tool, r.version, r.collective) == \
        ('rccl-tests', 'develop:ae3e635', '')
    assert r.devices == 8
    assert {k.name for k in r.ranks} == {'AMD Instinct MI300X'}
    assert r.ranks[7].bus_id == '0000:e5:00.0'
    assert len(r.rows) == 31
    # the guide's criterion: in-place busbw at 8589934592 B above 304 GB/s
    assert r.rows[-1].size == 8589934592
    assert r.busbw_at_largest('in_place') == 315.84
    assert r.busbw_at_largest('out_of_place') == 316.55
    assert r.rows[-1].in_place.time_us == 47594
    assert r.rows[4].in_place.time_us == 182.4        # the 128 B outlier
    assert r.time_at_smallest('out_of_place') == 34.13
    assert r.avg_bus_bandwidth == 102.138
    assert r.out_of_bounds_ok is True
    # all_reduce busbw = algbw * 2(n-1)/n = 1.75 algbw on 8 ranks
    for row in r.rows:
        if row.in_place.algbw > 10:
            assert row.in_place.busbw / row.in_place.algbw == \
                pytest.approx(1.75, rel=0.01)
    check_devices(r, 8)


def test_kestrel_all_reduce(kestrel_all_reduce):
    # the document quotes the table only: no footer, no device list
    with pytest.raises(ParseError, match='no "Avg bus bandwidth" footer '
                                         'after the row for 4294967296 B'):
        parse_nccl_tests(kestrel_all_reduce)

    r = parse_nccl_tests(kestrel_all_reduce, require_footer=False)
    assert len(r.rows) == 30
    assert r.max_busbw('out_of_place') == 45.72         # "~45 GB/s"
    assert r.busbw_at_largest('in_place') == 45.71
    assert r.rows[-1].out_of_place.time_us == 184959
    assert r.time_at_smallest('out_of_place') == 59.83
    assert (r.avg_bus_bandwidth, r.out_of_bounds_ok, r.version) == \
        (None, None, '')
    with pytest.raises(ParseError, match='expected 64 GPUs, output lists '
                                         'none'):
        check_devices(r, 64)


def test_kestrel_all_gather(kestrel_all_gather):
    r = parse_nccl_tests(kestrel_all_gather, require_footer=False)
    assert len(r.rows) == 25
    assert {row.redop for row in r.rows} == {'none'}
    # 8..512 B over 64 ranks round down to 0 elements: seven 0 B rows
    assert [row.size for row in r.rows[:8]] == [0] * 7 + [1024]
    assert r.max_busbw('out_of_place') == 41.94         # "~42 GB/s"
    assert r.max_busbw('in_place') == 42.04
    assert r.time_at_smallest('out_of_place') == 576.2   # 1024 B, not 0 B
    # all_gather busbw = algbw * (n-1)/n with n = 64
    big = r.rows[-1].out_of_place
    assert big.busbw == pytest.approx(big.algbw * 63 / 64, abs=0.01)


# -- variants the parser must accept ----------------------------------------

def test_interleaved_lines_are_skipped(h200):
    noisy = insert_after(h200, '# Using devices\n',
                         'vm:3505:3505 [0] NCCL INFO Bootstrap: Using eth0\n')
    noisy = insert_after(noisy, '0.34       0\n',
                         'vm:3505:3517 [1] NCCL INFO Channel 00/24 : 0 1\n')
    clean, r = parse_nccl_tests(h200), parse_nccl_tests(noisy)
    assert r.rows == clean.rows and r.ranks == clean.ranks


def test_rccl_in_place_only(h200):
    """rccl-tests -O 0: one block, headed in-place (its format strings)."""
    group = '# %10s  %12s  %8s  %6s  %6s           in-place          ' % \
        (('',) * 5)
    text = map_table(h200, lambda t: t[:5] + t[9:],
                     lambda labels: labels[:5] + labels[9:])
    text = re.sub(r'^#.*out-of-place.*$', group, text, flags=re.MULTILINE)
    r = parse_nccl_tests(text)
    assert all(row.out_of_place is None for row in r.rows)
    assert r.busbw_at_largest() == 350.19
    with pytest.raises(ParseError, match='no out-of-place results'):
        r.max_busbw('out_of_place')


def test_scientific_notation(h200):
    text = set_cell(h200, 8 * GiB, TIME_OOP, '1.2e+08')
    assert parse_nccl_tests(text).rows[-1].out_of_place.time_us == 1.2e8


def test_columns_found_by_label(h200):
    """-I 1 adds i_min i_max i_p99 i_cv% after each block."""
    extra = ['i_min', 'i_max', 'i_p99', 'i_cv%']
    text = map_table(h200,
                     lambda t: t[:9] + ['1'] * 4 + t[9:] + ['2'] * 4,
                     lambda labels: labels[:9] + extra + labels[9:] + extra)
    r = parse_nccl_tests(text)
    assert r.rows == parse_nccl_tests(h200).rows


def test_old_format_without_root(h200):
    """nccl-tests <= 2.11: no root column, max error instead of #wrong."""
    text = map_table(
        h200,
        lambda t: t[:4] + t[5:8] + ['0e+00'] + t[9:12] + ['0e+00'],
        lambda labels: [('error' if x == '#wrong' else x)
                        for x in labels[:4] + labels[5:]])
    r = parse_nccl_tests(text)
    assert r.rows[-1].root is None and r.rows[-1].redop == 'sum'
    assert r.rows[-1].in_place.wrong is None
    assert r.busbw_at_largest() == 350.19

    starred = set_cell(text, GiB, 11, '2e-01*')
    with pytest.raises(ParseError, match=r'error 2e-01\* at 1073741824 B '
                                         r'\(in-place\) exceeds the '
                                         r'threshold'):
        parse_nccl_tests(starred)


# -- broken outputs ---------------------------------------------------------

def test_truncated_mid_row(h200):
    text = h200[:h200.index('  12353.0') + 5]
    with pytest.raises(ParseError, match='row for 4294967296 B is truncated'):
        parse_nccl_tests(text)


def test_truncated_between_rows(h200):
    text = cut_after(h200, '  12353.0')
    with pytest.raises(ParseError, match='no "Avg bus bandwidth" footer after '
                                         'the row for 4294967296 B'):
        parse_nccl_tests(text)


def test_footer_removed(h200):
    text = cut_after(h200, '  24529.3')
    with pytest.raises(ParseError, match='no "Avg bus bandwidth" footer.*'
                                         'truncated'):
        parse_nccl_tests(text)


def test_nan_busbw(h200):
    text = set_cell(h200, 8 * GiB, BUSBW_IP, 'nan')
    with pytest.raises(ParseError, match=r"busbw at 8589934592 B \(in-place\)"
                                         r": 'nan' is not a finite number"):
        parse_nccl_tests(text)


def test_na_time(h200):
    text = set_cell(h200, 1024, TIME_OOP, 'N/A')
    with pytest.raises(ParseError, match=r"time at 1024 B \(out-of-place\): "
                                         r"'N/A' is not a number"):
        parse_nccl_tests(text)


def test_wrong_elements(h200):
    text = set_cell(h200, 1048576, WRONG_IP, '1')
    with pytest.raises(ParseError, match=r'#wrong is 1 at 1048576 B '
                                         r'\(in-place\)'):
        parse_nccl_tests(text)


def test_out_of_bounds_failed(h200):
    text = h200.replace('values : 0 OK', 'values : 3 FAILED')
    with pytest.raises(ParseError, match='Out of bounds values : 3 FAILED'):
        parse_nccl_tests(text)


def test_min_bw_failed(mi300x):
    text = mi300x.replace(': 102.138', ': 102.138 FAILED')
    with pytest.raises(ParseError, match='Avg bus bandwidth : 102.138 FAILED'
                                         '.*NCCL_TESTS_MIN_BW'):
        parse_nccl_tests(text)


def test_missing_rank_line(mi300x, h200):
    r = parse_nccl_tests(drop_line(mi300x, '# Rank 3 '))
    with pytest.raises(ParseError, match=r'expected 8 GPUs, output lists 7 '
                                         r'\(ranks 0-2, 4-7 on '
                                         r'SMC-SC-DC19-06\)'):
        check_devices(r, 8)

    r = parse_nccl_tests(drop_line(h200, '#  Rank  1 '))
    with pytest.raises(ParseError, match=r'expected 2 GPUs, output lists 1 '
                                         r'\(rank 0 on vm\)'):
        check_devices(r, 2)


def test_test_failure_line(h200):
    text = cut_after(h200, '  3268.37') + \
        ' .. vm pid 3505: Test failure common.cu:1234\n'
    with pytest.raises(ParseError, match='failure: vm pid 3505: Test failure '
                                         'common.cu:1234'):
        parse_nccl_tests(text)


def test_no_header(h200):
    with pytest.raises(ParseError, match='no result table header'):
        parse_nccl_tests(cut_after(h200, '#  Rank  1 '))


def test_header_without_rows(h200):
    with pytest.raises(ParseError, match='no result rows'):
        parse_nccl_tests(cut_after(h200, '(elements)'))


def test_repeated_output(h200):
    """nccl-tests without MPI=1 under mpirun -np 2 prints two whole runs."""
    with pytest.raises(ParseError, match='2 result tables'):
        parse_nccl_tests(h200 + h200)
