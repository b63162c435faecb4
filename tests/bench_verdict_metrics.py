"""Speed of ``hpcval verdict`` on one test case with 300,000 figures.

    .venv/bin/python tests/bench_verdict_metrics.py [--metrics 300000]

One real test case (the BabelStream case of the 2 x H200 report in
tests/fixtures/reports/h200x2) is given ``--metrics`` per-component
figures ``triad@gpuN`` (what a check measuring many GPUs or links
reports), each judged by the ``triad`` reference of a references file
beside it (+-10% of the case's own figure); one figure in 1,000 is 50%
slow and fails, and one in 10 is logged without a reference.  The
report is judged by a real ``hpcval verdict --references`` process; its
wall time, exit status and peak memory are printed (figures:
docs/measurements.md).  Time grew with the square of the figures per
case (30,000: 5.2 s, 60,000: 20.2 s of CPU) until the unjudged figures
were grouped in a dict.  Not a pytest test: a timing depends on the
machine, so it is measured, not asserted.
"""
import json
import sys

from verdict_bench import (H200, arguments, babelstream_case,
                           made_and_judged, write_references)


def make(n, path):
    """The report of one case of ``n`` figures at ``path`` and, beside
    it, the references folder that judges it."""
    report, case = babelstream_case()
    [(key, triad)] = [(k, v) for k, v in case['perfvalues'].items()
                      if k.endswith(':triad')]
    prefix, value = key.rsplit(':', 1)[0], triad[0]
    perf = {}
    for i in range(n):
        slow = i % 1000 == 999
        name = f'triad@gpu{i}' if i % 10 != 5 else f'other{i}'
        perf[f'{prefix}:{name}'] = [value * (0.5 if slow else 1.0), value,
                                    -0.1, 0.1, triad[4], 'pass']
    case['perfvalues'] = perf
    case['hpcval_unjudged'] = {}
    report['runs'] = [{'testcases': [case]}]
    write_references(path.parent / 'references',
                     'the figure of the case, +-10%', {
                         'triad': {'value': value, 'lower': -0.1,
                                   'upper': 0.1, 'unit': triad[4],
                                   'rule': 'own', 'source': H200.name}})
    path.write_text(json.dumps(report))


def main():
    args = arguments('metrics', 300_000)
    proc, wall, usage, size = made_and_judged(make, args.metrics,
                                              args.hpcval)
    peak, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    print(f'{args.metrics} figures in one test case ({size / 2**20:.0f} '
          f'MiB report): hpcval verdict {wall:.1f} s wall, {cpu:.1f} s CPU, '
          f'exit {proc.returncode}, peak {peak / 1024:.0f} MiB')
    print('\n'.join(proc.stdout.splitlines()[:4]))
    return 0 if proc.returncode == 1 else 1


if __name__ == '__main__':
    sys.exit(main())
