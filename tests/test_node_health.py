"""The node-health test (checks/node_health.py): ReFrame's own result
says what ``hpcval verdict`` says of the node's health, on real ReFrame
runs on ``local`` with an nvidia-smi that fails the real way (exit 9) or
replays the lent H100's captured outputs."""
import os

from rfmrun import VENV_BIN, by_name, one_case, perf, reframe
from test_health import DRIVER_FAILED, FAKE_SMI, REPLAY_SMI, SMI

from hpcval import cli
from hpcval.benchmarks.node_health import failure_lines


def _bin(tmp_path, script):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'nvidia-smi').write_text(script)
    (bindir / 'nvidia-smi').chmod(0o755)
    return {'PATH': os.pathsep.join((str(bindir), str(VENV_BIN),
                                     os.environ['PATH']))}


def _run(tmp_path, env, *args, benchmark=True):
    more = ('-n', 'Mpi4pyPingPongCheck%placement=on_node') if benchmark \
        else ()
    return reframe('-n', 'NodeHealthCheck', *more, '-r',
                   '--system', 'local', *args, tmp_path=tmp_path, env=env,
                   checks=('checks/node_health.py',
                           'checks/mpi4py_pingpong.py'))


def test_a_failing_nvidia_smi_fails_reframe_naming_node_and_tool(tmp_path,
                                                                 capsys):
    proc, report = _run(tmp_path, _bin(tmp_path, FAKE_SMI))
    assert proc.returncode != 0, proc.stdout
    host = report['session_info']['hostname']
    line = f'node {host}: nvidia-smi failed (exit 9): {DRIVER_FAILED}'
    assert line in proc.stdout
    health = one_case(report, 'NodeHealthCheck')
    assert health['result'] == 'fail' and line in health['fail_reason']
    # the benchmark's figures are still logged (judged against their
    # references: this test does not depend on the host's speed)
    ping = one_case(report, 'Mpi4pyPingPongCheck')
    assert ping['fail_phase'] in (None, 'performance'), ping['fail_reason']
    assert 'latency_8B' in perf(ping)
    # the verdict names the failure once, in the same words
    status = cli.main(['verdict', str(tmp_path / 'report.json')])
    out = capsys.readouterr().out
    assert status == 1 and out.count(f'FAIL {line}') == 1, out
    assert 'scontrol' not in out        # local: nothing to drain
    assert 'NodeHealthCheck: sanity' not in out


def test_a_healthy_gpu_node_passes(tmp_path):
    proc, report = _run(tmp_path, _bin(tmp_path, REPLAY_SMI.format(smi=SMI)),
                        benchmark=False)
    health = one_case(report, 'NodeHealthCheck')
    assert health['result'] == 'pass', health['fail_reason']
    assert health['hpcval_health']['tool'] == 'nvidia-smi'
    assert proc.returncode == 0, proc.stdout


def test_without_the_probe_it_is_skipped_not_passed(tmp_path):
    proc, report = _run(tmp_path, _bin(tmp_path, FAKE_SMI),
                        '-S', 'health_probe=no', benchmark=False)
    [health] = by_name(report, 'NodeHealthCheck')
    assert health['result'] == 'skip'
    assert 'health_probe=no' in health['hpcval_skip_reason']


def test_no_health_test_without_gpu_feature_or_tool(tmp_path):
    env = {'PATH': os.pathsep.join(
        p for p in os.environ['PATH'].split(os.pathsep)
        if not any(os.access(os.path.join(p, t), os.X_OK)
                   for t in ('nvidia-smi', 'amd-smi', 'rocm-smi', 'hl-smi')))}
    proc, _ = reframe('-n', 'NodeHealthCheck', '-l', '--system', 'local',
                      tmp_path=tmp_path, env=env,
                      checks=('checks/node_health.py',))
    assert 'Found 0 check(s)' in proc.stdout, proc.stdout


def test_failure_lines_are_the_verdicts():
    record = {'node': 'n1', 'tool': 'nvidia-smi',
              'before': {'rc': 9, 'message': DRIVER_FAILED, 'gpus': []},
              'after': {'rc': 9, 'message': DRIVER_FAILED, 'gpus': []}}
    assert failure_lines(record, 'local', 'default') == [
        f'node n1: nvidia-smi failed (exit 9): {DRIVER_FAILED}']
    assert failure_lines({}, 'local', 'default') == []


def test_hpcval_run_ends_with_the_verdicts_headline(tmp_path):
    import subprocess
    from rfmrun import ROOT
    env = dict(os.environ, **_bin(tmp_path, FAKE_SMI),
               RFM_SQLITE_DB_FILE=str(tmp_path / 'results.db'),
               HOME=str(tmp_path))
    env.pop('RFM_CONFIG_FILES', None)
    report = tmp_path / 'run.json'
    proc = subprocess.run(
        [str(VENV_BIN / 'hpcval'), 'run', '-c', 'checks/node_health.py',
         '-r', '--system', 'local', '--prefix', str(tmp_path / 'rfm'),
         '--report-file', str(report)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    last = proc.stdout.rstrip().splitlines()[-1]
    assert last == (f'hpcval verdict: FAILED (exit 1)  (all of it: hpcval '
                    f'verdict {report})'), proc.stdout[-2000:]
    assert proc.returncode != 0         # ReFrame's own status
