"""--mode burnin (gpu-burn on every GPU, judged per GPU over time, against
its siblings and by the 1 Hz samples): real H100 gpu-burn outputs and
real health probe files (tests/gpu_burn_outputs.py), each broken one way,
read by the burn-in directly and replayed through ReFrame on kestrel
(4 x H100 a node) and ``hpcval verdict``."""
import json
import subprocess
import sys

import pytest

from gpu_burn_outputs import (H100_STAGE, burnin_health, busy_samples,
                              more_gpus, real, slowed, throttled)
from hpcval.benchmarks.gpu_burn import burnin_series
from hpcval.health import probe as health_probe
from hpcval.parsers import ParseError
from hpcval.parsers.gpu_burn import parse_gpu_burn
from hpcval.suites import MODES
from replays import REPLAY_CONFIG, replay, write_recordings
from rfmrun import ROOT, VENV_BIN, by_name, perf, reframe


def series(tmp_path, text, files):
    for name, content in files.items():
        (tmp_path / name).write_text(content)
    return burnin_series(parse_gpu_burn(text), health_probe.read(tmp_path),
                         tmp_path)


def test_each_gpu_gets_its_windows_and_sampled_series(tmp_path):
    got = series(tmp_path, more_gpus(real('h100_float_20s'), 4),
                 burnin_health(busy_samples(4)))
    assert sorted(got) == [0, 1, 2, 3]
    # 20 s: windows of a third; reports at 7 (the first), 13, 19, 20 s
    assert got[2]['gflops_first'] == 51308
    assert got[2]['gflops_last'] == 51319
    assert got[2]['sm_mhz'] == (1980, 1980, 1980)
    assert got[2]['power_w'] == (373.33, 383.9, 384.28)
    assert got[2]['temp_c'] == (43, 44, 44)


def test_a_gpu_never_seen_busy_is_named_not_passed(tmp_path):
    with pytest.raises(ParseError, match=r'burn-in not judged: GPU 3: 0 '
                       r'samples at 90%\+ use'):
        series(tmp_path, more_gpus(real('h100_float_20s'), 4),
               burnin_health(busy_samples(3)))


def test_without_the_probe_nothing_is_judged(tmp_path):
    with pytest.raises(ParseError, match='no health record'):
        burnin_series(parse_gpu_burn(real('h100_float_20s')), None,
                      tmp_path)


def test_another_process_on_a_gpu_fails_it(tmp_path):
    with pytest.raises(ParseError) as err:
        series(tmp_path, more_gpus(real('h100_float_20s'), 4),
               burnin_health(busy_samples(4), apps=True))
    assert 'GPU 3: another process, /opt/torch/.venv/bin/python3 (pid ' \
        '28303), on it before the burn-in' in str(err.value)


def test_a_cut_output_is_not_judged():
    text = more_gpus(real('h100_float_20s'), 4)
    with pytest.raises(ParseError, match='did not finish'):
        parse_gpu_burn(text[:text.index('Tested')])


def test_the_fake_tool_reports_one_gpu_throttled(tmp_path):
    rows = health_probe.parse_gpus(
        'nvidia-smi', throttled(busy_samples(4), 2, tmp_path), lenient=True)
    assert {(r['index'], tuple(r['throttle']), r['sm_mhz'])
            for r in rows} == {(0, (), 1980), (1, (), 1980), (3, (), 1980),
                               (2, ('hw_thermal_slowdown',), 1188)}


def test_the_mode_runs_gpu_burn_in_float_for_900_s():
    [mode] = [m for m in MODES if m['name'] == 'burnin']
    assert mode['options'] == ['-n', 'GpuBurnCudaCheck%precision=float$',
                               '-S', 'GpuBurnCudaCheck.burnin=900',
                               '--max-retries=1']


@pytest.fixture(scope='module')
def burnins(tmp_path_factory):
    """One replay of three burn-ins of 4 GPUs (-S burnin=60): healthy
    (float), GPU 1 slowing to 80% from 70% of the run (double), GPU 2
    reported thermally throttled by the fake nvidia-smi and GPU 3 15 C
    hotter than its siblings (float_tc); the report and its verdict."""
    tmp = tmp_path_factory.mktemp('burnin')
    bad = throttled(busy_samples(4, hotter={3: 15}), 2, tmp)
    recordings = {
        'GpuBurnCudaCheck%precision=float': {
            'stdout': more_gpus(real('h100_float_20s'), 4),
            **burnin_health(busy_samples(4))},
        'GpuBurnCudaCheck%precision=double': {
            'stdout': slowed(more_gpus(real('h100_double_20s'), 4), 1, 0.8,
                             70),
            **burnin_health(busy_samples(4))},
        'GpuBurnCudaCheck%precision=float_tc': {
            'stdout': more_gpus(real('h100_tc_float_20s'), 4),
            **burnin_health(bad, gpu=2, tmp_path=tmp)},
    }
    proc, report = replay('kestrel', recordings, ['checks/gpu_burn.py'],
                          ['GpuBurnCudaCheck.burnin=60'], tmp)
    assert report, proc.stdout[-3000:] + proc.stderr[-3000:]
    verdict = subprocess.run(
        [sys.executable, '-m', 'hpcval.cli', 'verdict',
         str(tmp / 'report.json'),
         '--format', 'json'], capture_output=True, text=True, cwd=ROOT,
        timeout=120)
    return {tc['display_name'].rpartition('=')[2]: tc
            for tc in by_name(report, 'GpuBurnCudaCheck')}, \
        json.loads(verdict.stdout)


def failing(tc):
    return sorted(name for name, v in perf(tc).items() if v[-1] == 'fail')


def test_a_healthy_burnin_passes_with_its_series_logged(burnins):
    tc = burnins[0]['float']
    assert tc['result'] == 'pass', tc['fail_reason']
    values = perf(tc)
    assert values['gflops_last_vs_first@gpu0'][:4] == \
        [pytest.approx(51319 / 51308), 1, pytest.approx(1 / 1.1 - 1), None]
    for gpu in range(4):
        assert values[f'sm_mhz_median@gpu{gpu}'][0] == 1980
        assert values[f'temp_c_max@gpu{gpu}'][0] == 44
        assert values[f'gflops_min@gpu{gpu}'][0] == 51308
    assert 'burnin' in tc['tags']


def test_a_gpu_that_slows_is_named(burnins):
    tc = burnins[0]['double']
    assert tc['result'] == 'fail'
    assert failing(tc) == ['gflops_last_vs_first@gpu1',
                           'gflops_last_vs_siblings@gpu1',
                           'gflops_vs_siblings@gpu1']
    assert perf(tc)['gflops_last_vs_first@gpu1'][0] == \
        pytest.approx(43695 / 54514, rel=1e-3)


def test_a_throttled_and_a_hot_gpu_are_named(burnins):
    tc, data = burnins
    assert failing(tc['float_tc']) == ['sm_mhz_vs_siblings@gpu2',
                                       'temp_c_vs_siblings@gpu3']
    lines = [f['line'] for p in data['partitions'] for f in p['failures']]
    # the health judge's line (the fake tool's reason), and the clock's
    assert 'node vm GPU 2: HW thermal slowdown active before and after the ' \
        'benchmark, 100% of the run (seen 0 s to 8.1 s after its first ' \
        'sample), 44 C' in lines
    assert any(line.startswith('node vm GPU 2: GpuBurnCudaCheck %precision='
                               'float_tc: sm_mhz_vs_siblings@gpu2 = 0.6 x')
               for line in lines), lines
    assert any('GPU 1: GpuBurnCudaCheck %precision=double: '
               'gflops_last_vs_first@gpu1 = 0.80' in line for line in lines)


def _verdict(path):
    return subprocess.run([str(VENV_BIN / 'hpcval'), 'verdict', str(path)],
                          capture_output=True, text=True, timeout=120)


def _one_gpu_burnin(tmp_path, name, files):
    """``--mode burnin`` on local, one H100 (a stand-in nvidia-smi for the
    node's GPU detection), the job's files replayed: (its last test case,
    hpcval verdict's process)."""
    import os
    bins = tmp_path / 'bin'
    bins.mkdir(exist_ok=True)
    smi = bins / 'nvidia-smi'
    smi.write_text('#!/bin/sh\necho "NVIDIA H100 80GB HBM3, 9.0"\n')
    smi.chmod(0o755)
    rec = write_recordings(tmp_path / name,
                           {'GpuBurnCudaCheck%precision=float': files})
    proc, report = reframe(
        '-r', '--system', 'local', '--mode', 'burnin',
        '-S', 'GpuBurnCudaCheck.burnin=60', '-S', f'replay_dir={rec}',
        tmp_path=tmp_path / name, checks=('checks/gpu_burn.py',),
        env={'RFM_CONFIG_FILES': str(REPLAY_CONFIG),
             'PATH': f"{bins}:{VENV_BIN}:{os.environ['PATH']}"})
    assert report, proc.stdout[-3000:] + proc.stderr[-3000:]
    # a run failing its health is re-measured once: the last case
    return by_name(report, 'GpuBurnCudaCheck')[-1], \
        _verdict(tmp_path / name / 'report.json')


def test_one_gpu_judged_by_its_own_first_minute(tmp_path):
    """No sibling to compare with, the last minute against the first
    still judged, and a healthy burn-in's verdict is 0; with the fake
    tool's thermal throttle it is 1, naming the GPU."""
    codes = {}
    for name, samples in (('healthy', busy_samples(1)), ('thermal',
                          throttled(busy_samples(1), 0, tmp_path))):
        tc, verdict = _one_gpu_burnin(tmp_path, name, {
            'stdout': real('h100_float_20s'),
            **burnin_health(samples, stage=H100_STAGE)})
        values = perf(tc)
        assert not any('_vs_siblings@' in name for name in values)
        assert values['gflops_last_vs_first@gpu0'][-1] == 'pass'
        codes[name] = verdict.returncode, verdict.stdout
    assert codes['healthy'][0] == 0, codes['healthy'][1]
    assert codes['thermal'][0] == 1
    assert 'FAIL node vm GPU 0: HW thermal slowdown active 100% of the ' \
        'run (seen 0 s to 8.1 s after its first sample), 44 C' in \
        codes['thermal'][1]


H200_RUN = ROOT / 'tests' / 'fixtures' / 'captured' / 'burnin' / 'h200'


def test_a_real_h200_burnin_passes_and_a_sagging_one_fails(tmp_path):
    """The real 60 s burn-in of one H200 passes; the same run with its last
    minute at 0.85 of its first fails naming GPU 0 and both figures."""
    healthy = H200_RUN / 'burnin_healthy1.json'
    proc = _verdict(healthy)
    assert proc.returncode == 0, proc.stdout
    data = json.loads(healthy.read_text())
    [case] = [tc for run in data['runs'] for tc in run['testcases']
              if tc['name'].startswith('GpuBurnCudaCheck')]
    key = next(k for k in case['perfvalues']
               if k.endswith(':gflops_last_vs_first@gpu0'))
    case['perfvalues'][key][0] = 0.85
    sagging = tmp_path / 'sagging.json'
    sagging.write_text(json.dumps(data))
    proc = _verdict(sagging)
    assert proc.returncode == 1, proc.stdout
    assert 'gflops_last_vs_first@gpu0 = 0.85' in proc.stdout, proc.stdout


H100_RUNS = ROOT / 'tests' / 'fixtures' / 'captured' / 'burnin' / 'h100'


def test_real_h100_burnins_pass_healthy_and_name_the_faulty_gpu():
    """Eleven healthy burn-ins of lent H100s pass (run2, run4, run8: 60 s;
    run5: 450 s); GPU 0 reported thermally throttled (from its start or its
    middle) or power-braked, or busy with another process, fails naming
    it and how long (run1, run3, run6, run7); the earlier
    probe's ``nvidia-smi -q -d PCIE``, which this driver refuses, failed
    closed, naming the call."""
    healthy = sorted(H100_RUNS.glob('run[2458]/burnin_healthy*.json'))
    assert len(healthy) == 11
    for path in healthy:
        proc = _verdict(path)
        assert proc.returncode == 0, proc.stdout
    for run, name, said in (
            ('run1', 'thermal', 'HW thermal slowdown active before and '
             'after the benchmark, 100% of the run'),
            ('run3', 'thermal', 'HW thermal slowdown active before and '
             'after the benchmark, 100% of the run'),
            ('run6', 'power', 'HW power brake active before and after the '
             'benchmark, 100% of the run'),
            ('run7', 'late', 'HW thermal slowdown active after the '
             'benchmark, 54% of the run (seen 34.1 s to 73.1 s after its '
             'first sample)')):
        proc = _verdict(H100_RUNS / run / f'gpu0_{name}.json')
        assert proc.returncode == 1
        assert f'FAIL node vm GPU 0: {said}' in proc.stdout, proc.stdout
    proc = _verdict(H100_RUNS / 'run3' / 'gpu0_competitor.json')
    assert proc.returncode == 1
    assert 'FAIL node vm GPU 0: GpuBurnCudaCheck %precision=float: sanity: ' \
        'sanity error: burn-in not judged: GPU 0: another process, ' \
        '/opt/torch/.venv/bin/python3 (pid 625), on it before the burn-in' \
        in proc.stdout, proc.stdout
    proc = _verdict(H100_RUNS / 'run1' / 'burnin_healthy1.json')
    assert 'FAIL node vm: PCIe replays not read before the benchmark: ' \
        'nvidia-smi -q -d PCIE failed (exit 2): Failed to parse ' \
        '--display/-d flags' in proc.stdout, proc.stdout
    # the full -q the probe reads now, as the job wrote it
    stage = H100_RUNS / 'run2' / 'stage' / 'burnin_healthy1'
    record = health_probe.read(stage)
    assert [(s.pcie_replays, s.pcie_error) for s in
            (record.before, record.after)] == \
        [({'00000000:00:06.0': 0}, '')] * 2


def test_the_check_matches_gpu_burn_by_hand_within_2_percent():
    """compare.txt: burnin.sh's table of the check's figure (its report)
    beside gpu-burn run by hand for as long on the same H200."""
    [head, row] = (H200_RUN / 'compare.txt').read_text().splitlines()
    gpu, check, hand, _ = row.split('\t')
    data = json.loads((H200_RUN / 'check_float.json').read_text())
    [case] = [tc for run in data['runs'] for tc in run['testcases']
              if tc['name'].startswith('GpuBurnCudaCheck')]
    assert perf(case)['gflops@gpu0'][0] == float(check)
    assert abs(float(check) / float(hand) - 1) < 0.02


def test_a_process_on_one_gpu_is_named_beside_a_throttled_one(tmp_path):
    """Sanity fails for GPU 3's process; ReFrame then runs the performance
    stage dry, whose health hook must not mark the case failed for its
    health alone: the verdict names GPU 3's process beside GPU 2's
    throttle (a lent H100's competitor run showed only its health)."""
    samples = throttled(busy_samples(4), 2, tmp_path)
    proc, report = replay('kestrel', {'GpuBurnCudaCheck%precision=float': {
        'stdout': more_gpus(real('h100_float_20s'), 4),
        **burnin_health(samples, apps=True, gpu=2, tmp_path=tmp_path)}},
        ['checks/gpu_burn.py'], ['GpuBurnCudaCheck.burnin=60'], tmp_path)
    [tc] = [tc for tc in by_name(report, 'GpuBurnCudaCheck')
            if tc['display_name'].endswith('=float')]
    assert (tc['fail_phase'], tc['hpcval_sanity_is_health']) == \
        ('sanity', False)
    out = _verdict(tmp_path / 'report.json').stdout
    assert 'GPU 3: GpuBurnCudaCheck %precision=float: sanity: sanity ' \
        'error: burn-in not judged: GPU 3: another process' in out, out
    assert 'GPU 2: HW thermal slowdown' in out, out


def _real_job(run, name):
    """A lent H100's burn-in job as recorded: its output, stderr and
    health probe files, to replay through today's code."""
    job = H100_RUNS / run / 'stage' / name
    return {'stdout': (job / 'rfm_job.out').read_text(),
            'stderr': (job / 'rfm_job.err').read_text(),
            **{p.name: p.read_text() for p in job.glob('hpcval_health_*')
               if not p.name.endswith(('probe.sh', 'sampler.pid'))}}


def test_the_real_competitor_run_fails_naming_gpu_0_and_the_process(
        tmp_path):
    """The lent H100's competitor burn-in (run3: gpu-burn at 22,978
    GFLOP/s beside a PyTorch SGEMM loop, 51,353 alone) replayed."""
    tc, verdict = _one_gpu_burnin(tmp_path, 'competitor',
                                  _real_job('run3', 'gpu0_competitor'))
    assert (tc['fail_phase'], tc['hpcval_sanity_is_health']) == \
        ('sanity', False)
    assert verdict.returncode == 1
    # gpu-burn's "cuInit returned 0 (no error)" is no reason of a failure
    assert 'FAIL node vm GPU 0: GpuBurnCudaCheck %precision=float: sanity: ' \
        'sanity error: burn-in not judged: GPU 0: another process, ' \
        '/opt/torch/.venv/bin/python3 (pid 625), on it before the burn-in; ' \
        'GPU 0: another process, /opt/torch/.venv/bin/python3 (pid 625), ' \
        'on it after the burn-in on first run and on re-measure\n' in \
        verdict.stdout, verdict.stdout


def test_the_real_mid_run_throttle_is_named_with_when_and_how_long(
        tmp_path):
    """run7: the wrapper reported GPU 0 thermally throttled from 34 s of
    its samples on; the real job's files replayed through today's probe
    reader and judge name the share and the span of the run."""
    tc, verdict = _one_gpu_burnin(tmp_path, 'late',
                                  _real_job('run7', 'gpu0_late'))
    assert verdict.returncode == 1
    assert 'FAIL node vm GPU 0: HW thermal slowdown active after the ' \
        'benchmark, 54% of the run (seen 34.1 s to 73.1 s after its first ' \
        'sample)' in verdict.stdout, verdict.stdout
