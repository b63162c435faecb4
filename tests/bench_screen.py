"""Detection, false alarms and wall time of a node screen on the
minicluster; the peer rule's own figures; a 1,000-node verdict's time.

    .venv/bin/python tests/bench_screen.py screen [--nodes 16] [--healthy 5]
        [--planted 3] [--fault cpu|memory] [--slow 0.2] [--peer-factor F]
        [--repeats 2] [--mode-screen]
    .venv/bin/python tests/bench_screen.py rule [--draws 200000]
    .venv/bin/python tests/bench_screen.py verdict REPORT [--nodes 1000]
    .venv/bin/python tests/bench_screen.py cost [--nodes 64 128]
        [--max-jobs N]
    .venv/bin/python tests/bench_screen.py steps [--nodes 4] [--repeats 2]

``screen`` starts a minicluster of ``--nodes`` nodes (as root) and runs
``LikwidBenchCheck%kernel=peakflops --distribute=all`` with ``-S
LikwidBenchCheck.repeats=2`` (``--repeats``: the figure of ``--mode
screen``, the best of two runs; ``--mode-screen`` runs the screen suite
itself) ``--healthy`` times, then
``--planted`` times with n3 ``--slow`` slower: a CPU quota of (1 - slow)
of its CPUs every 10 ms (``--fault cpu``), or a competing memory stream of
``--stream-mib`` MiB buffers (``--fault memory``, the kernel then
``stream``).  Per screen: wall time, the nodes the verdict named, false
alarms (healthy nodes named) and the healthy spread; at the end the
detection count (n3 named alone) and the false alarms over all healthy
node figures; and where each job's time went (Slurm's accounting).
``rule`` draws the k(n) table of hpcval.peers again and
prints the smallest slowdown the rule names at a given healthy spread.
``cost`` runs a screen of a check that does nothing
(tests/cost_checks/trivial_screen.py) on miniclusters of each
``--nodes`` size (one slurmd per node: Slurm's multiple-slurmd mode),
``--max-jobs`` jobs at once (default: every node's, as a real cluster
runs them), with each Slurm command counted and timed by a wrapper on
PATH; it prints the wall time, the CPU of ReFrame and its commands, the
calls and their time per node, the verdict's time, and projects 1,000
and 10,000 nodes from the CPU per node of the two largest sizes (its
growth between them carried on linearly).  CI runs its smallest case
(tests/test_screen_cost.py).
``steps`` says where one node's job cycle goes: it runs the screen's
likwid-bench figure on a minicluster of ``--nodes`` nodes, prints each
job's cycle from slurmctld's log (milliseconds: submission to allocation,
allocation to completion, completion to the next submission), then
submits each job's own rfm_job.sh again, one at a time, with a time stamp
after each of its lines, and prints each step's median time.
``verdict`` copies a real screen report's test cases to ``--nodes`` nodes
(two of them slow) and times ``hpcval verdict`` on it.  Figures:
docs/screening.md and docs/measurements.md.  Not a pytest test: timings
and spreads depend on the machine and its load.
"""
import argparse
import copy
import json
import math
import os
import pathlib
import random
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rfmrun import ROOT, VENV_BIN, cases, reframe  # noqa: E402

from hpcval import peers as rule  # noqa: E402

SLOW = 'n3'


def one_screen(cluster, folder, args, planted):
    cluster.clear_faults()
    kernel = 'stream' if args.fault == 'memory' else 'peakflops'
    if planted and args.fault == 'cpu':
        cluster.slow_node_by(SLOW, args.slow)
    elif planted:
        cluster.compete(SLOW, 'memory', args.stream_mib)
    if args.mode_screen:
        # the whole screen suite, as a centre runs it (a fault of the memory
        # kind is not its figure)
        select, checks = ['--mode', 'screen'], ('checks/',)
    else:
        select = ['--distribute=all',
                  '-n', f'LikwidBenchCheck%kernel={kernel}',
                  '-S', f'LikwidBenchCheck.repeats={args.repeats}']
        checks = ('checks/likwid_bench.py',)
    since = time.strftime('%Y-%m-%dT%H:%M:%S')
    start = time.monotonic()
    _, report = reframe('-r', '--system', 'minicluster', *select,
                        tmp_path=folder, checks=checks, env=cluster.env())
    wall = time.monotonic() - start
    if args.keep:
        pathlib.Path(args.keep).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(args.keep) / f'{folder.name}.json').write_text(
            (folder / 'report.json').read_text())
    cmd = [str(VENV_BIN / 'hpcval'), 'verdict', '--format', 'json',
           str(folder / 'report.json')]
    if args.peer_factor:
        cmd += ['--peer-factor', str(args.peer_factor)]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    verdict = json.loads(proc.stdout)
    named = set(verdict['failures_by_node'])
    bad = {SLOW} if planted else set()
    values = {tc['display_name'].rsplit('=', 1)[-1]: v[0]
              for tc in cases(report) if tc['perfvalues']
              for k, v in tc['perfvalues'].items()
              if not k.endswith('_std')}
    healthy = [v for n, v in values.items() if n not in bad]
    med = statistics.median(healthy)
    logs = [math.log(v / med) for v in healthy]
    mad = statistics.median(abs(x) for x in logs)
    ratio = values.get(SLOW, 0) / med if planted else None
    print(f'{"planted" if planted else "healthy"} screen of {len(values)} '
          f'nodes: {wall:.0f} s wall; exit {proc.returncode}; named '
          f'{sorted(named)}; healthy {min(healthy) / med:.3f} to '
          f'{max(healthy) / med:.3f} x median, MAD of logs {mad:.4f}'
          + (f'; {SLOW} at {ratio:.3f} x median' if planted else ''),
          flush=True)
    job_cycle(cluster, since)
    return named - bad, len(healthy), SLOW in named and named <= bad


def _seconds(stamp):
    return time.mktime(time.strptime(stamp, '%Y-%m-%dT%H:%M:%S'))


def job_cycle(cluster, since):
    """Where a screen's per-job time goes, from Slurm's accounting of the
    jobs submitted since ``since`` (whole seconds, so means): submission
    to start, the job, its end to the next submission."""
    rows = [line.split('|') for line in cluster.run(
        'sacct', '-X', '-n', '-P', '-S', since,
        '-o', 'Submit,Start,End').stdout.split()]
    rows = sorted((_seconds(s), _seconds(b), _seconds(e))
                  for s, b, e in rows if 'Unknown' not in (s, b, e))
    if len(rows) < 2:
        return
    wait = [b - s for s, b, _ in rows]
    run = [e - b for _, b, e in rows]
    gap = [n[0] - e for (_, _, e), n in zip(rows, rows[1:])]
    cycle = (rows[-1][2] - rows[0][0]) / len(rows)
    print(f'  {len(rows)} jobs: submit to start {statistics.mean(wait):.1f}'
          f' s, job {statistics.mean(run):.1f} s, end to next submit '
          f'{statistics.mean(gap):.1f} s (means); {cycle:.2f} s per job',
          flush=True)


def screens(args):
    from hpcval.testing.minicluster import MiniCluster
    false, figures, found = 0, 0, 0
    with tempfile.TemporaryDirectory(prefix='screen-') as tmp:
        cluster = MiniCluster(os.path.join(tmp, 'mc'), nodes=args.nodes)
        cluster.start()
        try:
            for i in range(args.healthy + args.planted):
                folder = pathlib.Path(tmp, f'run{i}')
                folder.mkdir()
                wrong, n, hit = one_screen(cluster, folder, args,
                                           planted=i >= args.healthy)
                false += len(wrong)
                figures += n
                found += hit and i >= args.healthy
        finally:
            cluster.stop()
    print(f'{args.fault} {args.slow:.0%} slow {SLOW}: named alone in '
          f'{found} of {args.planted} screens; false alarms {false} in '
          f'{figures} healthy node figures')


def rule_figures(args):
    import numpy as np
    rng = np.random.default_rng(1)
    print(f'k(n) at {rule.PEER_ALARM:g} per figure (table | drawn again):')
    for n in (4, 8, 16, 32, 64):
        x = rng.standard_normal((args.draws, n + 1))
        med = np.median(x[:, 1:], axis=1)
        mad = 1.4826 * np.median(np.abs(x[:, 1:] - med[:, None]), axis=1)
        t = (med - x[:, 0]) / mad
        print(f'  {n:3d} peers: {rule.k_of_peers(n):7.2f} | '
              f'{np.quantile(t, 1 - rule.PEER_ALARM):7.2f}')
    print('smallest slowdown named in 99 % of screens, 63 peers '
          '(flops floor 5 %):')
    for sigma in (0.005, 0.01, 0.02, 0.05, 0.1):
        for slow in [s / 100 for s in range(1, 100)]:
            hits = 0
            for _ in range(200):
                vals = {f'n{i}': math.exp(rng.normal(0, sigma))
                        for i in range(63)}
                vals['x'] = (1 - slow) * math.exp(rng.normal(0, sigma))
                hits += 'x' in rule.outliers(vals, 'flops')
            if hits >= 198:
                print(f'  healthy spread {sigma:.1%}: {slow:.0%}')
                break


def verdict_time(args):
    src = json.loads(pathlib.Path(args.report).read_text())
    templates = [tc for tc in cases(src) if '%.nid=' in tc['display_name']]
    if not templates:
        sys.exit(f'{args.report}: no screen test case (%.nid=)')
    rng = random.Random(1)
    spec = f'n[1-{args.nodes}]'
    out = copy.deepcopy(src)
    tcs = []
    for i in range(1, args.nodes + 1):
        tc = copy.deepcopy(templates[i % len(templates)])
        old = tc['display_name'].rsplit('=', 1)[-1]
        node = f'n{i}'
        for key in ('display_name', 'name', 'unique_name', 'short_name'):
            if isinstance(tc.get(key), str):
                tc[key] = tc[key].replace(f'%.nid={old}', f'%.nid={node}')
        tc['job_nodelist'] = [node]
        tc['hpcval_job_nodes'] = [node]
        nodes = tc.get('hpcval_partition_nodes') or {}
        tc['hpcval_partition_nodes'] = dict(nodes, nodes=spec,
                                            unavailable={})
        scale = 0.2 if i in (7, 42) else math.exp(rng.gauss(0, 0.02))
        for vals in (tc.get('perfvalues') or {}).values():
            vals[0] = vals[0] * scale
        tcs.append(tc)
    out['runs'] = [dict(src['runs'][0], testcases=tcs,
                        num_cases=len(tcs))]
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp, 'screen-1000.json')
        path.write_text(json.dumps(out))
        start = time.monotonic()
        proc = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict', str(path)],
                              capture_output=True, text=True, cwd=ROOT)
        wall = time.monotonic() - start
    head = proc.stdout.splitlines()[0] if proc.stdout else proc.stderr
    print(f'hpcval verdict of a {args.nodes}-node screen report '
          f'({path.name}, {len(tcs)} test cases): {wall:.2f} s wall, '
          f'exit {proc.returncode}: {head}')
    for line in proc.stdout.splitlines():
        if 'scontrol' in line or 'nodes tested' in line:
            print(f'  {line.strip()}')


SLURM_TOOLS = ('sbatch', 'squeue', 'sacct', 'sinfo', 'scontrol', 'scancel',
               'srun')


def _wrappers(folder, log):
    """A folder of wrappers that log each Slurm command's name and wall
    microseconds to ``log`` before returning its status."""
    import shutil
    folder.mkdir()
    for tool in SLURM_TOOLS:
        real = shutil.which(tool)
        path = folder / tool
        path.write_text(f'#!/bin/bash\ns=$(date +%s%N)\n{real} "$@"\n'
                        f'rc=$?\necho "{tool} $(( ($(date +%s%N) - s) / '
                        f'1000 ))" >> {log}\nexit $rc\n')
        path.chmod(0o755)


def one_cost(nodes, max_jobs, tmp):
    from hpcval.testing.minicluster import MiniCluster
    cluster = MiniCluster(pathlib.Path(tmp, f'mc{nodes}'), nodes=nodes)
    started = time.monotonic()
    cluster.start()
    print(f'{nodes} nodes: minicluster started in '
          f'{time.monotonic() - started:.0f} s', flush=True)
    try:
        return screen_cost(cluster, pathlib.Path(tmp, f'run{nodes}'),
                           max_jobs)
    finally:
        cluster.stop()


def screen_cost(cluster, folder, max_jobs=None):
    """The trivial screen on ``cluster``, ``max_jobs`` jobs at once (every
    node's by default): (reframe wall s, {tool: (calls, wall s)}, verdict
    wall s, CPU s of reframe and its commands, cases passed); printed."""
    import resource
    nodes = len(cluster.nodes)
    folder.mkdir()
    log = folder / 'calls.log'
    _wrappers(folder / 'bin', log)
    env = dict(cluster.env(), HPCVAL_MINICLUSTER_MAX_JOBS=str(
        max_jobs or nodes), PATH=f'{folder / "bin"}:{VENV_BIN}:'
        f'{os.environ["PATH"]}')
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc, report = reframe('-r', '--system', 'minicluster',
                           '--distribute=all', '-n', 'TrivialScreenCheck',
                           tmp_path=folder, checks=(
                               'tests/cost_checks/trivial_screen.py',),
                           env=env)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime +
           after.ru_stime - before.ru_stime)
    if report is None:
        sys.exit(proc.stdout[-3000:] + proc.stderr[-3000:])
    passed = sum(tc['result'] in ('pass', 'success')
                 for tc in cases(report))
    calls = {}
    for line in log.read_text().splitlines():
        tool, micro = line.split()
        n, total = calls.get(tool, (0, 0.0))
        calls[tool] = (n + 1, total + int(micro) / 1e6)
    start = time.monotonic()
    ver = subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict',
                          '--accept-unscreened',
                          str(folder / 'report.json')],
                         capture_output=True, text=True, cwd=ROOT)
    vwall = time.monotonic() - start
    print(f'{nodes} nodes, {max_jobs or nodes} jobs at once: {passed} of '
          f'{nodes} passed; reframe {wall:.1f} s wall '
          f'({wall / nodes:.3f} s per node), {cpu:.1f} s CPU of reframe '
          f'and its commands ({cpu / nodes:.3f} s per node); hpcval '
          f'verdict {vwall:.2f} s (exit {ver.returncode}); load average '
          f'{open("/proc/loadavg").read().split()[0]}', flush=True)
    for tool, (n, total) in sorted(calls.items()):
        print(f'  {tool}: {n} calls ({n / nodes:.2f} per node), '
              f'{total:.1f} s wall in all ({total / n * 1000:.0f} ms '
              f'each)', flush=True)
    return wall, calls, vwall, cpu, passed


def costs(args):
    sizes = sorted(args.nodes)
    found = {}
    with tempfile.TemporaryDirectory(prefix='cost-') as tmp:
        for n in sizes:
            found[n] = one_cost(n, args.max_jobs, tmp)
    # ReFrame's main loop is one thread: the CPU it and its commands spend
    # per node bounds the wall time where the jobs run at once; the wall
    # time of a loaded host measures the load.  Projected twice: at the
    # largest size's cost per node, and with the growth of that cost
    # between the two largest sizes carried on linearly (an upper one)
    per = {n: found[n][3] / n for n in sizes}
    last = sizes[-1]
    growth = 0.0
    if len(sizes) > 1:
        first = sizes[-2]
        growth = max(0.0, (per[last] - per[first]) / (last - first))
    said = ', '.join(f'{per[n]:.3f} s at {n} nodes' for n in sizes)
    print(f'CPU of ReFrame and its commands per node: {said}')
    for target in (1000, 10000):
        grown = per[last] + growth * (target - last)
        print(f'projected {target} nodes: {per[last] * target:.0f} s of '
              f'ReFrame\'s main loop at {per[last]:.3f} s a node, '
              f'{grown * target:.0f} s with the growth carried on '
              f'({grown:.3f} s a node), beside the benchmark\'s own run')


_CTLD = re.compile(r'^\[(\S+)\] (?:_slurm_rpc_submit_batch_job: JobId=(\d+)'
                   r'|sched: Allocate JobId=(\d+)|_job_complete: JobId=(\d+) '
                   r'done)')


def _ctld_cycles(log):
    """[(submitted, allocated, completed)] per job, in seconds, from
    slurmctld's log (its time stamps have milliseconds)."""
    import datetime
    seen = {}
    for line in log.read_text(errors='replace').splitlines():
        m = _CTLD.match(line)
        if not m:
            continue
        when = datetime.datetime.fromisoformat(m[1]).timestamp()
        for i, job in enumerate(m.groups()[1:]):
            if job:
                seen.setdefault(job, [None] * 3)[i] = when
    return sorted(tuple(t) for t in seen.values() if None not in t)


def _stamped(script, log):
    """``script`` (an rfm_job.sh) with a time stamp into ``log`` before its
    first command and after each of its lines (an EXIT trap's own around
    it)."""
    head, body = [], []
    for line in script.splitlines():
        (head if line.startswith('#') and not body else body).append(line)
    out = [*head, f'exec 7>>{shlex.quote(str(log))}; '
           't() { echo "$1 $EPOCHREALTIME" >&7; }; t start']
    for i, line in enumerate(body):
        m = re.fullmatch(r"trap '(.*)' EXIT", line)
        if m:
            line = f"trap 't trap; {m[1]}; t exit' EXIT"
        out += [line, f't {i + 1}']
    return '\n'.join(out) + '\n', body


def job_steps(args):
    import shutil
    from hpcval.testing.minicluster import MiniCluster
    with tempfile.TemporaryDirectory(prefix='steps-') as tmp:
        cluster = MiniCluster(os.path.join(tmp, 'mc'), nodes=args.nodes)
        cluster.start()
        try:
            folder = pathlib.Path(tmp, 'run')
            folder.mkdir()
            reframe('-r', '--system', 'minicluster', '--distribute=all',
                    '-n', 'LikwidBenchCheck%kernel=peakflops', '-S',
                    f'LikwidBenchCheck.repeats={args.repeats}',
                    '--keep-stage-files', tmp_path=folder,
                    checks=('checks/likwid_bench.py',), env=cluster.env())
            cycles = _ctld_cycles(cluster.root / 'log' / 'slurmctld.log')
            for (s, a, c), nxt in zip(cycles, [*cycles[1:], None]):
                gap = f'{nxt[0] - c:.2f}' if nxt else '-'
                print(f'  job: submission to allocation {a - s:.2f} s '
                      f'(at {a % 1:.2f} of its second), allocation to '
                      f'completion {c - a:.2f} s, completion to the next '
                      f'submission {gap} s', flush=True)
            steps = {}
            for script in sorted(folder.glob('rfm/stage/**/rfm_job.sh')):
                log = script.parent / 'steps.log'
                text, body = _stamped(script.read_text(), log)
                timed = script.parent / 'rfm_job_stamped.sh'
                timed.write_text(text)
                start = time.time()
                cluster.run('sbatch', '--wait', '-Q', '-D',
                            str(script.parent), str(timed), timeout=300)
                last = start
                for name, at in (line.split() for line in
                                 log.read_text().splitlines()):
                    at = float(at)
                    key = 'sbatch to the first line' if name == 'start' \
                        else ('EXIT trap' if name == 'exit' else name)
                    if name != 'trap':
                        steps.setdefault(key, []).append(at - last)
                    last = at
            labels = {str(i + 1): line for i, line in enumerate(body)}
            for key, values in steps.items():
                what = labels.get(key, key)
                print(f'  {statistics.median(values):6.3f} s (median of '
                      f'{len(values)}; {min(values):.3f}-{max(values):.3f})'
                      f'  {what[:90]}', flush=True)
            shutil.rmtree(folder / 'rfm', ignore_errors=True)
        finally:
            cluster.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest='what', required=True)
    s = sub.add_parser('screen')
    s.add_argument('--nodes', type=int, default=16)
    s.add_argument('--healthy', type=int, default=5)
    s.add_argument('--planted', type=int, default=3)
    s.add_argument('--fault', choices=('cpu', 'memory'), default='cpu')
    s.add_argument('--slow', type=float, default=0.2)
    s.add_argument('--stream-mib', type=int, default=256)
    s.add_argument('--peer-factor', type=float, default=None)
    # the figure --mode screen makes: the best of two runs per node
    s.add_argument('--repeats', type=int, default=2)
    s.add_argument('--keep', help='copy each screen\'s report here')
    s.add_argument('--mode-screen', action='store_true',
                   help='run reframe --mode screen (the whole suite) '
                        'instead of the likwid-bench cases alone')
    r = sub.add_parser('rule')
    r.add_argument('--draws', type=int, default=200000)
    v = sub.add_parser('verdict')
    v.add_argument('report')
    v.add_argument('--nodes', type=int, default=1000)
    c = sub.add_parser('cost')
    c.add_argument('--nodes', type=int, nargs='+', default=[64, 128])
    c.add_argument('--max-jobs', type=int, default=None)
    t = sub.add_parser('steps')
    t.add_argument('--nodes', type=int, default=4)
    t.add_argument('--repeats', type=int, default=2)
    args = parser.parse_args()
    {'steps': job_steps, 'screen': screens, 'rule': rule_figures,
     'verdict': verdict_time, 'cost': costs}[args.what](args)


if __name__ == '__main__':
    main()
