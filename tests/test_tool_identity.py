"""An output must be its tool's, for this vendor and these devices.

Real outputs only, changed where said: the 2 x H200 nccl-tests 2.19.6
captures, public nccl-tests 2.18.0 outputs of the ``MPI=1`` build installed
as ``all_reduce_perf_mpi`` / ``all_gather_perf_mpi`` (as NGC and PyTorch
containers ship it), and a public rccl-tests output of 8 MI300X with RCCL
2.22.3 (tests/fixtures/captured/public/README.md).
"""
import pathlib

import pytest

from hpcval.parsers import ParseError
from hpcval.parsers import devices
from hpcval.parsers.nccl_tests import (check_collective, check_devices,
                                       check_tool, library_version,
                                       parse_nccl_tests)

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured'
H200 = CAPTURED / 'h200x2'
PUBLIC = CAPTURED / 'public'


def text(path):
    return path.read_text()


PLAIN = {'all_reduce': text(H200 / 'check_nccl2196_all_reduce_mpi_r2.txt'),
         'all_gather': text(H200 / 'check_nccl2196_all_gather_mpi_r2.txt')}
MPI_BUILDS = {
    'all_reduce': text(PUBLIC / 'nccl2180_all_reduce_perf_mpi_rtx5090_r2.txt'),
    'all_gather': text(PUBLIC / 'nccl2180_all_gather_perf_mpi_rtx5090_r2.txt'),
}
RCCL_MI300X = text(PUBLIC / 'rccl_develop448c4c7_rccl2223_all_reduce_mi300x_'
                            'r8.txt')


def as_mpi_build(output, collective):
    # nccl-tests prints the name it runs under (program_invocation_short_name)
    return output.replace(f'{collective}_perf\n', f'{collective}_perf_mpi\n')


@pytest.mark.parametrize('collective', ['all_reduce', 'all_gather'])
class TestMpiBuildNames:
    def test_the_captured_run_renamed_passes_where_the_plain_one_does(
            self, collective):
        plain = parse_nccl_tests(PLAIN[collective])
        renamed = parse_nccl_tests(as_mpi_build(PLAIN[collective],
                                                collective))
        assert renamed.collective == f'{collective}_perf_mpi'
        for result in (plain, renamed):
            check_collective(result, collective)
            check_tool(result, 'nccl-tests', 'sm_90')
            check_devices(result, 2)
        assert renamed.rows == plain.rows

    def test_public_mpi_build_outputs_pass(self, collective):
        result = parse_nccl_tests(MPI_BUILDS[collective])
        assert result.collective == f'{collective}_perf_mpi'
        check_collective(result, collective)
        # an RTX 5090 (sm_120) is judged by vendor: nothing else is listed
        check_tool(result, 'nccl-tests', 'sm_120')
        check_devices(result, 2)

    def test_the_other_collective_still_fails(self, collective):
        other = {'all_reduce': 'all_gather',
                 'all_gather': 'all_reduce'}[collective]
        result = parse_nccl_tests(MPI_BUILDS[collective])
        with pytest.raises(ParseError, match=f'{collective}_perf_mpi.*this '
                                             f'test runs {other}_perf'):
            check_collective(result, other)


class TestVendor:
    def test_rccl_output_passes_on_its_partition(self):
        result = parse_nccl_tests(RCCL_MI300X)
        check_collective(result, 'all_reduce')
        check_tool(result, 'rccl-tests', 'gfx942')
        check_devices(result, 8)

    def test_rccl_output_on_an_nccl_partition_fails_naming_it(self):
        result = parse_nccl_tests(RCCL_MI300X)
        with pytest.raises(ParseError) as err:
            check_tool(result, 'nccl-tests', 'sm_90')
        msg = str(err.value)
        assert "the output is rccl-tests'" in msg
        assert 'rccl-tests: Version develop:448c4c7' in msg
        assert 'AMD Instinct MI300X x8' in msg
        assert 'this test runs nccl-tests' in msg

    def test_nccl_output_on_an_rccl_partition_fails_naming_it(self):
        result = parse_nccl_tests(PLAIN['all_reduce'])
        with pytest.raises(ParseError) as err:
            check_tool(result, 'rccl-tests', 'gfx942')
        msg = str(err.value)
        assert "the output is nccl-tests'" in msg
        assert '# nccl-tests version 2.19.6' in msg
        assert 'NVIDIA H200 x2' in msg

    def test_without_banners_the_devices_tell(self):
        # rccl-tests without its version line and NCCL_DEBUG=VERSION
        bare = '\n'.join(
            line for line in RCCL_MI300X.splitlines()
            if not line.startswith(('rccl-tests:', 'RCCL version'))) + '\n'
        result = parse_nccl_tests(bare)
        assert result.tool == '' and result.library == ('', '')
        check_tool(result, 'rccl-tests', 'gfx942')
        with pytest.raises(ParseError, match=r'AMD devices.*AMD Instinct '
                                             r'MI300X x8.*runs nccl-tests'):
            check_tool(result, 'nccl-tests', 'sm_90')

    def test_an_output_saying_nothing_of_its_tool_fails(self):
        bare = '\n'.join(
            line for line in PLAIN['all_reduce'].splitlines()
            if not line.startswith(('# nccl-tests version', '#  Rank'))) \
            + '\n'
        result = parse_nccl_tests(bare)
        with pytest.raises(ParseError, match='names neither nccl-tests nor '
                                             'rccl-tests'):
            check_tool(result, 'nccl-tests', 'sm_90')
        # a quoted excerpt (replay) may say nothing of it
        check_tool(result, 'nccl-tests', 'sm_90', identified=False)


class TestDevicesOfThePartition:
    def test_h200_output_on_an_a100_partition_fails_naming_them(self):
        result = parse_nccl_tests(PLAIN['all_reduce'])
        with pytest.raises(ParseError) as err:
            check_tool(result, 'nccl-tests', 'sm_80')
        msg = str(err.value)
        assert 'names NVIDIA H200 x2' in msg
        assert 'NVIDIA sm_80 GPUs (A100, A800, A30)' in msg

    def test_mi300x_output_on_an_mi250x_partition_fails(self):
        result = parse_nccl_tests(RCCL_MI300X)
        with pytest.raises(ParseError, match=r'AMD Instinct MI300X x8.*'
                                             r'gfx90a'):
            check_tool(result, 'rccl-tests', 'gfx90a')

    def test_products_match_as_whole_words(self):
        assert devices.foreign('NVIDIA H200', 'sm_90') == ''
        assert devices.foreign('NVIDIA GH200 480GB', 'sm_90') == ''
        assert devices.foreign('NVIDIA A100-SXM4-40GB', 'sm_80') == ''
        assert devices.foreign('AMD Instinct MI300X VF', 'gfx942') == ''
        assert devices.foreign('AMD Instinct MI250X', 'gfx90a') == ''
        assert devices.foreign('NVIDIA H200', 'sm_80') == 'not an sm_80 product'
        assert devices.foreign('AMD Instinct MI300X', 'sm_90') == \
            'a device of AMD'


class TestLibraryBanner:
    def test_rccl_version_with_a_colon(self):
        assert library_version(RCCL_MI300X) == ('rccl', '2.22.3')
        assert parse_nccl_tests(RCCL_MI300X).library == ('rccl', '2.22.3')

    @pytest.mark.parametrize('line, expected', [
        # RCCL 2.27 under vLLM, NCCL_DEBUG=INFO (public logs)
        ('corona:927:927 [0] NCCL INFO RCCL version : 2.26.6-HEAD:f224e2c',
         ('rccl', '2.26.6')),
        ('RCCL version : 2.21.5-Unknown ', ('rccl', '2.21.5')),
        # NCCL's NCCL_DEBUG=VERSION line
        ('NCCL version 2.21.5+cuda12.4', ('nccl', '2.21.5')),
        ('vm:1:1 [0] NCCL INFO NCCL version 2.28.9+cuda13.0',
         ('nccl', '2.28.9')),
        ('RCCL version :', ('', '')),
    ])
    def test_banners(self, line, expected):
        assert library_version(line + '\n') == expected

    def test_an_nccl_library_under_rccl_tests_fails(self):
        swapped = RCCL_MI300X.replace('RCCL version : 2.22.3-develop:f5b15f2',
                                      'NCCL version 2.21.5+cuda12.4')
        with pytest.raises(ParseError, match='loaded NCCL'):
            check_tool(parse_nccl_tests(swapped), 'rccl-tests', 'gfx942')
