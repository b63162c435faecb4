"""Set-up that says what it does: bootstrap.sh --help, a ReFrame without
hpcval's configuration that refuses to pass, Lmod not initialised and a
broken site system module in one line each (README command 1, run as
written, is tests/test_live_local.py's)."""
import os
import subprocess

import pytest

from rfmrun import ROOT, VENV_BIN

GROUPS = {'benchmarks': 'likwid', 'modules': 'lmod',
          'slurm': 'slurm-wlm munge slurmdbd mariadb-server',
          'report': 'chromium texlive-latex-base poppler-utils',
          'monitoring': 'victoria-metrics',
          'containers': 'podman runc debootstrap'}


def _bare_env(**more):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RFM_', 'HPCVAL_', 'LMOD'))}
    env['PATH'] = f'{VENV_BIN}{os.pathsep}{env["PATH"]}'
    env.update(more)
    return env


def test_bootstrap_help_lists_each_group_and_why(tmp_path):
    proc = subprocess.run(['bash', str(ROOT / 'bootstrap.sh'), '--help'],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and not proc.stderr
    readme = (ROOT / 'README.md').read_text()
    for group, pkgs in GROUPS.items():
        assert f'  {group} (' in proc.stdout and pkgs in proc.stdout
        assert ' '.join(f'`{p}`' for p in pkgs.split()) in readme, group
    bad = subprocess.run(['bash', str(ROOT / 'bootstrap.sh'), '--test'],
                         capture_output=True, text=True, timeout=30)
    assert bad.returncode == 2 and '--help' in bad.stderr


@pytest.mark.reframe
def test_reframe_without_hpcvals_configuration_does_not_pass(tmp_path):
    proc = subprocess.run(
        [str(VENV_BIN / 'reframe'), '-c', str(ROOT / 'checks'), '-r',
         '--prefix', str(tmp_path / 'rfm'), '--nocolor'],
        cwd=tmp_path, env=_bare_env(HOME=str(tmp_path)),
        capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0, proc.stdout[-2000:]
    assert 'PASSED' not in proc.stdout
    assert 'FAILED' in proc.stdout
    assert 'RFM_CONFIG_FILES=' in proc.stdout and 'hpcval run' in proc.stdout


@pytest.mark.reframe
def test_the_configuration_check_stands_down_under_hpcval(tmp_path):
    proc = subprocess.run(
        [str(VENV_BIN / 'reframe'), '-c', str(ROOT / 'checks'), '-l',
         '-n', 'HpcvalConfigurationCheck', '--system', 'local'],
        cwd=tmp_path, env=_bare_env(
            RFM_CONFIG_FILES=str(ROOT / 'config' / 'settings.py'),
            HOME=str(tmp_path)),
        capture_output=True, text=True, timeout=300)
    assert 'Found 0 check(s)' in proc.stdout, proc.stdout[-2000:]


@pytest.mark.reframe
def test_lmod_not_initialised_is_one_line(tmp_path):
    proc = subprocess.run(
        [str(VENV_BIN / 'reframe'), '-c', str(ROOT / 'checks'), '-l',
         '--system', 'frontier', '--nocolor'],
        cwd=tmp_path, env=_bare_env(
            RFM_CONFIG_FILES=str(ROOT / 'config' / 'settings.py'),
            HOME=str(tmp_path)),
        capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert ('system frontier loads modules with Lmod, but LMOD_CMD is not '
            'set: initialise Lmod in this shell first (source '
            '/usr/share/lmod/lmod/init/bash') in out
    assert 'Traceback' not in out


@pytest.mark.reframe
@pytest.mark.parametrize('text,says', [
    ('system = {\n  "name": "broken",\n', 'syntax error'),
    ('raise RuntimeError("partition file missing")\n',
     'RuntimeError: partition file missing')])
def test_a_broken_site_system_module_is_one_line(tmp_path, text, says):
    site = tmp_path / 'site'
    (site / 'systems').mkdir(parents=True)
    (site / 'systems' / 'broken.py').write_text(text)
    for path in (site, site / 'systems'):
        path.chmod(0o755)
    (site / 'systems' / 'broken.py').chmod(0o644)
    proc = subprocess.run(
        [str(VENV_BIN / 'hpcval'), 'run', '-l', '--system', 'local'],
        cwd=tmp_path, env=_bare_env(HPCVAL_SITE=str(site),
                                    HOME=str(tmp_path)),
        capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and 'Traceback' not in out, out
    assert f'{site}/systems/broken.py:1: ' in out and says in out, out


@pytest.mark.reframe
@pytest.mark.parametrize('setting', ['BabelStreamBuild.model=sycl',
                                     'BabelStreamCpuCheck.model=cuda'])
def test_a_build_model_the_test_fixes_is_refused_not_ignored(tmp_path,
                                                             setting):
    proc = subprocess.run(
        [str(VENV_BIN / 'reframe'), '-c', str(ROOT / 'checks'), '-l',
         '--system', 'local', '-S', setting],
        cwd=tmp_path, env=_bare_env(
            RFM_CONFIG_FILES=str(ROOT / 'config' / 'settings.py'),
            HOME=str(tmp_path)),
        capture_output=True, text=True, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-2000:]
    target, _, value = setting.partition('=')
    assert f"-S {target}='{value}': " in out and \
        'cannot change it and would be ignored' in out, out[-2000:]
    assert 'Traceback' not in out
