"""hpcval installed from its wheel, used as the README's installed way says,
from a folder that is not the checkout.

The wheel is built from this tree and installed into a fresh virtual
environment with the lowest ReFrame that setup.py allows (the suite's own
.venv has the newest): ``hpcval run`` then lists and runs the local checks,
``hpcval references`` and ``hpcval report --references-only`` read the
references the wheel carries, and ReFrame's results commands work under
the installed configuration.
"""
import json
import os
import re
import subprocess
import sys
import zipfile

import pytest

from rfmrun import ROOT, VENV_BIN, by_name, one_case, perf

# the installed ``hpcval run`` runs reframe from the wheel's environment
pytestmark = pytest.mark.reframe


def _lowest_reframe(wheel):
    with zipfile.ZipFile(wheel) as whl:
        [meta] = [n for n in whl.namelist() if n.endswith('/METADATA')]
        text = whl.read(meta).decode()
    [spec] = re.findall(r'^Requires-Dist: reframe-hpc\s*(\S+)', text, re.M)
    low = re.search(r'>=\s*([\d.]+)', spec).group(1)
    return low + '.0' * (2 - low.count('.'))


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('wheel')
    subprocess.run([str(VENV_BIN / 'python'), '-m', 'pip', 'wheel', '-q',
                    '--no-deps', '--no-build-isolation', '-w',
                    str(tmp / 'dist'), str(ROOT)], check=True, cwd=tmp,
                   capture_output=True)
    [wheel] = (tmp / 'dist').glob('hpcval-*.whl')
    lowest = _lowest_reframe(wheel)
    venv = tmp / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    subprocess.run([str(venv / 'bin' / 'pip'), 'install', '-q',
                    '--disable-pip-version-check', f'{wheel}[mpi]',
                    f'reframe-hpc=={lowest}'], check=True,
                   capture_output=True)
    work = tmp / 'anywhere'
    work.mkdir()
    # nothing of the checkout: no RFM_CONFIG_FILES, HPCVAL_ROOT, PYTHONPATH
    env = {'HOME': os.environ.get('HOME', str(tmp)),
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

    # the two benchmarks that need no upstream source (CI has none); of
    # likwid the one-second kernel (the session's local run measures the
    # 2 GB bandwidths from the checkout)
    proc = _hpcval(installed, 'run', '-r', '--system', 'local',
                   '-n', 'Mpi4pyPingPongCheck',
                   '-n', 'LikwidBenchCheck%kernel=peakflops',
                   '-S', 'loops=1000',
                   '--performance-report', '--report-file',
                   str(work / 'report.json'))
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
