"""Hostile inputs on the run side, each through a real ReFrame run: values
that would run a command, split a command line or pass what was not
measured.  Each class is one attack; each asserts that nothing ran (no
marker file), that the user gets one message naming the variable or file
and no traceback, and that the run fails.  docs/input-policy.md lists the
classes of input refused."""
import os
import re

import pytest

from hpcval.benchmarks.source import _upstream_reachable
from hpcval.inputs import (ENVIRONMENT, EnvironmentValueError,
                           InputError, check_variable, environment)
from replays import replay, write_recordings
from rfmrun import ROOT, by_name, reframe
from test_sanity_verdicts import (ALL_GATHER, ALL_REDUCE, NCCL_TESTCHECK,
                                  NCCL_TOO_FEW_GPUS, OSU_LATENCY,
                                  OSU_TWO_PROCESSES, reduced_run)

# ReFrame's own warnings stay warnings here: the refusals must not depend
# on --warn-as-error, which rfmrun sets for every other test
WARN = {'RFM_WARN_AS_ERROR': 'no'}
CPU_RECORDING = (ROOT / 'tests' / 'fixtures' / 'captured' / 'vm' /
                 'babelstream_v5.0_omp_n20_s33554432.txt').read_text()
HOSTILE = ('x;touch {marker}', 'x$(touch {marker})', '`touch {marker}`',
           'x\n-touch {marker}', '-x', "x' '{marker}")


def run(tmp_path, *args, checks, env=None):
    return reframe(*args, tmp_path=tmp_path, checks=checks,
                   env={**WARN, **(env or {})}, timeout=300)


def refused(proc, *words):
    """The run failed with ``words`` in its output and no traceback."""
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert 'Traceback' not in out, out[-3000:]
    for word in words:
        assert word in out, (word, out[-3000:])


class TestRepoUrlAsGitOption:
    """-S <Source>.repo_url=--upload-pack=CMD: git ls-remote would run CMD."""

    def test_refused_before_anything_runs(self, tmp_path):
        marker = tmp_path / 'MARKER'
        proc, report = run(tmp_path, '-r', '-S', f'BabelStreamSource.repo_url='
                           f'--upload-pack=touch {marker}',
                           checks=('checks/babelstream.py',))
        refused(proc, "-S repo_url='--upload-pack=touch", 'BabelStreamSource',
                'nothing was run')
        assert report is None and not marker.exists()

    def test_the_probe_ends_options_before_the_url(self, tmp_path):
        marker = tmp_path / 'MARKER'
        assert not _upstream_reachable(f'--upload-pack=touch {marker}', 'v1')
        assert not marker.exists()


class TestBuildBin:
    """-S <Build>.build_bin=...: reached the launch line unquoted."""

    @pytest.mark.parametrize('value', ['build;touch {marker}', '../../x',
                                       '/tmp/x', 'build\n'])
    def test_refused(self, tmp_path, value):
        marker = tmp_path / 'MARKER'
        proc, _ = run(tmp_path, '-l', '-S', 'BabelStreamBuild.build_bin=' +
                      value.format(marker=marker),
                      checks=('checks/babelstream.py',))
        refused(proc, '-S build_bin=', 'BabelStreamBuild')
        assert not marker.exists()

    def test_quoted_at_the_launch(self, tmp_path):
        # a stage directory with a space: the executable stays one word
        where = tmp_path / 'a b'
        where.mkdir()
        proc, _ = run(where, '--dry-run', '-n', 'BabelStreamCpuCheck',
                      checks=('checks/babelstream.py',))
        assert proc.returncode == 0, proc.stdout[-3000:]
        [script] = (where / 'rfm' / 'stage').rglob(
            'BabelStreamCpuCheck*/rfm_job.sh')
        assert f"'{where}/rfm/stage/" in script.read_text()


class TestNewlineAndShellInValues:
    """Values with a final newline passed re.match('^...$') and split the
    command line; shell metacharacters must never pass either."""

    @pytest.mark.parametrize('name,check', [
        ('python', 'checks/mpi4py_pingpong.py'),
        ('working_set', 'checks/likwid_bench.py'),
        ('min_bytes', 'checks/nccl_tests.py'),
        ('max_bytes', 'checks/nccl_tests.py'),
        ('cuda_arch', 'checks/babelstream.py'),
        ('cards', 'checks/hl_qual.py'),
    ])
    def test_final_newline_refused(self, tmp_path, name, check):
        marker = tmp_path / 'MARKER'
        value = {'python': 'python3', 'working_set': '2GB', 'min_bytes': '8',
                 'max_bytes': '8G', 'cuda_arch': 'sm_90', 'cards': 'all'}[name]
        proc, _ = run(tmp_path, '-l', '-S', f'{name}={value}\ntouch {marker}',
                      checks=(check,))
        refused(proc, f'-S {name}=', 'nothing was run')
        assert not marker.exists()

    def test_environment_variable_with_a_newline(self, tmp_path):
        proc, _ = run(tmp_path, '-l', '--system', 'kestrel',
                      checks=('checks/nccl_tests.py',),
                      env={'HPCVAL_NCCL_NET_PLUGIN_DIR': '/opt/ofi\n'})
        assert proc.returncode != 0
        refused(proc, "HPCVAL_NCCL_NET_PLUGIN_DIR='/opt/ofi\\n'")

    @pytest.mark.parametrize('name,good', [
        ('HPCVAL_ACCOUNT', 'abc123'), ('HPCVAL_ROOT', '/srv/hpcval'),
        ('HPCVAL_NCCL_NET_PLUGIN_DIR', '/opt/ofi/lib'),
        ('HPCVAL_MINICLUSTER_LAUNCH_GPUS', '2'), ('HPCVAL_SITE', 'site'),
        ('HPCVAL_PERFLOG_URL', 'http://vm.example.org:8428/api/v1/import'),
        ('HPCVAL_PERFLOG_SITE', 'site-a')])
    def test_environment_policy(self, monkeypatch, name, good):
        monkeypatch.setenv(name, good)
        assert environment(name) == good
        # '٣' is a digit to str.isdigit() and int()
        for bad in (f'{good}\n', f'{good}\nid', '-x', 'a;b', '٣'):
            monkeypatch.setenv(name, bad)
            with pytest.raises(EnvironmentValueError, match=name):
                environment(name)

    def test_every_variable_of_every_test_refuses_hostile_values(
            self, every_variable):
        """Introspected, not listed: every hpcval variable of every check
        and fixture has a policy, and the policy refuses each hostile
        value (strings) or a wrong type (numbers, flags)."""
        unlisted = sorted(f'{cls}.{name}'
                          for cls, name, _, policy in every_variable
                          if name not in policy)
        assert not unlisted, f'variables without an input policy: {unlisted}'
        for cls, name, default, policy in every_variable:
            for value in HOSTILE:
                with pytest.raises(InputError):
                    check_variable(name, value.format(marker='/tmp/m'),
                                   policy)
            with pytest.raises(InputError):
                check_variable(name, ['x;y'] if isinstance(default, list)
                               else object(), policy)
        assert set(ENVIRONMENT) >= {'HPCVAL_ACCOUNT', 'HPCVAL_ROOT',
                                    'HPCVAL_SITE', 'HPCVAL_PERFLOG_URL',
                                    'HPCVAL_PERFLOG_SITE', 'HPCVAL_DEBUG',
                                    'HPCVAL_NCCL_NET_PLUGIN_DIR',
                                    'HPCVAL_MINICLUSTER_LAUNCH_GPUS'}

    def test_every_hpcval_environment_variable_goes_through_the_policy(self):
        read = set()
        for folder in ('utils', 'systems', 'config', 'checks'):
            for path in (ROOT / folder).rglob('*.py'):
                text = path.read_text()
                read |= set(re.findall(r"'(HPCVAL_[A-Z_]+)'", text))
                assert not re.search(r"environ(?:\.get)?\(?\[?'HPCVAL_", text), \
                    f'{path}: reads HPCVAL_* around hpcval.inputs.environment'
        assert read <= set(ENVIRONMENT), read - set(ENVIRONMENT)


class TestLeadingDash:
    """A value starting with - becomes an option of the command it is
    given to (python -c ..., a compiler's -fplugin=...)."""

    @pytest.mark.parametrize('setting,check', [
        ('python=-c', 'checks/mpi4py_pingpong.py'),
        ('OsuBuild.mpicc=-fplugin=x.so', 'checks/osu.py'),
        ('BabelStreamSource.version=--upload-pack=x', 'checks/babelstream.py'),
        ('src_mirror=-rf', 'checks/babelstream.py'),
    ])
    def test_refused(self, tmp_path, setting, check):
        proc, _ = run(tmp_path, '-l', '-S', setting, checks=(check,))
        refused(proc, f'-S {setting.split("=")[0].split(".")[-1]}=')


class TestBadValueFailsTheRun:
    """A value that made ReFrame drop the test at load was only a warning:
    the run said PASSED and exited 0."""

    @pytest.mark.parametrize('setting,check,says', [
        ('mode=bogus', 'checks/nccl_tests.py', "-S mode='bogus': must be one "
                                               "of rank_per_gpu, single_process"),
        ('accelerator=opencl', 'checks/osu.py', "-S accelerator='opencl'"),
        ('sibling_factor=0.5', 'checks/transferbench.py',
         '-S sibling_factor=0.5: must be in (1, 2]'),
    ])
    def test_the_run_fails_naming_the_variable(self, tmp_path, setting, check,
                                              says):
        proc, report = run(tmp_path, '-r', '-S', setting, checks=(check,))
        refused(proc, says)
        assert 'PASSED' not in proc.stdout and report is None


# -- replays: recordings are data -------------------------------------------

def _replay(tmp_path, files):
    rec = {'BabelStreamCpuCheck': {'stdout': CPU_RECORDING, **files}}
    return replay('local', rec, ['checks/babelstream.py'],
                  ['BabelStreamCpuCheck.num_times=20'], tmp_path)


def _case(report):
    [tc] = [tc for tc in by_name(report, 'BabelStreamCpuCheck')
            if not tc['fixture']]
    return tc


class TestReplayRecordingIsData:
    """A recording holding rfm_job.sh (a copied ReFrame output folder)
    replaced the job script while bash ran it."""

    def test_a_good_recording_passes(self, tmp_path):
        proc, report = _replay(tmp_path, {})
        assert _case(report)['result'] == 'pass', proc.stdout[-3000:]

    @pytest.mark.parametrize('name', ['rfm_job.sh', 'rfm_build.sh',
                                      'notes.txt'])
    def test_files_the_check_does_not_read_are_refused(self, tmp_path, name):
        marker = tmp_path / 'MARKER'
        proc, report = _replay(tmp_path, {name: f'#!/bin/bash\ntouch '
                                                f'{marker}\n'})
        tc = _case(report)
        assert tc['result'] == 'fail' and not marker.exists()
        assert f'/{name}: not a file BabelStreamCpuCheck reads' in \
            tc['fail_reason']
        assert 'Traceback' not in proc.stdout + proc.stderr

    @pytest.mark.parametrize('kind', ['symlink', 'fifo'])
    def test_symbolic_links_and_fifos_are_refused(self, tmp_path, kind):
        recordings = write_recordings(tmp_path / 'recordings', {
            'BabelStreamCpuCheck': {'exit_code': '0'}})
        stdout = recordings / 'BabelStreamCpuCheck' / 'stdout'
        if kind == 'symlink':
            os.symlink('/etc/hostname', stdout)
        else:
            os.mkfifo(stdout)       # would hang a job that reads it
        proc, report = replay_folder(recordings, tmp_path / 'run')
        tc = _case(report)
        assert tc['result'] == 'fail'
        assert 'BabelStreamCpuCheck/stdout: symbolic links and special files ' \
               'are refused' in tc['fail_reason']


def replay_folder(recordings, workdir, *args):
    """Replay an existing folder of recordings on local."""
    workdir.mkdir(parents=True)
    return reframe('-r', *args, '--system', 'local', '-S',
                   f'replay_dir={recordings}', '-S',
                   'BabelStreamCpuCheck.num_times=20', '-n',
                   'BabelStreamCpuCheck', tmp_path=workdir,
                   checks=('checks/babelstream.py',), timeout=300,
                   env={'RFM_CONFIG_FILES': str(ROOT / 'config' /
                                                'replay.py')})


class TestSkipSanityCheck:
    """reframe --skip-sanity-check failed every check with AttributeError
    (the output was parsed in sanity, read in performance)."""

    def test_performance_parses_on_its_own(self, tmp_path):
        recordings = write_recordings(tmp_path / 'recordings', {
            'BabelStreamCpuCheck': {'stdout': CPU_RECORDING}})
        proc, report = replay_folder(recordings, tmp_path / 'run',
                                     '--skip-sanity-check')
        tc = _case(report)
        assert tc['result'] == 'pass', tc['fail_reason']
        assert tc['perfvalues'] and 'AttributeError' not in proc.stdout

    def test_a_wrong_output_still_fails_in_performance(self, tmp_path):
        recordings = write_recordings(tmp_path / 'recordings', {
            'BabelStreamCpuCheck': {'stdout': CPU_RECORDING[:200]}})
        proc, report = replay_folder(recordings, tmp_path / 'run',
                                     '--skip-sanity-check')
        tc = _case(report)
        assert tc['result'] == 'fail' and tc['fail_phase'] == 'performance'
        assert 'AttributeError' not in tc['fail_reason']


# -- outputs that are not what the test asked for ---------------------------

# nccl-tests stops in its device loop: the header, then TESTCHECK's line
NCCL_REFUSED = (ALL_REDUCE[:ALL_REDUCE.index('# Using devices')] +
                '# Using devices\n' + NCCL_TESTCHECK)


@pytest.fixture(scope='module')
def wrong_outputs(tmp_path_factory):
    """{display name prefix: test case} of two replays (perlmutter: 4 GPUs
    a node; frontier: OSU on host buffers) of outputs that must fail."""
    root = tmp_path_factory.mktemp('wrong')
    # the H200 captures as perlmutter's A100s would print them: the
    # devices must be the partition's (tests/test_tool_identity.py)
    on_a100 = ALL_GATHER.replace('NVIDIA H200', 'NVIDIA A100-SXM4-40GB')
    nccl = {
        'NcclTestsNodeCheck%collective=all_reduce': {'stdout': on_a100},
        'NcclTestsNodeCheck%collective=all_gather': {
            'stdout': reduced_run(on_a100, 2**30)},
        'NcclTestsMultiNodeCheck%collective=all_reduce': {
            'stdout': NCCL_REFUSED, 'stderr': NCCL_TOO_FEW_GPUS,
            'exit_code': '1'},
    }
    osu = {
        'OsuCpuCheck%benchmark=osu_bw%placement=same_socket': {
            'stdout': OSU_LATENCY},
        'OsuCpuCheck%benchmark=osu_latency%placement=same_socket': {
            'stdout': '', 'stderr': OSU_TWO_PROCESSES, 'exit_code': '1'},
    }
    found = {}
    for system, recordings, check in (('perlmutter', nccl, 'nccl_tests'),
                                      ('frontier', osu, 'osu')):
        proc, report = replay(system, recordings, [f'checks/{check}.py'], [],
                              root / system)
        assert report, proc.stdout[-3000:] + proc.stderr[-3000:]
        for name in recordings:
            display = name.replace('%', ' %')
            [tc] = [tc for tc in by_name(report, display.split(' ')[0])
                    if not tc['fixture'] and all(
                        p in tc['display_name'] for p in display.split(' ')[1:])]
            found[name] = tc
    return found


class TestWrongOutputFailsSanity:
    def test_all_gather_output_fed_to_all_reduce(self, wrong_outputs):
        tc = wrong_outputs['NcclTestsNodeCheck%collective=all_reduce']
        assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity'
        assert 'all_gather_perf' in tc['fail_reason']
        assert 'this test runs all_reduce_perf' in tc['fail_reason']

    def test_reducing_max_bytes_names_the_size_reached(self, wrong_outputs):
        tc = wrong_outputs['NcclTestsNodeCheck%collective=all_gather']
        assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity'
        assert 'reduced maxBytes to 1073754169 due to memory limitation' in \
            tc['fail_reason']
        assert 'largest size reached is 1073741824 B' in tc['fail_reason']

    def test_nccl_stderr_reaches_the_reason(self, wrong_outputs):
        tc = wrong_outputs['NcclTestsMultiNodeCheck%collective=all_reduce']
        assert tc['result'] == 'fail'
        assert 'Test failure common.cu:1454' in tc['fail_reason']
        assert 'stderr: Invalid number of GPUs: 2 requested but only 1 were ' \
               'found' in tc['fail_reason']

    def test_osu_latency_table_fed_to_osu_bw(self, wrong_outputs):
        tc = wrong_outputs['OsuCpuCheck%benchmark=osu_bw%placement=same_socket']
        assert tc['result'] == 'fail' and tc['fail_phase'] == 'sanity'
        assert 'OSU Latency Test' in tc['fail_reason']
        assert 'osu_bw' in tc['fail_reason']
        assert not tc['perfvalues']

    def test_osu_stderr_reaches_the_reason(self, wrong_outputs):
        tc = wrong_outputs[
            'OsuCpuCheck%benchmark=osu_latency%placement=same_socket']
        assert tc['result'] == 'fail'
        assert 'stderr: This test requires exactly two processes' in \
            tc['fail_reason']


@pytest.fixture(scope='module')
def every_variable():
    """(class name, variable, default, the class's input policy) of every
    hpcval variable of every test in checks/ and of every fixture they
    declare, recursively."""
    from hpcval.inputs import hpcval_variables, policy_of
    import reframe as rfm
    from rfmrun import check_modules

    classes, todo = {}, []
    for _, module in check_modules('hostile'):
        todo += [obj for obj in vars(module).values()
                 if isinstance(obj, type) and
                 issubclass(obj, rfm.RegressionTest)]
    while todo:
        cls = todo.pop()
        if cls.__name__ in classes:
            continue
        classes[cls.__name__] = cls
        todo += [f.cls for f in cls._rfm_fixture_space.values()]

    found = []
    for name, cls in sorted(classes.items()):
        for var in hpcval_variables(cls):
            field = cls._rfm_var_space[var]
            default = field.default_value if field.is_defined() else None
            found.append((name, var, default, policy_of(cls)))
    assert len(found) > 100 and len(classes) > 25, (len(found), classes)
    return found
