"""A GPU or link slower than its siblings on the node is a performance
figure of its own (``<figure>_vs_siblings@<member>``, hpcval.benchmarks.
siblings), judged in ReFrame's performance stage: the run keeps every
figure in its report, perflog and results database, and the verdict names
the GPU or link first, with the cause from the same GPU's health record.

Data: the real 2 x H200 run with a second process on GPU 1
(tests/fixtures/captured/h200x2/validation/gpu1_loaded_stage), and the
AMD MI300X guide's example outputs replayed through the real checks with
one defect each: a GPU 15 % slow, another 40 % slow (one kernel's row
scaled), and one p2p link at 60 % of its siblings (one cell).  The guide
prints two GPUs' BabelStream tables; the replayed 8-GPU node repeats
them (GPU n shows table n % 2), so every GPU's figure is a real one."""
import json
import sqlite3
import subprocess

import msgspec
import pytest

from hpcval import judgement, peers, references, verdict
from hpcval.benchmarks import siblings
from hpcval.benchmarks.babelstream import gpu_groups
from hpcval.benchmarks.transferbench import REMEASURE_AWK, remeasured
from hpcval.health import report as health
from hpcval.parsers.babelstream import parse_babelstream
from hpcval.publish import results
from mi300x_guide import guide_outputs
from replays import mi300x_recordings, replay
from rfmrun import ROOT, one_case, perf

LOADED = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' / \
    'validation' / 'gpu1_loaded_stage'
# the guide's p2p unidirectional row of GPU 02 (GB/s to CPU 00..GPU 07)
ROW = 'GPU 02 -> 54.52 37.48 46.19 46.18 N/A 46.29 46.54'


def _scaled(text, kernel, scale):
    """``text`` with ``kernel``'s MBytes/sec scaled by ``scale``."""
    line = next(x for x in text.splitlines() if x.startswith(kernel + ' '))
    mbs = line.split()[1]
    return text.replace(line, line.replace(mbs, f'{float(mbs) * scale:.3f}'))


def test_the_loaded_h200_gpu_is_named_by_its_figures():
    results_ = {f'vm.gpu{g}': parse_babelstream(
        (LOADED / f'stream.vm.gpu{g}.out').read_text()) for g in (0, 1)}
    found = siblings.compare(gpu_groups(results_), 1.1)
    failed = sorted(s.metric for s in found if not s.judgement.passed)
    assert failed == [f'{k}_vs_siblings@gpu1'
                      for k in ('add', 'copy', 'dot', 'mul', 'triad')]
    copy = next(s for s in found if s.metric == 'copy_vs_siblings@gpu1')
    # 2.717 TB/s against GPU 0's 3.458: 78.6 %, bound 1/1.1
    assert peers.ratio(copy.judgement) == pytest.approx(0.7857, abs=1e-4)
    band = judgement.Band(*peers.band(copy.judgement), peers.RATIO_UNIT)
    assert not band.passes(peers.ratio(copy.judgement))
    assert band.bound_text() == '>= 0.909091 x (ref 1, -9.1%)'
    assert copy.component == 'GPU 1'


@pytest.fixture(scope='module')
def slow(tmp_path_factory):
    """The MI300X replay with GPU 1 15 % slow (triad), GPU 2 40 % slow
    (copy) and the p2p link GPU 02 -> GPU 01 (bidir) at 60 %."""
    rec = mi300x_recordings()
    shown = rec['BabelStreamHipCheck']
    stream = rec['BabelStreamHipCheck'] = {}
    for gpu in range(8):
        for ext in ('out', 'err'):
            stream[f'stream.guidenode.gpu{gpu}.{ext}'] = \
                shown[f'stream.guidenode.gpu{gpu % 2}.{ext}']
    stream['stream.guidenode.gpu1.out'] = _scaled(
        stream['stream.guidenode.gpu1.out'], 'Triad', 0.85)
    stream['stream.guidenode.gpu2.out'] = _scaled(
        stream['stream.guidenode.gpu2.out'], 'Copy', 0.60)
    p2p = guide_outputs()['p2p']
    rec['TransferBenchCheck%preset=p2p']['stdout'] = p2p.replace(
        ROW, ROW.replace('46.18', '27.74'))
    keep = ('BabelStreamHipCheck', 'TransferBenchCheck%preset=p2p')
    tmp = tmp_path_factory.mktemp('slow')
    proc, report = replay('mi300x', {k: rec[k] for k in keep},
                          ['checks/transferbench.py',
                           'checks/babelstream.py'], [], tmp)
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp, report


def test_a_slow_gpu_fails_in_performance_keeping_every_figure(slow):
    tmp, report = slow
    tc = one_case(report, 'BabelStreamHipCheck')
    assert (tc['result'], tc['fail_phase']) == ('fail', 'performance')
    figures = perf(tc)
    # every per-GPU figure of the eight GPUs, and the comparison of each
    # with its siblings
    for gpu in range(8):
        for kernel in ('copy', 'mul', 'add', 'triad', 'dot'):
            assert f'{kernel}@gpu{gpu}' in figures
            assert f'{kernel}_vs_siblings@gpu{gpu}' in figures
    failed = sorted(m for m, v in figures.items() if v[-1] == 'fail'
                    and 'siblings' in m)
    assert failed == ['copy_vs_siblings@gpu2', 'triad_vs_siblings@gpu1']
    assert tc['hpcval_measured_gpus'] == list(range(8))
    assert figures['copy_vs_siblings@gpu2'][0] == pytest.approx(0.6,
                                                                abs=0.01)
    # the results database holds the slow run's figures
    db = sqlite3.connect(tmp / 'results.db')
    text = ' '.join(str(row) for row in db.execute('select * from sessions'))
    assert 'copy_vs_siblings@gpu2' in text and 'copy@gpu2' in text


def test_a_slow_link_fails_in_performance_naming_it(slow):
    _, report = slow
    tc = one_case(report, 'TransferBenchCheck %preset=p2p')
    assert (tc['result'], tc['fail_phase']) == ('fail', 'performance')
    figures = perf(tc)
    failed = [m for m, v in figures.items() if v[-1] == 'fail']
    assert failed == ['bidir_vs_siblings@gpu02_to_gpu01']
    assert 'bidir_gpu02_to_gpu01' in figures


def test_the_verdict_names_the_gpu_and_link_first(slow):
    tmp, _ = slow
    loaded = results.load([str(tmp / 'report.json')],
                          bounds=references.ReferenceSet.given())
    out = verdict.judge(loaded)
    lines = [f.line() for f in out.failures()]
    assert out.status == verdict.EXIT_FAILED
    assert any(line.startswith('node vm GPU 2: BabelStreamHipCheck ') and
               ': copy_vs_siblings@gpu2 = 0.598154 x, -40.2% vs ref 1, '
               'bound >= 0.909091 x (ref 1, -9.1%)' in line
               for line in lines), lines
    assert any(line.startswith('node vm GPU 1: ') and
               'triad_vs_siblings@gpu1' in line for line in lines), lines
    assert any(line.startswith('node vm link GPU 02 -> GPU 01 '
                               '(bidir): ') for line in lines), lines
    # nothing else is named: the slow GPUs' own figures fail their
    # references too, on the same GPUs
    others = [line for line in lines if not line.startswith((
        'node vm GPU 1', 'node vm GPU 2', 'node vm link GPU 02 -> GPU 01 '))]
    assert others == [], others


def test_a_sibling_band_the_rule_cannot_make_is_not_trusted():
    assert peers.trusted_band(1.0, -0.0909, None) == (1.0, -0.0909, None)
    assert peers.trusted_band(1.0, -0.9, None) == (1.0, -peers.MAX_FLOOR,
                                                   None)
    assert peers.trusted_band(0.5, -0.1, None) == (1.0, -peers.MAX_FLOOR,
                                                   None)
    assert peers.trusted_band(None, None, None) == (1.0, -peers.MAX_FLOOR,
                                                    None)


# -- p2p on a 4 x H200 NVLink node: an outlier link is re-measured ----------

H200X4 = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x4' / 'transferbench'
HEALTHY_P2P = sorted(p for p in H200X4.glob('p2p_*.txt') if '_1G_' not in p.name)
# GPU 01's unidirectional row of p2p_gpu_64M_i10_r1 (GPU 01 -> GPU 02 at
# 180.12 GB/s)
ROW4 = '  GPU 01  ->    175.42    263.67    180.12    216.42'


def _awk(text, factor=1.6, tmp=None):
    path = tmp / 'p2p.out'
    path.write_text(text)
    return subprocess.run(['awk', '-v', f'f={factor!r}', REMEASURE_AWK,
                           str(path)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize('path', HEALTHY_P2P, ids=lambda p: p.stem)
def test_no_healthy_p2p_matrix_asks_for_a_remeasure(path, tmp_path):
    assert _awk(path.read_text(), tmp=tmp_path) == ''


def test_a_link_at_60_percent_asks_for_every_pair_again(tmp_path):
    text = (H200X4 / 'p2p_gpu_64M_i10_r1.txt').read_text()
    assert ROW4 in text
    cfg = _awk(text.replace(ROW4, ROW4.replace('180.12', '108.07')),
               tmp=tmp_path)
    assert sorted(cfg.splitlines()) == sorted(
        (H200X4 / 'pairs.cfg').read_text().splitlines())


def test_the_remeasure_is_read_per_link():
    links = remeasured(H200X4 / 'pairs.cfg', H200X4 / 'pairs_cfg_256M_r1.txt')
    assert len(links) == 12
    assert links['gpu02_to_gpu03'] == 275.365
    assert links['gpu03_to_gpu02'] == 323.739
    assert remeasured(H200X4 / 'no.cfg', H200X4 / 'no.out') == {}


@pytest.fixture(scope='module')
def remeasure_replays(tmp_path_factory):
    """p2p of the 4 x H200 node with GPU 01 -> GPU 02 at 60 %, replayed
    with the re-measure the job made: the real one (every link healthy
    alone), and the same with that link at 60 % alone too."""
    text = (H200X4 / 'p2p_gpu_64M_i10_r1.txt').read_text()
    slow = text.replace(ROW4, ROW4.replace('180.12', '108.07'))
    cfg = (H200X4 / 'pairs.cfg').read_text()
    again = (H200X4 / 'pairs_cfg_256M_r1.txt').read_text()
    slow_again = again.replace('310.494 GB/s |    0.865 ms |    268435456 '
                               'bytes | G1', '186.296 GB/s |    1.441 ms |  '
                               '  268435456 bytes | G1')
    assert slow_again != again
    out = {}
    for name, rm in (('transient', again), ('confirmed', slow_again)):
        tmp = tmp_path_factory.mktemp(name)
        proc, report = replay(
            'mi300x', {'TransferBenchCheck%preset=p2p': {
                'stdout': slow, 'remeasure.cfg': cfg, 'remeasure.out': rm}},
            ['checks/transferbench.py'], ['TransferBenchCheck.num_gpus=4'],
            tmp)
        assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
        out[name] = one_case(report, 'TransferBenchCheck %preset=p2p')
    return out


def test_a_link_healthy_alone_is_not_named(remeasure_replays):
    tc = remeasure_replays['transient']
    assert tc['result'] == 'pass', tc['fail_reason']
    figures = perf(tc)
    # the re-measured ratio stands for the link: 310.494 among its 11
    # siblings' median
    assert figures['uni_vs_siblings@gpu01_to_gpu02'][0] > 0.95


def test_a_link_slow_alone_too_is_named(remeasure_replays):
    tc = remeasure_replays['confirmed']
    assert (tc['result'], tc['fail_phase']) == ('fail', 'performance')
    failed = [m for m, v in perf(tc).items() if v[-1] == 'fail']
    assert failed == ['uni_vs_siblings@gpu01_to_gpu02']


def test_the_loaded_gpu_line_carries_its_health_cause():
    """The real 2 x H200 run with a PyTorch process copying on GPU 1
    (tests/fixtures/captured/h200x2/gpu1_loaded_v2): its report holds the
    health record the probe took; GPU 1's figure against its sibling, as
    the check now makes it from the same run's outputs, fails naming GPU 1
    and the process the probe saw on it."""
    folder = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x2' / \
        'gpu1_loaded_v2'
    stage = next((folder / 'stage').glob('BabelStreamCudaCheck_*'))
    found = siblings.compare(gpu_groups({
        f'vm.gpu{g}': parse_babelstream(
            (stage / f'stream.vm.gpu{g}.out').read_text()) for g in (0, 1)}),
        1.1)
    copy = next(s for s in found if s.metric == 'copy_vs_siblings@gpu1')
    loaded = results.load([str(folder / 'gpu_last_loaded.json')])
    [case] = [c for c in loaded.cases
              if c.test.startswith('BabelStreamCudaCheck')]
    sample = results.Sample(case, copy.metric, peers.ratio(copy.judgement),
                            peers.RATIO_UNIT, *peers.band(copy.judgement))
    case = msgspec.structs.replace(case, extras={
        **case.extras, 'components': {copy.metric: copy.component}})
    sample = msgspec.structs.replace(sample, case=case)
    line = verdict._figure_failure(case, sample, health.Judge()).line()
    assert line.startswith('node vm GPU 1: BabelStreamCudaCheck '), line
    assert line.endswith(
        ': copy_vs_siblings@gpu1 = 0.337826 x, -66.2% vs ref 1, bound >= '
        '0.909091 x (ref 1, -9.1%): another process, /opt/torch/.venv/bin/'
        'python3 (pid 605), held 8710 MiB on GPU 1 at 100% utilization '
        'before the benchmark started'), line


# -- every GPU measured or named ----------------------------------------------

WARMUP = ROOT / 'tests' / 'fixtures' / 'captured' / 'h200x4' / 'run' / \
    'warmup.json'


def _not_measured(path):
    return [f.line() for f in verdict.judge(results.load([str(path)]))
            .failures() if 'not measured' in f.line()]


def test_every_gpu_of_the_4_x_h200_run_was_measured():
    assert _not_measured(WARMUP) == []


def test_a_gpu_no_benchmark_measured_is_named(tmp_path):
    """The real 4 x H200 run with GPU 3's figures gone from BabelStream's
    and TransferBench's records (as when the runtime lost it): the GPU the
    probe listed is named once, with the checks that left it out."""
    report = json.loads(WARMUP.read_text())
    for tc in report['runs'][0]['testcases']:
        comps = tc.get('hpcval_components') or {}
        tc['hpcval_components'] = {
            m: c for m, c in comps.items()
            if 'GPU 3' not in c and 'GPU 03' not in c}
    path = tmp_path / 'gpu3_lost.json'
    path.write_text(json.dumps(report))
    assert _not_measured(path) == [
        'node vm GPU 3: not measured by BabelStreamCudaCheck '
        '%build.model=cuda, TransferBenchCudaCheck %preset=p2p '
        '%build.model=cuda']


def test_a_run_failed_only_by_its_siblings_still_calibrates(slow):
    """Calibration from a baseline whose only failures are sibling
    figures: its other figures count, with a note; per-link figures are
    TransferBench's declared diagnostics, not calibrated."""
    from hpcval.publish import calibrate
    tmp, _ = slow
    loaded = results.load([str(tmp / 'report.json')])
    notes = []
    kept = calibrate._select(loaded.samples, 'mi300x', True, False, notes)
    # p2p failed on its slow link's sibling figure alone; BabelStream's
    # slow GPUs failed the guide's references too: left out
    assert {s.case.test.split()[0] for s in kept} == {'TransferBenchCheck'}
    assert 'counted 1 run(s) that failed only their sibling figures (a GPU '\
        'or link slower than its siblings in that run): their other ' \
        'figures count' in notes
    [p2p] = [c for c in loaded.cases if c.test.startswith('TransferBench')]
    assert p2p.extras['unjudged']['uni_gpu00_to_gpu01'].startswith(
        'diagnostic: one link\'s bandwidth')


# -- the MI300X's own sibling bands (references/mi300x.yaml) -----------------

# the guide's a2a row of GPU 04 (GB/s to GPU 00..GPU 07)
A2A_ROW = 'GPU 04 34.388 35.432 34.283'


@pytest.fixture(scope='module')
def at_70_percent(tmp_path_factory):
    """The MI300X guide's a2a and p2p, each with one link at 0.70 of its
    siblings' median: a2a GPU 04 -> GPU 01 (median 36.5 GB/s), p2p bidir
    GPU 02 -> GPU 01 (median 46.2 GB/s)."""
    rec = mi300x_recordings()
    a2a = rec['TransferBenchCheck%preset=a2a']['stdout']
    assert A2A_ROW in a2a and ROW in rec['TransferBenchCheck%preset=p2p'][
        'stdout']
    rec['TransferBenchCheck%preset=a2a']['stdout'] = a2a.replace(
        A2A_ROW, A2A_ROW.replace('35.432', '25.55'))
    rec['TransferBenchCheck%preset=p2p']['stdout'] = rec[
        'TransferBenchCheck%preset=p2p']['stdout'].replace(
        ROW, ROW.replace('46.18', '32.34'))
    keep = ('TransferBenchCheck%preset=a2a', 'TransferBenchCheck%preset=p2p')
    tmp = tmp_path_factory.mktemp('at70')
    proc, report = replay('mi300x', {k: rec[k] for k in keep},
                          ['checks/transferbench.py'], [], tmp)
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return tmp, report


def test_an_mi300x_link_at_70_percent_is_named_with_its_direction(
        at_70_percent):
    tmp, report = at_70_percent
    for test, metric, ratio in (
            ('TransferBenchCheck %preset=a2a',
             'a2a_vs_siblings@gpu04_to_gpu01', 0.70),
            ('TransferBenchCheck %preset=p2p',
             'bidir_vs_siblings@gpu02_to_gpu01', 0.70)):
        tc = one_case(report, test)
        failed = {m: v for m, v in perf(tc).items() if v[-1] == 'fail'}
        assert list(failed) == [metric], failed
        assert failed[metric][0] == pytest.approx(ratio, abs=0.01)
        # the system's band, not the benchmark's default 0.625
        assert failed[metric][2] in (-0.25, -0.2)
    loaded = results.load([str(tmp / 'report.json')],
                          bounds=references.ReferenceSet.given())
    lines = [f.line() for f in verdict.judge(loaded).failures()]
    assert any(line.startswith('node vm link GPU 04 -> GPU 01: ')
               for line in lines), lines
    assert any(line.startswith('node vm link GPU 02 -> GPU 01 (bidir): ')
               for line in lines), lines


def test_a_sibling_band_is_the_systems_not_an_options(tmp_path):
    band = (1.0, -0.2, None, 'x')
    assert siblings.factor_of_band(band, 'f') == pytest.approx(1.25)
    for bad in ((1.0, -0.7, None, 'x'), (1.0, -0.2, 0.1, 'x'),
                (2.0, -0.2, None, 'x'), (1.0, -0.2, None, 'GB/s')):
        with pytest.raises(siblings.InputError, match='a sibling band is'):
            siblings.factor_of_band(bad, 'references/x.yaml: T uni')
