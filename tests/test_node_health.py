"""The node-health test (checks/node_health.py): ReFrame's own result
says what ``hpcval verdict`` says of the node's health, on real ReFrame
runs on ``local`` with an nvidia-smi that fails the real way (exit 9),
the whole checks/ once a session (conftest's ``failing_smi_run``), or
replays the lent H100's captured outputs."""
import os

from rfmrun import VENV_BIN, by_name, cases, one_case, perf, reframe
from test_health import DRIVER_FAILED, FAKE_SMI, REPLAY_SMI, SMI

from hpcval import cli, records
from hpcval.benchmarks.node_health import failure_lines


def _bin(tmp_path, script):
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    (bindir / 'nvidia-smi').write_text(script)
    (bindir / 'nvidia-smi').chmod(0o755)
    return {'PATH': os.pathsep.join((str(bindir), str(VENV_BIN),
                                     os.environ['PATH']))}


def _run(tmp_path, env, *args):
    return reframe('-n', 'NodeHealthCheck', '-r', '--system', 'local', *args,
                   tmp_path=tmp_path, env=env,
                   checks=('checks/node_health.py',))


def test_a_failing_nvidia_smi_fails_reframe_naming_node_and_tool(
        failing_smi_run, capsys):
    """``reframe -c checks/ -r --system local`` with a failing nvidia-smi
    first on PATH (the session's ``failing_smi_run``: every check that
    runs here) exits non-zero, its summary naming the node and the tool;
    README command 1's run without it (``local_run``) passes
    (test_live_local.test_run_succeeds)."""
    proc, report, path = failing_smi_run
    assert proc.returncode != 0, proc.stdout[-3000:]
    host = report['session_info']['hostname']
    line = f'node {host}: nvidia-smi failed (exit 9): {DRIVER_FAILED}'
    summary = proc.stdout[proc.stdout.index('SUMMARY OF FAILURES'):]
    assert line in summary, proc.stdout[-3000:]
    health = one_case(report, 'NodeHealthCheck')
    assert health['result'] == 'fail' and line in health['fail_reason']
    # the whole checks/ ran: the benchmarks too, their figures still logged
    # (judged against their references: no test depends on the host's speed)
    names = {tc['display_name'].split()[0] for tc in cases(report)}
    assert {'NodeHealthCheck', 'Mpi4pyPingPongCheck', 'BabelStreamCpuCheck',
            'OsuCpuCheck'} <= names, names
    ping = one_case(report, 'Mpi4pyPingPongCheck %placement=on_node')
    assert ping['fail_phase'] in (None, 'performance'), ping['fail_reason']
    assert 'latency_8B' in perf(ping)
    # the verdict names the failure once, in the same words
    status = cli.main(['verdict', str(path)])
    out = capsys.readouterr().out
    assert status == 1 and out.count(f'FAIL {line}') == 1, out
    assert 'scontrol' not in out        # local: nothing to drain
    assert 'NodeHealthCheck: sanity' not in out


def test_checks_selected_without_it_fail_naming_the_tool(tmp_path, capsys):
    """``-n LikwidBenchCheck`` leaves NodeHealthCheck out: the check's own
    job probed the failing nvidia-smi, and it fails naming it after its
    figures are logged; the verdict names the failure once."""
    proc, report = reframe(
        '-n', 'LikwidBenchCheck%kernel=peakflops', '-r', '--system', 'local',
        tmp_path=tmp_path, env=_bin(tmp_path, FAKE_SMI))
    assert proc.returncode != 0, proc.stdout[-3000:]
    host = report['session_info']['hostname']
    line = f'node {host}: nvidia-smi failed (exit 9): {DRIVER_FAILED}'
    assert line in proc.stdout[proc.stdout.index('SUMMARY OF FAILURES'):]
    assert not by_name(report, 'NodeHealthCheck')
    # peakflops has no reference: the health is what fails it
    tc = one_case(report, 'LikwidBenchCheck')
    assert (tc['fail_phase'], tc['fail_reason']) == (
        'performance', f'sanity error: {line}')
    assert 'peakflops_rate' in perf(tc)
    assert cli.main(['verdict', str(tmp_path / 'report.json')]) == 1
    out = capsys.readouterr().out
    assert out.count('\n  FAIL ') == 1 and f'FAIL {line}' in out, out


def test_a_healthy_gpu_node_passes(tmp_path):
    proc, report = _run(tmp_path, _bin(tmp_path, REPLAY_SMI.format(smi=SMI)))
    health = one_case(report, 'NodeHealthCheck')
    assert health['result'] == 'pass', health['fail_reason']
    assert health['hpcval_health']['tool'] == 'nvidia-smi'
    # the run records its class lineage, which references may name
    assert health['hpcval_lineage'][:2] == ['NodeHealthCheck', 'NodeHealth']
    # and the suite's check files, which a fixed mode's -c must cover
    assert 'node_health.py' in health['hpcval_suite'] and \
        'babelstream.py' in health['hpcval_suite']
    assert proc.returncode == 0, proc.stdout


def test_without_the_probe_it_is_skipped_not_passed(tmp_path):
    proc, report = _run(tmp_path, _bin(tmp_path, FAKE_SMI),
                        '-S', 'health_probe=no')
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
    record = records.decode('health', {
        'node': 'n1', 'tool': 'nvidia-smi',
        'before': {'rc': 9, 'message': DRIVER_FAILED, 'gpus': []},
        'after': {'rc': 9, 'message': DRIVER_FAILED, 'gpus': []}})
    assert failure_lines(record, 'local', 'default') == [
        f'node n1: nvidia-smi failed (exit 9): {DRIVER_FAILED}']
    assert failure_lines(None, 'local', 'default') == []


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
    assert proc.returncode == 1         # the verdict's
