"""``hpcval calibrate --from URL`` against a monitoring server that is
hostile or broken: it trickles, floods, nests, reshapes or mislabels.
Each ends within the stated deadline in one line, exit 3, or is counted
in one summary line; never a traceback or "unexpected error".  A local
server on 127.0.0.1 in a thread; the deadline lowered to 0.5 s against
a trickle, and ample where the server answers at once (a busy CI host
must not turn a shape error into a missed deadline).
"""
import http.server
import json
import subprocess
import threading
import time

import pytest

from hpcval import cli
from hpcval.publish import history, prometheus
from rfmrun import ROOT, VENV_BIN

NOW = time.time() - 5


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def do_GET(self):
        self.server.answer(self)

    def log_message(self, *args):
        pass


@pytest.fixture
def serve():
    """serve(answer) -> URL of a server where ``answer(handler)`` writes
    each response."""
    servers = []

    def start(answer):
        server = _Server(('127.0.0.1', 0), _Handler)
        server.answer = answer
        threading.Thread(target=server.serve_forever, args=(0.05,),
                         daemon=True).start()
        servers.append(server)
        return f'http://127.0.0.1:{server.server_port}'
    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _body(handler, data, status=200):
    body = data if isinstance(data, bytes) else json.dumps(data).encode()
    handler.send_response(status)
    handler.send_header('Content-Length', str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def _matrix(*series):
    return {'status': 'success',
            'data': {'resultType': 'matrix', 'result': list(series)}}


def _labels(name, **more):
    return {'__name__': name, 'system': 'minicluster', 'partition': 'cpu',
            'environ': 'builtin', 'node': 'n1',
            'test': 'Mpi4pyPingPongCheck %placement=on_node', **more}


def _history(series_of):
    """An answer for each of the two queries: the perf values' series and
    the passed ones, each a list of series."""
    def answer(handler):
        passed = 'hpcval_check_passed' in handler.path
        _body(handler, _matrix(*series_of(passed)))
    return answer


def _runs(n, partition='cpu', times=1):
    def series_of(passed):
        name = 'hpcval_check_passed' if passed else \
            'hpcval_perf_value_seconds'
        extra = {} if passed else {'metric': 'latency_8B'}
        labels = _labels(name, partition=partition, **extra)
        values = [[NOW - 60 * i, '1' if passed else f'{2e-6 + 1e-8 * i}']
                  for i in range(n)]
        return [{'metric': labels, 'values': values}] * times
    return series_of


def _calibrate(capsys, url, *more, deadline='30'):
    start = time.monotonic()
    status = cli.main(['calibrate', '--system', 'minicluster', '--ref-dir',
                       str(ROOT / 'references'), '--from', url, '--since',
                       'now-1h', '--deadline', deadline, *more])
    took = time.monotonic() - start
    out, err = capsys.readouterr()
    assert 'Traceback' not in err and 'unexpected error' not in err, err
    return status, err, took


# Both trickles would hold a client without a whole-request deadline for
# about a minute, far past the generous bounds the tests below allow (a
# busy 2-core CI host runs 5 pytest workers: an import or a thread switch
# can take seconds there), so the bounds still tell a cut from no cut.
def _trickle(handler):
    handler.send_response(200)
    handler.send_header('Content-Length', '1000')
    handler.end_headers()
    try:
        for _ in range(200):
            handler.wfile.write(b' ')
            handler.wfile.flush()
            time.sleep(0.3)
    except OSError:
        pass


def _slow_headers(handler):
    try:
        for byte in b'HTTP/1.1 200 OK\r\nX-A: ' + b'a' * 300:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            time.sleep(0.2)
    except OSError:
        pass


@pytest.mark.parametrize('answer', [_trickle, _slow_headers])
def test_a_trickle_ends_at_the_deadline(serve, capsys, answer):
    status, err, took = _calibrate(capsys, serve(answer), deadline='0.5')
    assert status == 3 and took < 20, (took, err)
    assert 'no whole answer within 0.5 s (--deadline)' in err
    assert len(err.splitlines()) == 1, err


def test_the_real_command_returns_within_its_deadline(serve):
    url = serve(_trickle)
    start = time.monotonic()
    proc = subprocess.run(
        [str(VENV_BIN / 'hpcval'), 'calibrate', '--system', 'minicluster',
         '--from', url, '--since', 'now-1h', '--deadline', '0.5'],
        capture_output=True, text=True, timeout=120)
    # the command's own start (imports) plus the deadline, with room for
    # a busy host; the trickle alone would last a minute
    assert proc.returncode == 3 and time.monotonic() - start < 40, \
        proc.stderr
    assert proc.stderr.count('\n') == 1 and '--deadline' in proc.stderr


def test_a_flood_stops_at_the_size_bound(serve, capsys):
    def flood(handler):
        handler.send_response(200)
        handler.send_header('Content-Length', str(2 ** 30))
        handler.end_headers()
        try:
            for _ in range(2 ** 10):
                handler.wfile.write(b'[' * 2 ** 20)
        except OSError:
            pass
    url = serve(flood)
    with pytest.raises(history.HistoryError,
                       match=f'exceeds {2 ** 20} bytes'):
        history.query(url, 'up', NOW, timeout=30, max_bytes=2 ** 20)
    # the default bound, through the command
    status, err, _ = _calibrate(capsys, url, '--deadline', '60')
    assert status == 3 and len(err.splitlines()) == 1 and \
        f'exceeds {prometheus.MAX_ANSWER} bytes' in err, err


@pytest.mark.parametrize('raw, says', [
    (b'[' * 100_000 + b']' * 100_000, 'nested too deep'),
    (b'\xff\xfe', 'not JSON'),
    (b'[]', 'the answer: expected an object'),
    (json.dumps({'status': 'error', 'error': 'x' * 10 ** 5}).encode(),
     "the server's error"),
    (json.dumps({'status': 'success', 'data': {'resultType': 'vector',
                                               'result': []}}).encode(),
     'data.resultType: expected "matrix"'),
    (json.dumps(_matrix({'values': []})).encode(),
     r'data.result\[0\].metric: expected labels'),
    (json.dumps(_matrix({'metric': {'a': {'b': 'c'}}, 'values': []})
                ).encode(), r'data.result\[0\].metric'),
    (json.dumps(_matrix({'metric': {}, 'values': [[1, 'word']]})).encode(),
     r'data.result\[0\].values\[0\]: expected \[timestamp, "number"\]'),
    (json.dumps(_matrix({'metric': {}, 'values': [[1, 2.5]]})).encode(),
     r'values\[0\]'),
    (json.dumps(_matrix({'metric': {}, 'values': [[True, '1']]})).encode(),
     r'values\[0\]'),
    (json.dumps(_matrix({'metric': {}, 'values': [['1', '1', '1']]})
                ).encode(), r'values\[0\]'),
    (json.dumps(_matrix({'metric': {}, 'values': [[10 ** 400, '1']]})
                ).encode(), r'values\[0\]'),
    (json.dumps(_matrix({'metric': {}, 'values': {'a': 1}})).encode(),
     r'data.result\[0\].values: expected a list'),
])
def test_each_malformed_shape_is_named(serve, raw, says):
    url = serve(lambda h: _body(h, raw))
    with pytest.raises(history.HistoryError, match=says) as err:
        history.query(url, 'up', NOW, timeout=30)
    assert len(str(err.value)) < 400 and '\n' not in str(err.value)


def test_too_many_series_are_refused():
    series = [{'metric': {}, 'values': []}] * 11
    with pytest.raises(prometheus.QueryError, match='11 series in one '):
        prometheus.matrix('http://h', json.dumps(_matrix(*series)), 10)


@pytest.mark.parametrize('label, value, says', [
    ('partition', '*', 'label partition is not a name'),
    ('partition', '.*', 'label partition is not a name'),
    ('environ', 'a b', 'label environ is not a name'),
    ('system', 'other', 'system label is not minicluster'),
    ('test', '', 'the test label'),
    ('test', 'X\n', 'the test label'),
])
def test_a_label_no_run_writes_exits_3(serve, capsys, label, value, says):
    def series_of(passed):
        return [{'metric': {**_labels('hpcval_check_passed'),
                            label: value}, 'values': [[NOW, '1']]}]
    status, err, _ = _calibrate(capsys, serve(_history(series_of)))
    assert status == 3 and says in err and len(err.splitlines()) == 1, err


def test_label_less_series_exits_3(serve, capsys):
    url = serve(lambda h: _body(h, _matrix({'metric': {},
                                            'values': [[NOW, '1']]})))
    status, err, _ = _calibrate(capsys, url)
    assert status == 3 and 'system label' in err, err


def test_another_partition_is_left_out_in_one_line(serve, capsys):
    status, err, _ = _calibrate(capsys, serve(_history(_runs(20, 'gpu'))))
    assert status == 0, err
    left = [line for line in err.splitlines() if 'left out' in line]
    assert len(left) == 1 and 'left out 2 ' in left[0] and \
        "partition 'gpu' is not one of system minicluster's (cpu)" in \
        left[0], err


def test_a_series_given_three_times_counts_once(serve, capsys):
    status, err, _ = _calibrate(capsys, serve(_history(_runs(6, times=3))))
    assert status == 0, err
    assert 'read 6 figure(s) of 6 test case run(s)' in err, err
    left = [line for line in err.splitlines() if 'left out' in line]
    assert len(left) == 1 and 'left out 12 ' in left[0] and \
        'given again' in left[0], err
    # again under a label of no meaning to hpcval: still one run
    def relabelled(passed):
        series = _runs(6)(passed)
        return series + [{**s, 'metric': {**s['metric'], 'x': '1'}}
                         for s in series]
    status, err, _ = _calibrate(capsys, serve(_history(relabelled)))
    assert 'read 6 figure(s) of 6 test case run(s)' in err, err


def test_a_run_both_passed_and_failed_is_refused(serve, capsys):
    def series_of(passed):
        series = _runs(3)(passed)
        if passed:
            series.append({'metric': series[0]['metric'],
                           'values': [[NOW, '0']]})
        return series
    status, err, _ = _calibrate(capsys, serve(_history(series_of)))
    assert status == 3 and 'given both 1 and not 1' in err, err


def test_the_deadline_option_is_bounded(capsys):
    for value in ('0', '-1', '601', 'nan'):
        status, err, _ = _calibrate(capsys, 'http://127.0.0.1:9',
                                    '--deadline', value)
        assert status == 3 and '--deadline' in err, (value, err)


def test_a_figure_without_its_metric_label_is_left_out(serve, capsys):
    # every series hpcval sends names its figure; one without it names
    # nothing calibrate could write a reference for
    def series_of(passed):
        series = _runs(6)(passed)
        return series if passed else [
            {**s, 'metric': {k: v for k, v in s['metric'].items()
                             if k != 'metric'}} for s in series]
    status, err, _ = _calibrate(capsys, serve(_history(series_of)))
    assert 'read 0 figure(s)' in err or 'no hpcval series' in err, err
    left = [line for line in err.splitlines() if 'left out' in line]
    assert len(left) == 1 and 'no figure name' in left[0], err
