"""The verdict on hostile sizes and times: a failed case without a
completion time is never dropped by --since, bounded YAML (an alias bomb
refused in under a second), and messages for absurd numbers.  On the real
2 x H200 report (tests/fixtures/captured/h200x2/validation), one change
at a time."""
import datetime
import json
import time
from pathlib import Path

from hpcval import cli

H200 = (Path(__file__).parent / 'fixtures' / 'captured' / 'h200x2' /
        'validation')
REPORT = H200 / 'reports' / 'healthy01.json'


def _verdict(capsys, *args):
    status = cli.main(['verdict', *map(str, args)])
    return status, capsys.readouterr()


def test_a_failed_case_without_completion_time_stays_in_since(tmp_path,
                                                              capsys):
    report = json.loads(REPORT.read_text())
    start = report['session_info']['time_start_unix']
    [ping] = [tc for tc in report['runs'][0]['testcases']
              if tc['display_name'].startswith('Mpi4pyPingPongCheck')]
    # aborted before its job ended: no completion time
    ping.update(result='fail', fail_phase='run', job_completion_time_unix=None,
                fail_reason='job was cancelled')
    path = tmp_path / 'r.json'
    path.write_text(json.dumps(report))
    since = datetime.datetime.fromtimestamp(int(start) + 2).isoformat()
    status, out = _verdict(capsys, path, '--since', since,
                           '--references', H200 / 'local.yaml')
    assert status == 1, out.out
    assert 'Mpi4pyPingPongCheck' in out.out and 'job was cancelled' in out.out


# a "billion laughs" document: 9 levels of 9 aliases each, 9**9 values
# once expanded (what an inventory's `model:` grew to 11 GB from)
BOMB = ''.join(f'l{i}: &l{i} [' + ', '.join([f'*l{i - 1}'] * 9) + ']\n'
               for i in range(1, 10)).replace('*l0', '"lol"')


def test_an_alias_bomb_in_a_reference_file_is_refused_fast(tmp_path,
                                                           capsys):
    bomb = tmp_path / 'bomb' / 'local.yaml'
    bomb.parent.mkdir()
    bomb.write_text(BOMB + (H200 / 'local.yaml').read_text())
    start = time.monotonic()
    status, out = _verdict(capsys, REPORT, '--references', bomb)
    assert time.monotonic() - start < 1.0
    assert status == 3
    assert f'{bomb}: refused: more than 1000000 values with every alias ' \
        f'expanded' in out.err
    assert 'Traceback' not in out.err


def test_aliases_the_references_use_still_load():
    from hpcval import bounded
    doc = bounded.load('a: &b {value: 1}\nc: *b\nd: [*b, *b]\n')
    assert doc == {'a': {'value': 1}, 'c': {'value': 1},
                   'd': [{'value': 1}, {'value': 1}]}


def test_calibrate_false_alarm_beyond_double_precision_is_one_line(capsys):
    status = cli.main(['calibrate', '--system', 'local', '--false-alarm',
                       '1e-17', *map(str, sorted((H200 / 'reports')
                                                 .glob('baseline*.json')))])
    err = capsys.readouterr().err
    assert status == 3
    assert 'false_alarm from 1e-12 to below 0.5 (got 1e-17; a smaller ' \
        'rate has no t quantile in double precision)' in err
    assert 'unexpected error' not in err


def test_calibrate_names_a_figure_beyond_any_measurement(tmp_path, capsys):
    report = json.loads(REPORT.read_text())
    for tc in report['runs'][0]['testcases']:
        for key in tc['perfvalues'] or {}:
            if key.endswith(':bandwidth_4MiB'):
                tc['perfvalues'][key][0] = 1e300
    path = tmp_path / 'huge.json'
    path.write_text(json.dumps(report))
    status = cli.main(['calibrate', '--system', 'local', str(path),
                       *map(str, sorted((H200 / 'reports')
                                        .glob('baseline*.json')))])
    err = capsys.readouterr().err
    assert status == 0 and 'unexpected error' not in err
    assert 'bandwidth_4MiB: 1e+300 MB/s is beyond any measurement' in err


def test_no_health_record_on_a_gpu_partition_is_not_judged(tmp_path,
                                                           capsys):
    """The H100 node's healthy quick report judged by references whose
    inventory expects its GPU: with its health records removed (as
    -S health_probe=no leaves it) the verdict is incomplete, never 0."""
    fix = Path(__file__).parent / 'fixtures' / 'captured' / 'h100_health'
    refs = fix / 'reports' / 'local.yaml'
    healthy = fix / 'reports' / 'healthy.json'
    status, out = _verdict(capsys, healthy, '--references', refs,
                           '--allow-unjudged')
    assert status == 0, out.out
    report = json.loads(healthy.read_text())
    for run in report['runs']:
        for tc in run['testcases']:
            tc.pop('hpcval_health', None)
    path = tmp_path / 'stripped.json'
    path.write_text(json.dumps(report))
    status, out = _verdict(capsys, path, '--references', refs,
                           '--allow-unjudged')
    assert status == 2, out.out
    assert 'no health record of vm, where the inventory expects GPUs: ' \
        'their health is not judged' in out.out
