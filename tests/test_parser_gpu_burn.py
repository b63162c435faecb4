"""gpu-burn parser on real outputs of one H100 (float, double, float on
tensor cores; tests/fixtures/captured/gpu_burn/README.md) and on variants
made from them one change at a time (tests/gpu_burn_outputs.py)."""
import pathlib

import pytest

from gpu_burn_outputs import CAPTURED, more_gpus, real
from hpcval.parsers.common import ParseError
from hpcval.parsers.gpu_burn import gpus_reported, parse_gpu_burn, problems

# (file, median of the reports after the first, reports, GEMMs done)
H100 = [
    ('h100_float_20s', 51316, 4, 1120),
    ('h100_double_20s', 54618, 8, 1112),
    ('h100_tc_float_20s', 359019, 24, 6720),
    ('h100_float_m10_i0_10s', 51398, 16, 464),
]


@pytest.mark.parametrize('name,gflops,reports,gemms', H100)
def test_real_h100_outputs(name, gflops, reports, gemms):
    result = parse_gpu_burn(real(name))
    [gpu] = result.gpus.values()
    assert (gpu.gflops, len(gpu.rates), gpu.gemms) == \
        (gflops, reports, gemms)
    # the first report's time covers the set-up too: left out
    assert gpu.rates[0] < 0.95 * gflops
    assert (gpu.errors, gpu.died, gpu.faulty) == (0, False, False)
    assert problems(result) == []
    assert result.names == ['GPU 0: NVIDIA H100 80GB HBM3 (UUID: '
                            'GPU-d99f21d9-cab4-dc42-d74f-6e0bf777e8b9)']


def test_newlines_as_read_text_gives_them():
    """The check reads rfm_job.out with universal newlines: \\r is \\n."""
    text = real('h100_float_20s')
    assert '\r' in text
    assert parse_gpu_burn(text.replace('\r', '\n')) == parse_gpu_burn(text)


def test_announced_modes_when_printed():
    assert parse_gpu_burn(real('h100_tc_float_20s')).modes == \
        {'FLOATS, Tensor Cores'}
    assert parse_gpu_burn(real('h100_float_m10_i0_10s')).modes == {'FLOATS'}
    # lost with the killed process's buffer
    assert parse_gpu_burn(real('h100_double_20s')).modes == set()


def test_errors_on_one_gpu_are_summed_over_windows():
    text = more_gpus(real('h100_float_20s'), 4,
                     errors={(2, 1): 5, (2, -1): 9})
    result = parse_gpu_burn(text)
    assert [g.errors for g in result.gpus.values()] == [0, 0, 14, 0]
    assert result.gpus[2].faulty
    assert problems(result) == ['GPU 2: 14 compute errors (repeated GEMMs '
                                'on it gave different results)']
    assert gpus_reported(text) == {0, 1, 2, 3}


def test_a_dead_gpu_is_named_and_not_measured():
    text = more_gpus(real('h100_double_20s'), 2, died=1)
    assert problems(parse_gpu_burn(text)) == \
        ['GPU 1: its gpu-burn process died']
    assert gpus_reported(text) == {0}


def test_one_report_is_too_few():
    text = real('h100_float_m10_i0_10s')
    first = text.index("\r20.0%")
    result = parse_gpu_burn(text[:first] + text[text.index('\nKilling'):])
    assert problems(result) == [
        'GPU 0: 1 report(s) in 10 s, too few for a rate (a longer duration, '
        'or less memory with -m)']


@pytest.mark.parametrize('cut,why', [
    ('\nKilling processes', r'did not finish: no "Tested N GPUs" summary '
                            r'\(killed, or the output is cut\)'),
    ('\r35.0%', 'no progress line'),
])
def test_cut_outputs(cut, why):
    text = real('h100_float_20s')
    with pytest.raises(ParseError, match=why):
        parse_gpu_burn(text[:text.index(cut)])
    # what a cut output shows is still measured
    assert gpus_reported(text[:text.index('\nKilling')]) == {0}


def test_gpu_count_disagrees():
    text = more_gpus(real('h100_float_20s'), 2).replace('Tested 2 GPUs',
                                                        'Tested 3 GPUs')
    with pytest.raises(ParseError, match='tested 3 GPUs but its progress '
                                         'lines show 2'):
        parse_gpu_burn(text)


def test_another_tools_output():
    other = (pathlib.Path(CAPTURED).parent /
             'babelstream50_omp_s33554432_n100.txt').read_text()
    with pytest.raises(ParseError, match='not gpu-burn output'):
        parse_gpu_burn(other)


def test_dead_gpus_named_when_gpu_burn_aborts():
    """With every GPU dead gpu-burn aborts ("No clients are alive!")
    without its summary: the output ends at the progress lines."""
    text = more_gpus(real('h100_double_20s'), 2, died=1)
    cut = text[:text.index('\nKilling')]
    with pytest.raises(ParseError, match=r'no "Tested N GPUs" summary '
                                         r'\(GPU 1 died\)'):
        parse_gpu_burn(cut)


PUBLIC = CAPTURED.parent.parent / 'public' / 'gpu_burn'


@pytest.mark.parametrize('name,count', [('issue12_16gpus_faulty', 16),
                                        ('issue39_6gpus_faulty', 6)])
def test_public_faulty_outputs_are_refused_naming_the_gpus(name, count):
    """Terminal copies of older gpu-burns' last lines (SOURCE.md there):
    no header, so never judged, but the GPUs gpu-burn called FAULTY are
    named."""
    gpus = ', '.join(f'GPU {i}' for i in range(count))
    with pytest.raises(ParseError, match=rf'^not gpu-burn output \(or cut, '
                                         rf'.*; gpu-burn called {gpus} '
                                         rf'FAULTY$'):
        parse_gpu_burn((PUBLIC / f'{name}.txt').read_text())


def test_a_wrapped_error_count_is_counted():
    """gpu-burn counts errors in an int: issue 12's -524288000 is
    3770679296 errors (modulo 2**32), never none; the verdict line
    indented by spaces, as a terminal copies its tab."""
    text = more_gpus(real('h100_float_20s'), 2, errors={(1, -1): -524288000})
    text = text.replace('\tGPU 1: FAULTY', '        GPU 1: FAULTY')
    result = parse_gpu_burn(text)
    assert (result.gpus[1].errors, result.gpus[1].faulty) == \
        (3770679296, True)
    assert problems(result) == ['GPU 1: 3770679296 compute errors (repeated '
                                'GEMMs on it gave different results)']
