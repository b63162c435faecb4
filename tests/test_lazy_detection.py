"""Only the selected system detects its hardware: ``reframe -l --system
frontier`` runs neither ``nvidia-smi`` nor ``rocminfo`` (local's GPU
detection), ``--system local`` runs both.  The two tools are probes on PATH
that record their calls; timings: tests/bench_system_load.py."""
import os

import pytest

from hpcval import selection
from lmodenv import system_env
from rfmrun import reframe

PROBE = '#!/bin/sh\necho "$(basename "$0")" >> {log}\n'


def _calls(tmp_path, *args):
    bin_dir = tmp_path / 'bin'
    bin_dir.mkdir()
    log = tmp_path / 'calls.log'
    for tool in ('nvidia-smi', 'rocminfo'):
        (bin_dir / tool).write_text(PROBE.format(log=log))
        (bin_dir / tool).chmod(0o755)
    env = system_env(tmp_path / 'modulefiles')
    proc, _ = reframe('-l', *args, tmp_path=tmp_path, checks=(
        'checks/mpi4py_pingpong.py',), env=dict(
            env, PATH=f'{bin_dir}:{os.environ["PATH"]}'))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return sorted(log.read_text().split()) if log.exists() else []


def test_other_systems_do_not_detect(tmp_path):
    assert _calls(tmp_path, '--system', 'frontier') == []


def test_the_selected_system_detects(tmp_path):
    assert _calls(tmp_path, '--system=local') == ['nvidia-smi', 'rocminfo']


SYSTEMS = [{'name': 'frontier', 'hostnames': [r'^frontier\d+$']},
           {'name': 'mi300x', 'hostnames': []},
           {'name': 'local', 'hostnames': ['.*']}]


@pytest.mark.parametrize('argv, environ, host, expected', [
    (['-l', '--system', 'mi300x'], {}, 'frontier01', 'mi300x'),
    (['--system=frontier:batch', '-r'], {}, 'laptop', 'frontier'),
    ([], {'RFM_SYSTEM': 'mi300x:default'}, 'laptop', 'mi300x'),
    (['-l'], {}, 'frontier07', 'frontier'),
    (['-l'], {}, 'laptop', 'local'),
])
def test_selection_follows_reframe(argv, environ, host, expected):
    assert selection.selected(SYSTEMS, argv, environ, host) == expected
