"""hpcval installed from its wheel, used as the README's installed way says,
from a folder that is not the checkout.

The README's block runs as written: its ``pip wheel`` in a copy of the
checkout (``wheel``), its ``pip install`` into a fresh virtual environment
(``installed``), the lowest ReFrame that setup.py allows held by a pip
constraint in the environment (the suite's own .venv has the newest).
``hpcval run`` (the README's line, a selection appended) then lists and
runs the local checks, ``hpcval references`` and ``hpcval report
--references-only`` read the references the wheel carries, and ReFrame's
results commands work under the installed configuration.
"""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import zipfile

import pytest

import readme
from rfmrun import ROOT, by_name, one_case, perf

# the installed ``hpcval run`` runs reframe from the wheel's environment
pytestmark = pytest.mark.reframe


def _lowest_reframe(wheel):
    with zipfile.ZipFile(wheel) as whl:
        [meta] = [n for n in whl.namelist() if n.endswith('/METADATA')]
        text = whl.read(meta).decode()
    [spec] = re.findall(r'^Requires-Dist: reframe-hpc\s*(\S+)', text, re.M)
    low = re.search(r'>=\s*([\d.]+)', spec).group(1)
    return low + '.0' * (2 - low.count('.'))


def _readme(start):
    """The README's command that starts with ``start``, its comment cut."""
    return readme.command(start).split('  #', 1)[0].rstrip()


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    """The README's ``pip wheel`` line, in a copy of the checkout (its
    tracked files and those git does not ignore) with the suite's .venv
    first on PATH: the wheel it names (setup.py without a pyproject.toml:
    pip builds it with the setuptools at hand, no download)."""
    clone = tmp_path_factory.mktemp('clone')
    files = subprocess.run(['git', 'ls-files', '-z', '-co',
                            '--exclude-standard'], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout
    for name in filter(None, files.split('\0')):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    line = readme.command('pip wheel ')
    proc = readme.shell(_readme('pip wheel '), cwd=clone, env=readme.bare_env(
        PIP_DISABLE_PIP_VERSION_CHECK='1'))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    [built] = (clone / 'dist').glob('hpcval-*.whl')
    # the README names the wheel it makes, and installs that one
    assert line.endswith(f'# in the clone: dist/{built.name}'), line
    assert f"'dist/{built.name}[mpi]'" in _readme('pip install ')
    return built


@pytest.fixture(scope='module')
def installed(tmp_path_factory, wheel):
    """The README's ``pip install`` line, run beside the wheel's dist/
    folder, into a fresh virtual environment (first on PATH), ReFrame
    held to the lowest that the wheel allows."""
    tmp = tmp_path_factory.mktemp('wheel')
    lowest = _lowest_reframe(wheel)
    venv = tmp / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    (tmp / 'lowest.txt').write_text(f'reframe-hpc=={lowest}\n')
    proc = readme.shell(_readme('pip install '), cwd=wheel.parent.parent,
                        env={'PATH': f'{venv / "bin"}:/usr/bin:/bin',
                             'HOME': os.environ.get('HOME', str(tmp)),
                             'PIP_CONSTRAINT': str(tmp / 'lowest.txt'),
                             'PIP_DISABLE_PIP_VERSION_CHECK': '1'})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    work = tmp / 'anywhere'
    work.mkdir()
    # nothing of the checkout: no RFM_CONFIG_FILES, HPCVAL_ROOT, PYTHONPATH;
    # a home of its own, whose state folder no other suite on the host shares
    home = tmp / 'home'
    home.mkdir()
    env = {'HOME': str(home),
           'PATH': f'{venv / "bin"}:/usr/bin:/bin',
           'RFM_SQLITE_DB_FILE': str(tmp / 'results.db')}
    return venv, work, env, lowest


def _hpcval(installed, *args):
    venv, work, env, _ = installed
    return subprocess.run([str(venv / 'bin' / 'hpcval'), *args], cwd=work,
                          env=env, capture_output=True, text=True,
                          timeout=600)


def test_reframe_is_the_lowest_allowed(installed):
    venv, _, env, lowest = installed
    out = subprocess.run([str(venv / 'bin' / 'reframe'), '--version'],
                         env=env, capture_output=True, text=True).stdout
    assert out.strip().startswith(lowest), out


def test_paths_point_into_the_package(installed):
    venv = installed[0]
    proc = _hpcval(installed, 'paths', 'config')
    assert proc.stdout.strip().startswith(str(venv / 'lib')), proc.stdout
    assert proc.stdout.strip().endswith('hpcval/suite/config/settings.py')


def test_runs_the_local_checks_from_any_folder(installed):
    work = installed[1]
    listing = _hpcval(installed, 'run', '-l', '--system', 'local')
    assert listing.returncode == 0, listing.stdout[-2000:] + listing.stderr
    for check in ('Mpi4pyPingPongCheck', 'LikwidBenchCheck',
                  'BabelStreamCpuCheck', 'OsuCpuCheck'):
        assert check in listing.stdout

    # the README's line, with a selection appended: the two benchmarks
    # that need no upstream source (CI has none); of likwid the one-second
    # kernel (the session's local run measures the 2 GB bandwidths from the
    # checkout)
    line = _readme('hpcval run -r ')
    assert line == 'hpcval run -r --system local', line
    venv, _, env, _ = installed
    proc = readme.shell_reframe(
        f'{line} -n Mpi4pyPingPongCheck -n '
        f'LikwidBenchCheck%kernel=peakflops -S loops=100 '
        f'--performance-report --report-file {work / "report.json"}',
        cwd=work, env=env, timeout=600)
    report = json.loads((work / 'report.json').read_text())
    case = one_case(report, 'Mpi4pyPingPongCheck')
    # judged: sanity passed and the figures met (or missed) their references
    assert case['fail_phase'] in (None, 'performance'), proc.stdout[-3000:]
    assert {'latency_8B', 'bandwidth_4MiB'} <= set(perf(case))
    likwid = by_name(report, 'LikwidBenchCheck')
    assert likwid
    for case in likwid:
        if case['result'] == 'skip':     # no Debian likwid on this machine
            assert os.environ.get('CI') != 'true', case['fail_reason']
            continue
        assert case['fail_phase'] in (None, 'performance'), \
            case['fail_reason']
        assert perf(case)
    assert 'polars' not in proc.stdout + proc.stderr
    assert 'PERFORMANCE REPORT' in proc.stdout


def test_results_commands_installed(installed):
    proc = _hpcval(installed, 'run', '--performance-compare',
                   'now-1d:now/now-1d:now/mean:/+result')
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert 'polars' not in proc.stdout + proc.stderr


def test_references_and_report_from_the_package(installed):
    proc = _hpcval(installed, 'references')
    assert proc.returncode == 0 and 'local:' in proc.stdout, proc.stderr
    proc = _hpcval(installed, 'report', '--references-only')
    assert proc.returncode == 0, proc.stderr
    assert 'Traceback' not in proc.stderr


def test_site_folder_with_the_installed_package(installed, tmp_path):
    """A site system layered over the installed suite uses its helpers."""
    from test_site import REFS, SITEBOX
    site = tmp_path / 'site'
    proc = _hpcval(installed, 'site', 'init', str(site), '--from', 'local')
    assert proc.returncode == 0, proc.stderr
    # the README's docs are in the package
    [docs] = re.findall(r'\((\S+)/site\.md', (site / 'README.md').read_text())
    assert (pathlib.Path(docs) / 'site.md').is_file(), docs
    (site / 'systems' / 'sitebox.py').write_text(
        SITEBOX.replace('{EXTRAS}', '{}'))
    (site / 'references' / 'sitebox.yaml').write_text(
        REFS.format(system='sitebox', value=1.0))
    venv, work, env, _ = installed
    proc = subprocess.run([str(venv / 'bin' / 'hpcval'), 'run', '-l',
                           '--system', 'sitebox'], cwd=work,
                          env={**env, 'HPCVAL_SITE': str(site)},
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert 'Mpi4pyPingPongCheck' in proc.stdout


def test_reframe_variables_refused_with_the_lowest_reframe(installed):
    """hpcval reads ReFrame's argument parser from its main() and the
    command line of the running reframe (hpcval.suites, hpcval.preflight):
    the lowest allowed ReFrame must expose them the same way.  ``hpcval
    run`` refuses a narrowed mode before ReFrame starts (exit 3)."""
    venv, work, env, _ = installed
    config = _hpcval(installed, 'paths', 'config').stdout.strip()
    # ReFrame's 1; hpcval's 3, an input refused with no run to judge
    for cmd, status in (
            ([venv / 'bin' / 'hpcval', 'run', '-l', '--system', 'local',
              '-S', 'LikwidBenchCheck.prerun_cmds=touch x'], 3),
            ([venv / 'bin' / 'reframe', '-C', config, '-l', '--system',
              'local', '--mode', 'acceptance', '-n', 'LikwidBenchCheck'], 1)):
        proc = subprocess.run([str(c) for c in cmd], cwd=work, env=env,
                              capture_output=True, text=True, timeout=600)
        out = proc.stdout + proc.stderr
        assert proc.returncode == status and 'nothing was run' in out, \
            out[-2000:]
        assert 'Traceback' not in out
    proc = _hpcval(installed, 'run', '-l', '--system', 'local', '--mode',
                   'acceptance', '-n', 'LikwidBenchCheck')
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr
    assert proc.stderr.startswith('hpcval run: --mode acceptance: -n '
                                  'LikwidBenchCheck: not the acceptance '
                                  'suite'), proc.stderr


RUN_DIRS = ('stage', 'output', 'perflogs')


def test_a_run_from_root_leaves_nothing_there(installed, tmp_path):
    """Stage, output and perflogs go to the per-user state folder
    ($XDG_STATE_HOME/hpcval, default ~/.local/state/hpcval), never into the
    working folder or site-packages."""
    if any(os.path.exists(os.path.join('/', d)) for d in RUN_DIRS):
        pytest.skip('/ already holds a stage, output or perflogs folder')
    venv, _, env, _ = installed
    home = tmp_path / 'home'
    home.mkdir()
    proc = subprocess.run(
        [str(venv / 'bin' / 'hpcval'), 'run', '-r', '--system', 'local',
         '-t', 'mpi4py', '-S', 'loops=100'], cwd='/',
        env={**env, 'HOME': str(home)}, capture_output=True, text=True,
        timeout=600)
    assert 'Ran ' in proc.stdout, proc.stdout[-3000:] + proc.stderr
    assert not [d for d in RUN_DIRS if os.path.exists(os.path.join('/', d))]
    state = home / '.local' / 'state' / 'hpcval'
    assert {d for d in RUN_DIRS if (state / d).is_dir()} == set(RUN_DIRS)
    package = next((venv / 'lib').glob('python*/site-packages/hpcval'))
    assert not [p for p in package.rglob('*')
                if p.name in RUN_DIRS or p.suffix == '.db']


def test_calibrate_write_without_a_site_folder_refuses(installed, tmp_path):
    venv, work, env, _ = installed
    report = next(ROOT.glob('tests/fixtures/reports/h200x2/*.json'))
    package = next((venv / 'lib').glob('python*/site-packages/hpcval'))
    before = {p: p.stat().st_mtime for p in
              (package / 'suite' / 'references').iterdir()}
    proc = _hpcval(installed, 'calibrate', '--system', 'local', str(report),
                   '--write')
    assert proc.returncode == 3
    [line] = proc.stderr.splitlines()
    assert line.startswith('hpcval calibrate: --write needs a site folder')
    assert '`hpcval site init DIR --from local`' in line
    assert line.endswith('nothing was written')
    assert before == {p: p.stat().st_mtime for p in
                      (package / 'suite' / 'references').iterdir()}


def _metadata(wheel):
    with zipfile.ZipFile(wheel) as whl:
        [meta] = [n for n in whl.namelist() if n.endswith('/METADATA')]
        return whl.read(meta).decode(), whl.namelist()


def test_version_and_ranges_in_the_wheel(wheel):
    """One version (hpcval.__version__), extras as ranges, docs shipped."""
    import hpcval
    text, names = _metadata(wheel)
    assert re.search(rf'^Version: {re.escape(hpcval.__version__)}$', text,
                     re.M)
    assert wheel.name.startswith(f'hpcval-{hpcval.__version__}-')
    requires = re.findall(r'^Requires-Dist: (.*)$', text, re.M)
    assert requires and not [r for r in requires
                             if '==' in r.split(';')[0]], requires
    assert 'hpcval/suite/docs/site.md' in names
    assert (ROOT / 'CHANGELOG.md').read_text().count(hpcval.__version__)


OTHER_STACK = ('mpi4py==4.1.1', 'mpich==4.3.1', 'matplotlib==3.10.8')


def test_installs_beside_a_sites_other_versions(wheel, tmp_path):
    """A site's Python stack with other mpi4py, MPICH and matplotlib
    versions than bootstrap.sh's newest: pip resolves the extras to them
    and ``pip check`` finds no conflict."""
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    pip = [str(venv / 'bin' / 'pip'), '--disable-pip-version-check']
    proc = subprocess.run([*pip, 'install', '-q', f'{wheel}[mpi,plots]',
                           *OTHER_STACK], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    proc = subprocess.run([*pip, 'check'], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    frozen = subprocess.run([*pip, 'freeze'], capture_output=True,
                            text=True).stdout.split()
    assert set(OTHER_STACK) <= set(frozen), frozen
    docs = subprocess.run([str(venv / 'bin' / 'hpcval'), 'paths', 'docs'],
                          capture_output=True, text=True, cwd=tmp_path,
                          env={'PATH': '/usr/bin:/bin',
                               'HOME': str(tmp_path)}).stdout.strip()
    assert os.path.isfile(os.path.join(docs, 'site.md')), docs
