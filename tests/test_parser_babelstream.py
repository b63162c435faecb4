"""BabelStream parser on real outputs and on broken copies of them.

Inputs: BabelStream v5.0 CUDA on an H200 (text and ``--csv``), v5.0 OpenMP
on two CPU VMs (the shared fixture and this project's capture), and the
MI300X guide's HIP example (AMD MI300X validation guide: eight ranks' output interleaved and
truncated, whitespace collapsed) with its Table 6 minima.  Broken variants
are made from that text here, one defect at a time.
"""
import pathlib
import re

import pytest

import seedtext
from hpcval.parsers.babelstream import CLASSIC_KERNELS, parse_babelstream
from hpcval.parsers.common import ParseError
from mutate import cut_after, set_cell

SHARED = pathlib.Path(__file__).resolve().parent / 'fixtures'
H200_TEXT = SHARED / 'captured' / 'h200x2_hand' / 'babelstream5_cuda_dev0.txt'
H200_CSV = SHARED / 'captured' / 'h200x2_hand' / 'babelstream5_cuda_dev0_csv.txt'
CPU = SHARED / 'captured' / 'vm' / 'babelstream_v5.0_omp_n20_s33554432.txt'
CAPTURED = (pathlib.Path(__file__).parent / 'fixtures' / 'captured' /
            'babelstream50_omp_s33554432_n100.txt')
MI300X = SHARED / 'documents' / 'amd-mi300x-validation-guide.txt'

# arrays of doubles each kernel reads and writes (upstream benchmark.h)
WEIGHT = {'Copy': 2, 'Mul': 2, 'Add': 3, 'Triad': 3, 'Dot': 2}


@pytest.fixture(scope='module')
def h200():
    return H200_TEXT.read_text()


@pytest.fixture(scope='module')
def h200_csv():
    return H200_CSV.read_text()


@pytest.fixture(scope='module')
def mi300x():
    return seedtext.rst_output(MI300X, ':mark:`BabelStream`',
                               ':mark:`Dot 3927179.117')


# -- transformations of real text ------------------------------------------





def relabel(text, unit):
    """The text table's bandwidth header set to ``unit``, in setw(12)."""
    return text.replace('Function    MBytes/sec  ', f'Function    {unit:<12}')


def cut_before(text, marker):
    return text[:text.index(marker)]


def drop_line(text, prefix):
    return ''.join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(prefix))


def per_gpu(text):
    """One text per result table: the lines before the first table (banner
    and device lines) plus that table's header and rows."""
    lines = text.splitlines(keepends=True)
    heads = [i for i, line in enumerate(lines) if line.startswith('Function')]
    return [''.join(lines[:heads[0]] + lines[h:h + 1 + len(CLASSIC_KERNELS)])
            for h in heads]


def as_main(text):
    """The H200 v5.0 output re-laid as BabelStream main (6.0-rc) prints it.

    No main-branch capture exists: each line follows upstream src/main.cpp
    and src/cuda/CUDAStream.cu at 57637d5, numbers kept from the v5.0 run
    (they are not main's measurements).  The CUDA device line's SM, clock
    and ECC tail, which the parser ignores and no capture gives, is left
    out.  Text and CSV alike.
    """
    driver = re.search(r'^Driver: (\d+)', text, re.MULTILINE).group(1)
    out = []
    for line in text.splitlines():
        if line.startswith('Running kernels'):
            out += [f'Running  Classic kernels {line.split()[2]} times in  '
                    f'Classic order ', 'Number of elements: 268435456']
        elif line.startswith(('Array size', 'Total size')):
            out.append(line.split(' (=')[0])
        elif line.startswith('Using CUDA device '):
            out += [f'CUDA Driver: {driver}',
                    f'CUDA Device 0: "{line[len("Using CUDA device "):]}"',
                    'Memory Allocation: DEFAULT',
                    'Parallel for kernel config: thread blocks of size 256']
        elif line.startswith(('Driver:', 'Memory:', 'Init', 'Read', 'phase')):
            continue
        elif line.startswith('Function'):
            out.append(''.join(f'{h:<12}' for h in
                               ('Function', 'MB/s', 'Min (sec)', 'Max',
                                'Average')))
        else:
            out.append(line.replace('max_mbytes_per_sec', 'max_MB_per_sec'))
    return '\n'.join(out) + '\n'


# -- real outputs -----------------------------------------------------------

@pytest.mark.parametrize('path, banner, device, bandwidth, copy_times', [
    (H200_TEXT, ('5.0', 'CUDA'), 'NVIDIA H200',
     (3541864.244, 3524341.773, 3987778.114, 3984778.829, 4419813.776),
     (0.00121, 0.00122, 0.00122)),
    # --csv suppresses the banner but not the device lines
    (H200_CSV, ('', ''), 'NVIDIA H200',
     (3542060, 3525030, 3988400, 3985210, 4421750),
     (0.00121256, 0.0012326, 0.00121669)),
    (CPU, ('5.0', 'OpenMP'), '',
     (33479.302, 32761.143, 33521.946, 33796.362, 33554.323),
     (0.01604, 0.02104, 0.01787)),
    (CAPTURED, ('5.0', 'OpenMP'), '',
     (45962.134, 43909.776, 45064.352, 45851.404, 37295.906),
     (0.01168, 0.05547, 0.01880)),
], ids=['h200', 'h200-csv', 'cpu', 'captured'])
def test_real_output(path, banner, device, bandwidth, copy_times):
    r = parse_babelstream(path.read_text())
    assert (r.version, r.implementation) == banner
    assert (r.device, r.flavour) == (device, 'v5')
    assert list(r.kernels) == list(CLASSIC_KERNELS)
    assert tuple(r.bandwidth(k) for k in CLASSIC_KERNELS) == bandwidth
    copy = r.kernels['Copy']
    assert (copy.time_min, copy.time_max, copy.time_avg) == copy_times


@pytest.mark.parametrize('kernel', CLASSIC_KERNELS)
def test_csv_bandwidth_is_megabytes_over_min_time(h200_csv, kernel):
    """MB = 10^6 B: bytes moved (-s 268435456 doubles) over the best time."""
    k = parse_babelstream(h200_csv).kernels[kernel]
    moved = WEIGHT[kernel] * 8 * 268435456
    assert k.bandwidth == pytest.approx(moved / k.time_min / 1e6, rel=1e-5)


def test_text_and_csv_runs_agree(h200, h200_csv):
    text, csv = parse_babelstream(h200), parse_babelstream(h200_csv)
    for k in CLASSIC_KERNELS:
        assert text.bandwidth(k) == pytest.approx(csv.bandwidth(k), rel=1e-3)


MI300X_GPUS = [
    (4255995.148, 4115971.910, 3956389.991, 3948061.647, 3878410.495),
    (4269126.275, 4113642.067, 3948620.619, 3947212.603, 3927179.117),
]


def test_mi300x_per_gpu(mi300x):
    """The guide prints the ranks' outputs interleaved; the check writes one
    file per GPU, so each table is parsed with the shared banner lines."""
    parts = per_gpu(mi300x)
    assert len(parts) == len(MI300X_GPUS)
    for text, bandwidth in zip(parts, MI300X_GPUS):
        r = parse_babelstream(text)
        assert (r.version, r.implementation, r.flavour) == \
            ('5.0', 'HIP', 'v5')
        assert r.device == 'AMD Instinct MI300X'
        assert tuple(r.bandwidth(k) for k in CLASSIC_KERNELS) == bandwidth
    assert r.kernels['Dot'].time_avg == 0.00113


def test_mi300x_examples_pass_table_6(mi300x):
    """Table 6's per-GPU minima (MB/s, printed with thousands commas)."""
    table = seedtext.rst_output(MI300X, 'Table 6:', '3,660,781')
    minimum = {name: int(value.replace(',', '')) for name, value in
               re.findall(r'^(\w+)\s*\|\s*([\d,]+)$', table, re.MULTILINE)}
    assert minimum == {'Copy': 4177285, 'Mul': 4067069, 'Add': 3920853,
                       'Triad': 3885301, 'Dot': 3660781}
    for text in per_gpu(mi300x):
        r = parse_babelstream(text)
        assert all(r.bandwidth(k) >= minimum[k] for k in CLASSIC_KERNELS)


def test_mi300x_interleaved_tables_refused(mi300x):
    """Parsed as one output, the second GPU's rows would replace the
    first's."""
    with pytest.raises(ParseError, match='2 result tables in one output'):
        parse_babelstream(mi300x)


# -- variants the parser must accept ----------------------------------------

def test_fused_columns(h200):
    """Bandwidth >= 10,000,000 MB/s fills its setw(12) field and touches the
    Min column.  Built from the real Copy row: its bandwidth times 10 (eight
    integer digits), re-printed with the upstream row format (setw(12)
    left-aligned, bandwidth %.3f, times %.5f)."""
    row = next(line for line in h200.splitlines() if line.startswith('Copy'))
    name, bw, *times = row.split()
    fused = f'{name:<12}{float(bw) * 10:<12.3f}' + \
        ''.join(f'{float(t):<12.5f}' for t in times)
    assert '35418642.4400.00121 ' in fused
    copy = parse_babelstream(h200.replace(row, fused)).kernels['Copy']
    assert (copy.bandwidth, copy.time_min, copy.time_avg) == \
        (35418642.44, 0.00121, 0.00122)


def test_main_branch_layout(h200, h200_csv):
    text, csv = parse_babelstream(as_main(h200)), \
        parse_babelstream(as_main(h200_csv))
    assert (text.flavour, text.version, text.device) == \
        ('main', '5.0', 'NVIDIA H200')
    assert (csv.flavour, csv.device) == ('main', 'NVIDIA H200')
    assert text.bandwidth('Copy') == 3541864.244
    assert csv.bandwidth('Copy') == 3542060


@pytest.mark.parametrize('label, flavour, mb_per_unit', [
    ('MiBytes/sec', 'v5', 2**20 / 1e6),     # v5 --mibibytes
    ('MiB/s', 'main', 2**20 / 1e6),         # main --mibibytes
    ('GB/s', 'main', 1e3),                  # main --gigabytes
    ('TiB/s', 'main', 2**40 / 1e6),         # main --tebibytes
])
def test_units(h200, label, flavour, mb_per_unit):
    """The real table with its unit label swapped: MB/s comes back."""
    r = parse_babelstream(relabel(h200, label))
    assert r.flavour == flavour
    assert r.bandwidth('Copy') == pytest.approx(3541864.244 * mb_per_unit)


def test_csv_mibibytes(h200_csv):
    text = h200_csv.replace('max_mbytes_per_sec', 'max_mibytes_per_sec')
    r = parse_babelstream(text)
    assert r.flavour == 'v5'
    assert r.bandwidth('Copy') == pytest.approx(3.54206 * 2**20)


# -- broken outputs ---------------------------------------------------------

V5_ROW = 'Dot         4419813.776 0.00097     0.00099     0.00098'


@pytest.mark.parametrize('make, message', [
    (lambda t: cut_after(t, 'Triad '), 'kernels missing from the results: '
                                       'Dot$'),
    (lambda t: drop_line(t, 'Mul '), 'kernels missing.*: Mul$'),
    (lambda t: cut_before(t, V5_ROW) + V5_ROW[:31],
     r"Dot row is truncated: 'Dot +4419813.776 0.00097'"),
    (lambda t: cut_before(t, V5_ROW) + V5_ROW[:-2],
     'Dot row is truncated or malformed'),
    (lambda t: set_cell(t, 'Triad', 1, 'nan'),
     "Triad bandwidth: 'nan' is not a finite number"),
    (lambda t: set_cell(t, 'Copy', 1, '-nan'),
     "Copy bandwidth: '-nan' is not a finite number"),
    (lambda t: set_cell(t, 'Add', 2, 'inf'),
     "Add min time: 'inf' is not a finite number"),
    (lambda t: set_cell(t, 'Dot', 4, 'N/A'),
     "Dot average time: 'N/A' is not a number"),
    (lambda t: cut_after(t, 'Reduction kernel config'), 'no result table'),
    (lambda t: relabel(t, 'PB/s'),
     "unknown bandwidth unit 'PB/s'"),
    (lambda t: t + t, '2 result tables'),
], ids=['cut-between-rows', 'missing-row', 'cut-mid-row', 'cut-mid-number',
        'nan', '-nan', 'inf', 'N/A', 'no-table', 'unit', 'twice'])
def test_broken_text(h200, make, message):
    with pytest.raises(ParseError, match=message):
        parse_babelstream(make(h200))


@pytest.mark.parametrize('make, message', [
    (lambda t: set_cell(t, 'Copy', 4, '-nan', ','),
     "Copy bandwidth: '-nan' is not a finite number"),
    (lambda t: set_cell(t, 'Triad', 5, 'inf', ','),
     "Triad min_runtime: 'inf' is not a finite number"),
    (lambda t: t[:t.index(',0.00163945')], 'Triad CSV row is truncated'),
    (lambda t: cut_after(t, 'Add,'), 'missing.*: Triad, Dot'),
    (lambda t: cut_after(t, 'Read,'), 'no result table'),
], ids=['-nan', 'inf', 'cut-mid-row', 'cut-between-rows', 'no-table'])
def test_broken_csv(h200_csv, make, message):
    with pytest.raises(ParseError, match=message):
        parse_babelstream(make(h200_csv))


def test_crash_names_stderr(h200):
    """v5.0 CUDA throws when the arrays do not fit; stderr as libstdc++
    reports the uncaught exception (message from upstream CUDAStream.cu)."""
    stdout = cut_after(h200, 'Reduction kernel config')
    stderr = ("terminate called after throwing an instance of "
              "'std::runtime_error'\n  what():  Device does not have enough "
              "memory for all 3 buffers\n")
    with pytest.raises(ParseError, match='no result table.*stderr ends with '
                                         "'what.*enough memory"):
        parse_babelstream(stdout, stderr)


@pytest.mark.parametrize('stderr, message', [
    ('Validation failed on a[]. Average error 0.1\n',
     r'validation failed: Validation failed on a\[\]\. Average error 0\.1$'),
    ('Validation failed on sum. Error 0.0001\n'
     'Sum was 9.5 but should be 9.6\n', r'Validation failed on sum\.'),
])
def test_v5_validation_on_stderr(h200, stderr, message):
    """v4/v5 print the table and exit 0: only stderr tells (its format
    strings, values made up)."""
    assert parse_babelstream(h200).bandwidth('Copy') == 3541864.244
    with pytest.raises(ParseError, match=message):
        parse_babelstream(h200, stderr)
    with pytest.raises(ParseError, match=message):      # 2>&1
        parse_babelstream(h200 + stderr)


def test_main_validation_failure(h200):
    """main prints ``FAILED validation of a[12]: ...`` (upstream main.cpp
    format, values made up) and exits 1 before the table."""
    stdout = cut_before(as_main(h200), 'Function')
    stderr = ('FAILED validation of a[12]: 0.3 (is) != 0.2 (should), '
              'diff=0.1 > 6.66134e-15 (largest=0.3, max_rel=2.22045e-14)\n')
    with pytest.raises(ParseError, match=r'validation failed: FAILED '
                                         r'validation of a\[12\]: 0\.3 '):
        parse_babelstream(stdout, stderr)


def test_captured_main_branch_output():
    """A real main-branch run (57637d5): same "Version: 5.0", other format."""
    text = (pathlib.Path(__file__).parent / 'fixtures' / 'captured' /
            'babelstream_main57637d5_omp_s33554432_n100.txt').read_text()
    result = parse_babelstream(text)
    assert result.version == '5.0' and result.flavour == 'main'
    assert set(CLASSIC_KERNELS) <= set(result.kernels)
    assert all(k.bandwidth > 0 for k in result.kernels.values())
