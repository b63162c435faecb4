"""A GPU the health probe listed that a per-GPU check did not measure is
named, also when that check failed its sanity (hpcval.verdict's
``_unmeasured``; docs/verdict.md, "Every GPU measured or named").

Data, each a real capture with one defect at a time:
- the real 4 x H100 healthy run tests/fixtures/captured/h100x4/reports/
  healthy01.json, its TransferBench case turned into the sanity failure a
  3-GPU view gives: the check's own message and record for a mutation of
  the real 4 x H200 p2p output (tests/fixtures/captured/h200x4/
  transferbench/p2p_default_r1.txt) with GPU 03's rows and column cut;
- the same run's BabelStream case turned into the sanity failure of a
  missing per-GPU output: the real 4 x H100 per-GPU outputs (tests/
  fixtures/captured/h100x4/loaded_stage) less GPU 3's, read by the check;
- the real 2 x H200 run whose BabelStream and TransferBench failed in
  sanity (tests/fixtures/captured/h200x2/gpu1_loaded_v2), as recorded, and
  the real one-GPU TransferBench output of that node with GPU 1 hidden
  (``CUDA_VISIBLE_DEVICES=0``, tb/p2p_gpu_last_hidden.txt), and its real
  nccl-tests output (nccl/ar_full_c1.txt), whole and cut before its device
  list."""
import json
import shutil
import types

import pytest

from hpcval import verdict
from hpcval.benchmarks.babelstream import BabelStream, gpus_with_results
from hpcval.benchmarks.transferbench import TransferBench, gpus_listed
from hpcval.parsers import ParseError
from hpcval.parsers.nccl_tests import listed_devices
from hpcval.parsers.transferbench import parse_p2p
from gpu_views import without_last_gpu
from hpcval.publish import results
from replays import mi300x_recordings, replay
from rfmrun import ROOT, one_case

CAPTURED = ROOT / 'tests' / 'fixtures' / 'captured'
HEALTHY = CAPTURED / 'h100x4' / 'reports' / 'healthy01.json'
STAGE = CAPTURED / 'h100x4' / 'loaded_stage' / 'BabelStreamCudaCheck_e700626f'
P2P_4 = CAPTURED / 'h200x4' / 'transferbench' / 'p2p_default_r1.txt'
H200X2 = CAPTURED / 'h200x2' / 'gpu1_loaded_v2'
TB = 'TransferBenchCudaCheck %preset=p2p %build.model=cuda'
BS = 'BabelStreamCudaCheck %build.model=cuda'


def _tb_hidden():
    """(fail_reason, measured_gpus) TransferBench gives for the 3-GPU view
    on a node of 4."""
    text = without_last_gpu(P2P_4.read_text(), 'GPU 03')
    uni = parse_p2p(text).uni
    check = types.SimpleNamespace(expected_gpus=4)
    with pytest.raises(ParseError) as err:
        TransferBench._check_gpus(
            check, [d for d in uni.devices if d.startswith('GPU')],
            'p2p uni matrix')
    return f'sanity error: {err.value}', sorted(gpus_listed(text, 'p2p'))


def _bs_hidden(tmp_path):
    """(fail_reason, measured_gpus) BabelStream gives for the real per-GPU
    outputs less GPU 3's."""
    stage = tmp_path / 'stage'
    shutil.copytree(STAGE, stage)
    for name in ('stream.vm.gpu3.out', 'stream.vm.gpu3.err'):
        (stage / name).unlink()
    check = types.SimpleNamespace(stagedir=str(stage), num_tasks=4,
                                  num_tasks_per_node=4, replay_excerpt='')
    with pytest.raises(ParseError) as err:
        BabelStream._gpu_outputs(check)
    found = gpus_with_results([str(p) for p in stage.glob('stream.*')],
                              'cuda', 50)
    return f'sanity error: {err.value}', sorted(found)


def _failed_in_sanity(tc, reason, measured):
    """``tc`` as ReFrame reports a case that failed in sanity: no figure,
    no components (publish_metrics never ran), the check's record of the
    GPUs its output showed."""
    tc.update(result='fail', fail_phase='sanity', fail_reason=reason,
              perfvalues={}, hpcval_components={}, hpcval_plot_data={},
              hpcval_unjudged={}, hpcval_measured_gpus=measured)


def _judged(tmp_path, changes):
    report = json.loads(HEALTHY.read_text())
    for tc in report['runs'][0]['testcases']:
        if tc['display_name'] in changes:
            changes[tc['display_name']](tc)
    path = tmp_path / 'mutated.json'
    path.write_text(json.dumps(report))
    return verdict.judge(results.load([str(path)]))


def _not_measured(found):
    return [f.line() for f in found.failures() if 'not measured' in f.line()]


def test_the_real_outputs_show_which_gpus_were_measured(tmp_path):
    assert _tb_hidden()[1] == [0, 1, 2]
    assert _bs_hidden(tmp_path)[1] == [0, 1, 2]
    assert gpus_listed(P2P_4.read_text(), 'p2p') == {0, 1, 2, 3}
    # the node's runtime showed one GPU of two: one matrix-less run
    hidden = (H200X2 / 'tb' / 'p2p_gpu_last_hidden.txt').read_text()
    assert gpus_listed(hidden, 'p2p') == {0}
    assert gpus_with_results([str(p) for p in STAGE.glob('*')], 'cuda',
                             50) == {0, 1, 2, 3}
    # another run's outputs (-n 100 asked) measured nothing of this test
    assert gpus_with_results([str(p) for p in STAGE.glob('*')], 'cuda',
                             100) == set()


def test_the_unmutated_run_names_no_gpu():
    assert _not_measured(verdict.judge(results.load([str(HEALTHY)]))) == []


def test_a_gpu_hidden_from_transferbench_is_named_once(tmp_path):
    reason, measured = _tb_hidden()
    found = _judged(tmp_path, {TB: lambda tc: _failed_in_sanity(
        tc, reason, measured)})
    assert _not_measured(found) == [
        f'node vm GPU 3: not measured by {TB} (sanity: p2p uni matrix '
        f'lists 3 GPUs (GPU 00, GPU 01, GPU 02), expected 4)']
    assert found.status == verdict.EXIT_FAILED
    # the check's own line stays, whole
    assert any(f.test == TB and f.reason == f'sanity: {reason}'
               for f in found.failures())


def test_a_gpu_hidden_from_babelstream_is_named(tmp_path):
    reason, measured = _bs_hidden(tmp_path)
    found = _judged(tmp_path, {BS: lambda tc: _failed_in_sanity(
        tc, reason, measured)})
    [line] = _not_measured(found)
    assert line == (f'node vm GPU 3: not measured by {BS} (sanity: '
                    f'expected 4 per-GPU outputs (stream.<host>.gpu<N>.out), '
                    f'found 3)')
    assert found.status == verdict.EXIT_FAILED


def test_a_gpu_hidden_from_every_check_is_one_line(tmp_path):
    """Once per node: one line per GPU, naming each check that missed it
    with its failure."""
    tb, bs = _tb_hidden(), _bs_hidden(tmp_path)
    found = _judged(tmp_path, {
        TB: lambda tc: _failed_in_sanity(tc, *tb),
        BS: lambda tc: _failed_in_sanity(tc, *bs)})
    [line] = _not_measured(found)
    assert line.startswith(f'node vm GPU 3: not measured by {BS} (sanity: ')
    assert line.endswith(f'found 3), {TB} (sanity: p2p uni matrix lists 3 '
                         f'GPUs (GPU 00, GPU 01, GPU 02), expected 4)')


def test_a_check_whose_output_shows_no_gpu_names_every_gpu(tmp_path):
    found = _judged(tmp_path, {TB: lambda tc: _failed_in_sanity(
        tc, 'sanity error: output file missing: rfm_job.out', [])})
    assert _not_measured(found) == [
        f'node vm GPU {n}: not measured by {TB} (sanity: output file '
        f'missing: rfm_job.out)' for n in range(4)]


def test_a_check_of_the_whole_node_names_no_gpu(tmp_path):
    """A sanity failure without the record (a check that measures the
    node as a whole, or a report from before it): its own line only."""
    reason, _ = _tb_hidden()
    found = _judged(tmp_path, {TB: lambda tc: _failed_in_sanity(
        tc, reason, None)})
    assert _not_measured(found) == []
    assert found.status == verdict.EXIT_FAILED


def test_a_record_of_another_shape_is_not_trusted(tmp_path):
    reason, _ = _tb_hidden()
    found = _judged(tmp_path, {TB: lambda tc: _failed_in_sanity(
        tc, reason, ['0', -1])})
    assert _not_measured(found) == []
    assert found.status == verdict.EXIT_FAILED


def test_the_real_2_x_h200_sanity_failures_name_the_loaded_gpu():
    """Recorded before the per-GPU record existed: each failure's line
    names GPU 1 (the loaded one) or its link; nothing passes."""
    found = verdict.judge(results.load([str(H200X2 /
                                             'gpu_last_loaded.json')]))
    assert found.status == verdict.EXIT_FAILED
    lines = [f.line() for f in found.failures()]
    assert len(lines) == 2 and _not_measured(found) == []
    assert lines[0].startswith(f'node vm GPU 1: {BS}: sanity: ')
    assert lines[1].startswith(f'node vm: {TB}: sanity: ')
    assert 'GPU 01 -> GPU 00: 63.01 GB/s' in lines[1]


def test_a_gpu_hidden_from_babelstream_fails_sanity_recording_the_rest(
        tmp_path):
    """The MI300X guide's BabelStream replayed through the real check on
    its 8-GPU node (each GPU shows the guide's table n % 2, as
    tests/test_sibling_figures.py) with GPU 7's output gone, as when the
    runtime hides it: sanity fails and the record keeps GPUs 0-6."""
    shown = mi300x_recordings()['BabelStreamHipCheck']
    stream = {f'stream.guidenode.gpu{gpu}.{ext}':
              shown[f'stream.guidenode.gpu{gpu % 2}.{ext}']
              for gpu in range(7) for ext in ('out', 'err')}
    proc, report = replay('mi300x', {'BabelStreamHipCheck': stream},
                          ['checks/babelstream.py'], [], tmp_path)
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    tc = one_case(report, 'BabelStreamHipCheck')
    assert (tc['result'], tc['fail_phase']) == ('fail', 'sanity')
    assert 'expected 8 per-GPU outputs' in tc['fail_reason']
    assert 'missing stream.guidenode.gpu7.out' in tc['fail_reason']
    assert tc['hpcval_measured_gpus'] == list(range(7))


NCCL = 'NcclTestsNodeCheck %collective=all_reduce'


def test_nccl_tests_banner_lists_the_devices_it_measured():
    text = (H200X2 / 'nccl' / 'ar_full_c1.txt').read_text()
    assert listed_devices(text) == {0, 1}
    # nccl-tests' common.cu prints "Invalid number of GPUs" (stderr) and
    # stops before its device list: the real output cut there
    assert listed_devices(text.split('# Using devices')[0]) == set()


def test_a_collective_that_saw_no_gpu_names_every_gpu(tmp_path):
    """healthy01's all_reduce case (skipped there: its build failed) as
    the sanity failure of a run stopped at "Invalid number of GPUs", with
    the node's health record of the same run's BabelStream case."""
    report = json.loads(HEALTHY.read_text())
    cases = {tc['display_name']: tc for tc in report['runs'][0]['testcases']}
    nccl = cases[NCCL]
    nccl['hpcval_health'] = cases[BS]['hpcval_health']
    nccl['job_nodelist'] = cases[BS]['job_nodelist']
    _failed_in_sanity(
        nccl, 'sanity error: no result table header ("#  size  count  type '
        '..."): the run died before its first size; stderr: Invalid number '
        'of GPUs: 4 requested but only 3 were found.', [])
    path = tmp_path / 'nccl.json'
    path.write_text(json.dumps(report))
    found = verdict.judge(results.load([str(path)]))
    assert _not_measured(found) == [
        f'node vm GPU {n}: not measured by {NCCL} (sanity: no result table '
        f'header ("#  size  count  type ..."))' for n in range(4)]
    assert found.status == verdict.EXIT_FAILED
