"""Comm|Scope (Google Benchmark) results of ``--benchmark_out`` JSON, never
of stdout; units as docs/benchmarks/comm_scope.md says."""
import json
import re
import statistics
from dataclasses import dataclass
from typing import Optional

from hpcval.parsers.common import ParseError, number

_TO_US = {'ns': 1e-3, 'us': 1.0, 'ms': 1e3, 's': 1e6}
# how Comm|Scope dies before writing its file (uncaught exception, e.g. no
# GPU: "what():  .../cuda.hpp:14CUDA error CUDA driver version is ...")
_FATAL = re.compile(r'^.*(?:what\(\):|\[error\].*CUDA|\[critical\]|'
                    r'Segmentation fault).*$', re.MULTILINE)


@dataclass(frozen=True)
class Run:
    name: str                   # run_name, without aggregate suffix
    time_us: float              # mean per-iteration time (real or manual)
    time_std_us: Optional[float]    # None: a single repetition
    bytes_per_second: Optional[float]   # mean, raw B/s; None if not set
    repetitions: int


def _time_us(entry, name):
    unit = entry.get('time_unit', 'ns')
    if unit not in _TO_US:
        raise ParseError(f'{name}: unknown time_unit {unit!r}')
    return number(entry.get('real_time'), f'{name} real_time') * _TO_US[unit]


def _run(name, iterations, aggregates):
    if 'mean' in aggregates:
        mean, std = aggregates['mean'], aggregates.get('stddev')
        time = _time_us(mean, f'{name}_mean')
        time_std = _time_us(std, f'{name}_stddev') if std else None
        bps = mean.get('bytes_per_second')
        reps = int(mean.get('repetitions', len(iterations) or 1))
    else:
        times = [_time_us(e, name) for e in iterations]
        time = statistics.mean(times)
        time_std = statistics.stdev(times) if len(times) > 1 else None
        rates = [e['bytes_per_second'] for e in iterations
                 if 'bytes_per_second' in e]
        bps = statistics.mean(rates) if rates else None
        reps = len(iterations)

    if bps is not None:
        bps = number(bps, f'{name} bytes_per_second')
    return Run(name, time, time_std, bps, reps)


def parse_comm_scope(text):
    """{run_name: Run} of a Comm|Scope JSON file; ParseError on a failure."""
    try:
        doc = json.loads(text)
    except ValueError as err:
        raise ParseError(f'the --benchmark_out file is not valid JSON '
                         f'(truncated by a crash?): {err}') from None

    if not isinstance(doc, dict) or not isinstance(doc.get('benchmarks'),
                                                   list):
        raise ParseError('the --benchmark_out file has no "benchmarks" list')

    entries = doc['benchmarks']
    if not entries:
        raise ParseError('the --benchmark_out file lists no benchmarks: the '
                         'filter matched none (no GPU visible, or names '
                         'changed upstream)')

    failed = [f'{e.get("name")}: {e.get("error_message", "?")}'
              for e in entries if e.get('error_occurred')]
    if failed:
        more = f' (and {len(failed) - 3} more)' if len(failed) > 3 else ''
        raise ParseError(f'{len(failed)} benchmark(s) failed: '
                         f'{"; ".join(failed[:3])}{more}')

    iterations, aggregates = {}, {}
    for e in entries:
        name = e.get('run_name') or e.get('name')
        if not isinstance(name, str):
            raise ParseError(f'a benchmark entry without a name: {e!r}')
        if e.get('run_type') == 'aggregate':
            aggregates.setdefault(name, {})[e.get('aggregate_name')] = e
        else:
            iterations.setdefault(name, []).append(e)

    return {name: _run(name, iterations.get(name, []),
                       aggregates.get(name, {}))
            for name in {**iterations, **aggregates}}


def why_no_file(console):
    """The line of Comm|Scope's console output that says why it stopped."""
    lines = _FATAL.findall(console)
    return lines[-1].strip() if lines else 'no error printed'
