"""likwid-bench parser on this project's captures (likwid 5.2.2, copy_avx and
stream_avx on one thread of a CI VM, peakflops_avx on two) and on broken
copies of them."""
import pathlib

import pytest

from hpcval.parsers.common import ParseError
from hpcval.parsers.likwid_bench import parse_likwid_bench

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured'
COPY = CAPTURED / 'likwid522_copy_avx_N2GB1.txt'
STREAM = CAPTURED / 'likwid522_stream_avx_N2GB1.txt'
PEAKFLOPS = CAPTURED / 'likwid522_peakflops_avx_N32kB2_i20000.txt'


@pytest.fixture(scope='module')
def copy():
    return COPY.read_text()


def drop_line(text, prefix):
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(prefix))


def set_field(text, key, value):
    """Replace the value of the ``Key:<tabs>value`` line, tabs kept."""
    lines = text.splitlines(keepends=True)
    for n, line in enumerate(lines):
        if line.startswith(key + ':'):
            head = line[:len(key) + 1] + '\t' * line.count('\t')
            lines[n] = head + value + '\n'
            return ''.join(lines)

    raise AssertionError(f'no {key} line')


@pytest.mark.parametrize('path, test, bandwidth, time, volume', [
    (COPY, 'copy_avx', 24543.99, 1.303781, '32000000000'),
    (STREAM, 'stream_avx', 22151.85, 1.444575, '31999997952'),
], ids=['copy', 'stream'])
def test_real_output(path, test, bandwidth, time, volume):
    r = parse_likwid_bench(path.read_text())
    assert (r.bandwidth, r.time, r.threads) == (bandwidth, time, 1)
    assert r.fields['Test'] == test
    assert r.fields['Data volume (Byte)'] == volume
    # MByte/s is 10^6 B/s of the data volume over the time
    assert r.bandwidth == pytest.approx(int(volume) / time / 1e6, rel=1e-5)


@pytest.mark.parametrize('make, message', [
    (lambda t: drop_line(t, 'MByte/s:'), 'printed no MByte/s line'),
    (lambda t: t[:t.index('Cycles:')], 'printed no MByte/s, Time line'),
    (lambda t: set_field(t, 'MByte/s', 'nan'),
     "MByte/s: 'nan' is not a finite number"),
    (lambda t: set_field(t, 'MByte/s', '-nan'),
     "MByte/s: '-nan' is not a finite number"),
    (lambda t: set_field(t, 'MByte/s', 'inf'), 'not a finite number'),
    (lambda t: set_field(t, 'MByte/s', 'N/A'), "'N/A' is not a number"),
    (lambda t: set_field(t, 'Time', 'nan sec'), "Time: 'nan'"),
    (lambda t: drop_line(t, 'Using 1 threads'), "no 'Using N threads' line"),
], ids=['no-MByte/s', 'cut-before-results', 'nan', '-nan', 'inf', 'N/A',
        'nan-time', 'no-threads'])
def test_broken(copy, make, message):
    with pytest.raises(ParseError, match=message):
        parse_likwid_bench(make(copy))


@pytest.fixture(scope='module')
def peakflops():
    return PEAKFLOPS.read_text()


def test_real_peakflops_output(peakflops):
    r = parse_likwid_bench(peakflops, test='peakflops_avx', figure='MFlops/s')
    assert (r.mflops, r.time, r.threads) == (19998.74, 0.06000378, 2)
    assert r.fields['Iterations per thread'] == '20000'
    # MFlops/s is the flop count over the time
    assert r.mflops == pytest.approx(
        int(r.fields['Number of Flops']) / r.time / 1e6, rel=1e-5)


def test_copy_has_no_flop_rate(copy):
    """copy prints MFlops/s 0.00: asked for as a flop rate, it is refused."""
    assert parse_likwid_bench(copy).mflops == 0.0
    with pytest.raises(ParseError, match='MFlops/s 0: copy_avx measured '
                                         'nothing'):
        parse_likwid_bench(copy, figure='MFlops/s')


@pytest.mark.parametrize('make, message', [
    (lambda t: drop_line(t, 'MFlops/s:'), 'printed no MFlops/s line'),
    (lambda t: t[:t.index('Cycles:')], 'printed no MFlops/s, Time line'),
    (lambda t: t[:len(t) // 3], 'printed no MFlops/s, Time line'),
    (lambda t: set_field(t, 'MFlops/s', '-nan'),
     "MFlops/s: '-nan' is not a finite number"),
    (lambda t: set_field(t, 'MFlops/s', '0.00'), 'MFlops/s 0: '),
    (lambda t: drop_line(t, 'Using 2 threads'), "no 'Using N threads' line"),
    (lambda t: '', 'printed no MFlops/s, Time line'),
], ids=['no-MFlops/s', 'cut-before-results', 'truncated', '-nan', 'zero',
        'no-threads', 'empty'])
def test_broken_peakflops(peakflops, make, message):
    with pytest.raises(ParseError, match=message):
        parse_likwid_bench(make(peakflops), test='peakflops_avx',
                           figure='MFlops/s')


def test_wrong_kernel(copy):
    """A copy run where peakflops was asked for is named, not judged."""
    with pytest.raises(ParseError, match="ran 'copy_avx', not "
                                         "'peakflops_avx'"):
        parse_likwid_bench(copy, test='peakflops_avx', figure='MFlops/s')
