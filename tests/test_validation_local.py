"""The validation suites (ReFrame modes) and the strict setting, run for
real on this machine: a source made unreachable leaves the quick suite
incomplete (hpcval verdict exit 2, naming what was not validated), and
with -S strict=yes fails it (ReFrame and the verdict exit 1)."""
import json

from hpcval import cli, verdict
from rfmrun import reframe

UNREACHABLE = 'BabelStreamSource.repo_url=file:///nonexistent/BabelStream.git'


def _listed(proc):
    return {line.split()[1] for line in proc.stdout.splitlines()
            if line.startswith('- ')}


def test_modes_select_their_checks(tmp_path):
    proc, _ = reframe('-l', '--mode', 'quick', '--system', 'local',
                      tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:]
    # and, to be skipped naming the GPU missing here, the GPU checks
    assert _listed(proc) == {'Mpi4pyPingPongCheck', 'BabelStreamCpuCheck',
                             'LikwidBenchCheck', 'BabelStreamCudaCheck',
                             'BabelStreamHipCheck', 'NcclTestsNodeCheck',
                             'RcclTestsNodeCheck', 'TransferBenchCheck',
                             'TransferBenchCudaCheck'}
    assert '%placement=on_node' in proc.stdout
    # the CPU's figure is likwid-bench's peakflops, not its bandwidths
    assert '%kernel=peakflops' in proc.stdout
    assert '%kernel=copy' not in proc.stdout
    proc, _ = reframe('-l', '--mode', 'acceptance', '--system', 'local',
                      tmp_path=tmp_path)
    assert {'OsuCpuCheck', 'LikwidBenchCheck', 'Mpi4pyPingPongCheck'} <= \
        _listed(proc)
    # GPU nodes: every GPU, the collectives and each pair's link
    proc, _ = reframe('-l', '--mode', 'quick', '--system', 'mi300x',
                      tmp_path=tmp_path, env={'RFM_WARN_AS_ERROR': 'n'})
    assert {'BabelStreamHipCheck', 'RcclTestsNodeCheck',
            'TransferBenchCheck'} <= _listed(proc), proc.stdout[-2000:]
    assert 'RcclTestsMultiNodeCheck' not in proc.stdout
    assert '%preset=a2a' not in proc.stdout


def _verdict(report_path, capsys, *args):
    status = cli.main(['verdict', str(report_path), *args])
    return status, capsys.readouterr().out


def test_an_unreachable_source_leaves_the_suite_incomplete(tmp_path, capsys):
    # the quick suite's BabelStream alone (with --mode quick, -n adds to
    # the suite's selection instead of narrowing it)
    proc, report = reframe('-r', '--system', 'local',
                           '-n', 'BabelStreamCpuCheck', '-S', UNREACHABLE,
                           tmp_path=tmp_path,
                           checks=('checks/babelstream.py',))
    assert proc.returncode == 0     # ReFrame itself says PASSED
    run, = report['runs']
    assert (run['num_cases'], run['num_skipped'], run['num_failures']) == \
        (3, 3, 0)
    source = next(tc for run in report['runs'] for tc in run['testcases']
                  if tc['display_name'].startswith('BabelStreamSource'))
    assert 'unreachable' in source['hpcval_skip_reason']
    status, out = _verdict(tmp_path / 'report.json', capsys)
    assert status == verdict.EXIT_INCOMPLETE
    assert ('SKIP BabelStreamCpuCheck %build.model=omp: needs '
            'BabelStreamBuild %model=omp ~local:default+gnu: needs '
            'BabelStreamSource ~local: file:///nonexistent/BabelStream.git '
            '(v5.0) unreachable') in out
    assert 'no test case in the input' not in out
    assert '1 test case(s) skipped, not validated' in out


def test_strict_fails_what_would_be_skipped(tmp_path, capsys):
    proc, _ = reframe('-r', '--system', 'local',
                      '-n', 'BabelStreamCpuCheck', '-S', UNREACHABLE,
                      '-S', 'strict=yes', tmp_path=tmp_path,
                      checks=('checks/babelstream.py',))
    assert proc.returncode == 1
    assert 'strict, and it would be skipped: file:///nonexistent/' \
        'BabelStream.git (v5.0) unreachable' in proc.stdout
    status, out = _verdict(tmp_path / 'report.json', capsys, '--format',
                           'json')
    data = json.loads(out)
    assert status == verdict.EXIT_FAILED == data['status']
    fail, = data['partitions'][0]['failures']
    assert fail['test'] == 'BabelStreamSource ~local'


def test_the_provenance_command_runs_here(tmp_path):
    import subprocess
    from hpcval import provenance
    subprocess.run(['bash', '-c', provenance.command()], cwd=tmp_path,
                   check=True, timeout=60)
    found = provenance.read((tmp_path / provenance.FILE).read_text())
    assert found['kernel'] and found['cpu']
