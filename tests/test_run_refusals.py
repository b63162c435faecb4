"""``hpcval run`` refuses what would run nothing or the wrong thing: one
line, exit 3 (never a verdict code), nothing submitted."""
import os
import pathlib
import subprocess
import sys

import pytest

from hpcval import preflight

HPCVAL = pathlib.Path(sys.executable).parent / 'hpcval'


def run(*args, tmp_path, env=None):
    full = {k: v for k, v in os.environ.items()
            if k not in ('RFM_SYSTEM', 'HPCVAL_SITE')}
    full.update(env or {})
    proc = subprocess.run([str(HPCVAL), 'run', *args], cwd=tmp_path,
                          env=full, capture_output=True, text=True,
                          timeout=600)
    return proc


def test_a_system_for_other_hosts_stops_before_submitting(tmp_path):
    proc = run('--system', 'frontier', '-r', tmp_path=tmp_path)
    assert proc.returncode == preflight.REFUSED
    [line] = proc.stderr.splitlines()
    assert line.startswith('hpcval run: --system frontier is for hosts '
                           'matching ^login')
    assert 'nothing was submitted' in line
    assert proc.stdout == '' and list(tmp_path.iterdir()) == []


def test_a_misspelt_system_lists_the_valid_ones(tmp_path):
    proc = run('--system=locl:default', '-r', tmp_path=tmp_path)
    assert proc.returncode == preflight.REFUSED
    assert proc.stderr.strip() == (
        'hpcval run: --system locl:default: no such system; valid: '
        'frontier, gaudi2, kestrel, local, mi300x, minicluster, perlmutter, '
        'summit')


def test_a_misspelt_mode_lists_the_valid_ones(tmp_path):
    proc = run('--system', 'local', '--mode', 'quik', '-r',
               tmp_path=tmp_path)
    assert proc.returncode == preflight.REFUSED
    assert proc.stderr.strip() == ('hpcval run: --mode quik: no such mode; '
                                   'valid: quick, screen, acceptance, burnin')


def test_rfm_system_is_checked_too(tmp_path):
    proc = run('-r', tmp_path=tmp_path, env={'RFM_SYSTEM': 'kestrel'})
    assert proc.returncode == preflight.REFUSED
    assert '--system kestrel is for hosts matching' in proc.stderr


def test_an_empty_selection_is_refused_naming_the_filter(tmp_path):
    proc = run('--system', 'mi300x', '-n', 'NoSuchCheck', '-r',
               '--prefix', str(tmp_path / 'rfm'), tmp_path=tmp_path)
    assert proc.returncode == preflight.REFUSED, proc.stdout[-2000:]
    assert 'Ran 0/0 test case(s)' in proc.stdout      # ReFrame's own words
    assert proc.stderr.strip().splitlines()[-1] == (
        'hpcval run: the selection matched no test case (-n NoSuchCheck '
        '--system mi300x): nothing was run; `hpcval run -l` with the same '
        'options lists what matches')


@pytest.mark.parametrize('argv, expected', [
    (['-n', 'A', '-nB', '--name=C', '--name', 'D'], ['A', 'B', 'C', 'D']),
    (['--system', 'x', '-r'], []),
    (['-t', 'nccl'], []),
])
def test_option_values(argv, expected):
    assert preflight.values(argv, '-n', '--name') == expected


def test_a_dry_run_or_listing_of_another_system_is_allowed():
    for extra in (['--dry-run'], ['-l'], ['--list-detailed=T']):
        assert preflight.refusal_before(['--system', 'frontier', *extra],
                                        {}, 'vm') == ''


def test_boxes_and_the_test_cluster_run_anywhere():
    for name in ('mi300x', 'gaudi2', 'minicluster', 'local'):
        assert preflight.refusal_before(['--system', name], {}, 'vm') == ''
