"""OSU micro-benchmarks parser on real outputs and on broken copies of them.

Inputs: OSU 7.4 on Open MPI 4.1.4 (tests/fixtures/captured/vm), this project's
captures of 7.4 on PyPI MPICH 4.3.2 (hand runs with -c, -f, -T, and runs
through OsuCpuCheck), and the mpi4py CuPy crash on a non-CUDA-aware MPI
(tests/fixtures/captured/h200x2_hand).  The older header form (``Latency (us)``, buffer
line, ``# Datatype:`` after the header as 7.1/7.2 print it) is made from
the 7.4 text, since its format strings are documented (benchmark-formats.md
section 5) and the change is one header line.
"""
import pathlib

import pytest

from hpcval.parsers.common import ParseError
from hpcval.parsers.common import device_buffer_error
from hpcval.parsers.mpi4py_pingpong import parse_pingpong
from hpcval.parsers.osu import parse_osu
from mutate import cut_after, set_cell

SHARED = pathlib.Path(__file__).resolve().parent / 'fixtures' / 'captured'
CAPTURED = pathlib.Path(__file__).parent / 'fixtures' / 'captured' / 'osu'
OPENMPI_LAT = SHARED / 'vm' / 'osu74_latency_2ranks.txt'
OPENMPI_BW = SHARED / 'vm' / 'osu74_bw_2ranks.txt'
CUPY_CRASH = SHARED / 'h200x2_hand' / 'mpi4py_pingpong_cupy.txt'


def captured(name):
    return (CAPTURED / name).read_text()


@pytest.fixture(scope='module')
def latency():
    return OPENMPI_LAT.read_text()


@pytest.fixture(scope='module')
def validated():
    return captured('hand_osu74_mpich432_latency_c.txt')


# -- real outputs -----------------------------------------------------------

def test_openmpi_latency(latency):
    r = parse_osu(latency)
    assert (r.test, r.version, r.accelerator, r.buffers) == \
        ('Latency Test', '7.4', '', '')
    t = r.table()
    assert (t.datatype, t.quantity, t.unit, t.labels) == \
        ('MPI_CHAR', 'latency', 'us', ('Avg Latency(us)',))
    assert [row.size for row in t.rows] == [2**k for k in range(23)]
    assert t.at(8).value == 0.17
    assert t.largest.value == 613.32 and t.largest.size == 4194304
    assert all(row.validation is None for row in t.rows)


def test_openmpi_bandwidth():
    t = parse_osu(OPENMPI_BW.read_text()).table()
    assert (t.quantity, t.unit) == ('bandwidth', 'MB/s')
    assert t.at(4194304).value == 10918.91
    assert t.at(2048).value == 7965.16


@pytest.mark.parametrize('name, test, quantity, rows, largest', [
    ('hand_osu74_mpich432_latency.txt', 'Latency Test', 'latency', 23,
     (4194304, 1828.0)),
    ('hand_osu74_mpich432_bw.txt', 'Bandwidth Test', 'bandwidth', 23,
     (4194304, 925.19)),
    ('hand_osu74_mpich432_bibw.txt', 'Bi-Directional Bandwidth Test',
     'bandwidth', 23, (4194304, 3504.72)),
    ('hand_osu74_mpich432_allreduce.txt', 'Allreduce Latency Test',
     'latency', 21, (1048576, 3471.92)),
    ('check_osu74_mpich432_latency_same_socket.txt', 'Latency Test',
     'latency', 23, (4194304, None)),
    ('check_osu74_mpich432_bw_same_socket.txt', 'Bandwidth Test',
     'bandwidth', 23, (4194304, None)),
    ('check_osu74_mpich432_allreduce_same_socket.txt',
     'Allreduce Latency Test', 'latency', 23, (4194304, None)),
    # Intel MPI 2021.19 (PyPI impi-rt) instead of MPICH: same format
    ('check_osu74_impi2021.19_latency_same_socket.txt', 'Latency Test',
     'latency', 23, (4194304, 2822.91)),
    ('check_osu74_impi2021.19_bw_same_socket.txt', 'Bandwidth Test',
     'bandwidth', 23, (4194304, 12161.24)),
])
def test_mpich_captures(name, test, quantity, rows, largest):
    r = parse_osu(captured(name))
    t = r.table()
    assert (r.test, t.quantity, len(t.rows)) == (test, quantity, rows)
    size, value = largest
    assert t.largest.size == size
    if value is not None:
        assert t.largest.value == value
    assert all(row.value > 0 for row in t.rows)


def test_validation_column(validated):
    t = parse_osu(validated).table()
    assert t.labels == ('Avg Latency(us)', 'Validation')
    assert [r.size for r in t.rows] == [2**k for k in range(3, 17)]
    assert {r.validation for r in t.rows} == {'Pass'}
    assert t.at(8).value == 1.08


def test_full_statistics_and_validation():
    t = parse_osu(captured('hand_osu74_mpich432_allreduce_f_c.txt')).table()
    assert t.labels == ('Avg Latency(us)', 'Min Latency(us)',
                        'Max Latency(us)', 'Iterations', 'Validation')
    first = t.at(8)
    assert (first.value, first.validation) == (0.39, 'Pass')
    assert first.extra == {'Min Latency(us)': '0.37',
                           'Max Latency(us)': '0.41', 'Iterations': '1000'}


def test_one_table_per_datatype():
    r = parse_osu(captured('hand_osu74_mpich432_latency_T_char_int.txt'))
    assert [t.datatype for t in r.tables] == ['MPI_CHAR', 'MPI_INT']
    assert r.table('MPI_INT').rows[0].size == 4
    assert r.table('MPI_CHAR').at(8).value == 1.24
    with pytest.raises(ParseError, match=r'2 tables \(MPI_CHAR, MPI_INT\)'):
        r.table()
    with pytest.raises(ParseError, match='no table for datatype MPI_FLOAT'):
        r.table('MPI_FLOAT')


# -- the older header form --------------------------------------------------

def old_form(text, datatype_after_header):
    """7.4 text as 7.1/7.2 (datatype after the header) or 5.x (none) print
    it with device buffers: 'Latency (us)' and a buffer line."""
    lines = text.splitlines(keepends=True)
    out = []
    for line in lines:
        if line.startswith('# OSU MPI Latency'):
            out.append(line.replace('MPI Latency', 'MPI-CUDA Latency'))
            out.append('# Send Buffer on DEVICE (D) and Receive Buffer on '
                       'DEVICE (D)\n')
        elif line.startswith('# Datatype'):
            continue
        elif line.startswith('# Size'):
            out.append('# Size          Latency (us)\n')
            if datatype_after_header:
                out.append('# Datatype: MPI_CHAR.\n')
        else:
            out.append(line)
    return ''.join(out)


@pytest.mark.parametrize('after, datatype', [(True, 'MPI_CHAR'),
                                             (False, None)])
def test_older_header_form(latency, after, datatype):
    r = parse_osu(old_form(latency, after))
    assert r.accelerator == 'CUDA'
    assert r.buffers.startswith('Send Buffer on DEVICE (D)')
    t = r.table()
    assert (t.datatype, t.labels) == (datatype, ('Latency (us)',))
    assert t.at(8).value == 0.17 and len(t.rows) == 23


def test_size_zero_row(latency):
    text = latency.replace('# Size       Avg Latency(us)\n',
                           '# Size       Avg Latency(us)\n0'
                           '                       2.01\n')
    assert parse_osu(text).table().rows[0].size == 0


# -- broken outputs ---------------------------------------------------------

@pytest.mark.parametrize('make, message', [
    (lambda t: set_cell(t, 8, 1, 'nan'), "latency at 8 B: 'nan' is not a "
                                         "finite number"),
    (lambda t: set_cell(t, 4194304, 1, 'N/A'), "latency at 4194304 B: 'N/A' "
                                               "is not a number"),
    (lambda t: set_cell(t, 16, 1, '0.18  0.20'), r'row for 16 B has 2 values, '
                                                 r'the header has 1 column'),
    (lambda t: t.replace('# OSU MPI Latency Test v7.4', ''),
     r'no "# OSU MPI ... Test" title'),
    (lambda t: cut_after(t, '# Size'), 'no result rows under'),
    (lambda t: cut_after(t, '# Datatype'), r'no "# Size ..." header after '
                                           r'the title'),
    (lambda t: t.replace('Avg Latency(us)', 'Messages/s'),
     "unknown column 'Messages/s'"),
])
def test_broken_latency(latency, make, message):
    with pytest.raises(ParseError, match=message):
        parse_osu(make(latency))


def test_truncated_run_lacks_the_largest_size(latency):
    t = parse_osu(cut_after(latency, '1048576  ')).table()
    with pytest.raises(ParseError, match=r'no latency for 4194304 B \(sizes '
                                         r'printed: 1, 2, .*, 1048576\)'):
        t.at(4194304)


def test_crash_after_header_is_named(latency):
    text = cut_after(latency, '# Size') + CUPY_CRASH.read_text()
    with pytest.raises(ParseError, match=r'no result rows.*Segmentation '
                                         r'fault \(11\)'):
        parse_osu(text)


def test_validation_fail_column(validated):
    text = set_cell(validated, 1024, 2, 'Fail')
    with pytest.raises(ParseError, match=r'validation failed at 1024 B'):
        parse_osu(text)


def test_data_validation_error_line(validated):
    text = cut_after(validated, '1024 ') + (
        'DATA VALIDATION ERROR: ./osu_latency exited with status 1 on '
        'message size 2048.\n')
    with pytest.raises(ParseError, match=r'data validation failed: DATA '
                                         r'VALIDATION ERROR: .* message '
                                         r'size 2048\.'):
        parse_osu(text)


def test_validation_word_unknown(validated):
    with pytest.raises(ParseError, match="validation at 8 B: 'Maybe'"):
        parse_osu(set_cell(validated, 8, 2, 'Maybe'))


def test_cpu_build_given_device_buffers():
    text = captured('hand_osu74_mpich432_latency_d_cuda_cpu_build.txt')
    with pytest.raises(ParseError, match=r'did not start; Invalid option '
                                         r'\[-d\]'):
        parse_osu(text)


# -- GPU buffers on an MPI that is not GPU-aware ------------------------------

def test_device_buffer_crash_names_gpu_awareness():
    text = CUPY_CRASH.read_text()
    with pytest.raises(ParseError) as err:
        parse_pingpong(text)
    named = device_buffer_error(err.value, text, '-a cupy buffers')
    assert str(named).startswith('MPI is not GPU-aware (or its GPU support '
                                 'is not enabled): the run with -a cupy '
                                 'buffers crashed; ')
    assert 'Segmentation fault (11)' in str(named)


def test_device_buffer_error_without_crash_is_unchanged(latency):
    err = ParseError('no result rows')
    assert device_buffer_error(err, latency, 'D D') is err
