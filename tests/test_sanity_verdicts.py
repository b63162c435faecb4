"""Outputs that must not pass as what the test asked for: the wrong
collective, the wrong OSU benchmark, a sweep cut short by nccl-tests' own
memory limit, the wrong GPU count, and a refusal whose reason is on
standard error.  Each case is a real captured output (tests/fixtures/
captured), changed only where said, or the tools' own text as their
sources print it."""
import pathlib

import pytest

from hpcval.parsers import ParseError
from hpcval.parsers.babelstream import check_run, parse_babelstream
from hpcval.parsers.common import stderr_reason
from hpcval.parsers.nccl_tests import (check_collective, check_devices,
                                       check_gpus_per_process, check_sizes,
                                       largest_size, parse_nccl_tests,
                                       parse_size)
from hpcval.parsers.osu import (check_benchmark, check_largest, parse_osu)
from mutate import cut_after

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured'
H200 = CAPTURED / 'h200x2'
ALL_REDUCE = (H200 / 'check_nccl2196_all_reduce_g2.txt').read_text()
ALL_GATHER = (H200 / 'check_nccl2196_all_gather_g2.txt').read_text()
OSU_LATENCY = (CAPTURED / 'osu' /
               'check_osu74_mpich432_latency_same_socket.txt').read_text()
OSU_BW = (CAPTURED / 'osu' / 'check_osu74_mpich432_bw_same_socket.txt'
          ).read_text()
EIGHT_GIB = 8 * 2**30

# nccl-tests src/common.cu (v2.19.6), run():
#   printf("#\n# Reducing maxBytes to %ld due to memory limitation\n", ...)
REDUCING = '#\n# Reducing maxBytes to {} due to memory limitation\n'
# src/common.cu, threadInit's device loop, on standard error:
NCCL_TOO_FEW_GPUS = ('Invalid number of GPUs: 2 requested but only 1 were '
                     'found.\nPlease check the number of processes and GPUs '
                     'per process.\n')
# TESTCHECK in src/common.h, on standard output
NCCL_TESTCHECK = ' .. vm pid 2396: Test failure common.cu:1454\n'
# osu-micro-benchmarks 7.4 c/mpi/pt2pt/standard/osu_latency.c and osu_bw.c
OSU_TWO_PROCESSES = 'This test requires exactly two processes\n'


def reduced_run(text, reached):
    """``text`` as nccl-tests prints it when memory caps maxBytes below the
    next size after ``reached``: the 'Reducing maxBytes' line after the
    device list, the table ending at ``reached`` bytes, then the footer."""
    lines = text.splitlines(keepends=True)
    last_rank = max(i for i, line in enumerate(lines)
                    if line.startswith('#  Rank'))
    lines.insert(last_rank + 1, REDUCING.format(reached + 12345))
    text = ''.join(lines)
    return cut_after(text, f'{reached:>12d} ') + \
        text[text.index('# Out of bounds values'):]


class TestCollectiveNamedInTheHeader:
    def test_all_gather_output_fails_the_all_reduce_test(self):
        result = parse_nccl_tests(ALL_GATHER)
        with pytest.raises(ParseError, match='all_gather_perf.*this test '
                                             'runs all_reduce_perf'):
            check_collective(result, 'all_reduce')

    def test_matching_collectives_pass(self):
        check_collective(parse_nccl_tests(ALL_GATHER), 'all_gather')
        check_collective(parse_nccl_tests(ALL_REDUCE), 'all_reduce')

    def test_without_the_starting_line_the_redop_column_decides(self):
        # nccl-tests before 2.17 and rccl-tests print no "Collective test
        # starting" line
        text = ALL_GATHER.replace('# Collective test starting: '
                                  'all_gather_perf\n', '')
        result = parse_nccl_tests(text)
        assert result.collective == ''
        with pytest.raises(ParseError, match="redop is none.*all_reduce"):
            check_collective(result, 'all_reduce')
        check_collective(result, 'all_gather')
        no_name = parse_nccl_tests(ALL_REDUCE.replace(
            '# Collective test starting: all_reduce_perf\n', ''))
        with pytest.raises(ParseError, match='redop is sum'):
            check_collective(no_name, 'all_gather')


class TestLargestSize:
    def test_complete_run_reaches_the_requested_size(self):
        result = parse_nccl_tests(ALL_REDUCE)
        assert result.params.max_bytes == EIGHT_GIB
        assert result.reduced_max_bytes is None
        check_sizes(result, 8, EIGHT_GIB, 2, 2)

    def test_reducing_max_bytes_is_a_failure_naming_the_size_reached(self):
        text = reduced_run(ALL_REDUCE, 2**30)
        result = parse_nccl_tests(text)       # a complete output otherwise
        assert result.reduced_max_bytes == 2**30 + 12345
        assert result.largest_row_size == 2**30
        with pytest.raises(ParseError) as err:
            check_sizes(result, 8, EIGHT_GIB, 2, 2)
        assert 'reduced maxBytes to 1073754169 due to memory limitation' \
            in str(err.value)
        assert 'largest size reached is 1073741824 B' in str(err.value)
        assert 'asks 8589934592 B' in str(err.value)

    def test_reference_for_the_size_reached(self):
        # judged at 1 GiB (-S max_bytes=1G, a reference made there): the
        # output ran with maxBytes 8G, so it is another run's
        result = parse_nccl_tests(reduced_run(ALL_REDUCE, 2**30))
        with pytest.raises(ParseError, match='run with maxBytes 8589934592'):
            check_sizes(result, 8, 2**30, 2, 2)
        # the parameter line of a run asked for 1 GiB: judged there
        asked_1g = reduced_run(ALL_REDUCE, 2**30).replace(
            'maxBytes 8589934592', f'maxBytes {2**30}')
        check_sizes(parse_nccl_tests(asked_1g), 8, 2**30, 2, 2)

    def test_a_run_cut_short_without_the_line(self):
        text = reduced_run(ALL_REDUCE, 2**20).replace(
            REDUCING.format(2**20 + 12345), '')
        with pytest.raises(ParseError, match='stopped early'):
            check_sizes(parse_nccl_tests(text), 8, EIGHT_GIB, 2, 2)

    def test_all_gather_rounding_is_not_a_shortfall(self):
        # all_gather sizes are multiples of ranks x element size
        assert largest_size(8, 100, 2) == 64
        result = parse_nccl_tests(ALL_GATHER)
        check_sizes(result, 8, EIGHT_GIB, 2, 2)

    def test_sizes_as_nccl_tests_reads_them(self):
        assert parse_size('8G') == EIGHT_GIB
        assert parse_size('64k') == 65536
        assert parse_size('8') == 8
        assert parse_size('8GB') is None and parse_size('8G\n') is None


class TestGpuCount:
    def test_ngpus_and_rank_lines_must_match(self):
        result = parse_nccl_tests(ALL_REDUCE)
        check_gpus_per_process(result, 2)
        check_devices(result, 2)
        with pytest.raises(ParseError, match='nGpus 2 per process, the test '
                                             'asks -g 4'):
            check_gpus_per_process(result, 4)
        with pytest.raises(ParseError, match='expected 4 GPUs, output lists '
                                             '2'):
            check_devices(result, 4)


class TestOsuBenchmarkNamedInTheTitle:
    def test_latency_table_fails_the_bandwidth_test(self):
        result = parse_osu(OSU_LATENCY)
        with pytest.raises(ParseError, match='OSU Latency Test.*osu_bw'):
            check_benchmark(result, 'osu_bw')

    def test_each_benchmark_its_own_title(self):
        check_benchmark(parse_osu(OSU_LATENCY), 'osu_latency')
        check_benchmark(parse_osu(OSU_BW), 'osu_bw')
        with pytest.raises(ParseError, match='Bandwidth Test.*osu_latency'):
            check_benchmark(parse_osu(OSU_BW), 'osu_latency')

    def test_largest_size(self):
        table = parse_osu(OSU_BW).table()
        check_largest(table, 4 * 2**20)
        short = parse_osu(cut_after(OSU_BW, '65536 ')).table()
        with pytest.raises(ParseError, match='largest size reached is 65536 '
                                             'B, the test asks 4194304 B'):
            check_largest(short, 4 * 2**20)


class TestStderrReason:
    def test_nccl_gpu_count_line(self):
        assert stderr_reason(NCCL_TOO_FEW_GPUS) == (
            'Invalid number of GPUs: 2 requested but only 1 were found.')

    def test_osu_refusal_before_the_launcher_report(self):
        # MPICH's Hydra reports a rank's non-zero exit after the program
        hydra = ('\n' + '=' * 83 + '\n=   BAD TERMINATION OF ONE OF YOUR '
                 'APPLICATION PROCESSES\n=   RANK 0 PID 4242 RUNNING AT vm\n'
                 '=   EXIT STATUS: 1\n' + '=' * 83 + '\n')
        assert stderr_reason(OSU_TWO_PROCESSES + hydra) == \
            'This test requires exactly two processes'

    def test_launcher_line_when_nothing_else(self):
        assert stderr_reason('srun: error: n1: task 0: Exited with exit '
                             'code 1\n') == \
            'srun: error: n1: task 0: Exited with exit code 1'
        assert stderr_reason('\n\n') == ''

    def test_cudas_success_line_is_no_reason(self):
        # a burn-in job's stderr on a lent H100: gpu-burn's one line
        text = (CAPTURED / 'burnin' / 'h100' / 'run3' / 'stage' /
                'gpu0_competitor' / 'rfm_job.err').read_text()
        assert text == 'cuInit returned 0 (no error)\n'
        assert stderr_reason(text) == ''


class TestBabelStreamImplementationAndIterations:
    OMP = (CAPTURED / 'vm' / 'babelstream_v5.0_omp_n20_s33554432.txt'
           ).read_text()
    CUDA = (H200 / 'check_babelstream50_cuda_gpu0.txt').read_text()

    def test_openmp_output_fails_the_cuda_test(self):
        result = parse_babelstream(self.OMP)
        with pytest.raises(ParseError, match="OpenMP implementation.*this "
                                             "test runs cuda"):
            check_run(result, 'cuda', 20)
        check_run(result, 'omp', 20)
        check_run(parse_babelstream(self.CUDA), 'cuda', 50)

    def test_another_iteration_count_is_another_run(self):
        with pytest.raises(ParseError, match='kernels 20 times, this test '
                                             'asks -n 100'):
            check_run(parse_babelstream(self.OMP), 'omp', 100)
