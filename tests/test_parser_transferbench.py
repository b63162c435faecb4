"""TransferBench parser on real outputs and on broken copies of them.

Inputs: the MI300X guide's a2a, p2p and example.cfg outputs (8 x MI300X, whitespace collapsed by the document) and TransferBenchCuda
v1.52 on 2 x H200 (a2a and example.cfg, tests/fixtures/captured/h200x2_hand).  Broken
variants are made from that text here, one defect at a time.
"""
import pathlib
import re

import pytest

import seedtext
from hpcval.parsers.common import ParseError
from hpcval.parsers.transferbench import (config_tests, parse_a2a,
                                          parse_config_run, parse_p2p,
                                          unmeasured)
from mutate import cut_after

SHARED = pathlib.Path(__file__).resolve().parent / 'fixtures'
MI300X = SHARED / 'documents' / 'amd-mi300x-validation-guide.txt'
H200 = SHARED / 'captured' / 'h200x2_hand'


@pytest.fixture(scope='module')
def a2a():
    return seedtext.rst_output(MI300X, ':mark:`Summary:`',
                               'Aggregate bandwidth (CPU Timed)')


@pytest.fixture(scope='module')
def p2p():
    return seedtext.rst_output(MI300X, 'Bytes Per Direction',
                               'Averages (During BiDir)')


@pytest.fixture(scope='module')
def cfg():
    return seedtext.rst_output(MI300X, '## Single GPU-executed',
                               'Overhead: 0.140 ms')


@pytest.fixture(scope='module')
def h200_a2a():
    return (H200 / 'transferbench_a2a.txt').read_text()


@pytest.fixture(scope='module')
def h200_cfg():
    return (H200 / 'transferbench_example_cfg.txt').read_text()


def set_matrix_cell(text, row, column, value, arrow=''):
    """Replace the ``column``-th value of the matrix row ``row`` ('GPU 03',
    with ``arrow`` '->' / '<-' in p2p) by ``value``."""
    pattern = re.compile(rf'^(\s*{re.escape(row)}\s*{re.escape(arrow)}\s)(.*)$',
                         re.MULTILINE)
    m = next(m for m in pattern.finditer(text)
             if arrow or not m.group(2).lstrip().startswith(('->', '<-')))
    cells = m.group(2).split()
    cells[column] = value
    return text[:m.start()] + m.group(1) + ' '.join(cells) + text[m.end():]


def drop_line(text, start):
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not line.strip().startswith(start))


# -- real outputs -----------------------------------------------------------

def test_mi300x_a2a(a2a):
    r = parse_a2a(a2a)
    assert r.gpus == tuple(f'GPU {i:02d}' for i in range(8))
    assert len(r.links) == 56 and len(r.measured()) == 56
    assert r.links[('GPU 00', 'GPU 01')] == 43.666
    assert r.links[('GPU 07', 'GPU 06')] == 42.553
    # the weakest link of the guide's own example
    assert min(r.measured().items(), key=lambda kv: kv[1]) == \
        (('GPU 03', 'GPU 01'), 28.583)
    assert (r.average_gpu, r.aggregate_gpu, r.aggregate_cpu) == \
        (35.776, 2003.44, 1411.163)
    assert r.row_total['GPU 00'] == 284.653 and r.actual['GPU 07'] == 253.728
    # the printed average is the mean over the 56 transfers
    assert sum(r.measured().values()) / 56 == pytest.approx(35.776, abs=1e-3)
    assert r.transfers is None          # the guide truncated that line away
    # Table 1: 32.9 GB/s; every link measured
    assert r.average_gpu >= 32.9
    assert unmeasured(r.links) == []


def test_h200_a2a(h200_a2a):
    r = parse_a2a(h200_a2a)
    assert (r.version, r.bytes_per_transfer, r.transfers) == \
        ('1.52', 67108864, 2)
    assert r.links == {('GPU 00', 'GPU 01'): 107.0,
                       ('GPU 01', 'GPU 00'): 93.84}
    assert (r.average_gpu, r.aggregate_gpu, r.aggregate_cpu) == \
        (100.42, 200.84, 117.678)


def test_mi300x_p2p(p2p):
    r = parse_p2p(p2p)
    assert r.bytes_per_direction == 67108864
    assert r.uni.averages == {'cpu_to_cpu': 35.85, 'cpu_to_gpu': 41.98,
                              'gpu_to_cpu': 55.24, 'gpu_to_gpu': 48.44}
    assert r.bidir.averages == {'cpu_to_cpu': 30.72, 'cpu_to_gpu': 43.84,
                                'gpu_to_cpu': 43.75, 'gpu_to_gpu': 46.24}
    assert len(r.uni.devices) == 10 and len(r.uni.links) == 90
    assert r.uni.links[('GPU 00', 'GPU 01')] == 48.46
    assert r.uni.links[('CPU 01', 'CPU 00')] == 32.85
    assert r.bidir.links[('GPU 07', 'GPU 06')] == 46.30
    # bidirectional CPU 00 -> CPU 00 is N/A: diagonal, not a link
    assert ('CPU 00', 'CPU 00') not in r.bidir.links
    gpu = {k: v for k, v in r.uni.links.items()
           if k[0].startswith('GPU') and k[1].startswith('GPU')}
    # "Averages" leave the diagonal (local copies, ~1690 GB/s) out
    assert sum(gpu.values()) / 56 == pytest.approx(48.44, abs=0.01)
    # Table 2: 33.9 (uni) and 43.9 (bidir) GB/s
    assert r.uni.averages['gpu_to_gpu'] >= 33.9
    assert r.bidir.averages['gpu_to_gpu'] >= 43.9


@pytest.mark.parametrize('which', ['seed', 'h200'])
def test_example_cfg(which, cfg, h200_cfg):
    tests = parse_config_run(cfg if which == 'seed' else h200_cfg, 6)
    assert [t.number for t in tests] == [1, 2, 3, 4, 5, 6]
    assert tests[2].comment.startswith('Copy 1Mb from GPU0 to GPU1')
    assert [(tr.src, tr.dst) for tr in tests[2].transfers] == \
        [('G0', 'G1'), ('G1', 'G0')]
    bws = [[tr.bandwidth for tr in t.transfers] for t in tests]
    if which == 'seed':
        assert bws == [[47.774], [48.349], [32.809, 39.603], [1274.598],
                       [20.344], [48.933]]
        assert tests[1].executors == {'DMA 00': 48.349}
        assert tests[3].aggregate_cpu == 305.581
    else:
        assert bws == [[100.776], [363.754], [7.803, 17.973], [313.752],
                       [17.515], [174.481]]
        assert tests[2].transfers[1].bytes == 2097152


def test_config_tests_counts_test_lines():
    text = ('# comment\n## Single GPU-executed Transfer\n1 4 (G0->G0->G1)\n'
            '\n## Copy\n-2 (G0->G0->G1 4 1M) (G1->G1->G0 8 2M)\n')
    assert config_tests(text) == ['1 4 (G0->G0->G1)',
                                  '-2 (G0->G0->G1 4 1M) (G1->G1->G0 8 2M)']


def test_unicode_borders_and_overhead_without_colon(h200_cfg, h200_a2a):
    """The newest layout (unverified: modelled on the format notes)."""
    text = h200_cfg.replace(' | ', ' │ ').replace('Overhead:', 'Overhead')
    assert parse_config_run(text, 6) == parse_config_run(h200_cfg, 6)
    a2a = h200_a2a.replace('    GPU 01', ' │  GPU 01')
    assert parse_a2a(a2a).links == parse_a2a(h200_a2a).links


# -- a link the output shows as N/A is named ---------------------------------

def test_na_gpu_pair_is_named(a2a):
    r = parse_a2a(set_matrix_cell(a2a, 'GPU 04', 2, 'N/A'))
    assert unmeasured(r.links) == ['GPU 04 -> GPU 02']


# -- broken outputs ---------------------------------------------------------

def test_error_lines_with_exit_0(h200_a2a):
    text = h200_a2a.replace(
        'Summary:', '[ERROR] Transfer 0: Unexpected mismatch at index 0 of '
        'destination 0 on rank 0: Expected 31.00000 Actual: 0.00000\nSummary:')
    with pytest.raises(ParseError, match=r'TransferBench reported an error: '
                                         r'\[ERROR\] Transfer 0: Unexpected '
                                         r'mismatch'):
        parse_a2a(text)


def test_a2a_na_against_announced_transfers(h200_a2a):
    text = set_matrix_cell(h200_a2a, 'GPU 01', 0, 'N/A')
    with pytest.raises(ParseError, match=r'announced 2 transfers but the '
                                         r'matrix holds 1 values \(N/A: '
                                         r'GPU 01 -> GPU 00\)'):
        parse_a2a(text)


def test_a2a_nan_cell(a2a):
    with pytest.raises(ParseError, match=r"a2a GPU 02 -> GPU 06: 'nan' is "
                                         r"not a finite number"):
        parse_a2a(set_matrix_cell(a2a, 'GPU 02', 6, 'nan'))


def test_a2a_truncated_matrix(a2a):
    with pytest.raises(ParseError, match=r'no row for GPU 05, GPU 06, GPU 07'):
        parse_a2a(cut_after(a2a, 'GPU 04 34.388'))
    cut = a2a[:a2a.index('29.553 30.244') + 13]
    with pytest.raises(ParseError, match=r'row for GPU 05 has 2 of 10 values'):
        parse_a2a(cut)


def test_a2a_missing_gpu_row(a2a):
    with pytest.raises(ParseError, match=r'no row for GPU 03 \(header lists '
                                         r'8 GPUs\)'):
        parse_a2a(drop_line(a2a, 'GPU 03'))


def test_a2a_no_summary_lines(h200_a2a):
    with pytest.raises(ParseError, match=r'no "Average bandwidth \(GPU '
                                         r'Timed\):" line'):
        parse_a2a(cut_after(h200_a2a, 'RTotal'))
    with pytest.raises(ParseError, match='no a2a summary matrix'):
        parse_a2a(cut_after(h200_a2a, 'Test 0:'))


def test_a2a_concatenated(h200_a2a):
    with pytest.raises(ParseError, match='2 a2a summary matrices'):
        parse_a2a(h200_a2a + h200_a2a)


def test_p2p_truncated(p2p):
    with pytest.raises(ParseError, match=r'no "Averages \(During BiDir\):"'):
        parse_p2p(cut_after(p2p, 'GPU 07 <->'))
    with pytest.raises(ParseError, match=r'Bidirectional matrix: no row for '
                                         r'GPU 04'):
        parse_p2p(cut_after(p2p, 'GPU 03 <->'))


def test_p2p_na_average(p2p):
    text = p2p.replace('Averages (During UniDir): 35.85 41.98 55.24 48.44',
                       'Averages (During UniDir): 35.85 41.98 55.24')
    with pytest.raises(ParseError, match=r'has 3 of 4 values'):
        parse_p2p(text)


def test_config_stopped_early(h200_cfg):
    with pytest.raises(ParseError, match=r'config file has 6 tests, the '
                                         r'output 4 \(last: Test 4\)'):
        parse_config_run(cut_after(h200_cfg, 'Overhead: 0.238 ms'), 6)


def test_config_truncated_test(cfg):
    with pytest.raises(ParseError, match=r'Test 3: no Aggregate \(CPU\) line'):
        parse_config_run(cut_after(cfg, 'G1 -> GPU01:008 -> G0'))


def test_config_na_bandwidth(h200_cfg):
    text = h200_cfg.replace('| 363.754 GB/s |', '|     N/A GB/s |')
    with pytest.raises(ParseError, match=r"Test 2 DMA 00: 'N/A' is not "
                                         r"a number"):
        parse_config_run(text, 6)


def test_config_bad_file(h200_cfg):
    text = h200_cfg.split('## Single')[0] + \
        '[ERROR] Unable to open transfer configuration file: [x.cfg]\n'
    with pytest.raises(ParseError, match=r'Unable to open transfer'):
        parse_config_run(text, 6)
    with pytest.raises(ParseError, match=r'no "Test N:" results'):
        parse_config_run(h200_cfg.split('## Single')[0], 6)
