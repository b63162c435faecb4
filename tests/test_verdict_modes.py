"""An acceptance or screen is the whole suite, or nothing (issues 26, 36):
check paths (-c) that leave out a check file of the suite, and any option
the mode does not accept, are refused before anything runs, by ``hpcval
run`` (one line, exit 3) and by ReFrame under hpcval's configuration; the
verdict reads a report's command line with ReFrame's own parser, so no
verdict can read a part as an acceptance."""
import os
import pathlib
import subprocess
import sys

import pytest

from hpcval import inputs, preflight, suites

ROOT = pathlib.Path(__file__).resolve().parent.parent
CHECKS = ROOT / 'checks'
HPCVAL = pathlib.Path(sys.executable).parent / 'hpcval'


@pytest.mark.parametrize('mode', ['acceptance', 'screen'])
def test_hpcval_run_refuses_a_narrowed_check_path(tmp_path, mode):
    env = {k: v for k, v in os.environ.items()
           if k not in ('RFM_SYSTEM', 'HPCVAL_SITE', 'RFM_CHECK_SEARCH_PATH')}
    proc = subprocess.run(
        [str(HPCVAL), 'run', '--system', 'local', '--mode', mode, '-c',
         str(CHECKS / 'osu.py'), '-r'], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == preflight.REFUSED, proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f'hpcval run: --mode {mode}: -c {CHECKS}/osu.py '
                           f'leaves out {CHECKS}/babelstream.py and ')
    assert f'not the {mode} suite' in line
    assert proc.stdout == '' and list(tmp_path.iterdir()) == []


def test_the_whole_suite_or_another_mode_is_not_refused():
    suite = preflight.suite_check_files()
    for given in ([str(CHECKS)], [f'{CHECKS}/'],
                  [str(CHECKS), str(ROOT / 'tests')]):
        argv = ['--mode', 'acceptance', *[a for g in given for a in ('-c', g)]]
        assert suites.narrowing(argv, suite) is None
    assert suites.narrowing(['--mode', 'acceptance'], suite) is None
    assert suites.narrowing(['--mode', 'quick', '-c', str(CHECKS / 'osu.py')],
                            suite) is None
    env = {'RFM_CHECK_SEARCH_PATH': str(CHECKS / 'osu.py')}
    assert 'leaves out' in preflight.refusal_before(
        ['--system', 'local', '--mode', 'screen', '-r'], env, 'vm')


def test_reframe_under_hpcvals_configuration_refuses_it_too():
    argv = ['--mode', 'acceptance', '-r', '-c', str(CHECKS / 'osu.py'),
            '-c', str(CHECKS / 'nccl_tests.py')]
    with pytest.raises(inputs.InputError,
                       match='--mode acceptance: -c .*osu.py -c .*'
                             'nccl_tests.py leaves out .*babelstream.py'):
        preflight.check_command_line(argv, {})
    preflight.check_command_line(['--mode', 'acceptance', '-c', str(CHECKS)],
                                 {})


# -- the verdict of a report that says it ran a narrowed acceptance ----------

HEALTH = ROOT / 'tests' / 'fixtures' / 'captured' / 'h100_health' / 'reports'


def _verdict_of(tmp_path, capsys, cmdline, suite=True):
    """hpcval verdict of a real passing one-GPU run (its own references)
    whose report records ``cmdline`` and, with ``suite``, the suite's
    check files as the benchmark base records them (hpcval_suite)."""
    import json
    from hpcval import cli
    report = json.loads((HEALTH / 'sampler_on_off' / 'bs_on_1.json')
                        .read_text())
    report['session_info']['cmdline'] = cmdline
    for case in report['runs'][0]['testcases'] if suite else ():
        case['hpcval_suite'] = sorted(p.name for p in CHECKS.glob('*.py'))
    path = tmp_path / 'report.json'
    path.write_text(json.dumps(report))
    status = cli.main(['verdict', str(path), '--references',
                       str(HEALTH / 'local.yaml')])
    return status, capsys.readouterr().out


@pytest.mark.parametrize('cmdline, words', [
    ('reframe -c checks/ --mode acceptance -r -n LikwidBenchCheck',
     '--mode acceptance narrowed (-n LikwidBenchCheck): not the acceptance '
     'suite'),
    ('reframe -c checks/babelstream.py --mode=screen -r',
     '--mode screen narrowed (-c checks/babelstream.py leaves out '
     'comm_scope.py and '),
    ('reframe --mode screen -rn LikwidBenchCheck', 'narrowed (-n '
     'LikwidBenchCheck)'),
    ('reframe --mode screen -rx LikwidBenchCheck', 'narrowed (-x '
     'LikwidBenchCheck)'),
    ('reframe --mode acceptance -r -P LikwidBenchCheck.working_set=16kB',
     'narrowed (-P LikwidBenchCheck.working_set=16kB)'),
    ('reframe --mode acceptance -r --disable-hook assemble_job_script',
     'narrowed (--disable-hook assemble_job_script)'),
    ('reframe --mode acceptance -r --no-such-option',
     'its command line cannot be read (ReFrame cannot parse the command '
     'line: unrecognized arguments: --no-such-option): not validated'),
    ("reframe --mode acceptance -r -n 'unclosed",
     'its command line cannot be read (it cannot be split: '),
    ('reframe --mode acceptance -S LikwidBenchCheck.working_set=16kB -r',
     'narrowed (-S LikwidBenchCheck.working_set=16kB)'),
    ('reframe --mode acceptance --skip-performance-check -r',
     'narrowed (--skip-performance-check)'),
])
def test_a_narrowed_acceptance_in_a_report_is_not_validated(
        tmp_path, capsys, cmdline, words):
    status, out = _verdict_of(tmp_path, capsys, cmdline)
    assert status == 2 and out.startswith('hpcval verdict: INCOMPLETE')
    assert words in out


@pytest.mark.parametrize('cmdline', [
    'reframe -c checks/ --mode acceptance -r -S src_mirror=/srv/m',
    'reframe -c checks/ --mode quick -r -n LikwidBenchCheck',
    'reframe -c checks/ -r -n LikwidBenchCheck',
    42,
])
def test_the_whole_suite_or_another_mode_passes(tmp_path, capsys, cmdline):
    status, out = _verdict_of(tmp_path, capsys, cmdline)
    assert status == 0, out


def test_a_report_without_the_suite_record_is_not_validated(tmp_path,
                                                            capsys):
    """Check paths naming files: which the suite has, only the run can
    say; a report that does not record it leaves the suite unvalidated."""
    status, out = _verdict_of(tmp_path, capsys, 'reframe -c checks/'
                              'babelstream.py --mode=screen -r', suite=False)
    assert status == 2 and 'narrowed (-c checks/babelstream.py leaves out ' \
        'the suite\'s other files (the run recorded none))' in out
    status, out = _verdict_of(tmp_path, capsys, 'reframe -c checks/ '
                              '--mode=screen -r', suite=False)
    assert status == 0, out
