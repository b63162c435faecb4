"""TransferBench checks through ReFrame on the MI300X box.

Listing and dry run (job scripts as the guide's command lines), then real
runs whose executables replay the AMD MI300X validation guide's own example
outputs from a prebuilt_dir: the checks must pass them, and fail degraded
copies naming the GPU pair or the stopped test.
"""
import pytest
import yaml

from gpu_views import without_last_gpu
from mi300x_guide import guide_outputs, replayer
from rfmrun import ROOT, one_case, perf, reframe


def _rfm(*args, tmp_path):
    return reframe(*args, '-n', 'TransferBench', '--system', 'mi300x',
                   tmp_path=tmp_path, checks=('checks/transferbench.py',))


def test_listing(tmp_path):
    proc, _ = _rfm('-l', tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ('TransferBenchCheck %preset=a2a', 'TransferBenchCheck '
                 '%preset=p2p', 'TransferBenchCheck %preset=config'):
        assert name in proc.stdout
    assert 'TransferBenchCudaCheck' not in proc.stdout      # no NVIDIA GPU


def test_dry_run_job_scripts(tmp_path):
    proc, _ = reframe('--dry-run', '--system', 'mi300x', '-t',
                      'transferbench', tmp_path=tmp_path,
                      checks=('checks/transferbench.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    stage = tmp_path / 'rfm' / 'stage' / 'mi300x' / 'default' / 'rocm'
    # the benchmark's line (p2p's re-measure follows it)
    tb = sorted(next(x for x in p.read_text().splitlines()
                     if x.startswith('mpirun '))
                for p in stage.glob('TransferBenchCheck_*/rfm_job.sh'))
    assert len(tb) == 3
    assert [line.split('/build/TransferBench ')[1] for line in tb][1:] == \
        ['a2a', 'p2p']
    assert tb[0].startswith('mpirun -np 1 ') and \
        tb[0].endswith('/build/example.cfg')
    [build] = stage.glob('TransferBenchBuild_*/rfm_build.sh')
    assert 'make -C tree/src -j' in build.read_text()
    assert '../TransferBench ROCM_PATH="${ROCM_PATH:-/opt/rocm}" ' \
        'LDFLAGS="-lpthread -lnuma"' in build.read_text()


def test_bad_sibling_factor_is_refused(tmp_path):
    proc, _ = _rfm('--dry-run', '-S', 'sibling_factor=0.5', tmp_path=tmp_path)
    assert '-S sibling_factor=0.5: must be in (1, 2]' in \
        proc.stdout + proc.stderr


# -- real runs replaying the guide's outputs --------------------------------

@pytest.fixture(scope='module')
def guide_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('guide')
    bins = replayer(tmp / 'bin', guide_outputs())
    return reframe('-r', '--system', 'mi300x', '-t', 'transferbench',
                   '-S', f'prebuilt_dir={bins}',
                   # no MI300X here: the probe would fail the node
                   '-S', 'TransferBenchCheck.health_probe=no', tmp_path=tmp,
                   checks=('checks/transferbench.py',))


def _reference(check, metric):
    path = ROOT / 'references' / 'mi300x.yaml'
    if not path.exists():
        return None
    for entry in reversed(yaml.safe_load(path.read_text())['entries']):
        if entry['check'] in (check, 'TransferBench', 'RocblasBench') and \
                metric in entry['metrics']:
            return entry['metrics'][metric]['value']
    return None


def test_guide_outputs_through_the_checks(guide_run):
    proc, report = guide_run
    assert report, proc.stdout + proc.stderr
    a2a = one_case(report, 'TransferBenchCheck %preset=a2a')
    assert a2a['result'] == 'pass', a2a['fail_reason']
    values = perf(a2a)
    assert values['avg_bw'][0] == 35.776 and values['min_link_bw'][0] == 28.583
    # the 56 links, and each over its siblings' median
    assert values['gpu03_to_gpu01'][0] == 28.583 and len(values) == 4 + 2 * 56

    p2p = one_case(report, 'TransferBenchCheck %preset=p2p')
    assert p2p['result'] == 'pass', p2p['fail_reason']
    values = perf(p2p)
    assert (values['uni_gpu_to_gpu'][0], values['bidir_gpu_to_gpu'][0]) == \
        (48.44, 46.24)
    assert values['uni_gpu00_to_gpu01'][0] == 48.46

    cfg = one_case(report, 'TransferBenchCheck %preset=config')
    values = perf(cfg)
    assert values['test2'][0] == 48.349
    assert (values['test3_transfer0'][0], values['test3_transfer1'][0]) == \
        (32.809, 39.603)
    # the guide's example DMA figure sits under its own Table 3 floor
    test2 = _reference('TransferBenchCheck', 'test2')
    if test2 == 48.4:
        assert cfg['result'] == 'fail'
        assert 'test2' in cfg['fail_reason']
    else:
        assert cfg['result'] == 'pass', cfg['fail_reason']


@pytest.fixture(scope='module')
def degraded_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('degraded')
    out = guide_outputs()
    out['a2a'] = out['a2a'].replace('GPU 03 30.883 28.583 30.972 N/A 28.649 '
                                    '30.883', 'GPU 03 30.883 28.583 30.972 '
                                    'N/A 28.649 18.530')
    out['p2p'] = out['p2p'].replace('GPU 02 -> 54.52 37.48 46.19 46.18 N/A '
                                    '46.29 46.54', 'GPU 02 -> 54.52 37.48 '
                                    '46.19 46.18 N/A 46.29 27.72')
    out['cfg'] = out['cfg'].split('## "Read-only" by CPU 0')[0]
    bins = replayer(tmp / 'bin', out)
    return reframe('-r', '--system', 'mi300x', '-t', 'transferbench',
                   '-S', f'prebuilt_dir={bins}',
                   # no MI300X here: the probe would fail the node
                   '-S', 'TransferBenchCheck.health_probe=no', tmp_path=tmp,
                   checks=('checks/transferbench.py',))


def test_degraded_outputs_fail_naming_what(degraded_run):
    proc, report = degraded_run
    assert report, proc.stdout + proc.stderr
    a2a = one_case(report, 'TransferBenchCheck %preset=a2a')
    # each link at 60 % of its siblings: named in the performance stage,
    # every figure kept
    assert (a2a['result'], a2a['fail_phase']) == ('fail', 'performance')
    assert [m for m, v in perf(a2a).items() if v[-1] == 'fail'] == \
        ['a2a_vs_siblings@gpu03_to_gpu05']
    assert perf(a2a)['gpu03_to_gpu05'][0] == 18.53
    p2p = one_case(report, 'TransferBenchCheck %preset=p2p')
    assert (p2p['result'], p2p['fail_phase']) == ('fail', 'performance')
    assert [m for m, v in perf(p2p).items() if v[-1] == 'fail'] == \
        ['bidir_vs_siblings@gpu02_to_gpu04']
    cfg = one_case(report, 'TransferBenchCheck %preset=config')
    assert 'the config file has 6 tests, the output 4 (last: Test 4)' in \
        cfg['fail_reason']


@pytest.fixture(scope='module')
def hidden_run(tmp_path_factory):
    """p2p of the guide's node with GPU 07 hidden from the runtime."""
    tmp = tmp_path_factory.mktemp('hidden')
    out = guide_outputs()
    out['p2p'] = without_last_gpu(out['p2p'], 'GPU 07')
    bins = replayer(tmp / 'bin', out)
    return reframe('-r', '--system', 'mi300x', '-n',
                   'TransferBenchCheck%preset=p2p',
                   '-S', f'prebuilt_dir={bins}', tmp_path=tmp,
                   checks=('checks/transferbench.py',))


def test_a_hidden_gpu_fails_sanity_recording_the_gpus_measured(
        hidden_run, guide_run):
    """The GPUs the output showed are recorded before the parse refuses
    it: the verdict names the one missing (tests/test_not_measured.py)."""
    proc, report = hidden_run
    assert report, proc.stdout + proc.stderr
    p2p = one_case(report, 'TransferBenchCheck %preset=p2p')
    assert (p2p['result'], p2p['fail_phase']) == ('fail', 'sanity')
    assert 'p2p uni matrix lists 7 GPUs' in p2p['fail_reason']
    assert p2p['hpcval_measured_gpus'] == list(range(7))
    assert p2p['hpcval_components'] == {}
    _, whole = guide_run
    assert one_case(whole, 'TransferBenchCheck %preset=p2p')[
        'hpcval_measured_gpus'] == list(range(8))
    assert one_case(whole, 'TransferBenchCheck %preset=a2a')[
        'hpcval_measured_gpus'] == list(range(8))
    # a config's transfers are the site's: not GPU by GPU
    assert one_case(whole, 'TransferBenchCheck %preset=config')[
        'hpcval_measured_gpus'] is None
