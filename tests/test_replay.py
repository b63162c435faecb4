"""Replays of the seeds' example outputs through the real checks
(config/replay.py, hpcval.replay): labelled as replays everywhere, judged
as the documents' own tables imply, and broken recordings fail sanity
with the reason."""
import json
import pathlib

import pytest

from mutate import cut_after
from replays import (KESTREL, NOT_RECORDED, SYSTEMS, kestrel_recordings,
                     mi300x_recordings, replay)
import seedtext
from rfmrun import ROOT, by_name, cases, reframe

# mi300x: what the guide's Tables 1-6 say of its own example outputs
MI300X_VERDICTS = {
    'TransferBenchCheck %preset=a2a': 'pass',        # 35.776 >= 32.9 (T1)
    'TransferBenchCheck %preset=p2p': 'pass',        # 48.44, 46.24 (T2)
    'TransferBenchCheck %preset=config': 'fail',     # Test 2 48.349 < 48.4 (T3)
    'RcclTestsNodeCheck %collective=all_reduce': 'pass',   # 315.84 >= 304 (T4)
    'RocblasBenchCheck %gemm=fp32': 'pass',          # 97190.6 >= 94100 (T5)
    'RocblasBenchCheck %gemm=f16_strided': 'pass',   # 159783 >= 130600
    'RocblasBenchCheck %gemm=i8_strided': 'pass',    # 177478 >= 162700
    'BabelStreamHipCheck': 'pass',                   # both GPUs shown >= T6
}


@pytest.fixture(scope='module')
def reports(replay_reports):
    """{system: report path}: conftest's session fixture (one set of
    replays for every module that reads them)."""
    return replay_reports


def _load(path):
    return json.loads(pathlib.Path(path).read_text())


def _perf(tc):
    return {k.rsplit(':', 1)[-1]: v[0] for k, v in tc['perfvalues'].items()}


def _check(report, name):
    [tc] = [tc for tc in by_name(report, name) if not tc['fixture']]
    return tc


def test_reports_exist(reports):
    # all six systems, local too: the four without a seed example replay
    # the shared CPU fixtures
    assert set(reports) == set(SYSTEMS) >= set(NOT_RECORDED) | {
        'mi300x', 'kestrel', 'local'}
    for path in reports.values():
        assert cases(_load(path))


def test_every_case_is_labelled_a_replay(reports):
    for system, path in reports.items():
        for tc in cases(_load(path)):
            assert 'replay' in tc['tags'], (system, tc['display_name'])
            assert tc['descr'].startswith('REPLAY'), tc['descr']
            assert tc['scheduler'] == 'local' and tc['system'] == system
            if tc['fixture']:
                continue
            assert tc['perfvalues'], (system, tc['display_name'])
            folder = pathlib.Path(tc['outputdir'] if tc['result'] == 'pass'
                                  else tc['stagedir'])
            script = (folder / 'rfm_job.sh').read_text()
            assert '# hpcval REPLAY of ' in script
            assert (folder / 'rfm_job.out').read_text().startswith(
                'hpcval REPLAY of ')


def test_mi300x_verdicts(reports):
    report = _load(reports['mi300x'])
    checks = [tc for tc in cases(report) if not tc['fixture']]
    assert len(checks) == len(MI300X_VERDICTS)
    for name, verdict in MI300X_VERDICTS.items():
        tc = _check(report, name)
        assert tc['result'] == verdict, (name, tc['fail_reason'])

    cfg = _check(report, 'TransferBenchCheck %preset=config')
    assert cfg['fail_phase'] == 'performance'
    assert 'test2=48.349 GB/s, expected 48.4' in cfg['fail_reason']
    assert _perf(cfg)['test1'] == 47.774
    assert _perf(_check(report, 'RcclTestsNodeCheck'))[
        'busbw_inplace_largest'] == 315.84
    stream = _check(report, 'BabelStreamHipCheck')
    assert 'excerpt' in stream['tags'] and 'EXCERPT' in stream['descr']
    # the minimum over the two GPUs the guide prints
    assert _perf(stream)['copy'] == 4255995.148
    assert _perf(stream)['dot'] == 3878410.495


def _seed_maxima(title):
    """Maximum out-of-place and in-place busbw of a NREL Kestrel collective benchmark table, read
    straight from its columns."""
    rows = [line.split() for line in
            seedtext.fenced_block(KESTREL, f'### {title} reference')
            .splitlines() if line.split() and line.split()[0].isdigit()]
    return max(float(r[7]) for r in rows), max(float(r[11]) for r in rows)


@pytest.mark.parametrize('collective,title', [('all_reduce', 'AllReduce'),
                                              ('all_gather', 'AllGather')])
def test_kestrel_busbw_is_the_seeds(reports, collective, title):
    tc = _check(_load(reports['kestrel']),
                f'NcclTestsMultiNodeCheck %collective={collective}')
    assert tc['result'] == 'pass', tc['fail_reason']
    assert 'excerpt' in tc['tags']
    assert tc['num_tasks'] == 64        # the seed's 16 nodes x 4 GPUs
    perf = _perf(tc)
    assert (perf['busbw_outofplace_max'], perf['busbw_inplace_max']) == \
        _seed_maxima(title)
    assert 'avg_busbw' not in perf      # no footer in the excerpt


@pytest.fixture(scope='module')
def broken_mi300x(tmp_path_factory):
    """The guide's RCCL output cut after the 1 MiB row, and its fp32 GEMM
    output with a recorded exit status 1."""
    rec = mi300x_recordings()
    rccl = 'RcclTestsNodeCheck%collective=all_reduce'
    fp32 = 'RocblasBenchCheck%gemm=fp32'
    recordings = {rccl: {'stdout': cut_after(rec[rccl]['stdout'],
                                             '1048576 262144 ')},
                  fp32: {**rec[fp32], 'exit_code': '1'}}
    return replay('mi300x', recordings, ['checks/nccl_tests.py',
                                         'checks/rocblas_bench.py'],
                  SYSTEMS['mi300x'][2], tmp_path_factory.mktemp('broken'))


def test_broken_recording_is_a_sanity_failure(broken_mi300x):
    proc, report = broken_mi300x
    assert report, proc.stdout + proc.stderr
    rccl = _check(report, 'RcclTestsNodeCheck')
    assert (rccl['result'], rccl['fail_phase']) == ('fail', 'sanity')
    assert 'no "Avg bus bandwidth" footer after the row for 1048576 B: ' \
        'the output is truncated' in rccl['fail_reason'], rccl['fail_reason']
    assert 'Traceback' not in rccl['fail_reason']
    gemm = _check(report, 'RocblasBenchCheck %gemm=fp32')
    assert (gemm['result'], gemm['fail_phase']) == ('fail', 'sanity')
    assert 'exited with code 1' in gemm['fail_reason']
    assert 'replay' in rccl['tags'] and 'replay' in gemm['tags']


def test_excerpt_without_its_note_fails_as_a_whole_output(tmp_path):
    """What hpcval says of NREL Kestrel collective benchmark's table taken as a complete output."""
    proc, report = replay('kestrel', kestrel_recordings(excerpt=False),
                          ['checks/nccl_tests.py'], SYSTEMS['kestrel'][2],
                          tmp_path)
    assert report, proc.stdout + proc.stderr
    for tc in [tc for tc in cases(report) if not tc['fixture']]:
        assert (tc['result'], tc['fail_phase']) == ('fail', 'sanity')
        assert 'no "Avg bus bandwidth" footer' in tc['fail_reason']
        assert 'excerpt' not in tc['tags']


@pytest.mark.parametrize('config,setting,message', [
    # a real configuration would submit the replay as a job
    ('settings.py', 'replay_dir=/tmp', 'replays run with -C config/replay.py'),
    ('replay.py', None, 'config/replay.py runs nothing: give -S replay_dir'),
    ('replay.py', 'replay_dir=/tmp/x;id', 'only letters, digits'),
])
def test_misuse_is_refused(tmp_path, config, setting, message):
    args = ['-r', '--system', 'mi300x', '-n', 'RocblasBenchCheck%gemm=fp32']
    proc, report = reframe(*args, *(['-S', setting] if setting else []),
                           tmp_path=tmp_path, checks=['checks/rocblas_bench.py'],
                           env={'RFM_CONFIG_FILES': str(ROOT / 'config' /
                                                        config)})
    if report is None:      # an unsafe value stops the run at load
        assert proc.returncode != 0 and message in proc.stderr
        return
    # the first test to meet it fails (the source fixture, where it runs)
    reasons = [tc['fail_reason'] or '' for tc in cases(report)]
    assert any(message in r for r in reasons), reasons
    assert not [tc for tc in cases(report)
                if tc['result'] == 'pass' and not tc['fixture']]
