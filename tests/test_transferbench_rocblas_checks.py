"""TransferBench and rocblas-bench checks through ReFrame on the MI300X box.

Listing and dry run (job scripts as the guide's command lines), then real
runs whose "executables" replay the guide's own example outputs (AMD MI300X validation guide)
from a prebuilt_dir: the checks must pass them, and fail degraded copies
naming the GPU pair, the stopped test or the value.
"""
import pathlib
import stat

import pytest
import yaml

import seedtext
from hpcval.benchmarks.rocblas_bench import GEMMS
from rfmrun import ROOT, by_name, reframe

MI300X = (pathlib.Path(__file__).resolve().parent / 'fixtures' / 'documents' /
          'amd-mi300x-validation-guide.txt')
CHECKS = ['-c', 'checks/transferbench.py', '-c', 'checks/rocblas_bench.py']
# the six test lines of upstream examples/example.cfg, as the guide lists them
EXAMPLE_CFG = """\
1 4 (G0->G0->G1)
1 1 (G0->D0->G1)
-2 (G0->G0->G1 4 1M) (G1->G1->G0 8 2M)
1 32 (N0->G0->G0)
1 4 (C0->C0->N0)
1 16 (G0->G0->G0G1)
"""


def _rfm(*args, tmp_path):
    # tests/rfmrun.py adds -c checks/ itself; -n keeps the run to these checks
    return reframe(*args, '-n', 'TransferBench|RocblasBench', '--system',
                   'mi300x', tmp_path=tmp_path)


def test_listing(tmp_path):
    proc, _ = _rfm('-l', tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for name in ('TransferBenchCheck %preset=a2a', 'TransferBenchCheck '
                 '%preset=p2p', 'TransferBenchCheck %preset=config',
                 *(f'RocblasBenchCheck %gemm={g}' for g in GEMMS)):
        assert name in proc.stdout
    assert 'TransferBenchCudaCheck' not in proc.stdout      # no NVIDIA GPU


def test_dry_run_job_scripts(tmp_path):
    proc, _ = reframe('--dry-run', '--system', 'mi300x', '-t',
                      'transferbench|rocblas', tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    stage = tmp_path / 'rfm' / 'stage' / 'mi300x' / 'default' / 'rocm'
    lines = {p.parent.name: p.read_text().splitlines()[-1]
             for p in stage.glob('*Check_*/rfm_job.sh')}
    assert len(lines) == 7
    tb = sorted(v for v in lines.values() if '/TransferBench ' in v)
    assert [line.split('/build/TransferBench ')[1] for line in tb][1:] == \
        ['a2a', 'p2p']
    assert tb[0].startswith('mpirun -np 1 ') and \
        tb[0].endswith('/build/example.cfg')
    for gemm, (args, _) in GEMMS.items():
        [line] = [v for v in lines.values() if f' {args} ||' in v]
        assert line.startswith("mpirun -np 1 bash -c 'for rep in 1 2 3 4 5; "
                               "do echo \"hpcval repetition $rep\"; ")
        assert f'/rocblas-bench {args} || exit $?; done' in line
    [build] = stage.glob('TransferBenchBuild_*/rfm_build.sh')
    assert 'make -C tree/src -j' in build.read_text()
    assert '../TransferBench ROCM_PATH="${ROCM_PATH:-/opt/rocm}" ' \
        'LDFLAGS="-lpthread -lnuma"' in build.read_text()
    [build] = stage.glob('RocblasBenchBuild_*/rfm_build.sh')
    assert './install.sh --clients-only --library-path ' \
        '"${ROCM_PATH:-/opt/rocm}"' in build.read_text()


def test_bad_link_fraction_is_refused(tmp_path):
    proc, _ = _rfm('--dry-run', '-S', 'link_fraction=1.5', tmp_path=tmp_path)
    assert 'link_fraction=1.5: must be in (0, 1]' in proc.stdout + proc.stderr


# -- real runs replaying the guide's outputs --------------------------------

def _guide_outputs():
    a2a = seedtext.rst_output(MI300X, ':mark:`Summary:`',
                              'Aggregate bandwidth (CPU Timed)')
    p2p = seedtext.rst_output(MI300X, 'Bytes Per Direction',
                              'Averages (During BiDir)')
    cfg = seedtext.rst_output(MI300X, '## Single GPU-executed',
                              'Overhead: 0.140 ms')
    gemm = {}
    for name, start, end in (('gemm', 'rocblas-bench -f gemm -r s',
                              '97190.6, 1317'),
                             ('h', '--a_type h --lda', '159783, 67.2'),
                             ('i8_r', '--a_type i8_r', '177478, 60.5')):
        text = seedtext.rst_output(MI300X, start, end)
        gemm[name] = text[text.index('rocBLAS info'):]
    return {'a2a': a2a, 'p2p': p2p, 'cfg': cfg, **gemm}


def _replayer(folder, outputs):
    """prebuilt_dir whose TransferBench and rocblas-bench print ``outputs``
    (the guide's text) for the arguments they get."""
    folder.mkdir()
    for key, text in outputs.items():
        (folder / f'{key}.txt').write_text(text)
    (folder / 'example.cfg').write_text(EXAMPLE_CFG)
    scripts = {
        'TransferBench': 'case "$1" in *.cfg) cat "$D/cfg.txt";; '
                         '*) cat "$D/$1.txt";; esac',
        'rocblas-bench': 'case "$*" in *"-f gemm -r s"*) cat "$D/gemm.txt";; '
                         '*"--a_type i8_r"*) cat "$D/i8_r.txt";; '
                         '*"--a_type h"*) cat "$D/h.txt";; *) exit 1;; esac',
    }
    for name, body in scripts.items():
        exe = folder / name
        exe.write_text(f'#!/bin/bash\nD={folder}\n{body}\n')
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return folder


def _result(report, name):
    [tc] = by_name(report, name)
    return tc


@pytest.fixture(scope='module')
def guide_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('guide')
    bins = _replayer(tmp / 'bin', _guide_outputs())
    return reframe('-r', '--system', 'mi300x', '-t', 'transferbench|rocblas',
                   '-x', 'RocblasBenchCheck%gemm=bf16_strided',
                   '-S', f'prebuilt_dir={bins}', '-S', 'RocblasBenchCheck.repetitions=1',
                   tmp_path=tmp)


def _perf(tc):
    return {k.rsplit(':', 1)[-1]: v for k, v in tc['perfvalues'].items()}


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
    a2a = _result(report, 'TransferBenchCheck %preset=a2a')
    assert a2a['result'] == 'pass', a2a['fail_reason']
    perf = _perf(a2a)
    assert perf['avg_bw'][0] == 35.776 and perf['min_link_bw'][0] == 28.583
    assert perf['gpu03_to_gpu01'][0] == 28.583 and len(perf) == 4 + 56

    p2p = _result(report, 'TransferBenchCheck %preset=p2p')
    assert p2p['result'] == 'pass', p2p['fail_reason']
    perf = _perf(p2p)
    assert (perf['uni_gpu_to_gpu'][0], perf['bidir_gpu_to_gpu'][0]) == \
        (48.44, 46.24)
    assert perf['uni_gpu00_to_gpu01'][0] == 48.46

    cfg = _result(report, 'TransferBenchCheck %preset=config')
    perf = _perf(cfg)
    assert perf['test2'][0] == 48.349
    assert (perf['test3_transfer0'][0], perf['test3_transfer1'][0]) == \
        (32.809, 39.603)
    # the guide's example DMA figure sits under its own Table 3 floor
    test2 = _reference('TransferBenchCheck', 'test2')
    if test2 == 48.4:
        assert cfg['result'] == 'fail'
        assert 'test2' in cfg['fail_reason']
    else:
        assert cfg['result'] == 'pass', cfg['fail_reason']

    for gemm, gflops in (('fp32', 97190.6), ('f16_strided', 159783),
                         ('i8_strided', 177478)):
        tc = _result(report, f'RocblasBenchCheck %gemm={gemm}')
        assert tc['result'] == 'pass', tc['fail_reason']
        assert _perf(tc)['gflops'][0] == gflops


@pytest.fixture(scope='module')
def degraded_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('degraded')
    out = _guide_outputs()
    out['a2a'] = out['a2a'].replace('GPU 03 30.883 28.583 30.972 N/A 28.649 '
                                    '30.883', 'GPU 03 30.883 28.583 30.972 '
                                    'N/A 28.649 21.300')
    out['p2p'] = out['p2p'].replace('GPU 02 -> 54.52 37.48 46.19 46.18 N/A '
                                    '46.29 46.54', 'GPU 02 -> 54.52 37.48 '
                                    '46.19 46.18 N/A 46.29 30.00')
    out['cfg'] = out['cfg'].split('## "Read-only" by CPU 0')[0]
    bins = _replayer(tmp / 'bin', out)
    return reframe('-r', '--system', 'mi300x', '-t', 'transferbench',
                   '-S', f'prebuilt_dir={bins}', tmp_path=tmp)


def test_degraded_outputs_fail_naming_what(degraded_run):
    proc, report = degraded_run
    assert report, proc.stdout + proc.stderr
    a2a = _result(report, 'TransferBenchCheck %preset=a2a')
    assert a2a['result'] == 'fail'
    assert 'GPU 03 -> GPU 05: 21.3 GB/s < 0.75 x ' in a2a['fail_reason']
    p2p = _result(report, 'TransferBenchCheck %preset=p2p')
    assert 'GPU 02 -> GPU 04: 30 GB/s < 0.75 x ' in p2p['fail_reason']
    cfg = _result(report, 'TransferBenchCheck %preset=config')
    assert 'the config file has 6 tests, the output 4 (last: Test 4)' in \
        cfg['fail_reason']
