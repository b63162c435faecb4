"""Benchmarks from a site's software stack (hpcval.stacks).

Modules, for real: a site system on this host whose modules system is
Debian's Lmod, and a real modulefile (``mpi4py-stack/4.1.2``) pointing at a
real build, the MPICH and mpi4py of the test suite's own virtual
environment.  Jobs run with a PATH that has neither ``mpiexec`` nor an
mpi4py, so the ping-pong runs only if the module is loaded.  A module that
provides no BabelStream fails the BabelStream build naming the executable
and the module.  Spack cannot run here (it is no Debian or PyPI package and
needs the network to install anything), so its command lines are checked
in the job scripts of a dry run.
"""
import pytest

from lmodenv import LMOD_ROOT, lmod_env
from rfmrun import VENV_BIN, one_case, reframe

LMODBOX = f'''\
"""lmodbox: this host with Debian's Lmod, as a site would declare it."""
from hpcval import features as ft
from systems._site import detect_host_cpu

detect = detect_host_cpu

system = {{
    'name': 'lmodbox',
    'descr': 'This host, modules through Lmod',
    'hostnames': [],
    'modules_system': 'lmod',
    'partitions': [{{
        'name': 'node', 'descr': 'this host', 'scheduler': 'local',
        'launcher': 'mpiexec', 'environs': ['gnu'],
        'features': [ft.CPU, ft.MPI], 'max_jobs': 1,
        # job shells get the module command as a login shell would
        'prepare_cmds': ['. {LMOD_ROOT}/init/bash'],
    }}],
}}

environments = [{{'name': 'gnu', 'cc': 'gcc', 'cxx': 'g++', 'ftn': 'gfortran',
                 'features': [ft.OPENMP], 'target_systems': ['lmodbox']}}]
'''

MODULEFILE = '''\
-- MPICH 4.3.2 and mpi4py 4.1.2 (PyPI wheels) as a site module
whatis("MPI ping-pong stack")
prepend_path("PATH", "{bin}")
'''


@pytest.fixture(scope='module')
def lmodbox(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('stack')
    (tmp / 'site' / 'systems').mkdir(parents=True)
    (tmp / 'site' / 'systems' / 'lmodbox.py').write_text(LMODBOX)
    env = lmod_env(tmp / 'modulefiles')
    stack = tmp / 'modulefiles' / 'mpi4py-stack'
    stack.mkdir()
    (stack / '4.1.2.lua').write_text(MODULEFILE.format(bin=VENV_BIN))
    empty = tmp / 'modulefiles' / 'nobabel'
    empty.mkdir()
    (empty / '1.0.lua').write_text('whatis("provides no BabelStream")\n')
    # neither mpiexec nor an mpi4py on the jobs' PATH
    return {**env, 'HPCVAL_SITE': str(tmp / 'site'), 'PATH': '/usr/bin:/bin'}


PINGPONG = ('-r', '--system', 'lmodbox', '-n', 'Mpi4pyPingPongCheck',
            '-S', 'Mpi4pyPingPongCheck.loops=100')


def test_pingpong_runs_from_the_module(lmodbox, tmp_path):
    proc, report = reframe(*PINGPONG, '-S', 'stack_modules=mpi4py-stack/4.1.2',
                           tmp_path=tmp_path, env=lmodbox,
                           checks=('checks/mpi4py_pingpong.py',))
    case = one_case(report, 'Mpi4pyPingPongCheck')
    assert case['fail_phase'] in (None, 'performance'), case['fail_reason']
    assert case['perfvalues']
    [script] = (tmp_path / 'rfm' / 'output').rglob('rfm_job.sh')
    lines = script.read_text().splitlines()
    assert lines.index('module load mpi4py-stack/4.1.2') < next(
        i for i, line in enumerate(lines) if line.startswith('mpiexec'))


def test_without_the_module_nothing_runs(lmodbox, tmp_path):
    proc, report = reframe(*PINGPONG, tmp_path=tmp_path, env=lmodbox,
                           checks=('checks/mpi4py_pingpong.py',))
    case = one_case(report, 'Mpi4pyPingPongCheck')
    assert case['fail_phase'] == 'sanity', proc.stdout[-2000:]


def test_a_module_without_the_executable_fails_the_build(lmodbox, tmp_path):
    proc, report = reframe('-r', '--system', 'lmodbox', '-n',
                           'BabelStreamCpuCheck', '-S',
                           'stack_modules=nobabel/1.0', tmp_path=tmp_path,
                           env=lmodbox, checks=('checks/babelstream.py',))
    build = one_case(report, 'BabelStreamBuild')
    assert build['fail_reason'].endswith(
        'hpcval stack: no omp-stream on PATH after loading modules '
        'nobabel/1.0'), build['fail_reason']
    source = one_case(report, 'BabelStreamSource')
    assert source['result'] == 'pass'       # nothing fetched
    check = one_case(report, 'BabelStreamCpuCheck')
    assert check['result'] in ('skip', 'fail_deps')


def test_modules_need_a_modules_system(tmp_path):
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'BabelStreamCpuCheck', '-S',
                           'stack_modules=babelstream/5.0',
                           tmp_path=tmp_path, checks=('checks/babelstream.py',))
    build = one_case(report, 'BabelStreamBuild')
    assert 'this system has no modules system' in build['fail_reason']


def test_spack_command_lines(tmp_path):
    spec = 'osu-micro-benchmarks@7.4 ^mpich'
    proc, _ = reframe('--dry-run', '--system', 'local', '-n', 'OsuCpuCheck',
                      '-S', f'spack_spec={spec}', tmp_path=tmp_path,
                      checks=('checks/osu.py',))
    assert proc.returncode == 0, proc.stdout[-2000:]
    stage = tmp_path / 'rfm' / 'stage'
    [build] = stage.rglob('OsuBuild*/rfm_build.sh')
    text = build.read_text()
    assert 'if ! command -v spack >/dev/null; then echo "hpcval stack: ' \
        'no spack command on PATH' in text
    assert f"elif ! spack location -i '{spec}'; then" in text
    assert f"eval \"$(spack load --sh '{spec}')\"" in text
    assert 'command -v osu_latency ||' in text
    assert 'configure' not in text          # nothing built
    runs = list(stage.rglob('OsuCpuCheck*/rfm_job.sh'))
    assert runs
    for script in runs:
        lines = script.read_text().splitlines()
        load = lines.index(f"eval \"$(spack load --sh '{spec}')\"")
        [run] = [i for i, line in enumerate(lines)
                 if line.startswith('mpiexec')]
        # executables by name, from the loaded stack's PATH
        assert load < run and ' osu_' in lines[run] and '/osu_' not in \
            lines[run]
        # the concretised spec the job loads goes into its provenance
        assert ("echo \"spack=$(spack find --format '{name}{@version}"
                "{%compiler}{variants}{arch=architecture}{/hash:7}' "
                f"'{spec}' 2>/dev/null | head -n 1)\"") in script.read_text()


def test_spack_install_through_reframes_spack_build(tmp_path):
    """-S spack_install=true: ReFrame's Spack build system installs the
    spec into an environment of the build's stage, which the jobs load.
    Spack is not on this machine: dry-run job scripts only."""
    spec = 'osu-micro-benchmarks@7.4 ^mpich'
    proc, _ = reframe('--dry-run', '--system', 'local', '-n',
                      'OsuCpuCheck.*osu_latency', '-S', f'spack_spec={spec}',
                      '-S', 'spack_install=true', tmp_path=tmp_path,
                      checks=('checks/osu.py',))
    assert proc.returncode == 0, proc.stdout[-2000:]
    stage = tmp_path / 'rfm' / 'stage'
    [build] = stage.rglob('OsuBuild*/rfm_build.sh')
    env = build.parent / 'rfm_spack_env'
    lines = build.read_text().splitlines()
    steps = ['command -v spack >/dev/null || echo "hpcval stack: no spack',
             'spack env create -d rfm_spack_env',
             'spack -e rfm_spack_env config add "config:install_tree:root:'
             'opt/spack"',
             f"spack -e rfm_spack_env add '{spec}'",
             'spack -e rfm_spack_env install',
             f'spack -e {env} find --long --variants',
             f"eval \"$(spack -e {env} load --sh '{spec}')\"",
             'command -v osu_latency ||']
    at = [next(i for i, line in enumerate(lines) if line.startswith(step))
          for step in steps]
    assert at == sorted(at), lines
    [run] = stage.rglob('OsuCpuCheck*/rfm_job.sh')
    assert f"eval \"$(spack -e {env} load --sh '{spec}')\"" in \
        run.read_text()
    assert f"spack=$(spack -e {env} find --format " in run.read_text()


def test_spack_install_needs_a_spec(tmp_path):
    proc, report = reframe('--dry-run', '--system', 'local', '-n',
                           'OsuCpuCheck.*osu_latency', '-S',
                           'spack_install=true', tmp_path=tmp_path,
                           checks=('checks/osu.py',))
    build = one_case(report, 'OsuBuild')
    out = build['fail_reason'] or ''
    assert 'spack_install=true needs -S spack_spec=SPEC' in out, out[-2000:]


def test_a_missing_spack_is_named(tmp_path):
    """This machine has no Spack: the build says so, not that the spec
    is not installed."""
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'BabelStreamCpuCheck', '-S',
                           'spack_spec=babelstream@5.0 +omp',
                           tmp_path=tmp_path, checks=('checks/babelstream.py',))
    build = one_case(report, 'BabelStreamBuild')
    assert 'no spack command on PATH' in build['fail_reason'], \
        build['fail_reason']
    assert 'is not installed' not in build['fail_reason']


@pytest.mark.parametrize('setting', ['spack_spec=osu;rm -rf /',
                                     'stack_modules=a$(b)'])
def test_unsafe_stack_settings_are_refused(tmp_path, setting):
    proc, report = reframe('--dry-run', '--system', 'local', '-n',
                           'OsuCpuCheck', '-S', setting, tmp_path=tmp_path,
                           checks=('checks/osu.py',))
    # the input policy refuses it when ReFrame creates the tests
    assert proc.returncode != 0 and report is None
    assert f'-S {setting.split("=")[0]}=' in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stdout + proc.stderr
