"""rocblas-bench (rocBLAS clients): one GEMM timing per run.

After a device banner (``Query device success: there are N devices``,
``Device ID 0 : ...``, ``rocBLAS info: maximum library size ...``) each run
prints a line of column names and a line of values (rocBLAS rocm-6.2.0)::

    transA,transB,M,N,K,alpha,lda,beta,ldb,ldc,rocblas-Gflops,us
    N,T,4000,4000,4000,1,4000,0,4000,4000, 97190.6, 1317

Arguments are joined by bare commas, performance figures by ", ".  Newer
rocBLAS inserts ``cold_iters,hot_iters`` (and ``solution_index``) before
``rocblas-Gflops``, ``--log_function_name`` / ``--log_datatype`` prepend
columns and ``-v 1`` appends ``CPU-Gflops,CPU-us,norm_error_1``: columns
are therefore found by name, never by position.  ``rocblas-Gflops`` is
GFLOP/s (10^9), ``us`` microseconds per call, averaged over the hot
iterations (``-i``, default 10) after ``-j`` cold ones.
"""
import re

from hpcval.parsers.common import ParseError, number

GFLOPS = 'rocblas-Gflops'
_FAILURE = re.compile(r'^.*(?:rocBLAS error|hipError\w+|terminate called|'
                      r'Segmentation fault|Aborted|error: ).*$', re.MULTILINE)
_SPLIT = re.compile(r'\s*,\s*')


def _fields(line):
    return _SPLIT.split(line.strip())


def parse_rocblas_bench(text):
    """Every result of the output (one per run) as a dict of column name to
    text, in order; ``row[GFLOPS]`` and ``row['us']`` converted to float."""
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
    """Raise ParseError unless every row has ``column=value`` for each given
    column (``M=4000``, ``batch_count=5``): the timing is of the GEMM asked
    for, not of a default one."""
    for n, row in enumerate(rows, 1):
        for column, value in expected.items():
            got = row.get(column)
            if got is None:
                raise ParseError(f'result {n}: no {column} column')
            if str(got) != str(value):
                raise ParseError(f'result {n}: {column} is {got}, expected '
                                 f'{value}')
