"""Drain lines (hpcval.drain): only for a node of the run's own node list,
named as Slurm names one node, on a Slurm partition, for a failure charged
to the node; on the real minicluster screen report
(tests/fixtures/reports/minicluster-screen/healthy-4-nodes.json) with one
node made slow, one change at a time."""
import json
import os
import subprocess
from pathlib import Path

import msgspec
import pytest

from hpcval import cli, drain
from hpcval.benchmarks import nodeuse

SCREEN = (Path(__file__).parent / 'fixtures' / 'reports' /
          'minicluster-screen' / 'healthy-4-nodes.json')
H200 = (Path(__file__).parent / 'fixtures' / 'captured' / 'h200x2' /
        'validation')


LOCAL_CLUSTER = drain.local_cluster


@pytest.fixture(autouse=True)
def here(monkeypatch):
    """The Slurm cluster here: the minicluster the screen ran on (no test
    asks the host's Slurm)."""
    cluster = ['minicluster']
    monkeypatch.setattr(drain, 'local_cluster', lambda: (cluster[0], (
        '' if cluster[0] else 'scontrol show config: FileNotFoundError')))
    return cluster


def _screen(tmp_path, slow='n2', name=None, **fields):
    """The screen report with ``slow`` at a tenth of its peers, renamed
    ``name``, and ``fields`` set on its test case."""
    report = json.loads(SCREEN.read_text())
    for tc in report['runs'][0]['testcases']:
        if tc['job_nodelist'] != [slow]:
            continue
        [(key, vals)] = tc['perfvalues'].items()
        vals[0] = 500.0
        tc.update(fields)
        if name is not None:
            for k in ('display_name', 'unique_name', 'name'):
                tc[k] = tc[k].replace(f'nid={slow}', f'nid={name}')
            tc['job_nodelist'] = tc['hpcval_job_nodes'] = [name]
    path = tmp_path / 'screen.json'
    path.write_text(json.dumps(report))
    return path


def _untested_only(steps, others):
    """Whether the re-screen, if any, tests only the node left untested
    (its case renamed), the ``others`` excluded."""
    return not steps['rescreen'] or \
        f"-J exclude='{others}'" in steps['rescreen'][0]


def _steps(capsys, path):
    status = cli.main(['verdict', str(path), '--format', 'json',
                       '--peer-factor', '2'])
    out = json.loads(capsys.readouterr().out)
    return status, out['next_steps']


def test_a_slow_node_of_a_slurm_screen_is_drained(tmp_path, capsys):
    status, steps = _steps(capsys, _screen(tmp_path))
    assert status == 1
    [line] = steps['drain']
    assert line.startswith('scontrol update nodename=n2 state=drain '
                           'reason="hpcval: LikwidBenchCheck')
    # only the node it drained: an admin's drained node stays drained
    assert steps['resume'] == ['scontrol update nodename=n2 state=resume']
    assert steps['notes'][0].startswith('the scontrol lines are for Slurm '
                                        'cluster minicluster')


@pytest.mark.parametrize('name', ['ALL', 'all', 'DEFAULT', 'n[1-4]', 'n1,n3',
                                  'n1 n3', "n1'", '-n1', 'n1.'])
def test_a_name_that_is_not_one_node_gets_no_drain_line(tmp_path, capsys,
                                                        name):
    path = _screen(tmp_path, name=name)
    status, steps = _steps(capsys, path)
    assert status != 0
    assert steps['drain'] == steps['resume'] == []
    assert _untested_only(steps, 'n[1,3-4]'), steps['rescreen']
    assert not any('scontrol' in n for n in steps['notes'])
    cli.main(['verdict', str(path), '--peer-factor', '2'])
    assert 'nodename=' not in capsys.readouterr().out


@pytest.mark.parametrize('name, node', [('ALL', 'ALL'), ('all', 'all'),
                                        ("n1'", 'n1')])
def test_the_only_failed_node_not_one_node_gets_a_comment(tmp_path, capsys,
                                                          name, node):
    """n1's own case renamed: no drain, resume or re-screen line names
    it, nor what a quote was stripped from; a comment says why."""
    path = _screen(tmp_path, slow='n1', name=name)
    status, steps = _steps(capsys, path)
    assert status == 1
    assert steps['drain'] == steps['resume'] == []
    assert _untested_only(steps, 'n[2-4]'), steps['rescreen']
    note = steps['notes'][0]
    assert note.startswith(f'not drained: {node!r}: '), note
    cli.main(['verdict', str(path), '--peer-factor', '2'])
    text = capsys.readouterr().out
    assert 'nodename=' not in text and f'  # {note}' in text, text


def test_a_case_without_a_node_list_is_not_charged_by_its_parameter(
        tmp_path, capsys):
    """The node a case's ``%.nid=`` names is no Slurm node list."""
    path = _screen(tmp_path, job_nodelist=[], hpcval_job_nodes=[])
    status, steps = _steps(capsys, path)
    assert status == 1
    assert steps['drain'] == steps['resume'] == steps['rescreen'] == []
    assert "not drained: 'n2': not in the Slurm node list of every job " \
        "charged to it" in steps['notes']


@pytest.mark.parametrize('cluster, where', [
    ('frontier', "this host's Slurm cluster is frontier"),
    ('', 'no Slurm cluster answers here (scontrol show config: '
         'FileNotFoundError)')])
def test_a_report_of_another_cluster_gets_comments_only(tmp_path, capsys,
                                                        here, cluster,
                                                        where):
    """The minicluster's screen judged on frontier, or where no Slurm
    answers: nothing here to drain."""
    here[0] = cluster
    status, steps = _steps(capsys, _screen(tmp_path))
    assert status == 1
    assert steps['drain'] == steps['resume'] == steps['rescreen'] == []
    assert steps['notes'] == [
        f'not drained: n2: the report is of system minicluster, {where}; '
        f'judge it where scontrol show config names ClusterName=minicluster']


def test_the_cluster_here_is_read_from_scontrol(tmp_path, monkeypatch):
    """``scontrol show config``'s ClusterName, or why there is none."""
    bindir = tmp_path / 'bin'
    bindir.mkdir()
    tool = bindir / 'scontrol'
    config = Path(__file__).parent / 'fixtures' / 'slurm' / \
        'minicluster_config.txt'       # a real scontrol show config
    tool.write_text(f'#!/bin/sh\nexec /bin/cat {config}\n')
    tool.chmod(0o755)
    monkeypatch.setenv('PATH', str(bindir))
    real = LOCAL_CLUSTER.__wrapped__        # not the fixture's, not cached
    assert real() == ('minicluster', '')
    tool.write_text('#!/bin/sh\necho "error: no config" >&2; exit 1\n')
    assert real() == ('', 'scontrol show config failed (1): error: no '
                          'config')
    tool.write_text('#!/bin/sh\necho "ClusterName = "\n')
    assert real() == ('', 'scontrol show config names no ClusterName')
    tool.unlink()
    assert real() == ('', "scontrol: not on PATH (not a host with Slurm's "
                          "commands)")


def _busy(*processes, uid=0):
    """The hpcval_node_load record of a node busy at job start (three
    other runnable tasks on 2 CPUs) with these ``ps`` lines beside the
    job ('pid ppid uid state %cpu name'), ReFrame's pid 77 the screen's
    own, as nodeuse.read makes it of the job's file."""
    text = '\n'.join(['cpus=2', 'self=9', f'uid={uid}', 'screen=77',
                      *['loadavg=5.0 4.0 3.0 4/300 123'] * 5,
                      *[f'ps={line}' for line in processes]])
    return msgspec.to_builtins(nodeuse.read(text))


def test_a_node_slowed_by_the_operators_own_process_is_cleared(tmp_path,
                                                              capsys):
    """docs/screening.md's policy: processes outside the screen, all of
    the job's user, took CPU: named, cleared and re-screened, not
    drained."""
    path = _screen(tmp_path, hpcval_node_load=_busy(
        '4242 1 0 R 99.0 yes', '77 5 0 S 30.0 reframe'))
    status = cli.main(['verdict', str(path), '--peer-factor', '2'])
    out = capsys.readouterr().out
    assert status == 1 and 'scontrol update nodename=n2' not in out
    assert 'outside the screen: yes (pid 4242, uid 0, 99% CPU); the ' \
        'screen\'s own: reframe (pid 77, uid 0, 30% CPU)' in out
    assert '# n2: slowed by processes outside the screen, of the ' \
        'screen\'s own user: end yes (pid 4242, uid 0, 99% CPU) on n2, ' \
        'then re-screen it' in out
    assert "exclude='n1,n3-n4'" in out or 'exclude=' in out  # re-screen


@pytest.mark.parametrize('processes', [
    # another user's process on a node the job had alone
    ['4242 1 1000 R 99.0 yes'],
    # one of them another user's, whatever the names say
    ['4242 1 0 R 99.0 yes', '4243 1 1000 R 50.0 reframe'],
    # the screen's own processes alone: beside every peer as well
    ['77 5 0 R 30.0 reframe', '78 77 0 R 5.0 sacct'],
    # busy, nothing found
    ['4242 1 0 S 0.5 sshd'],
    # no uid recorded (an older job script's ps)
    ['4242 1 R 99.0 yes']])
def test_any_other_load_leaves_the_node_drained(tmp_path, capsys,
                                                processes):
    status, steps = _steps(capsys, _screen(
        tmp_path, hpcval_node_load=_busy(*processes)))
    assert status == 1 and len(steps['drain']) == 1
    assert steps['drain'][0].startswith('scontrol update nodename=n2 ')


def test_a_local_run_prints_no_scontrol_line(tmp_path, capsys):
    # a real 2 x H200 local run, its NCCL reference raised by half
    refs = tmp_path / 'refs'
    refs.mkdir()
    text = (H200 / 'local.yaml').read_text()
    assert 'value: 111.132' in text
    (refs / 'local.yaml').write_text(text.replace('value: 111.132',
                                                  'value: 166.6'))
    status = cli.main(['verdict', str(H200 / 'reports' / 'healthy01.json'),
                       '--references', str(refs / 'local.yaml')])
    out = capsys.readouterr().out
    assert status == 1 and 'FAIL node vm' in out
    assert 'scontrol' not in out
    assert 'local:default is not a Slurm partition (scheduler local): ' \
        'nothing to drain; fix what failed on vm' in out


def test_a_local_screen_report_prints_no_scontrol_line(tmp_path, capsys):
    path = _screen(tmp_path)
    report = json.loads(path.read_text())
    for tc in report['runs'][0]['testcases']:
        tc['scheduler'] = 'local'
    path.write_text(json.dumps(report))
    status, steps = _steps(capsys, path)
    assert status == 1 and steps['drain'] == []
    assert any('not a Slurm partition (scheduler local)' in n
               for n in steps['notes'])


def test_the_printed_line_is_one_command_for_one_node(tmp_path, capsys):
    _, steps = _steps(capsys, _screen(tmp_path))
    [line] = steps['drain']
    words = subprocess.run(['bash', '-c', 'printf "%s\\n" ' + line],
                           capture_output=True, text=True).stdout
    assert words.splitlines()[:3] == ['scontrol', 'update', 'nodename=n2']


def test_drainable_name():
    assert drain.drainable_name('nid001234')
    assert drain.drainable_name('gpu-a100_7.cluster')
    for bad in ('ALL', 'All', 'n[1-2]', 'a,b', '', 'x' * 65, 'n1;id', None):
        assert not drain.drainable_name(bad), bad


def test_printed_lines_run_on_slurm_keep_an_admins_drain(faults, tmp_path,
                                                          capsys):
    """The real minicluster, n2 drained by its admin for a bad DIMM: the
    lines the verdict prints for reports whose only failing node is
    ``ALL``, ``all``, ``n1'`` or ``n[1-4]``, and for n1 really slow, run
    as printed, drain and resume n1 at most: n2 stays drained, with its
    reason."""
    faults.run('scontrol', 'update', 'nodename=n2', 'state=drain',
               'reason=bad DIMM')
    try:
        for i, name in enumerate(('ALL', 'all', "n1'", 'n[1-4]', None)):
            folder = tmp_path / str(i)
            folder.mkdir()
            _, steps = _steps(capsys, _screen(folder, slow='n1', name=name))
            for line in steps['drain'] + steps['resume']:
                subprocess.run(['bash', '-c', line], timeout=30, check=True,
                               env={**os.environ, **faults.env()})
        assert faults.node_states()['n2'].startswith('drain')
        assert faults.run('sinfo', '-h', '-n', 'n2', '-o',
                          '%E').stdout.strip() == 'bad DIMM'
    finally:
        for node in ('n1', 'n2'):
            faults.run('scontrol', 'update', f'nodename={node}',
                       'state=resume', check=False)
