"""A site folder ($HPCVAL_SITE) layered over the built-in systems,
references and checks, driven through the real ``hpcval site init``,
``reframe`` and ``hpcval calibrate``.

The site made here has one new system (``sitebox``: this host, local
scheduler, using the public helpers of hpcval.sitesystem), its reference
file, a reference file replacing the built-in ``local.yaml`` whole
(``replace: true``) with a bound no machine meets (so a failure proves
which file judged), and one check.  A site file changing single entries
(an overlay) is tested in test_site_overlay.py.
"""
import hashlib
import os
import subprocess

import pytest
import yaml

from rfmrun import (ROOT, VENV_BIN, by_name, committed_pingpongs, one_case,
                    perf, reframe)

PINGPONG = ('-n', 'Mpi4pyPingPongCheck', '-S', 'Mpi4pyPingPongCheck.loops=100')

SITEBOX = '''\
"""sitebox: a site's own system, this host run by the local scheduler."""
from hpcval import features as ft
from hpcval.sitesystem import detect_host_cpu

detect = detect_host_cpu

system = {
    'name': 'sitebox',
    'descr': 'A site system from HPCVAL_SITE',
    'hostnames': [],
    'modules_system': 'nomod',
    'partitions': [{
        'name': 'node', 'descr': 'this host', 'scheduler': 'local',
        'launcher': 'mpiexec', 'environs': ['gnu'],
        'features': [ft.CPU, ft.MPI], 'max_jobs': 1,
        'extras': {EXTRAS},
    }],
}

environments = [{'name': 'gnu', 'cc': 'gcc', 'cxx': 'g++', 'ftn': 'gfortran',
                 'features': [ft.OPENMP], 'target_systems': ['sitebox']}]
'''

REFS = '''\
system: {system}
description: test site references
rules:
  site: "the site's own bound"
entries:
  - check: Mpi4pyPingPongCheck
    metrics:
      bandwidth_4MiB:
        value: {value}
        lower: -0.5
        unit: MB/s
        rule: site
        source: test
'''

SITE_CHECK = '''\
import reframe as rfm
from reframe.core.builtins import sanity_function


@rfm.simple_test
class SiteEchoCheck(rfm.RunOnlyRegressionTest):
    valid_systems = ['+cpu']
    valid_prog_environs = ['*']
    executable = 'echo site'

    @sanity_function
    def said_it(self):
        return True
'''


def _hpcval(*args, env=None, cwd=None):
    return subprocess.run([str(VENV_BIN / 'hpcval'), *args], cwd=cwd,
                          env=env, capture_output=True, text=True)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope='module')
def site(tmp_path_factory):
    folder = tmp_path_factory.mktemp('sites') / 'site'
    proc = _hpcval('site', 'init', str(folder))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f'export HPCVAL_SITE={folder}'
    (folder / 'systems' / 'sitebox.py').write_text(
        SITEBOX.replace('{EXTRAS}', "{'scratch_dir': '/tmp'}"))
    (folder / 'references' / 'sitebox.yaml').write_text(
        REFS.format(system='sitebox', value=1.0))
    (folder / 'references' / 'local.yaml').write_text(
        'replace: true\n' + REFS.format(system='local', value=1.0e9))
    (folder / 'checks' / 'site_echo.py').write_text(SITE_CHECK)
    return folder


def test_new_system_lists_and_dry_runs(site, tmp_path):
    env = {'HPCVAL_SITE': str(site)}
    proc, _ = reframe('-l', '--system', 'sitebox', tmp_path=tmp_path,
                      env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert 'Mpi4pyPingPongCheck' in proc.stdout
    proc, _ = reframe('--dry-run', '--system', 'sitebox', *PINGPONG,
                      tmp_path=tmp_path / 'dry', env=env)
    assert proc.returncode == 0, proc.stdout[-2000:]
    [script] = (tmp_path / 'dry' / 'rfm' / 'stage' / 'sitebox').rglob(
        'Mpi4pyPingPongCheck*/rfm_job.sh')
    assert 'mpiexec -n 2 python3 -m mpi4py.bench pingpong' in \
        script.read_text()


def test_new_system_is_judged_by_its_reference(site, tmp_path):
    proc, report = reframe('-r', '--system', 'sitebox', *PINGPONG,
                           tmp_path=tmp_path, env={'HPCVAL_SITE': str(site)},
                           checks=('checks/mpi4py_pingpong.py',))
    case = one_case(report, 'Mpi4pyPingPongCheck')
    assert case['result'] == 'pass', proc.stdout[-3000:]
    value, ref, lower, *_ = perf(case)['bandwidth_4MiB']
    assert (ref, lower) == (1.0, -0.5)


@pytest.fixture(scope='module')
def overridden_local(site, tmp_path_factory):
    """Two ping-pongs on local judged by the site's local.yaml."""
    tmp = tmp_path_factory.mktemp('override')
    proc, report = reframe('-r', '--system', 'local', *PINGPONG,
                           '--repeat', '2', tmp_path=tmp,
                           env={'HPCVAL_SITE': str(site)},
                           checks=('checks/mpi4py_pingpong.py',))
    assert report is not None, proc.stdout[-3000:]
    return tmp / 'report.json', report


@pytest.fixture
def pingpongs(tmp_path):
    return committed_pingpongs(tmp_path)


def test_site_reference_file_replaces_the_built_in(overridden_local):
    _, report = overridden_local
    for case in by_name(report, 'Mpi4pyPingPongCheck'):
        assert case['fail_phase'] == 'performance', case['fail_reason']
        assert 'bandwidth_4MiB' in case['fail_reason']
        value, ref, *_ = perf(case)['bandwidth_4MiB']
        assert ref == 1.0e9
        # the built-in file's latency bounds are gone with it
        assert perf(case)['latency_8B'][1] == 0


def test_site_checks_are_found(site, tmp_path):
    proc, _ = reframe('-l', '--system', 'local', tmp_path=tmp_path,
                      env={'HPCVAL_SITE': str(site)}, checks=())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr
    assert 'SiteEchoCheck' in proc.stdout
    assert 'Mpi4pyPingPongCheck' in proc.stdout


def test_site_systems_are_validated_like_built_ins(site, tmp_path):
    bad = tmp_path / 'bad'
    subprocess.run(['cp', '-r', str(site), str(bad)], check=True)
    (bad / 'systems' / 'sitebox.py').write_text(
        SITEBOX.replace('{EXTRAS}', "{'scratch_dir': 'relative/dir'}"))
    proc, _ = reframe('-l', '--system', 'sitebox', tmp_path=tmp_path,
                      env={'HPCVAL_SITE': str(bad)})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert f'{bad}/systems/sitebox.py' in out and 'scratch_dir' in out, out


@pytest.mark.parametrize('general, named', [
    ("['poll_rate_min', 1]", 'sitebox.py: general: must be a mapping'),
    ("{'poll_rat_min': 1}",
     "sitebox.py: general: unknown key(s) poll_rat_min (allowed: "),
])
def test_a_site_systems_general_options_are_validated(site, tmp_path,
                                                     general, named):
    bad = tmp_path / 'bad'
    subprocess.run(['cp', '-r', str(site), str(bad)], check=True)
    module = bad / 'systems' / 'sitebox.py'
    module.write_text(SITEBOX.replace('{EXTRAS}', '{}') +
                      f'\ngeneral = {general}\n')
    proc, _ = reframe('-l', '--system', 'sitebox', tmp_path=tmp_path,
                      env={'HPCVAL_SITE': str(bad)})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert named in out and 'Traceback' not in out, out[-2000:]


def test_site_references_are_validated_like_built_ins(site, tmp_path):
    bad = tmp_path / 'bad'
    subprocess.run(['cp', '-r', str(site), str(bad)], check=True)
    path = bad / 'references' / 'sitebox.yaml'
    path.write_text(path.read_text().replace('lower:', 'lowr:'))
    proc, _ = reframe('-l', '--system', 'sitebox', tmp_path=tmp_path,
                      env={'HPCVAL_SITE': str(bad)})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert str(path) in out and 'lowr' in out, out[-2000:]


def _calibrate_into(site, report_path):
    """``hpcval calibrate --write`` of local under ``site``; the written
    file's data.  The built-in references/local.yaml is left as it was."""
    builtin = ROOT / 'references' / 'local.yaml'
    before = _sha(builtin)
    proc = _hpcval('calibrate', '--system', 'local', str(report_path),
                   '--accept-performance-failures', '--min-samples', '2',
                   '--write', env=_env(site))
    assert proc.returncode == 0, proc.stderr
    written = site / 'references' / 'local.yaml'
    assert f'wrote {written}' in proc.stderr
    assert _sha(builtin) == before
    assert '# hpcval calibrate:' in written.read_text()
    return yaml.safe_load(written.read_text())


def test_calibrate_writes_into_the_site(site, pingpongs):
    data = _calibrate_into(site, pingpongs)
    assert any(e.get('partition') == 'default' and 'latency_8B' in
               e['metrics'] for e in data['entries'])


def test_calibrate_starts_a_site_file_of_its_entries_only(pingpongs,
                                                         tmp_path):
    """A new site file holds the calibrated entries only, layered over the
    built-in file: upstream corrections of the others still reach it."""
    empty = tmp_path / 'site2'
    assert _hpcval('site', 'init', str(empty)).returncode == 0
    new = _calibrate_into(empty, pingpongs)
    assert new['entries'] and all(
        spec['rule'] == 'calibrated' for e in new['entries']
        for spec in e['metrics'].values() if spec.get('value') is not None)
    proc = _hpcval('references', '--system', 'local', '--schema-only',
                   env=_env(empty))
    assert proc.returncode == 0, proc.stderr
    rows = proc.stdout.splitlines()
    assert any('calibrated (' in r and 'latency_8B' in r for r in rows)
    assert any('built-in (' in r and 'LikwidBenchCheck' in r for r in rows)


def test_calibrate_over_a_site_overlay(pingpongs, tmp_path):
    """A site file holding one changed bound takes a calibrated section."""
    folder = tmp_path / 'site3'
    assert _hpcval('site', 'init', str(folder)).returncode == 0
    overlay = folder / 'references' / 'local.yaml'
    overlay.write_text(
        'system: local\nrules:\n  ours: "wide"\nentries:\n'
        '  - check: Mpi4pyPingPongCheck\n    where: {placement: on_node}\n'
        '    metrics:\n      bandwidth_4MiB: {lower: -0.9, rule: ours}\n')
    new = _calibrate_into(folder, pingpongs)
    assert new['entries'][0]['metrics']['bandwidth_4MiB'] == \
        {'lower': -0.9, 'rule': 'ours'}
    assert len(new['entries']) > 1


def test_site_init_from_a_system(tmp_path):
    folder = tmp_path / 'fromlocal'
    proc = _hpcval('site', 'init', str(folder), '--from', 'frontier')
    assert proc.returncode == 0, proc.stderr
    module = folder / 'systems' / 'frontier.py'
    assert module.read_text() == (ROOT / 'systems' / 'frontier.py').read_text()
    # a site reference file holds only what it changes: none to start
    assert not (folder / 'references' / 'frontier.yaml').exists()
    # the copy replaces the built-in system: a site edit shows
    module.write_text(module.read_text().replace(
        "'descr': 'OLCF Frontier", "'descr': 'Our Frontier"))
    from lmodenv import system_env
    proc, _ = reframe('--show-config', 'systems/0/descr', '--system',
                      'frontier', tmp_path=tmp_path,
                      env={**system_env(tmp_path / 'mf'),
                           'HPCVAL_SITE': str(folder)})
    assert 'Our Frontier' in proc.stdout, proc.stdout[-2000:] + proc.stderr


@pytest.mark.parametrize('args, message', [
    (('site', 'init', '/tmp/a;b'), 'only letters, digits'),
    (('site', 'init', '{tmp}', '--from', 'nowhere'),
     'not the name of a built-in system'),
])
def test_site_init_refuses(tmp_path, args, message):
    args = [a.replace('{tmp}', str(tmp_path / 'new')) for a in args]
    proc = _hpcval(*args)
    assert proc.returncode == 3 and message in proc.stderr, proc.stderr
    assert 'Traceback' not in proc.stderr


def test_bad_site_variable_is_named(tmp_path):
    proc = _hpcval('references', env=_env(tmp_path / 'missing'))
    assert proc.returncode == 3
    assert 'HPCVAL_SITE=' in proc.stderr and 'Traceback' not in proc.stderr


def _env(site):
    return dict(os.environ, HPCVAL_SITE=str(site), HPCVAL_ROOT=str(ROOT))


def test_a_site_system_is_named_by_its_file(site, tmp_path):
    bad = tmp_path / 'bad'
    subprocess.run(['cp', '-r', str(site), str(bad)], check=True)
    (bad / 'systems' / 'sitebox.py').rename(bad / 'systems' / 'other.py')
    proc, _ = reframe('-l', '--system', 'sitebox', tmp_path=tmp_path,
                      env={'HPCVAL_SITE': str(bad)})
    assert proc.returncode != 0
    assert f"{bad}/systems/other.py: system name 'sitebox' must be the " \
        f"module's name, 'other'" in proc.stdout + proc.stderr
