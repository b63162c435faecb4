"""The verdict's own trust (issues 25 and 26): its input errors exit 3
(the monitoring plugins' UNKNOWN), never 2; a case it cannot read or
trust never lets it pass; two differing copies of one session fail; a
name cannot forge or erase a line; ``--db`` judges one system and
partition, and ``--latest`` or ``--session`` one run.  Every input is the
real 2 x H200 report of tests/test_verdict.py, changed in one place."""
import copy
import json
import sqlite3
import subprocess
import sys

import pytest

from hpcval import verdict
from hpcval.judgement import Band

from test_verdict import (_REFERENCES, H200, _case, _cases, _failed_build,
                          _judged, _references_of, _report, _run, _write)

UUID = 'ef712fff-c9c0-4e8b-a215-7f2d16d77b84'


def _failing(report):
    """The all_reduce figure far below its reference: a failed run."""
    tc = _case(report, 'NcclTestsNodeCheck %collective=all_reduce')
    tup = tc['perfvalues']['local:default:busbw_outofplace_largest']
    tup[0], tup[1] = 27.1, 349.0
    tc['result'] = 'failure'
    return report


# --- exit codes of input errors: 3, whatever the error ---------------------

def test_each_input_error_exits_3(tmp_path, capsys):
    not_report = tmp_path / 'list.json'
    not_report.write_text('[1, 2, 3]')
    cases = {
        'missing file': [str(tmp_path / 'nothere.json')],
        'not a report': [str(not_report)],
        'a folder': [str(tmp_path)],
        'no argument': [],
        'unknown option': [H200, '--no-such-option'],
        'bad --since': [H200, '--since', 'yesterday'],
        'bad --format': [H200, '--format', 'xml'],
        'refused input': [str(not_report), '--on-error', 'reject'],
    }
    for what, args in cases.items():
        status, out, err = _run(capsys, *args)
        assert status == verdict.EXIT_INPUT == 3, what
        assert 'Traceback' not in out + err, what
    # and a good input beside a missing one is no pass either
    good = _write(tmp_path, _judged(_report()))
    status, out, _ = _run(capsys, good, str(tmp_path / 'nothere.json'))
    assert status == verdict.EXIT_INPUT
    assert 'nothere.json: cannot read: No such file' in out


def test_the_console_script_exits_3_on_a_typo():
    proc = subprocess.run([sys.executable, '-m', 'hpcval.cli', 'verdict',
                           '--no-such-option'], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 3
    assert 'unrecognized arguments: --no-such-option' in proc.stderr


# --- the printed deviation and digits ------------------------------------

def test_the_deviation_is_printed_beside_the_bound(tmp_path, capsys):
    band = Band(0.706, None, 1.459, 'us')
    assert band.deviation_text(5.77) == '+717% vs ref 0.706'
    report = _judged(_report())
    tc = _case(report, 'TransferBenchCudaCheck %preset=p2p')
    key = next(iter(tc['perfvalues']))
    tc['perfvalues'][key] = [5.77, 0.706, None, 1.459, 'us', 'fail']
    tc['result'] = 'failure'
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED
    metric = key.rsplit(':', 1)[1]
    assert (f'{metric} = 5.77 us, +717% vs ref 0.706, bound <= 1.73605 us '
            f'(ref 0.706, +145.9%)') in out


def test_a_value_failing_by_a_hair_prints_apart_from_its_bound(
        tmp_path, capsys):
    report = _judged(_report())
    tc = _case(report, 'BabelStreamCudaCheck')
    key = 'local:default:copy'
    ref = 4641420.0
    low = Band(ref, -0.1, None).limits()[0]
    tc['perfvalues'][key] = [low - 0.004, ref, -0.1, None, 'MB/s', 'fail']
    tc['result'] = 'failure'
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED
    line = next(l for l in out.splitlines() if ': copy = ' in l)
    value = line.split(' = ')[1].split(' ')[0]
    bound = line.split('bound >= ')[1].split(' ')[0]
    assert value != bound and float(value) < float(bound), line


# --- fail-closed -----------------------------------------------------------

def _damaged(tmp_path, change, name='damaged.json'):
    report = _judged(_report())
    change(_case(report, 'NcclTestsNodeCheck %collective=all_reduce'))
    path = tmp_path / name
    # json.dumps writes NaN as ReFrame does
    path.write_text(json.dumps(report))
    return str(path)


@pytest.mark.parametrize('strict', [False, True])
def test_a_failed_case_with_a_nan_figure_fails(tmp_path, capsys, strict):
    def nan(tc):
        tc['result'] = 'failure'
        tc['perfvalues']['local:default:busbw_outofplace_largest'][0] = \
            float('nan')
    args = [_damaged(tmp_path, nan)] + (['--strict'] if strict else [])
    status, out, _ = _run(capsys, *args)
    assert status == verdict.EXIT_FAILED
    assert ('FAIL input: runs[0].testcases[2] (NcclTestsNodeCheck '
            '%collective=all_reduce): ') in out
    assert 'says fail, but cannot be trusted' in out
    assert 'not a finite number' in out


def test_a_failed_case_whose_node_list_is_a_string_fails(tmp_path, capsys):
    def string(tc):
        tc['result'] = 'failure'
        tc['job_nodelist'] = 'vm'
    status, out, _ = _run(capsys, _damaged(tmp_path, string))
    assert status == verdict.EXIT_FAILED
    assert "NcclTestsNodeCheck %collective=all_reduce" in out
    assert "field 'job_nodelist' is 'vm', not a list" in out


def test_a_passed_case_that_cannot_be_read_is_unknown(tmp_path, capsys):
    def string(tc):
        tc['job_nodelist'] = 'vm'
    status, out, _ = _run(capsys, _damaged(tmp_path, string))
    assert status == verdict.EXIT_INPUT
    assert 'inputs left out:' in out and 'all_reduce' in out


def test_a_failed_build_with_one_malformed_field_fails(tmp_path, capsys):
    report = _failed_build(environ=42)
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED
    assert ('FAIL input: runs[0].testcases[1] (NcclTestsBuild '
            '~local:default+cuda): ') in out
    assert "field 'environ' is 42, not a string" in out


def test_a_forged_passing_copy_does_not_hide_the_failure(tmp_path, capsys):
    failed = _write(tmp_path, _failing(_judged(_report())), 'failed.json')
    forged = _judged(_report())         # same session uuid, all passed
    forged_path = _write(tmp_path, forged, 'forged.json')
    for order in ([forged_path, failed], [failed, forged_path]):
        status, out, _ = _run(capsys, *order)
        assert status == verdict.EXIT_FAILED, order
        assert (f'FAIL input: NcclTestsNodeCheck %collective=all_reduce: two '
                f'copies of session {UUID} differ in result, figures: '
                f'{order[0]} and {order[1]}') in out
    # the same copy twice is one measurement, silently
    status, out, _ = _run(capsys, forged_path, forged_path)
    assert status == verdict.EXIT_OK


def test_a_forged_copy_beside_the_database_fails(tmp_path, capsys):
    db = _database(tmp_path, [(UUID, 1.0, _failing(_judged(_report())))])
    forged = _write(tmp_path, _judged(_report()), 'forged.json')
    status, out, _ = _run(capsys, forged, '--db', db)
    assert status == verdict.EXIT_FAILED
    assert f'{forged} and {db}#{UUID}' in out


# --- names are data --------------------------------------------------------

def test_names_cannot_forge_or_erase_lines(tmp_path, capsys):
    report = _failing(_judged(_report()))
    tc = _case(report, 'NcclTestsNodeCheck %collective=all_reduce')
    tc['job_nodelist'] = ['n1\nhpcval verdict: PASSED (exit 0)\n']
    tc['display_name'] += '\r\x1b[2K\x1b[1A'
    status, out, _ = _run(capsys, _write(tmp_path, report))
    assert status == verdict.EXIT_FAILED
    lines = out.splitlines()
    assert lines[0] == 'hpcval verdict: FAILED (exit 1)'
    assert not any(l.startswith('hpcval verdict: PASSED') for l in lines)
    assert '\r' not in out and '\x1b' not in out
    assert ('FAIL node n1\\nhpcval verdict: PASSED (exit 0): '
            'NcclTestsNodeCheck %collective=all_reduce\\r\\x1b[2K\\x1b[1A: '
            'busbw_outofplace_largest') in out
    data = json.loads(_run(capsys, _write(tmp_path, report), '--format',
                           'json')[1])
    assert data['partitions'][0]['failures'][0]['node'].startswith('n1\n')


# --- --db: one system and partition, one session ---------------------------

def _database(tmp_path, sessions, name='results.db'):
    """A ReFrame results database of (uuid, start, report) sessions."""
    path = tmp_path / name
    with sqlite3.connect(path) as conn:
        conn.execute('CREATE TABLE sessions (uuid TEXT PRIMARY KEY, '
                     'session_start_unix REAL, session_end_unix REAL, '
                     'json_blob TEXT, report_file TEXT)')
        for uuid, start, report in sessions:
            if not _REFERENCES.get(str(path)):
                # the first session's bounds are the references'
                refs = tmp_path / 'references'
                refs.mkdir(exist_ok=True)
                (refs / 'local.yaml').write_text(_references_of(report))
                _REFERENCES[str(path)] = str(refs)
            report = copy.deepcopy(report)
            report['session_info']['uuid'] = uuid
            report['session_info']['time_start_unix'] = start
            for tc in _cases(report):
                tc['job_completion_time_unix'] = start + 10
            conn.execute('INSERT INTO sessions VALUES (?, ?, ?, ?, ?)',
                         (uuid, start, start + 20, json.dumps(report), ''))
    conn.close()
    return str(path)


def _on(report, system):
    for tc in _cases(report):
        tc['system'] = system
    return report


def test_db_judges_one_system_and_partition_or_asks(tmp_path, capsys):
    db = _database(tmp_path, [
        ('a', 1795000000.0, _judged(_report())),
        ('b', 1795000100.0, _on(_failing(_judged(_report())), 'frontier'))])
    status, out, err = _run(capsys, '--db', db)
    assert status == verdict.EXIT_INPUT and out == ''
    assert ('--db holds 2 systems and partitions: frontier:default (1 '
            'session(s)), local:default (1 session(s)); judge one with '
            '--system NAME --partition NAME') in err
    status, out, _ = _run(capsys, '--db', db, '--system', 'local',
                          '--partition', 'default')
    assert status == verdict.EXIT_OK, out
    status, out, _ = _run(capsys, '--db', db, '--system', 'frontier',
                          '--partition', 'default')
    assert status == verdict.EXIT_FAILED


def test_a_passing_rerun_is_judged_alone(tmp_path, capsys):
    db = _database(tmp_path, [
        ('first', 1795000000.0, _failing(_judged(_report()))),
        ('rerun', 1795000100.0, _judged(_report()))])
    assert _run(capsys, '--db', db)[0] == verdict.EXIT_FAILED
    status, out, _ = _run(capsys, '--db', db, '--latest')
    assert status == verdict.EXIT_OK, out
    assert 'in 1 session(s)' in out
    assert _run(capsys, '--db', db, '--session', 'first')[0] == \
        verdict.EXIT_FAILED
    status, _, err = _run(capsys, '--db', db, '--session', 'nosuch')
    assert status == verdict.EXIT_INPUT
    assert 'no such session among the inputs: nosuch' in err


# --- a missing per-GPU output is named -------------------------------------

def test_missing_per_gpu_outputs_are_named():
    from hpcval.benchmarks.babelstream import missing_gpu_outputs
    seven = [f'stream.gpu-07.gpu{i}.out' for i in range(8) if i != 5]
    assert missing_gpu_outputs(seven, 8, 8) == \
        ': missing stream.gpu-07.gpu5.out'
    assert missing_gpu_outputs(seven[:3], 8, 16) == (
        ': missing stream.gpu-07.gpu3.out, stream.gpu-07.gpu4.out, '
        'stream.gpu-07.gpu5.out, stream.gpu-07.gpu6.out, '
        'stream.gpu-07.gpu7.out; 1 node(s) wrote none')
