"""Wall time, job throughput and false alarms of a node screen on the
minicluster.

    .venv/bin/python tests/bench_screen.py [--nodes 64] [--healthy 1] [--planted 1]

Starts a minicluster of ``--nodes`` nodes (as root), then runs
``LikwidBenchCheck%kernel=peakflops --distribute=all`` ``--healthy`` times
on the healthy cluster and ``--planted`` times with n7 under a 5 % CPU
quota and n42 without likwid-bench (PATH points nowhere), each judged by ``hpcval verdict``.  Prints per screen the
wall time, jobs per minute, the nodes the verdict named and, for healthy
nodes, how many of their figures failed against their peers (false
alarms), with the spread of the figures around the median.  Figures:
docs/measurements.md.  Not a pytest test: timings depend on the machine.
"""
import argparse
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rfmrun import ROOT, VENV_BIN, cases, reframe  # noqa: E402

from hpcval.screen import PEER_FACTOR, k_of_peers  # noqa: E402
from hpcval.testing.minicluster import MiniCluster  # noqa: E402

PLANTED = {'n7', 'n42'}


def one_screen(cluster, folder, planted):
    cluster.clear_faults()
    if planted:
        cluster.slow_node('n7', 5)
        cluster.inject_fault('n42', 'export PATH=/nonexistent')
    start = time.monotonic()
    _, report = reframe('-r', '--system', 'minicluster', '--distribute=all',
                        '-n', 'LikwidBenchCheck%kernel=peakflops',
                        tmp_path=folder, checks=('checks/likwid_bench.py',),
                        env=cluster.env())
    wall = time.monotonic() - start
    proc = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict', '--format',
                           'json', str(folder / 'report.json')],
                          capture_output=True, text=True, cwd=ROOT)
    verdict = json.loads(proc.stdout)
    named = set(verdict['failures_by_node'])
    bad = PLANTED if planted else set()
    healthy = [tc for tc in cases(report) if tc['perfvalues'] and
               tc['display_name'].rsplit('=', 1)[-1] not in bad]
    figures = len(healthy)
    spread = {}
    for metric in ('peakflops_rate',):
        vals = [v[0] for tc in healthy
                for k, v in tc['perfvalues'].items() if k.endswith(metric)]
        med = statistics.median(vals)
        logs = [math.log(v) for v in vals]
        mid = statistics.median(logs)
        mad = statistics.median(abs(x - mid) for x in logs)
        spread[metric] = (min(vals) / med, max(vals) / med, mad)
    print(f'{"planted" if planted else "healthy"} screen of '
          f'{len(cases(report))} nodes: {wall:.0f} s wall, '
          f'{len(cases(report)) / wall * 60:.1f} jobs/min; verdict exit '
          f'{proc.returncode}, nodes named: {sorted(named)}; false alarms: '
          f'{len(named - bad)} node(s) of {len(healthy)} healthy '
          f'({figures} figures)')
    for metric, (lo, hi, mad) in spread.items():
        print(f'  {metric}: healthy nodes {lo:.2f} to {hi:.2f} x median, '
              f'MAD of log-values {mad:.3f} (bound x'
              f'{max(PEER_FACTOR, math.exp(k_of_peers(len(vals) - 1) * 1.4826 * mad)):.2f})')
    for node in sorted(named):
        for line in verdict['failures_by_node'][node]:
            print(f'  {line}')


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--nodes', type=int, default=64)
    parser.add_argument('--healthy', type=int, default=1)
    parser.add_argument('--planted', type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix='screen-') as tmp:
        cluster = MiniCluster(os.path.join(tmp, 'mc'), nodes=args.nodes)
        start = time.monotonic()
        cluster.start()
        print(f'{args.nodes}-node minicluster started in '
              f'{time.monotonic() - start:.1f} s')
        try:
            for i in range(args.healthy + args.planted):
                folder = pathlib.Path(tmp, f'run{i}')
                folder.mkdir()
                one_screen(cluster, folder,
                           planted=i >= args.healthy)
        finally:
            cluster.stop()


if __name__ == '__main__':
    main()
