"""Performance records of a real run reach a real VictoriaMetrics (Debian's
``victoria-metrics``, started here on 127.0.0.1 and a free port, stopped
after) through ReFrame's ``httpjson`` handler as config/monitoring.py sets
it up, and are read back through its query API; the same run's file
perflog has them too."""
import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request

import pytest

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


@pytest.fixture(scope='module')
def monitored_run(victoria, tmp_path_factory):
    tmp = tmp_path_factory.mktemp('monitored')
    env = {'RFM_CONFIG_FILES': f'{ROOT}/config/settings.py:'
                               f'{ROOT}/config/monitoring.py',
           'HPCVAL_PERFLOG_URL': f'{victoria}/api/v1/import',
           'HPCVAL_PERFLOG_SITE': 'test-site'}
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'Mpi4pyPingPongCheck', '-S',
                           'Mpi4pyPingPongCheck.loops=1000',
                           '--perflogdir', str(tmp / 'perflogs'),
                           tmp_path=tmp, env=env,
                           checks=('checks/mpi4py_pingpong.py',))
    assert report is not None, proc.stdout[-2000:] + proc.stderr[-2000:]
    case = one_case(report, 'Mpi4pyPingPongCheck')
    assert case['perfvalues'], case['fail_reason']
    return tmp, case


def _query(base, promql):
    _get(f'{base}/internal/force_flush')
    url = f'{base}/api/v1/query?' + urllib.parse.urlencode({'query': promql})
    deadline = time.monotonic() + 20
    while True:
        data = json.loads(_get(url))
        if data['data']['result'] or time.monotonic() > deadline:
            return data['data']['result']
        time.sleep(0.5)


def test_records_are_queried_back(victoria, monitored_run):
    _, case = monitored_run
    value, ref, lower, upper, unit, result = perf(case)['latency_8B']
    [series] = _query(victoria, 'hpcval_perf_value{metric="latency_8B",'
                                'system="local",site="test-site"}')
    labels = series['metric']
    assert labels['test'] == case['display_name']
    assert (labels['partition'], labels['environ']) == ('default', 'gnu')
    assert labels['unit'] == 'us' and labels['result'] == result
    assert float(series['value'][1]) == pytest.approx(value, rel=1e-6)
    [bound] = _query(victoria, 'hpcval_perf_upper_bound{metric="latency_8B"}')
    assert float(bound['value'][1]) == pytest.approx(ref * (1 + upper))
    [passed] = _query(victoria, 'hpcval_check_passed{system="local"}')
    assert float(passed['value'][1]) == (case['result'] == 'pass')


def test_file_perflog_has_them(monitored_run):
    tmp, case = monitored_run
    [log] = (tmp / 'perflogs' / 'local' / 'default').glob(
        'Mpi4pyPingPongCheck*.log')
    last = log.read_text().splitlines()[-1]
    assert case['display_name'] in last and '|latency_8B=' in last
    assert 'bandwidth_4MiB=' in last and 'MB/s (ref 6000.0' in last
