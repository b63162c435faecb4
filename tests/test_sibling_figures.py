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
import pathlib
import sqlite3

import pytest

from hpcval import judgement, peers, verdict, verdict_refs
from hpcval.benchmarks import siblings
from hpcval.benchmarks.babelstream import gpu_groups
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
    loaded = results.load([str(tmp / 'report.json')])
    by_system, files = verdict_refs.load()
    out = verdict.judge(loaded, bounds=verdict_refs.Bounds(by_system,
                                                           files))
    lines = [f.line() for f in out.failures()]
    assert out.status == verdict.EXIT_FAILED
    assert any(line.startswith('node vm GPU 2: BabelStreamHipCheck'
                               ': copy_vs_siblings@gpu2 = 0.6')
               for line in lines), lines
    assert any(line.startswith('node vm GPU 1: ') and
               'triad_vs_siblings@gpu1' in line for line in lines), lines
    assert any(line.startswith('node vm link GPU 02 -> GPU 01 '
                               '(bidir): ') for line in lines), lines
    # nothing else of those two checks fails
    named = [line for line in lines if 'siblings' not in line]
    assert named == [], named


def test_a_sibling_band_the_rule_cannot_make_is_not_trusted():
    assert peers.trusted_band(1.0, -0.0909, None) == (1.0, -0.0909, None)
    assert peers.trusted_band(1.0, -0.9, None) == (1.0, -peers.MAX_FLOOR,
                                                   None)
    assert peers.trusted_band(0.5, -0.1, None) == (1.0, -peers.MAX_FLOOR,
                                                   None)
    assert peers.trusted_band(None, None, None) == (1.0, -peers.MAX_FLOOR,
                                                    None)
