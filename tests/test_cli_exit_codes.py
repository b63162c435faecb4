"""One exit-status contract for every ``hpcval`` command (hpcval.exits,
docs/verdict.md "Exit statuses"): 0 healthy or nothing moved, 1 failed or
moved, 2 incomplete, 3 input or usage error.  In-process on committed
reports; ``hpcval run`` with ReFrame's part stood in for."""
import json
import os
import pathlib
import shutil
import sqlite3

import pytest

from hpcval import cli, exits, preflight
from hpcval.commands import run as run_command

ROOT = pathlib.Path(__file__).resolve().parent.parent
# a quick run on one H100 the verdict leaves incomplete: recorded before
# nccl-tests' one-GPU bus bandwidth was declared diagnostic
QUICK = ROOT / 'tests/fixtures/captured/h100_health/reports/healthy.json'
RUNS = ROOT / 'tests/fixtures/captured/h200x2/validation/reports'


@pytest.fixture(scope='module')
def inputs(tmp_path_factory):
    """{name: path}: a results database of one quick run on ``local``, a
    truncated report, and five passing runs then a crashed one (every
    test failed in sanity, no figures) or a healthy one with a damaged
    test case."""
    tmp = tmp_path_factory.mktemp('exits')
    report = json.loads(QUICK.read_text())
    with sqlite3.connect(tmp / 'results.db') as conn:
        conn.execute('CREATE TABLE sessions (uuid TEXT PRIMARY KEY, '
                     'session_start_unix REAL, session_end_unix REAL, '
                     'json_blob TEXT, report_file TEXT)')
        conn.execute('INSERT INTO sessions VALUES (?, ?, ?, ?, ?)',
                     (report['session_info']['uuid'], 1.0, 2.0,
                      json.dumps(report), ''))
    conn.close()
    (tmp / 'bad.json').write_text('{"session_info": {')
    runs = {}
    for name in ('crash', 'damaged'):
        (tmp / name).mkdir()
        for i in range(1, 6):
            shutil.copyfile(RUNS / f'baseline{i}.json',
                            tmp / name / f'b{i}.json')
        late = json.loads((RUNS / 'healthy09.json').read_text())
        cases = [tc for tc in late['runs'][-1]['testcases']
                 if not tc['fixture']]
        for tc in cases if name == 'crash' else []:
            tc.update(result='failure', fail_phase='sanity', perfvalues={})
        if name == 'damaged':
            cases[0]['perfvalues'] = 'garbage'
        (tmp / name / 'z.json').write_text(json.dumps(late))
        runs[name] = sorted(map(str, (tmp / name).glob('*.json')))
    return {'db': str(tmp / 'results.db'), 'bad': str(tmp / 'bad.json'),
            **runs}


def _main(capsys, argv):
    try:
        status = cli.main(argv)
    except SystemExit as done:
        status = done.code
    out, err = capsys.readouterr()
    return status, out, err


CASES = {
    'typo command': (['verdcit'], 3, "invalid choice: 'verdcit'"),
    'typo option': (['report', '--formt', 'md'], 3,
                    'unrecognized arguments: --formt'),
    'typo option of calibrate': (['calibrate', '--sytem', 'local'], 3,
                                 'unrecognized arguments: --sytem'),
    'typo of a nested command': (['site', 'int', 'x'], 3,
                                 "invalid choice: 'int'"),
    'no command': ([], 3, 'required: command'),
    'version': (['--version'], 0, 'hpcval 0.'),
    'verdict: unknown system': (
        ['verdict', '--db', '{db}', '--system', 'lcoal'], 3,
        'hpcval verdict: --system lcoal: no such system among the inputs '
        '(known: local)'),
    'verdict: unknown partition': (
        ['verdict', '--db', '{db}', '--partition', 'gpu'], 3,
        '--partition gpu: no such partition among the inputs (known: '
        'default)'),
    'verdict: incomplete': (['verdict', '--db', '{db}'], 2, 'INCOMPLETE'),
    'calibrate: no input': (['calibrate', '--system', 'local'], 3,
                            'nothing to calibrate from'),
    'calibrate: unreadable input': (['calibrate', '--system', 'local',
                                     '{bad}'], 3, 'no input could be read'),
    'diff: parse error': (['diff', '{bad}'], 3, 'no input could be read'),
    'diff: parse error, rejected': (['diff', '{bad}', '--on-error',
                                     'reject'], 3, 'rejected'),
    'diff: unknown system': (['diff', '--db', '{db}', '--system', 'lcoal'],
                             3, 'no such system'),
    'diff: the newest run crashed': (['diff', '{crash}'], 1,
                                     'failed without figures: '),
    'diff: a damaged test case': (['diff', '{damaged}'], 3,
                                  "field 'perfvalues' is 'garbage'"),
    'report: unreadable input': (['report', '{bad}'], 3, 'left out'),
    'references: unknown system': (['references', '--schema-only',
                                    '--system', 'nope'], 3,
                                   '--system nope: no reference file'),
}


@pytest.mark.parametrize('case', CASES)
def test_exit_status(case, inputs, capsys):
    argv, want, text = CASES[case]
    argv = [a for arg in argv for a in (
        inputs[arg[1:-1]] if arg in ('{crash}', '{damaged}')
        else [arg.format(**inputs)])]
    status, out, err = _main(capsys, argv)
    assert status == want, out[-2000:] + err
    assert text in out + err, out[-2000:] + err
    if want == exits.INPUT:
        # argparse's usage (wrapped) and its line, or what was left out
        # and the one line saying so
        assert len(err.strip().splitlines()) <= 3, err
    assert 'Traceback' not in out + err


def test_each_command_lists_its_statuses(capsys):
    status, out, _ = _main(capsys, ['--help'])
    assert status == 0 and 'exit status: 0 healthy' in out, out
    for command in exits.STATUSES:
        status, out, _ = _main(capsys, [command, '--help'])
        assert status == 0 and 'exit status:\n  0' in out, (command, out)
    # hpcval's own, not ReFrame's options
    out = _main(capsys, ['run', '--help'])[1]
    assert out.startswith('usage: hpcval run [REFRAME OPTIONS]\n'), out
    assert '--skip-sanity-check' not in out, out


@pytest.mark.parametrize('reframe, report, want', [
    (0, 'new', 2),          # the verdict's "incomplete", not ReFrame's 0
    (1, 'new', 2),
    (0, None, 0),           # -l, --dry-run: nothing to judge
    (2, None, 3),           # ReFrame's usage error
    (0, 'old', 0),          # an earlier run's report is not this one's
    (0, 'fixtures', 0),     # a CI pipeline's build job: no test to judge
])
def test_run_exits_with_the_verdict(monkeypatch, tmp_path, capsys, reframe,
                                    report, want):
    path = tmp_path / 'quick.json'
    if report:
        data = json.loads(QUICK.read_text())
        if report == 'fixtures':
            data['runs'][0]['testcases'] = [
                tc for tc in data['runs'][0]['testcases'] if tc['fixture']]
        path.write_text(json.dumps(data))
        if report == 'old':
            os.utime(path, (1, 1))
    monkeypatch.setattr(preflight, 'refusal_before', lambda *a: None)
    monkeypatch.setattr(preflight, 'refusal_after', lambda *a: None)
    monkeypatch.setattr(run_command, '_passthrough',
                        lambda *a: (reframe, False, None))
    status, out, err = _main(capsys, ['run', '-r', '--report-file',
                                      str(path)])
    assert status == want, out + err
    if report == 'new':
        assert 'hpcval verdict: INCOMPLETE (exit 2)' in out, out
    else:
        assert 'hpcval verdict' not in out, out
