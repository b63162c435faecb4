"""Performance records of real runs reach a real VictoriaMetrics (Debian's
``victoria-metrics``, started here on 127.0.0.1 and a free port, stopped
after) through ReFrame's ``httpjson`` handler and hpcval's sender as
config/monitoring.py sets them up, and are read back through its query API:
one series per figure across a pass and a fail, and every query of the
shipped Grafana dashboard returns data.  The same run's file perflog has
them too.  The sender itself is tried against real HTTP servers on
127.0.0.1 that hang, answer 429 and redirect."""
import http.server
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
from rfmrun import ROOT, one_case, perf, reframe

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


def _pingpong(tmp, env):
    return reframe('-r', '--system', 'local', '-n', 'Mpi4pyPingPongCheck',
                   '-S', 'Mpi4pyPingPongCheck.loops=1000',
                   '--perflogdir', str(tmp / 'perflogs'),
                   tmp_path=tmp, env=env,
                   checks=('checks/mpi4py_pingpong.py',))


def _failing_site(tmp):
    """A site folder whose local references ask 8-byte latency below 10 ns:
    the same figure of the same check then fails."""
    refs = tmp / 'site' / 'references'
    refs.mkdir(parents=True)
    text = (ROOT / 'references' / 'local.yaml').read_text()
    tight, n = re.subn(r'(latency_8B:\n\s+value:) 2\.0\n(\s+upper:) 9\.0',
                       r'\1 0.001\n\2 9.0', text)
    assert n == 1
    (refs / 'local.yaml').write_text(tight)
    return tmp / 'site'


@pytest.fixture(scope='module')
def monitored_runs(victoria, tmp_path_factory):
    """The ping-pong twice: against the built-in references, then against a
    site's that it cannot meet."""
    runs = []
    for extra in ({}, 'fail'):
        tmp = tmp_path_factory.mktemp('monitored')
        env = _env(victoria)
        if extra:
            env['HPCVAL_SITE'] = str(_failing_site(tmp))
        proc, report = _pingpong(tmp, env)
        assert report is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
        assert 'dropped' not in proc.stderr, proc.stderr[-2000:]
        case = one_case(report, 'Mpi4pyPingPongCheck')
        assert case['perfvalues'], case['fail_reason']
        runs.append((tmp, case))
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
