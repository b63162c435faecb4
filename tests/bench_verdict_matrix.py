"""The verdict matrix: every committed real capture judged as a center
judges it, and faults planted in each healthy run at each rule's limit.

Usage: python tests/bench_verdict_matrix.py [--markdown] [--only NAME]

Each capture set (``SETS``) is a real node's runs: where it has baselines,
it is calibrated from them by the current ``hpcval calibrate`` (as a
center's site does) and every run is judged against that calibration;
otherwise against the references it names (a system's built-in file for
the seeds' replays).  So a rule changed for one system is judged here on
every system's captures at once.

Per run, per figure family (GPU, link, host link, collective, node):
- healthy runs: a failure of a figure, a GPU or a link is a false alarm;
  a build fixture's failure is the capture's defect, counted apart;
- planted faults, made from each healthy run: one member's figure (and
  its ratio to its siblings) made worse, from 1 % up to 60 % (``DROPS``);
  the smallest drop named correctly is the family's measured detection
  limit.  A drop past the figure's own bound (``PAST_BOUND``, the rule's
  stated limit) that the verdict passes is a false pass, one it fails
  without naming the member is counted as unnamed; a failure naming
  another GPU, link or node is a wrong attribution;
- a GPU made missing (its figures and its components gone) must not pass,
  and is named where the run's health probe listed the GPUs;
- the real fault captures must fail naming their GPU;
- a launcher that ran one-rank jobs instead of one communicator (the real
  capture of two mpich singletons) must fail the ping-pong's sanity,
  and the real two-rank output must not.

Every run is judged by today's rules: a case that ReFrame failed in its
performance stage against the bounds of its own day is judged again by
its figures alone (``as_measured``); any other failure stands.

``DOCUMENTED``: failures of a healthy capture that its reference file
states on purpose (a vendor's sample under the vendor's own floor); they
are listed, not counted.  ``--quick`` plants at the limit only (CI).

Exit status: 0 when no false alarm, false pass or wrong attribution was
found, 1 otherwise; the table is printed either way.
"""
import argparse
import copy
import json
import math
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CAP = ROOT / 'tests' / 'fixtures' / 'captured'
REP = ROOT / 'tests' / 'fixtures' / 'reports'
DROPS = (0.01, 0.02, 0.03, 0.05, 0.07, 0.10, 0.15, 0.20, 0.25, 0.30, 0.40,
         0.50, 0.60)
#: a planted value this far past its figure's bound must be named
PAST_BOUND = 0.01
#: (capture, figure) failing on purpose, and where the reason is stated
DOCUMENTED = {('mi300x (guide)', 'test2'): 'references/mi300x.yaml: the '
              'guide\'s example Test 2 (48.349 GB/s) is under its own '
              'Table 3 floor (48.4)'}
_LINK = re.compile(r'gpu(\d+)_to_gpu(\d+)$')
_GPU = re.compile(r'gpu(\d+)$')


@dataclass
class CaptureSet:
    """One node's real runs: baselines to calibrate from (or a reference
    file or folder), healthy runs, and fault runs with the GPU each must
    name."""
    name: str
    card: str
    healthy: list
    baselines: list = field(default_factory=list)
    references: object = None       # a file or folder; None: built-in
    faults: dict = field(default_factory=dict)      # path: 'GPU 3'
    screen: bool = False        # a node screen: nodes judged by peers


def _glob(folder, pattern):
    return sorted(str(p) for p in Path(folder).glob(pattern))


SETS = [
    CaptureSet('h100x1-quick', '1 x H100 80GB HBM3',
               baselines=_glob(REP / 'h100_quick', 'prebuilt[1-5].json'),
               healthy=[*_glob(REP / 'h100_quick', 'prebuilt6.json'),
                        *_glob(REP / 'h100_quick', 'calibrated_*.json'),
                        *_glob(REP / 'h100_quick', 'source*.json')]),
    CaptureSet('h100x1-calib', '1 x H100 80GB HBM3',
               baselines=_glob(CAP / 'h100_calib' / 'reports',
                               'baseline*.json'),
               healthy=_glob(CAP / 'h100_calib' / 'reports',
                             'healthy*.json'),
               faults={str(CAP / 'h100_calib' / 'reports' / f'{name}.json'):
                       'GPU 0' for name in ('gpu0_loaded', 'gpu0_pcie_x8')}),
    # day one: the same node before any calibration, by the built-in
    # references and its GPU model's datasheet (references/hardware)
    CaptureSet('h100x1 day one', '1 x H100 80GB HBM3, no calibration',
               healthy=_glob(CAP / 'h100_calib' / 'reports',
                             'healthy*.json'),
               faults={str(CAP / 'h100_calib' / 'reports' /
                           'gpu0_loaded.json'): 'GPU 0'}),
    CaptureSet('h200x2', '2 x H200',
               baselines=_glob(CAP / 'h200x2' / 'validation' / 'reports',
                               'baseline*.json'),
               healthy=_glob(CAP / 'h200x2' / 'validation' / 'reports',
                             'healthy*.json'),
               faults={str(CAP / 'h200x2' / 'validation' / 'reports' /
                           'gpu1_loaded.json'): 'GPU 1'}),
    CaptureSet('h100x4', '4 x H100 80GB HBM3, NV18',
               baselines=_glob(CAP / 'h100x4' / 'reports', 'baseline*.json'),
               healthy=_glob(CAP / 'h100x4' / 'reports', 'healthy*.json'),
               faults={str(CAP / 'h100x4' / 'reports' /
                           'gpu_last_loaded.json'): 'GPU 3',
                       str(CAP / 'h100x4' / 'reports' /
                           'gpu1_nvlink_inactive.json'): 'GPU 1'}),
    CaptureSet('h100x1 burn-in', '1 x H100 80GB HBM3, --mode burnin '
               '60 s (one of 450 s)',
               healthy=_glob(CAP / 'burnin' / 'h100',
                             'run[2458]/burnin_healthy*.json'),
               faults={str(CAP / 'burnin' / 'h100' / run / f'{name}.json'):
                       'GPU 0' for run, name in (
                           ('run1', 'gpu0_thermal'), ('run3', 'gpu0_thermal'),
                           ('run3', 'gpu0_competitor'),
                           ('run6', 'gpu0_power'), ('run7', 'gpu0_late'))}),
    CaptureSet('h200x1 gpu-burn', '1 x H200, the check and a burn-in',
               healthy=_glob(CAP / 'burnin' / 'h200', '*.json')),
    CaptureSet('mi300x (guide)', '8 x MI300X (replayed guide outputs)',
               healthy=[str(ROOT / 'docs' / 'comparison' / 'reports' /
                            'mi300x-replay.json')]),
    CaptureSet('minicluster screen', '4 Slurm nodes on the 2-core CI VM',
               healthy=[str(REP / 'minicluster-screen' /
                            'healthy-4-nodes.json')], screen=True),
    CaptureSet('kestrel (NREL)', '16 nodes x 4 H100 (replayed)',
               healthy=[str(ROOT / 'docs' / 'comparison' / 'reports' /
                            'kestrel-replay.json')]),
]


def _hpcval(*args):
    return subprocess.run([sys.executable, '-m', 'hpcval.cli', *args],
                          capture_output=True, text=True, timeout=300)


def calibrated(cs, folder):
    """The reference file ``cs`` is judged by: its baselines calibrated
    by the current code into ``folder``, else its own."""
    if not cs.baselines:
        return cs.references
    proc = _hpcval('calibrate', '--system', 'local', '--ref-dir',
                   str(folder), '--write', *cs.baselines)
    path = folder / 'local.yaml'
    if proc.returncode or not path.is_file():
        raise SystemExit(f'{cs.name}: calibrate failed: {proc.stderr[-2000:]}')
    return str(path)


def judge(paths, refs):
    """hpcval's verdict of the reports ``paths`` by ``refs``."""
    from hpcval import references, verdict
    from hpcval.publish import results
    given = references.ReferenceSet.given([refs] if refs else None)
    return verdict.judge(results.load(paths, bounds=given))


def as_measured(report):
    """``report`` with each case ReFrame failed in its performance stage
    (against the bounds its run had) left to its figures."""
    out = copy.deepcopy(report)
    for run in out['runs']:
        for tc in run['testcases']:
            if tc.get('result') == 'fail' and \
                    tc.get('fail_phase') == 'performance':
                tc['result'], tc['fail_phase'] = 'pass', None
                tc['fail_reason'] = tc['fail_info'] = None
                for pv in (tc.get('perfvalues') or {}).values():
                    pv[5:] = ['pass'] if len(pv) > 5 else []
    return out


def family(check, metric):
    name = metric.rpartition(':')[2]
    member = name.rpartition('@')[2] if '@' in name else ''
    if _LINK.search(member) or _LINK.search(name):
        return 'link'
    if _GPU.fullmatch(member):
        return 'GPU'
    if 'TransferBench' in check and 'cpu' in name:
        return 'host link'
    if re.search(r'Nccl|Rccl|HlQual', check):
        return 'collective'
    return 'node'


def _is_defect(f):
    """A build fixture's failure: the capture's defect, not a rule's."""
    return not f.metric and re.search(r'(Build|Source)\b', f.test) and \
        not f.component


def _judged(report, verdict_of):
    """[(case index, metric key, family, value, band)] of the figures the
    verdict judged in ``report`` (a dict), with their bounds."""
    out = []
    for i, tc in enumerate(report['runs'][0]['testcases']):
        for key, pv in (tc.get('perfvalues') or {}).items():
            band = verdict_of.get((tc['display_name'], key.rpartition(':')[2]))
            if band is not None and isinstance(pv[0], (int, float)):
                out.append((i, key, family(tc['display_name'], key),
                            pv[0], band))
    return out


def bands(paths_, refs):
    """{(test, metric): (low, high)} of every figure judged in ``paths_``,
    as the verdict's reference set bands them."""
    from hpcval import references
    from hpcval.judgement import Band
    from hpcval.publish import results
    from hpcval import verdict_refs
    given = references.ReferenceSet.given([refs] if refs else None)
    loaded = results.load(paths_, bounds=given)
    verdict_refs.with_datasheets(loaded)    # as the verdict judges them
    out = {}
    for s in loaded.samples:
        band = Band.of_sample(s)
        if band is not None and not band.problem():
            out[(s.case.test, s.metric)] = band.limits()
    return out


def _expected(fam, key):
    """What a failure of the planted figure ``key`` must name."""
    name = key.rpartition(':')[2]
    member = name.rpartition('@')[2] if '@' in name else name
    link = _LINK.search(member)
    if fam == 'link' and link:
        return f'GPU {link.group(1)} -> GPU {link.group(2)}'
    gpu = _GPU.search(member)
    if fam == 'GPU' and gpu:
        return f'GPU {int(gpu.group(1))}'
    return ''


def plant(report, i, key, drop):
    """A copy of ``report`` with figure ``key`` of case ``i`` worse by
    ``drop`` (a time longer, anything else lower), and the member's other
    figures (its absolute figure, its ratio to its siblings) alike."""
    out = copy.deepcopy(report)
    tc = out['runs'][0]['testcases'][i]
    name = key.rpartition(':')[2]
    prefix = key[:-len(name)]
    member = name.rpartition('@')[2] if '@' in name else None
    related = [key]
    if member:
        fig = name.partition('_vs_siblings@')[0] if '_vs_siblings@' in name \
            else name.partition('@')[0]
        related = [k for k in (f'{prefix}{fig}_vs_siblings@{member}',
                               f'{prefix}{fig}@{member}',
                               f'{prefix}{fig}_{member}')
                   if k in tc['perfvalues']]
    for k in related:
        pv = tc['perfvalues'][k]
        worse_up = pv[4] in ('us', 'ms', 's', 'ns')
        pv[0] = pv[0] / (1 - drop) if worse_up else pv[0] * (1 - drop)
        pv[5:] = ['pass'] if len(pv) > 5 else []
    return out


def _write(tmp, report, n=[0]):
    n[0] += 1
    path = Path(tmp) / f'r{n[0]}.json'
    path.write_text(json.dumps(report))
    return str(path)


def hide_gpu(report, gpu):
    """``report`` with every figure and component of GPU ``gpu`` gone."""
    out = copy.deepcopy(report)
    pat = re.compile(rf'(@gpu0*{gpu}$|gpu0*{gpu}_to_|_to_gpu0*{gpu}$)')
    for tc in out['runs'][0]['testcases']:
        for k in [k for k in (tc.get('perfvalues') or {}) if pat.search(k)]:
            del tc['perfvalues'][k]
        comps = tc.get('hpcval_components') or {}
        for k in [k for k in comps if pat.search(k)]:
            del comps[k]
    return out


@dataclass
class Row:
    capture: str
    fam: str
    runs: int = 0
    judged: int = 0
    false_alarms: list = field(default_factory=list)
    planted: int = 0
    found: int = 0
    false_passes: list = field(default_factory=list)
    unnamed: list = field(default_factory=list)
    wrong: list = field(default_factory=list)
    smallest: object = None


def _failure_names(v):
    return [(f.component, f.metric, f.line()) for f in v.failures()]


def _count(row, v, hit, what):
    """Count one planted fault: named, failed unnamed, or passed."""
    row.planted += 1
    if hit:
        row.found += 1
    elif v.status == 0:
        row.false_passes.append(what)
    else:
        row.unnamed.append(what)


def run_set(cs, tmp, rows, quick=False):
    """Judge ``cs`` into ``rows`` ({(capture, family): Row})."""
    if not cs.healthy:
        return [f'{cs.name}: no capture committed']
    folder = Path(tempfile.mkdtemp(dir=tmp))
    refs = calibrated(cs, folder)
    notes = []
    for path in [*cs.baselines, *cs.healthy]:
        report = as_measured(json.loads(Path(path).read_text()))
        measured = _write(tmp, report)
        v = judge([measured], refs)
        judged = _judged(report, bands([measured], refs))
        fams = sorted({f for _, _, f, _, _ in judged})
        for fam in fams:
            row = rows.setdefault((cs.name, fam), Row(cs.name, fam))
            row.runs += 1
            row.judged += sum(1 for j in judged if j[2] == fam)
        for comp, metric, line in _failure_names(v):
            f = next(f for f in v.failures() if f.line() == line)
            if _is_defect(f):
                notes.append(f'{cs.name}: {Path(path).name}: capture '
                             f'defect: {line[:160]}')
                continue
            if (cs.name, metric) in DOCUMENTED:
                notes.append(f'{cs.name}: {Path(path).name}: documented: '
                             f'{DOCUMENTED[(cs.name, metric)]}')
                continue
            fam = family(f.test, metric) if metric else (
                'GPU' if 'GPU' in comp else 'node')
            row = rows.setdefault((cs.name, fam), Row(cs.name, fam))
            row.false_alarms.append(f'{Path(path).name}: {line[:200]}')
        if path in cs.baselines:
            continue        # planted faults start from runs not calibrated on
        if cs.screen:
            _plant_screen(cs, tmp, refs, report, path, v, rows, quick)
        for fam in fams:
            _plant_family(cs, tmp, refs, report, path, judged, fam, rows,
                          quick)
        gpus = sorted({int(m.group(1)) for _, k, _, _, _ in judged
                       for m in [_GPU.search(k.rpartition('@')[2])] if m})
        if len(gpus) > 1:
            _plant_missing(cs, tmp, refs, report, path, gpus[-1], rows)
    for path, gpu in cs.faults.items():
        v = judge([_write(tmp, as_measured(json.loads(
            Path(path).read_text())))], refs)
        row = rows.setdefault((cs.name, 'real fault'),
                              Row(cs.name, 'real fault'))
        named = [c for c, _, _ in _failure_names(v) if c]
        _count(row, v, v.status == 1 and any(gpu in c for c in named),
               f'{Path(path).name}: {gpu} not named')
        wrong = [c for c in named if gpu not in c]
        row.wrong += [f'{Path(path).name}: {c}' for c in wrong]
    return notes


def _plant_family(cs, tmp, refs, report, path, judged, fam, rows, quick):
    row = rows[(cs.name, fam)]
    # one figure per family and run: the one nearest its bound
    def margin(j):
        _, _, _, value, (low, high) = j
        if low is not None and value > 0 and low > 0:
            return value / low
        if high is not None and value > 0:
            return high / value
        return math.inf
    cands = [j for j in judged if j[2] == fam and margin(j) < math.inf]
    if not cands:
        return
    i, key, _, value, (low, high) = min(cands, key=margin)
    want = _expected(fam, key)
    smallest = None
    # a figure cannot fall by more than 99 %, but a time can grow past
    # any ceiling: its limit is the bound plus PAST_BOUND
    limit = min(0.99, 1 - low / value + PAST_BOUND) if low is not None \
        else 1 - value / (high * (1 + PAST_BOUND))
    for drop in sorted({*(() if quick else DROPS), limit}):
        if drop <= 0:
            continue
        v = judge([_write(tmp, plant(report, i, key, drop))], refs)
        names = _failure_names(v)
        hit = [n for n in names if n[1] and (n[1] == key.rpartition(':')[2] or
                                             want and want in n[0])]
        wrong = [n for n in names if want and n[0] and want not in n[0]
                 and not _is_defect(next(f for f in v.failures()
                                         if f.line() == n[2]))]
        if wrong:
            row.wrong.append(f'{Path(path).name}: {key} -{drop:.0%}: '
                             f'{wrong[0][2][:160]}')
        if hit and smallest is None:
            smallest = drop
        if drop >= limit:
            _count(row, v, hit, f'{Path(path).name}: {key} -{drop:.1%} '
                   f'(bound {low if low is not None else high:.6g})')
            break
    if smallest is not None:
        row.smallest = smallest if row.smallest is None else \
            max(row.smallest, smallest)


def _plant_screen(cs, tmp, refs, report, path, healthy, rows, quick):
    """One node of a screen slower than its peers, from 5 % to 95 %: named
    by the peer rule at its system's bound, on that node alone; at 95 %
    (a node at most 0.1x its peers: past the loosest bound a system
    states, x4 on the minicluster) it must be."""
    row = rows.setdefault((cs.name, 'node vs peers'),
                          Row(cs.name, 'node vs peers'))
    row.runs += 1
    cases = report['runs'][0]['testcases']
    row.judged += sum(len(tc.get('perfvalues') or {}) for tc in cases)
    for i, tc in enumerate(cases):
        node = (tc.get('job_nodelist') or [''])[0]
        key = next(iter(tc.get('perfvalues') or {}), None)
        if key is None:
            continue
        ladder = () if quick else (0.05, 0.10, 0.20, 0.40, 0.60, 0.70,
                                   0.80, 0.90)
        smallest = None
        for drop in ladder:
            v = judge([_write(tmp, plant(report, i, key, drop))], refs)
            named = [f for f in v.failures() if f.node == node]
            others = [f for f in v.failures() if f.node and f.node != node]
            row.wrong += [f'{Path(path).name}: {node} -{drop:.0%}: '
                          f'{f.line()[:160]}' for f in others]
            if named and smallest is None:
                smallest = drop
        v = judge([_write(tmp, plant(report, i, key, 0.95))], refs)
        hit = any(f.node == node for f in v.failures())
        _count(row, v, hit, f'{Path(path).name}: {node} 95 % slower')
        smallest = smallest or (0.95 if hit else None)
        if smallest is not None:
            row.smallest = smallest if row.smallest is None else \
                max(row.smallest, smallest)


def _plant_missing(cs, tmp, refs, report, path, gpu, rows):
    row = rows.setdefault((cs.name, 'missing GPU'),
                          Row(cs.name, 'missing GPU'))
    v = judge([_write(tmp, hide_gpu(report, gpu))], refs)
    named = [c for c, _, _ in _failure_names(v)]
    _count(row, v, v.status != 0 and f'GPU {gpu}' in named,
           f'{Path(path).name}: GPU {gpu} hidden (status {v.status})')


def launcher_row(rows):
    """The across-node ping-pong run as two one-rank jobs (a launcher
    without PMI): refused, never a figure."""
    from hpcval.parsers.common import ParseError
    from hpcval.parsers.mpi4py_pingpong import parse_pingpong
    row = rows.setdefault(('mpi4py (CI VM)', 'launcher'),
                          Row('mpi4py (CI VM)', 'launcher'))
    good = CAP / 'mpi4py412_mpich432_pingpong_n4194304.txt'
    bad = CAP / 'mpi4py412_mpich432_pingpong_two_singletons.txt'
    row.runs += 1
    try:
        parse_pingpong(good.read_text(), 'mpiexec -n 2')
    except ParseError as err:
        row.false_alarms.append(f'{good.name}: {err}')
    row.planted += 1
    try:
        parse_pingpong(bad.read_text(), 'mpiexec -n 2')
        row.false_passes.append(f'{bad.name}: parsed as one communicator')
    except ParseError as err:
        if 'one-rank' in str(err):
            row.found += 1
        else:
            row.unnamed.append(f'{bad.name}: {err}')


def table(rows, markdown):
    head = ('capture', 'family', 'runs judged', 'figures judged',
            'false alarms', 'planted named', 'failed unnamed',
            'false passes', 'smallest drop named', 'wrong attributions')
    lines = []
    for r in rows.values():
        lines.append((r.capture, r.fam, str(r.runs), str(r.judged),
                      str(len(r.false_alarms)),
                      f'{r.found}/{r.planted}' if r.planted else '-',
                      str(len(r.unnamed)), str(len(r.false_passes)),
                      f'{r.smallest:.0%}' if r.smallest is not None else '-',
                      str(len(r.wrong))))
    if markdown:
        out = ['| ' + ' | '.join(head) + ' |',
               '|' + '---|' * len(head)]
        out += ['| ' + ' | '.join(line) + ' |' for line in lines]
        return '\n'.join(out)
    widths = [max(len(x) for x in col) for col in zip(head, *lines)]
    return '\n'.join('  '.join(x.ljust(w) for x, w in zip(line, widths))
                     for line in (head, *lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--markdown', action='store_true')
    ap.add_argument('--quick', action='store_true',
                    help='plant at each limit only (no ladder of drops)')
    ap.add_argument('--only', action='append', default=[],
                    help='capture set names to judge (default: all)')
    args = ap.parse_args(argv)
    rows, notes = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for cs in SETS:
            if args.only and cs.name not in args.only:
                continue
            notes += run_set(cs, tmp, rows, args.quick)
    if not args.only:
        launcher_row(rows)
    print(table(rows, args.markdown))
    bad = 0
    for r in rows.values():
        for what, items in (('FALSE ALARM', r.false_alarms),
                            ('FALSE PASS', r.false_passes),
                            ('WRONG', r.wrong)):
            for item in items:
                print(f'{what} {r.capture} {r.fam}: {item}')
                bad += 1
        for item in r.unnamed:
            print(f'unnamed {r.capture} {r.fam}: {item}')
    for note in notes:
        print(f'note {note}')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.path.insert(0, str(ROOT / 'utils'))
    os.environ.setdefault('HPCVAL_ROOT', str(ROOT))
    sys.exit(main())
