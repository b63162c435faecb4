"""rocblas-bench: a line of column names, found by name, and one of values
per GEMM run (``rocblas-Gflops``: GFLOP/s, ``us``: per call)."""
import re

from hpcval.parsers.common import ParseError, number

GFLOPS = 'rocblas-Gflops'
_FAILURE = re.compile(r'^.*(?:rocBLAS error|hipError\w+|terminate called|'
                      r'Segmentation fault|Aborted|error: ).*$', re.MULTILINE)
_SPLIT = re.compile(r'\s*,\s*')


def _fields(line):
    return _SPLIT.split(line.strip())


def parse_rocblas_bench(text):
    """Every result as {column: text}; GFLOPS and ``us`` as float."""
    failure = _FAILURE.search(text)
    if failure:
        raise ParseError(f'rocblas-bench reported a failure: '
                         f'{failure.group(0).strip()}')

    lines = text.splitlines()
    rows = []
    for i, line in enumerate(lines):
        names = _fields(line)
        if GFLOPS not in names:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].strip():
            raise ParseError(f'no values after the header line '
                             f'{line.strip()!r}: the run died or the output '
                             f'is truncated')
        values = _fields(lines[i + 1])
        if len(values) != len(names):
            raise ParseError(f'{len(values)} values under {len(names)} column '
                             f'names (truncated output?): '
                             f'{lines[i + 1].strip()!r}')
        row = dict(zip(names, values))
        for col in (GFLOPS, 'us'):
            if col in row:
                row[col] = number(row[col], f'rocblas-bench {col}')
        if row[GFLOPS] <= 0:
            raise ParseError(f'{GFLOPS} is {row[GFLOPS]:g}: nothing was '
                             f'measured')
        rows.append(row)

    if not rows:
        raise ParseError(f'no result line (column names with {GFLOPS}): '
                         f'rocblas-bench ran no GEMM')
    return rows


def check_shape(rows, **expected):
    """ParseError unless every row has each given ``column=value``."""
    for n, row in enumerate(rows, 1):
        for column, value in expected.items():
            got = row.get(column)
            if got is None:
                raise ParseError(f'result {n}: no {column} column')
            if str(got) != str(value):
                raise ParseError(f'result {n}: {column} is {got}, expected '
                                 f'{value}')
