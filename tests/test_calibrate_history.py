"""``hpcval calibrate --from URL``: a system's references from the
monitoring history hpcval sends, against a real VictoriaMetrics (Debian's,
the fixture of test_monitoring.py) fed by real runs.

RUNS committed real runs of the ping-pong on the minicluster
(tests/fixtures/reports/minicluster_pingpong, moved to the last hour)
reach VictoriaMetrics through hpcval's formatter, as ReFrame's httpjson
handler sends them (tested live in test_monitoring.py); one more run is
one of them mutated (every latency SLOW times the worst run's, the
bandwidth the worst run's divided by SLOW: a degraded node, one defect).  Calibrating from the history gives the same
bounds as calibrating from the same runs' reports and names the mutated
run as the outlier.  The rest tests the reading side on its own: URLs,
token files, answers that are no Prometheus answer.
"""
import copy
import datetime
import http.server
import json
import math
import os
import re
import subprocess
import threading
import types
import urllib.request
import uuid

import pytest
import yaml

from hpcval import monitoring, units
from hpcval.publish import history, sample_size
from hpcval.publish.stats import Rule
from rfmrun import ROOT, VENV_BIN
from test_monitoring import victoria  # noqa: F401 (the fixture)

RUNS = 9
SLOW = 20.0


def _record(tc):
    """The perflog record ReFrame's httpjson handler gives the formatter,
    from a report's test case."""
    return types.SimpleNamespace(
        check_display_name=tc['display_name'], check_system=tc['system'],
        check_partition=tc['partition'], check_environ=tc['environ'],
        check_job_nodelist=tc['job_nodelist'], check_result=tc['result'],
        check_perfvalues=tc['perfvalues'],
        check_job_completion_time_unix=tc['job_completion_time_unix'],
        created=tc['job_completion_time_unix'])


def _degraded(cases):
    """The last of ``cases`` with each figure SLOW times worse than the
    worst run's: two ranks that poll for messages on a shared, loaded
    host give healthy latencies that differ by orders of magnitude."""
    bad = copy.deepcopy(cases[-1])
    bad['job_completion_time_unix'] += 1
    for key, val in bad['perfvalues'].items():
        seen = [c['perfvalues'][key][0] for c in cases]
        val[0] = max(seen) * SLOW if val[4] == 'us' else min(seen) / SLOW
    return bad


def _send(victoria, case):
    body = monitoring.victoriametrics(_record(case), {'site': 'test-site'},
                                      ())
    urllib.request.urlopen(urllib.request.Request(
        f'{victoria}/api/v1/import', data=body.encode(), method='POST'),
        timeout=10).close()


@pytest.fixture(scope='module')
def history_runs(victoria, tmp_path_factory):  # noqa: F811
    tmp = tmp_path_factory.mktemp('history')
    report = json.loads((ROOT / 'tests' / 'fixtures' / 'reports' /
                         'minicluster_pingpong' / 'report.json').read_text())
    cases = report['runs'][0]['testcases']
    assert len(cases) == RUNS and {c['result'] for c in cases} == {'pass'}
    # the history is read over the last hour: the runs end a minute ago
    shift = int(datetime.datetime.now().timestamp()) - 60 - \
        int(max(c['job_completion_time_unix'] for c in cases))
    for case in cases:
        case['job_completion_time_unix'] += shift
        _send(victoria, case)
    (tmp / 'report.json').write_text(json.dumps(report))
    bad = _degraded(cases)
    _send(victoria, bad)
    urllib.request.urlopen(f'{victoria}/internal/force_flush',
                           timeout=10).close()
    # the same mutated run as a report of its own session
    mutated = copy.deepcopy(report)
    mutated['session_info']['uuid'] = str(uuid.uuid4())
    mutated['runs'][0]['testcases'] = [bad]
    (tmp / 'mutated.json').write_text(json.dumps(mutated))
    since = min(c['job_completion_time_unix'] for c in cases) - 60
    return tmp, since, bad


def _calibrate(tmp, name, *args):
    refs = tmp / name
    if not refs.exists():
        subprocess.run(['cp', '-r', str(ROOT / 'references'), str(refs)],
                       check=True)
    proc = subprocess.run(
        [str(VENV_BIN / 'hpcval'), 'calibrate', '--system', 'minicluster',
         '--ref-dir', str(refs), '--include-absent', '--write', *args],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, HPCVAL_ROOT=str(ROOT)))
    assert proc.returncode == 0, proc.stderr[-3000:]
    section = yaml.safe_load((refs / 'minicluster.yaml').read_text())
    entries = [e for e in section['entries'] if all(
        m.get('rule') == 'calibrated' for m in e.get('metrics', {}).values())
        and e.get('metrics')]
    return proc, {(e['check'], e['partition'], m): (s['value'],
                                                     s.get('lower'),
                                                     s.get('upper'),
                                                     s['spread'], s['unit'])
                  for e in entries for m, s in e['metrics'].items()}


def test_history_calibrates_as_the_reports_do(history_runs,
                                              victoria):  # noqa: F811
    tmp, _, bad = history_runs
    from_vm, got = _calibrate(tmp, 'from_vm', '--from', victoria,
                              '--since', 'now-1h')
    from_reports, want = _calibrate(tmp, 'from_reports',
                                    str(tmp / 'report.json'),
                                    str(tmp / 'mutated.json'))
    assert 'read ' in from_vm.stderr and f'{RUNS + 1} test case run(s)' in \
        from_vm.stderr
    assert got.keys() == want.keys() and got, (from_vm.stderr,
                                               from_reports.stderr)
    for key in want:
        value, lower, upper, spread, unit = got[key]
        assert (lower, upper) == want[key][1:3], key
        # a figure without a reference anywhere is written in a readable
        # unit of its family (the series carry none): the same figure
        to = want[key][4]
        assert units.convert(value, unit, to) == pytest.approx(
            want[key][0], rel=1e-5), key
        assert units.convert(spread, unit, to) == pytest.approx(
            want[key][3], rel=1e-5), key
    # the degraded run is named, by node and time, in both
    day, when = datetime.datetime.fromtimestamp(
        bad['job_completion_time_unix'],
        datetime.timezone.utc).strftime('%Y-%m-%d %H:%M').split()
    named = []
    for proc in (from_vm, from_reports):
        # (figure, node and time) of each run left out; the report's
        # warning also names the session, which the series do not have
        named.append(sorted(
            (re.search(r'\) (\w+): left out', line).group(1),
             re.search(r'on (n\d) at ([\d: -]+) UTC', line).groups())
            for line in proc.stderr.splitlines()
            if 'apart from the rest' in line))
    assert named[0] == named[1], (from_vm.stderr, from_reports.stderr)
    # the degraded run's latencies, SLOW times the worst run's, sit apart
    # on whichever of the two nodes its job ran
    [node] = bad['job_nodelist']
    assert ('latency_1KiB', (node, f'{day} {when}')) in named[0], named[0]
    # per figure: its runs, spread, bound and the runs it needs
    assert 'runs for half the bound' in from_vm.stderr
    written = yaml.safe_load((tmp / 'from_vm' / 'minicluster.yaml')
                             .read_text())
    assert f'monitoring series of {victoria}' in json.dumps(written)


def test_bad_urls_and_token_files_are_refused(tmp_path):
    for url in ('ftp://x', 'http://user:pw@host:1', 'http://h/?q=1', ''):
        with pytest.raises(history.HistoryError, match='expected http'):
            history.check_url(url)
    token = tmp_path / 'token'
    token.write_text('abc\n')
    token.chmod(0o644)
    with pytest.raises(history.HistoryError, match='only its owner'):
        history.token_from(str(token))
    token.chmod(0o600)
    assert history.token_from(str(token)) == 'abc'
    (tmp_path / 'link').symlink_to(token)
    with pytest.raises(history.HistoryError, match='--token-file'):
        history.token_from(str(tmp_path / 'link'))


class _Plain(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'OK')

    def log_message(self, *args):
        pass


def test_an_answer_that_is_no_prometheus_answer(victoria):  # noqa: F811
    server = http.server.HTTPServer(('127.0.0.1', 0), _Plain)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(history.HistoryError, match="not a Prometheus "
                                                       "query answer: not "
                                                       "JSON: b'OK'"):
            history.query(f'http://127.0.0.1:{server.server_port}', 'up', 0)
    finally:
        server.shutdown()
    with pytest.raises(history.HistoryError, match=r'HTTP 4\d\d'):
        history.query(victoria, 'up{', 1e9)
    with pytest.raises(history.HistoryError, match='no answer'):
        history.query('http://127.0.0.1:9', 'up', 1e9, timeout=2)




def test_a_refused_figure_says_what_it_needs():
    # 5 runs of 8.43 % spread: f(5) * s = 1.2 on the log scale, no lower
    # bound; the fewest runs with f(n) * s < 1 give one
    fig = {'label': 'x bw', 'metric': 'bw', 'direction': 'higher', 'n': 5,
           'mean': 1.0, 'std': 0.0843, 'log_std': 0.0843, 'tolerance': None,
           'how': 'refused: 14.3 std of ln = 1.203 >= 1'}
    [row] = sample_size.table([fig], Rule())
    judge = sample_size.runs_to_judge(0.0843, 1e-4, 5)
    assert Rule().factor(judge) * 0.0843 < 1 <= \
        Rule().factor(judge - 1) * 0.0843
    assert row[3] == 'none' and row[5] == f'{judge} for any bound at all'


def test_runs_for_half_the_bound():
    """The table's last column: how many runs make a bound half as wide,
    or why none do."""
    rule = Rule(false_alarm=1e-4)
    # 1 % spread of ln over 5 runs: 1 - exp(-14.3 * 0.01) = 0.133
    n, why = sample_size.runs_to_halve(0.01, 0.133, 0.05, 'higher', 1e-4, 5)
    assert why == f'{n} runs give 0.0665'
    assert 1 - math.exp(-rule.factor(n) * 0.01) <= 0.0665 < \
        1 - math.exp(-rule.factor(n - 1) * 0.01)
    # at the floor: half of it is out of reach
    assert sample_size.runs_to_halve(0.001, 0.05, 0.05, 'higher', 1e-4) \
        == (None, 'never: half (0.025) is below the floor 0.05')
    # 20 % spread of a time: even z = 3.72 leaves exp(0.74) - 1 = 1.1
    n, why = sample_size.runs_to_halve(0.2, 1.6, 0.5, 'lower', 1e-4)
    assert n is None and why.startswith('never: the spread alone gives')
