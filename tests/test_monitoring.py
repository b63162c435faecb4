"""Performance records of real runs reach a real VictoriaMetrics (Debian's
``victoria-metrics``, started here on 127.0.0.1 and a free port, stopped
after) through ReFrame's ``httpjson`` handler and hpcval's sender as
config/monitoring.py sets them up, and are read back through its query API:
one series per figure across a pass and a fail and across the three runs
of ``--repeat 3``, and every query of the shipped Grafana dashboard
returns data.  The same run's file perflog has
them too.  The sender itself is tried against real HTTP servers on
127.0.0.1 that hang, answer 429 and redirect."""
import http.server
import io
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.parse
import urllib.request

import pytest

from hpcval import monitoring
from rfmrun import ROOT, by_name, one_case, perf, reframe

VM = '/usr/bin/victoria-metrics'


def _free_port():
    with socket.socket() as sock:
        sock.bind(('127.0.0.1', 0))
        return sock.getsockname()[1]


def _get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return resp.read().decode()


@pytest.fixture(scope='module')
def victoria(tmp_path_factory):
    if not os.path.exists(VM):
        msg = f'{VM} missing: run ./bootstrap.sh --tests'
        if os.environ.get('CI') == 'true':
            pytest.fail(msg)
        pytest.skip(msg)

    tmp = tmp_path_factory.mktemp('vm')
    base = f'http://127.0.0.1:{_free_port()}'
    with open(tmp / 'vm.log', 'w') as log:
        proc = subprocess.Popen(
            [VM, f'-storageDataPath={tmp / "data"}',
             f'-httpListenAddr={base[7:]}', '-retentionPeriod=1d',
             # points are queryable at once, not 30 s later
             '-search.latencyOffset=1s'], stdout=log, stderr=log)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if _get(f'{base}/health', timeout=1).strip() == 'OK':
                    break
            except OSError:
                pass
            assert proc.poll() is None, (tmp / 'vm.log').read_text()[-2000:]
            assert time.monotonic() < deadline, 'VictoriaMetrics did not start'
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=30)



def _env(victoria):
    return {'RFM_CONFIG_FILES': f'{ROOT}/config/settings.py:'
                                f'{ROOT}/config/monitoring.py',
            'HPCVAL_PERFLOG_URL': f'{victoria}/api/v1/import',
            'HPCVAL_PERFLOG_SITE': 'test-site'}


def _pingpong(tmp, env, *args):
    return reframe('-r', '--system', 'local', '-n', 'Mpi4pyPingPongCheck',
                   '-S', 'Mpi4pyPingPongCheck.loops=100', *args,
                   '--perflogdir', str(tmp / 'perflogs'),
                   tmp_path=tmp, env=env,
                   checks=('checks/mpi4py_pingpong.py',))


def _site(tmp, failing):
    """A site folder whose local references any loaded host meets (the
    ping-pong's bounds opened wide), and, where ``failing``, ask 8-byte
    latency below 10 ns: the same figure of the same check then fails."""
    refs = tmp / 'site' / 'references'
    refs.mkdir(parents=True)
    text = (ROOT / 'references' / 'local.yaml').read_text()
    text, n = re.subn(r'(\n\s+upper:) 9\.0\n', r'\1 999.0\n', text)
    assert n >= 2
    text, n = re.subn(r'(\n\s+lower:) -0\.8\n', r'\1 -0.99\n', text)
    assert n >= 1
    if failing:
        text, n = re.subn(r'(latency_8B:\n\s+value:) 2\.0\n(\s+upper:) '
                          r'999\.0\n', r'\1 0.001\n\2 9.0\n', text)
        assert n == 1
    (refs / 'local.yaml').write_text(text)
    return tmp / 'site'


@pytest.fixture(scope='module')
def monitored_runs(victoria, tmp_path_factory):
    """The ping-pong twice: against a site's references that it meets on
    any host, then against a site's that it cannot meet."""
    runs = []
    for failing in (False, True):
        tmp = tmp_path_factory.mktemp('monitored')
        env = _env(victoria)
        env['HPCVAL_SITE'] = str(_site(tmp, failing))
        proc, report = _pingpong(tmp, env)
        assert report is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert 'dropped' not in proc.stderr, proc.stderr[-2000:]
        case = one_case(report, 'Mpi4pyPingPongCheck')
        assert case['perfvalues'], case['fail_reason']
        runs.append((tmp, case))
    assert runs[0][1]['result'] == 'pass', runs[0][1]['fail_reason']
    assert runs[1][1]['result'] == 'fail'
    assert perf(runs[1][1])['latency_8B'][-1] == 'fail'
    return runs


@pytest.fixture
def monitored_run(monitored_runs):
    return monitored_runs[0]


def _query(base, promql):
    _get(f'{base}/internal/force_flush')
    url = f'{base}/api/v1/query?' + urllib.parse.urlencode({'query': promql})
    deadline = time.monotonic() + 20
    while True:
        data = json.loads(_get(url))
        if data['data']['result'] or time.monotonic() > deadline:
            return data['data']['result']
        time.sleep(0.5)


def _range(base, promql):
    _get(f'{base}/internal/force_flush')
    now = time.time()
    url = f'{base}/api/v1/query_range?' + urllib.parse.urlencode(
        {'query': promql, 'start': now - 3600, 'end': now + 60, 'step': 1})
    return json.loads(_get(url))['data']['result']


def _one_series(base, promql):
    """The labels of the one series ``promql`` finds in the last hour and
    its values, one per run (query_range repeats a point while it is
    fresh)."""
    found = _range(base, promql)
    assert len(found) == 1, (promql, [s['metric'] for s in found])
    points = [float(v) for _, v in found[0]['values']]
    return found[0]['metric'], [v for i, v in enumerate(points)
                                if i == 0 or v != points[i - 1]]


def _export(base, match, points):
    """Every series ``match`` selects, with its raw points:
    [(labels, [timestamp, ...])], once each has ``points`` or after 20 s
    (the server shows a point a second after its time)."""
    url = f'{base}/api/v1/export?' + urllib.parse.urlencode(
        {'match[]': match})
    deadline = time.monotonic() + 20
    while True:
        _get(f'{base}/internal/force_flush')
        found = [(line['metric'], line['timestamps'])
                 for line in map(json.loads, _get(url).splitlines())]
        if found and all(len(t) >= points for _, t in found) or \
                time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_records_are_queried_back(victoria, monitored_run):
    _, case = monitored_run
    value, ref, lower, upper, unit, result = perf(case)['latency_8B']
    assert unit == 'us'
    labels, values = _one_series(victoria, 'hpcval_perf_value_seconds{'
                                 'metric="latency_8B",system="local",'
                                 'site="test-site"}')
    assert (labels['partition'], labels['environ']) == ('default', 'gnu')
    assert labels['node'] == case['job_nodelist'][0]
    assert values[0] == pytest.approx(value * 1e-6, rel=1e-6)
    # a diagnostic says so in its series, as its run recorded it (what
    # ``hpcval calibrate --from`` reads); a judged figure has no such label
    assert 'unjudged' not in labels
    std, _ = _one_series(victoria, 'hpcval_perf_value_seconds{'
                                   'metric="latency_8B_std"}')
    assert std['unjudged'] == case['hpcval_unjudged']['latency_8B_std']
    assert std['unjudged'].startswith('diagnostic: the spread')
    _, bound = _one_series(victoria, 'hpcval_perf_upper_bound_seconds{'
                                     'metric="latency_8B"}')
    assert bound[0] == pytest.approx(ref * (1 + upper) * 1e-6)
    _, bw = _one_series(victoria, 'hpcval_perf_lower_bound_bytes_per_second'
                                  '{metric="bandwidth_4MiB"}')
    ref_bw, low_bw = perf(case)['bandwidth_4MiB'][1:3]
    assert bw[0] == pytest.approx(ref_bw * (1 + low_bw) * 1e6)


def test_one_series_per_figure_across_a_pass_and_a_fail(victoria,
                                                        monitored_runs):
    (_, first), (_, second) = monitored_runs
    test = first['display_name']
    assert second['display_name'] == test
    results = [perf(c)['latency_8B'][-1] == 'pass' for c in (first, second)]
    for promql, values in [
            (f'hpcval_check_passed{{test="{test}"}}',
             [first['result'] == 'pass', 0]),
            (f'hpcval_perf_passed{{test="{test}",metric="latency_8B"}}',
             results),
            (f'hpcval_perf_value_seconds{{test="{test}",'
             f'metric="latency_8B"}}', None),
            (f'hpcval_perf_reference_seconds{{test="{test}",'
             f'metric="latency_8B"}}', [2.0e-6, 0.001e-6])]:
        labels, distinct = _one_series(victoria, promql)
        if values is not None:
            assert distinct == pytest.approx([float(v) for v in values]), \
                promql
        assert not {'result', 'fail_phase', 'nodes', 'unit'} & set(labels)


def _dashboard():
    return json.loads((ROOT / 'config' / 'grafana-dashboard.json')
                      .read_text())


def _variable_values(base, var):
    """What Grafana's Prometheus data source asks the server for a query
    variable, the way it asks it."""
    query = var['query']['query']
    names = re.fullmatch(r'metrics\((.*)\)', query)
    if names:
        values = json.loads(_get(f'{base}/api/v1/label/__name__/values'))
        found = [n for n in values['data'] if re.fullmatch(names[1], n)]
        regex = var.get('regex', '').strip('/')
        return [re.fullmatch(regex, n)[1] for n in found] if regex else found
    metric, label = re.fullmatch(r'label_values\((.*), *(\w+)\)',
                                 query).groups()
    url = (f'{base}/api/v1/label/{label}/values?' +
           urllib.parse.urlencode({'match[]': metric.replace('$site', '.*')
                                   .replace('$system', '.*')}))
    return json.loads(_get(url))['data']


def test_every_dashboard_query_returns_data(victoria, monitored_runs):
    dash = _dashboard()
    variables = {v['name']: v for v in dash['templating']['list']
                 if v['type'] == 'query'}
    values = {}
    for name, var in variables.items():
        values[name] = _variable_values(victoria, var)
        assert values[name], (name, var['query'])
    assert sorted(values['quantity']) == ['bytes_per_second', 'seconds']
    assert values['site'] == ['test-site']

    asked = 0
    for panel in dash['panels']:
        for quantity in values['quantity'] if panel.get('repeat') else [None]:
            for target in panel['targets']:
                expr = (target['expr'].replace('$site', '.*')
                        .replace('$system', '.*').replace('$test', '.*')
                        .replace('$__range', '1h'))
                if quantity:
                    expr = expr.replace('$quantity', quantity)
                assert '$' not in expr, expr
                found = (_query(victoria, expr) if target.get('instant')
                         else _range(victoria, expr))
                assert found, (panel['title'], expr)
                asked += 1
    assert asked >= 8
    # the provenance annotation: each run's node and kernel
    [note] = dash['annotations']['list']
    expr = (note['expr'].replace('$site', '.*').replace('$system', '.*')
            .replace('$test', '.*'))
    found = _range(victoria, expr)
    assert found and all(s['metric']['kernel'] for s in found), found


def test_every_panel_says_its_unit():
    dash = _dashboard()
    for panel in dash['panels']:
        assert panel['fieldConfig']['defaults']['unit'], panel['title']
    [series] = [p for p in dash['panels'] if p['type'] == 'timeseries']
    units = {o['matcher']['options']: o['properties'][0]['value']
             for o in series['fieldConfig']['overrides']
             if o['matcher']['id'] == 'byRegexp'}
    # every quantity monitoring names gets its axis unit
    assert units == {r'.*\(seconds\)$': 's',
                     r'.*\(bytes_per_second\)$': 'Bps',
                     r'.*\(flop_per_second\)$': 'flops',
                     r'.*\(operations_per_second\)$': 'ops'}
    assert all(t['legendFormat'].endswith(' ($quantity)')
               for t in series['targets'])


def test_provenance_is_an_info_series_per_node():
    """Each node's own record (hpcval.provenance) as labels of
    hpcval_provenance_info; the figures' series carry none of them."""
    import types
    from hpcval import monitoring
    record = types.SimpleNamespace(
        check_job_completion_time_unix=1.0, created=1.0,
        check_result='pass', check_job_nodelist=['n1', 'n2'],
        check_perfvalues={'local:latency_8B': (1.0, 2.0, None, 9.0, 'us',
                                               'pass')},
        check_system='mc', check_hpcval_provenance={
            'driver': '580.159.04', 'nccl': '2.28.9', 'nodes': {
                'n1': {'driver': '580.159.04', 'kernel': '6.1'},
                'n2': {'driver': '580.95.05', 'kernel': '6.1'}}})
    lines = [json.loads(x) for x in monitoring.victoriametrics(
        record, {'site': 's'}, ()).splitlines()]
    info = {x['metric']['node']: x['metric'] for x in lines
            if x['metric']['__name__'] == 'hpcval_provenance_info'}
    assert info['n1']['driver'] == '580.159.04'
    assert info['n2']['driver'] == '580.95.05'
    assert info['n2']['nccl'] == '2.28.9' and info['n2']['kernel'] == '6.1'
    figures = [x['metric'] for x in lines
               if x['metric']['__name__'].startswith('hpcval_perf_')]
    assert figures and not any('driver' in m for m in figures)


def test_only_a_diagnostic_is_labelled_and_in_printable_ascii():
    """The reason a run recorded (hpcval_unjudged) labels a diagnostic's
    series, in the characters the history reader takes; a figure merely
    without a reference keeps its one series when it is calibrated."""
    import types
    from hpcval import monitoring
    record = types.SimpleNamespace(
        check_job_completion_time_unix=1.0, created=1.0,
        check_result='pass', check_job_nodelist=['n1'], check_system='mc',
        check_perfvalues={'mc:x_std': (1.0, None, None, None, 'us', None),
                          'mc:y': (2.0, None, None, None, 'us', None)},
        check_hpcval_unjudged={'x_std': 'diagnostic: noise \u2265 1\n',
                               'y': 'no reference in references/mc.yaml'})
    labels = {m['metric']: m for m in (
        json.loads(x)['metric'] for x in monitoring.victoriametrics(
            record, {}, ()).splitlines()) if 'value' in m['__name__']}
    assert labels['x_std']['unjudged'] == 'diagnostic: noise ? 1?'
    assert 'unjudged' not in labels['y']


def test_failures_panel_names_the_failed_figure(victoria, monitored_runs):
    [panel] = [p for p in _dashboard()['panels']
               if p['title'].startswith('Failures')]
    expr = [t['expr'] for t in panel['targets']
            if 'hpcval_perf_passed' in t['expr']][0]
    found = _query(victoria, expr.replace('$site', '.*')
                   .replace('$system', '.*').replace('$test', '.*')
                   .replace('$__range', '1h'))
    assert 'latency_8B' in {s['metric']['metric'] for s in found}


def test_file_perflog_has_them(monitored_run):
    tmp, case = monitored_run
    [log] = (tmp / 'perflogs' / 'local' / 'default').glob(
        'Mpi4pyPingPongCheck*.log')
    last = log.read_text().splitlines()[-1]
    assert case['display_name'] in last and '|latency_8B=' in last
    assert 'bandwidth_4MiB=' in last and 'MB/s (ref 6000.0' in last


class _Server:
    """A real HTTP server on 127.0.0.1 answering every POST with
    ``behaviour(handler)``; it records what it was sent."""

    def __init__(self, behaviour):
        self.requests = []
        self.release = threading.Event()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers['Content-Length']))
                server.requests.append((dict(self.headers), body))
                behaviour(self, server)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0),
                                                     Handler)
        self.httpd.daemon_threads = True
        self.url = f'http://127.0.0.1:{self.httpd.server_port}/api/v1/import'
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _answer(code, headers=None):
    def behaviour(handler, server):
        handler.send_response(code)
        for key, value in (headers or {}).items():
            handler.send_header(key, value)
        handler.send_header('Content-Length', '0')
        handler.end_headers()
    return behaviour


def _hang(handler, server):
    server.release.wait(60)


@pytest.fixture
def serve():
    servers = []

    def start(behaviour):
        servers.append(_Server(behaviour))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _sender(url, **kwargs):
    # its exit line goes to a buffer: the suite's output stays quiet
    opts = dict(timeout=0.5, retries=2, backoff=0.01, max_backoff=0.05,
                queue_size=2, drain=30, stream=io.StringIO())
    opts.update(kwargs)
    return monitoring.Sender(url, **opts)


def test_a_hanging_server_never_blocks_and_loses_count(serve):
    server = serve(_hang)
    sender = _sender(server.url, retries=0)
    for i in range(10):
        sender.submit(f'{{"n": {i}}}\n')     # returns at once: never waits
    assert sender.flush(30)
    assert sender.sent == 0
    # one in the thread, two queued, seven found the queue full
    assert sender.dropped['queue full'] >= 7
    assert sum(sender.dropped.values()) == 10
    assert sender.dropped['timeout after 1 tries'] >= 1
    assert '0 records sent' in sender.summary()


def test_429_is_retried_a_bounded_number_of_times(serve):
    # Retry-After of an hour is capped at max_backoff
    server = serve(_answer(429, {'Retry-After': '3600'}))
    sender = _sender(server.url, retries=2)
    sender.submit('{}\n')
    assert sender.flush(30)
    assert len(server.requests) == 3
    assert sender.dropped == {'HTTP 429 after 3 tries': 1}


def test_a_redirect_is_not_followed(serve):
    elsewhere = serve(_answer(204))
    server = serve(_answer(307, {'Location': elsewhere.url}))
    sender = _sender(server.url)
    sender.submit('{"secret": 1}\n')
    assert sender.flush(30)
    assert len(server.requests) == 1 and elsewhere.requests == []
    assert sender.dropped == {'HTTP 307 redirect not followed': 1}


def test_no_credentials_from_netrc_or_proxy_from_environment(
        serve, tmp_path, monkeypatch):
    server = serve(_answer(204))
    proxy = serve(_answer(204))
    netrc = tmp_path / '.netrc'
    netrc.write_text('machine 127.0.0.1 login alice password s3cret\n')
    netrc.chmod(0o600)
    monkeypatch.setenv('HOME', str(tmp_path))
    monkeypatch.setenv('NETRC', str(netrc))
    monkeypatch.setenv('http_proxy', proxy.url.rsplit('/api', 1)[0])
    monkeypatch.setenv('no_proxy', '')
    sender = _sender(server.url)
    sender.submit('{"a": 1}\n')
    assert sender.flush(30) and sender.sent == 1
    [(headers, body)] = server.requests
    assert body == b'{"a": 1}\n' and proxy.requests == []
    assert not {'Authorization', 'Proxy-Authorization'} & set(headers)


def test_configured_headers_are_the_only_credentials(serve):
    server = serve(_answer(204))
    sender = _sender(server.url, headers={'Authorization': 'Bearer t0ken'})
    sender.submit('{}\n')
    assert sender.flush(30) and sender.sent == 1
    assert server.requests[0][0]['Authorization'] == 'Bearer t0ken'


@pytest.mark.parametrize('url', ['ftp://127.0.0.1/x', 'http:///x',
                                 'http://alice:pw@127.0.0.1/x'])
def test_a_url_with_credentials_or_no_host_is_refused(url):
    with pytest.raises(ValueError, match='monitoring URL'):
        monitoring.Sender(url)


@pytest.mark.parametrize('name', ['node', 'te-st', '1x', '__name__'])
def test_extra_labels_that_would_break_series_are_refused(name):
    with pytest.raises(ValueError, match='monitoring label'):
        monitoring.check_label_names({name: 'x'})


def test_a_validation_run_finishes_while_the_server_hangs(serve, tmp_path):
    """The ping-pong's own verdict comes back while the monitoring server
    accepts connections and never answers (with ReFrame's handler alone the
    run would wait forever); the lost record is said on stderr."""
    server = serve(_hang)
    env = _env(server.url.rsplit('/api', 1)[0])
    proc, report = _pingpong(tmp_path, env)
    assert report is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    case = one_case(report, 'Mpi4pyPingPongCheck')
    assert case['perfvalues'], case['fail_reason']
    # config/monitoring.py: 5 s a try, 3 tries, 10 s at exit
    assert 1 <= len(server.requests) <= 3
    assert 'hpcval monitoring: 0 records sent' in proc.stderr
    assert '1 dropped' in proc.stderr


def test_repeats_of_a_test_are_one_series():
    """``--repeat 3`` names its runs %.repeat_no=0..2: their figures go to
    one series (the test label without the repeat), each run a point."""
    import types
    from hpcval import monitoring
    series = set()
    for i in range(3):
        record = types.SimpleNamespace(
            check_job_completion_time_unix=1.0 + i, created=1.0,
            check_result='pass', check_job_nodelist=['n1'],
            check_display_name=f'Mpi4pyPingPongCheck %placement=on_node '
                               f'%.repeat_no={i}',
            check_perfvalues={'local:latency_8B': (1.0 + i, 2.0, None, 9.0,
                                                   'us', 'pass')},
            check_system='local')
        for line in monitoring.victoriametrics(record, {}, ()).splitlines():
            metric = json.loads(line)['metric']
            if metric['__name__'] == 'hpcval_perf_value_seconds':
                series.add(tuple(sorted(metric.items())))
    [one] = series
    assert dict(one)['test'] == 'Mpi4pyPingPongCheck %placement=on_node'


def test_repeats_ending_in_one_second_stay_two_samples():
    """Slurm's accounting ends jobs in whole seconds: repeat <i> is added
    to its time in milliseconds, so one series keeps each run."""
    import types
    from hpcval import monitoring
    stamps = set()
    for i in range(3):
        record = types.SimpleNamespace(
            check_job_completion_time_unix=1700000000, created=1.0,
            check_result='pass', check_job_nodelist=['n1'],
            check_display_name=f'Mpi4pyPingPongCheck %.repeat_no={i}',
            check_perfvalues={}, check_system='local')
        for line in monitoring.victoriametrics(record, {}, ()).splitlines():
            stamps.add(json.loads(line)['timestamps'][0])
    assert stamps == {1700000000000, 1700000000001, 1700000000002}


def test_a_repeat_3_run_is_one_series_per_test(victoria, tmp_path):
    """A real ``reframe --repeat 3`` run: its three runs
    (``%.repeat_no=0..2``) are three points of one series per figure in
    VictoriaMetrics, named by the test without the repeat."""
    env = {**_env(victoria), 'HPCVAL_PERFLOG_SITE': 'repeats',
           'HPCVAL_SITE': str(_site(tmp_path, failing=False))}
    proc, report = _pingpong(tmp_path, env, '--repeat', '3')
    assert report is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs = by_name(report, 'Mpi4pyPingPongCheck')
    assert sorted(c['display_name'][-13:] for c in runs) == \
        [f'%.repeat_no={i}' for i in range(3)]
    assert 'dropped' not in proc.stderr, proc.stderr[-2000:]
    test = runs[0]['display_name'].rsplit(' %', 1)[0]
    try:
        series = _export(victoria, '{site="repeats"}', points=3)
    finally:
        # the other tests' queries find the ping-pong by its test label
        _get(f'{victoria}/api/v1/admin/tsdb/delete_series?' +
             urllib.parse.urlencode({'match[]': '{site="repeats"}'}))
    figures = {(s['__name__'], s.get('metric')) for s, _ in series}
    assert ('hpcval_perf_value_seconds', 'latency_8B') in figures
    assert len(series) == len(figures), 'a figure in several series'
    for labels, points in series:
        assert labels['test'] == test
        assert len(set(points)) == 3, labels
