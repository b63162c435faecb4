"""likwid-bench parser on this project's captures (likwid 5.2.2, copy_avx and
stream_avx on one thread of a CI VM) and on broken copies of them."""
import pathlib

import pytest

from hpcval.parsers.common import ParseError
from hpcval.parsers.likwid_bench import parse_likwid_bench

CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured'
COPY = CAPTURED / 'likwid522_copy_avx_N2GB1.txt'
STREAM = CAPTURED / 'likwid522_stream_avx_N2GB1.txt'


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
