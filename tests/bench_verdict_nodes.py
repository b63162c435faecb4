"""Speed of ``hpcval verdict`` on 100,000 test cases on distinct nodes.

    .venv/bin/python tests/bench_verdict_nodes.py [--cases 100000]

One real test case (the BabelStream case of the 2 x H200 report in
tests/fixtures/reports/h200x2) is cloned into ``--cases`` test cases of
one report, each on its own node (``n1`` .. ``nN``), every figure judged
against its own value +-10% (a per-GPU figure ``m@gpuN`` against ``m``'s),
bounds the report carries and a references file beside it holds alike;
one node's copy is 50% slow.  The report is judged by a real ``hpcval
verdict --references`` process (``--hpcval``: another install's, to
compare); its wall time, exit status and peak memory are printed
(figures: docs/measurements.md).  Not a pytest test: a timing depends on
the machine, so it is measured, not asserted.
"""
import copy
import json
import sys

from verdict_bench import (H200, arguments, babelstream_case,
                           made_and_judged, write_references)


def make(n, path):
    """The report of ``n`` cases at ``path`` and, beside it, the
    references folder that judges it."""
    report, template = babelstream_case()
    values = {k.rsplit(':', 1)[-1]: tup[0]
              for k, tup in template['perfvalues'].items()}
    for key, tup in template['perfvalues'].items():
        tup[1:4] = [values[key.rsplit(':', 1)[-1].partition('@')[0]],
                    -0.1, 0.1]
    write_references(path.parent / 'references',
                     'the figure of the cloned case, +-10%', {
                         m: {'value': v, 'lower': -0.1, 'upper': 0.1,
                             'unit': 'MB/s', 'rule': 'own',
                             'source': H200.name}
                         for m, v in values.items() if '@' not in m})
    cases = []
    for i in range(n):
        tc = copy.deepcopy(template)
        tc['display_name'] += f' %.repeat_no={i}'
        tc['job_nodelist'] = [f'n{i + 1}']
        cases.append(tc)
    slow = cases[n // 2]
    slow['result'] = 'failure'
    for tup in slow['perfvalues'].values():
        tup[0] *= 0.5
    report['runs'] = [{'testcases': cases}]
    path.write_text(json.dumps(report))


def main():
    args = arguments('cases', 100_000, (
        '--no-references', 'judge by the report\'s bounds (an hpcval '
        'without --references)'))
    proc, wall, usage, size = made_and_judged(
        make, args.cases, args.hpcval, references=not args.no_references)
    print(f'{args.cases} test cases on distinct nodes ({size / 2**20:.0f} '
          f'MiB report): hpcval verdict {wall:.1f} s wall, exit '
          f'{proc.returncode}, peak {usage.ru_maxrss / 1024:.0f} MiB')
    print('\n'.join(proc.stdout.splitlines()[:7]))
    return 0 if proc.returncode == 1 else 1


if __name__ == '__main__':
    sys.exit(main())
