"""rocblas-bench parser and command lines on the MI300X guide's text.

Inputs: the guide's three GEMM commands and their example outputs (rocBLAS rocm-6.2.0 clients), with Table 5's minima (GFLOP/s, although
the table says TFLOPS).  Newer column layouts and broken variants are made
from that text here, one change at a time.
"""
import pathlib

import pytest

import seedtext
from hpcval.benchmarks.rocblas_bench import GEMMS
from hpcval.parsers.common import ParseError
from hpcval.parsers.rocblas_bench import (GFLOPS, check_shape,
                                          parse_rocblas_bench)

MI300X = (pathlib.Path(__file__).resolve().parent / 'fixtures' / 'documents' /
          'amd-mi300x-validation-guide.txt')

# (gemm, first words of the command in the guide, end of its example output)
GUIDE = {
    'fp32': ('rocblas-bench -f gemm -r s', '97190.6, 1317'),
    'f16_strided': ('--a_type h --lda', '159783, 67.2'),
    'i8_strided': ('--a_type i8_r', '177478, 60.5'),
}
TABLE5 = {'fp32': 94100, 'f16_strided': 130600, 'i8_strided': 162700}


def guide_command(gemm):
    text = seedtext.rst_output(MI300X, GUIDE[gemm][0], GUIDE[gemm][0])
    return text.strip().strip('*')


def guide_output(gemm):
    start = 'rocblas-bench -f gemm -r s' if gemm == 'fp32' else GUIDE[gemm][0]
    text = seedtext.rst_output(MI300X, start, GUIDE[gemm][1])
    return text[text.index('rocBLAS info'):]


@pytest.mark.parametrize('gemm', GUIDE)
def test_commands_are_the_guides(gemm):
    assert f'rocblas-bench {GEMMS[gemm][0]}' == guide_command(gemm)


def test_bf16_variant_differs_only_in_input_types():
    f16, bf16 = GEMMS['f16_strided'][0], GEMMS['bf16_strided'][0]
    assert bf16 == f16.replace('--a_type h', '--a_type bf16_r') \
        .replace('--b_type h', '--b_type bf16_r')


@pytest.mark.parametrize('gemm,gflops,us', [('fp32', 97190.6, 1317),
                                            ('f16_strided', 159783, 67.2),
                                            ('i8_strided', 177478, 60.5)])
def test_guide_outputs(gemm, gflops, us):
    [row] = parse_rocblas_bench(guide_output(gemm))
    assert (row[GFLOPS], row['us']) == (gflops, us)
    assert (row['transA'], row['transB']) == ('N', 'T')
    check_shape([row], **GEMMS[gemm][1])
    assert row[GFLOPS] >= TABLE5[gemm]        # Table 5, in GFLOP/s


def test_columns_found_by_name():
    """Newer rocBLAS: cold_iters,hot_iters before the Gflops column;
    --log_function_name a leading column; -v 1 CPU columns after."""
    text = guide_output('fp32') \
        .replace('ldc,rocblas-Gflops,us', 'ldc,cold_iters,hot_iters,'
                 'rocblas-Gflops,us,CPU-Gflops,CPU-us,norm_error_1') \
        .replace('transA,transB', 'function,transA,transB') \
        .replace('4000,4000, 97190.6, 1317',
                 '4000,4000, 2, 10, 97190.6, 1317,101.2,1264830,0.000123') \
        .replace('N,T,4000', 'gemm,N,T,4000')
    [row] = parse_rocblas_bench(text)
    assert (row[GFLOPS], row['us'], row['hot_iters']) == (97190.6, 1317, '10')
    assert row['function'] == 'gemm'


def test_repetitions_give_one_row_each():
    one = guide_output('i8_strided')
    rows = parse_rocblas_bench('\n'.join(
        [f'hpcval repetition {i}\n{one}' for i in (1, 2, 3)]))
    assert [r[GFLOPS] for r in rows] == [177478] * 3


def test_truncated_values():
    text = guide_output('fp32').replace(', 97190.6, 1317', ', 97190.6')
    with pytest.raises(ParseError, match='11 values under 12 column names'):
        parse_rocblas_bench(text)
    head = guide_output('fp32').split('N,T,4000')[0]
    with pytest.raises(ParseError, match='no values after the header line'):
        parse_rocblas_bench(head)


def test_no_result_line():
    with pytest.raises(ParseError, match='no result line'):
        parse_rocblas_bench('rocBLAS info: maximum library size per device '
                            'is 0.61866 GB.\n')


def test_nan_gflops():
    text = guide_output('f16_strided').replace('159783', 'nan')
    with pytest.raises(ParseError, match="rocblas-bench rocblas-Gflops: 'nan' "
                                         "is not a finite number"):
        parse_rocblas_bench(text)


def test_failure_line():
    text = 'rocBLAS error: Could not initialize Tensile host: No devices ' \
        'found\n' + guide_output('fp32')
    with pytest.raises(ParseError, match='rocBLAS error: Could not '
                                         'initialize Tensile'):
        parse_rocblas_bench(text)


def test_other_shape_is_refused():
    rows = parse_rocblas_bench(guide_output('fp32'))
    with pytest.raises(ParseError, match='result 1: M is 4000, expected 4096'):
        check_shape(rows, M=4096)
    with pytest.raises(ParseError, match='result 1: no batch_count column'):
        check_shape(rows, batch_count=5)
