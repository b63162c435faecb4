"""Every fenced ``sh`` block of README.md, read from the README and run as
written, exits with the status the README (or the docs page it names)
documents.

Where a block would write, it runs in a folder of its own; where it needs
what this host has not (a GPU, a monitoring server, a site system), the
documented failure is checked, and where it names a placeholder (``--system
X``) the documented refusal.  Blocks that cost a ReFrame run share a run
another test makes anyway (the README's "Reading a run" output and the
layout are not commands; the reference YAML is tests/test_references'
business).
"""
import os
import shutil
import subprocess

import pytest

import readme
from rfmrun import ROOT

# each README command (by how it starts) and the test that runs it as
# written: a command the README gains fails test_every_command_is_run
# until a test runs it
RUN_BY = {
    './bootstrap.sh && . .venv/bin/activate && {':
        'test_live_local.py::test_readme_command_1_ends_with_the_verdict',
    './bootstrap.sh --tests && .venv/bin/pytest':
        'test_readme.py::test_command_2_runs_the_suite',
    'pip wheel --no-deps -w dist .': 'test_wheel.py::wheel',
    "pip install 'dist/": 'test_wheel.py::installed',
    'hpcval run -r --system local':
        'test_wheel.py::test_runs_the_local_checks_from_any_folder',
    '. .venv/bin/activate && MC=$(mktemp -d)':
        'test_minicluster_screen.py::'
        'test_readme_minicluster_lines_work_from_a_fresh_shell',
    'hpcval report ': 'test_readme.py::test_publishing_block',
    'hpcval diff --db': 'test_readme.py::test_publishing_block',
    'hpcval calibrate ': 'test_readme.py::test_publishing_block',
    'hpcval run --mode quick --system X':
        'test_readme.py::test_after_maintenance_block',
    'hpcval verdict quick.json':
        'test_readme.py::test_after_maintenance_block',
}

# the image bootstrap.sh --tests builds as root
IMAGE = 'localhost/hpcval-bench:bookworm'


def test_every_command_is_run():
    found = [c for b in readme.blocks() for c in readme.commands(b)]
    assert len(readme.blocks()) >= 4
    unrun = [c for c in found if not any(c.startswith(s) for s in RUN_BY)]
    assert not unrun, f'README commands no test runs: {unrun}'
    for start, where in RUN_BY.items():
        assert any(c.startswith(start) for c in found), \
            f'{start!r}: no longer in the README'
        path, name = where.split('::')
        assert f'def {name}(' in (ROOT / 'tests' / path).read_text(), where


def test_commands_split_as_the_shell_reads_them():
    block = ('# 1. first\nreframe -r &&\n  verdict; }\n\n'
             'hpcval report --db   # a comment\n')
    assert readme.commands(block) == ['reframe -r &&\n  verdict; }',
                                      'hpcval report --db   # a comment']


def _missing_for_bootstrap():
    """What ``bootstrap.sh --tests`` would install here (as root: apt-get
    from the network, a Debian image built with debootstrap)."""
    from test_setup import GROUPS
    missing = [pkg for pkgs in GROUPS.values() for pkg in pkgs.split()
               if 'ok installed' not in subprocess.run(
                   ['dpkg-query', '-W', '-f=${Status}', pkg],
                   capture_output=True, text=True).stdout]
    if shutil.which('podman') and subprocess.run(
            ['podman', 'image', 'exists', IMAGE]).returncode != 0:
        missing.append(IMAGE)
    return missing if os.geteuid() == 0 and shutil.which('apt-get') else []


@pytest.mark.slow
def test_command_2_runs_the_suite():
    """Command 2 as written, in the checkout, restricted by PYTEST_ADDOPTS
    to one test (bootstrap.sh --help's): the suite must not run itself.
    bootstrap.sh finds everything installed and writes nothing; pytest's
    cache is off."""
    script = readme.command('./bootstrap.sh --tests && ')
    assert script == ('./bootstrap.sh --tests && .venv/bin/pytest -q -n 5 '
                      '--dist loadgroup'), script
    missing = _missing_for_bootstrap()
    if missing:
        why = f'bootstrap.sh --tests would install {missing} as root'
        if os.environ.get('CI') == 'true':
            pytest.fail(f'CI=true: {why}')
        pytest.skip(why)
    one = 'tests/test_setup.py::test_bootstrap_help_lists_each_group_and_why'
    proc = readme.shell(script, cwd=ROOT, env=readme.bare_env(
        PYTEST_ADDOPTS=f'-p no:cacheprovider {one}'), timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert 'bootstrap: ready' in out and '1 passed' in out, out[-3000:]


def _run(cmd, cwd, env):
    proc = readme.shell(cmd, cwd=cwd, env=env, timeout=120)
    out = proc.stdout + proc.stderr
    assert 'Traceback' not in out, out[-3000:]
    return proc.returncode, out


def test_publishing_block(failing_smi_run, tmp_path):
    """The publishing block, each line as written in a folder of its own,
    with this machine's stored runs (``--db``) the results database of the
    session's local run with a failing nvidia-smi, ``site-a/`` that run's
    report, ``site-b/`` a run on the lent H200s
    (tests/fixtures/reports/h200x2), ``baseline-*.json`` six quick runs on
    a lent H100 (tests/fixtures/reports/h100_quick: system ``local``)."""
    report = failing_smi_run.path
    for name in ('site-a', 'site-b'):
        (tmp_path / name).mkdir()
    shutil.copy(report, tmp_path / 'site-a' / 'local.json')
    shutil.copy(ROOT / 'tests/fixtures/reports/h200x2/'
                'nccl-transferbench-babelstream.json', tmp_path / 'site-b')
    quick = sorted((ROOT / 'tests/fixtures/reports/h100_quick')
                   .glob('prebuilt*.json'))
    for i, path in enumerate(quick, 1):
        shutil.copy(path, tmp_path / f'baseline-{i}.json')
    env = readme.bare_env(HOME=str(tmp_path),
                          RFM_SQLITE_DB_FILE=str(report.with_name(
                              'results.db')))
    [block] = [b for b in readme.blocks() if 'hpcval report --db' in b]
    lines = readme.commands(block)
    assert len(lines) == 8, lines
    done = {}
    for line in lines:
        done[line.split('#')[0].strip()] = _run(line, tmp_path, env)

    def status(start):
        """(exit status, output) of the one line ``start`` begins."""
        if start in done:
            return done[start]
        [(rc, out)] = [v for k, v in done.items() if k.startswith(start)]
        return rc, out

    for line in ('hpcval report --db', 'hpcval report --db --per-node',
                 'hpcval report --references-only'):
        rc, out = status(line)
        assert rc == 0 and out.startswith('## '), (line, out[-2000:])
    rc, out = status('hpcval report site-a/')
    assert rc == 0, out[-2000:]
    for suffix in ('md', 'csv', 'html', 'tex'):
        assert (tmp_path / 'publish' / f'comparison.{suffix}').is_file()
    assert list((tmp_path / 'publish' / 'plots').iterdir())
    # no GPU here: the run recorded no driver; exit 2 naming the keys it
    # did record (docs/reporting.md), one of which groups the runs
    rc, out = status('hpcval report --db --group-by driver')
    assert rc == 2 and 'no selected run recorded it (recorded: ' in out, out
    line = readme.command('hpcval report --db --group-by driver')
    assert _run(line.replace('driver', 'kernel'), tmp_path, env)[0] == 0
    # one run stored, none passing before it, and its node health failed
    # with no figure: that failure, exit 1, beside what cannot be compared
    # (docs/reporting.md)
    rc, out = status('hpcval diff --db')
    assert rc == 1 and 'failed without figures: NodeHealthCheck' in out, \
        out[-2000:]
    assert 'no passing run before' in out, out[-2000:]
    # the baselines are runs of local: frontier has none to calibrate from;
    # with their own system the line prints the references' diff, unwritten
    rc, out = status('hpcval calibrate --system frontier baseline-')
    assert rc == 0 and 'nothing to calibrate for frontier' in out, out
    line = readme.command('hpcval calibrate --system frontier baseline-')
    rc, out = _run(line.replace('frontier', 'local'), tmp_path, env)
    assert rc == 0 and '+++ b/references/local.yaml' in out, out[-2000:]
    assert 'rerun with --write' in out, out[-2000:]
    # no monitoring server here: one line naming it, exit 3
    # (docs/calibrate.md), nothing written
    rc, out = status('hpcval calibrate --system frontier --from ')
    assert rc == 3 and 'http://victoria:8428: no answer' in out, out
    assert out.count('\n') == 1, out


def test_after_maintenance_block(failing_smi_run, tmp_path):
    """As written (``--system X``, a placeholder): ``hpcval run`` refuses
    the system in one line, exit 3, and the verdict of the report it did
    not write is 3 (unusable input).  The verdict line of a real run's
    report (the session's with a failing nvidia-smi) is 1, naming the
    node's failure.  The quick suite itself on a system:
    tests/test_minicluster_screen.py's quick-suite test."""
    env = readme.bare_env(HOME=str(tmp_path))
    run = readme.command('hpcval run --mode quick --system X')
    proc = readme.shell_reframe(run, cwd=tmp_path, env=env, timeout=120)
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith('hpcval run: --system X: no such system'), line
    assert not (tmp_path / 'quick.json').exists()
    verdict = readme.command('hpcval verdict quick.json')
    rc, out = _run(verdict, tmp_path, env)
    assert rc == 3 and 'quick.json' in out, out
    shutil.copy(failing_smi_run.path, tmp_path / 'quick.json')
    rc, out = _run(verdict, tmp_path, env)
    assert rc == 1 and out.startswith('hpcval verdict: FAILED (exit 1)')
    assert 'nvidia-smi failed (exit 9)' in out, out[-2000:]
