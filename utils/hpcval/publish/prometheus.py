"""One bounded request to a Prometheus query API, strictly decoded."""
import contextlib
import http.client
import json
import math
import re
import reprlib
import socket
import threading
import time
import urllib.parse

from hpcval import progress

#: seconds one request may take in all, connect to last byte
DEADLINE = 60.0
#: the most bytes one answer may have
MAX_ANSWER = 32 * 2 ** 20
#: the most series one answer may hold
MAX_SERIES = 50_000
_CHUNK = 2 ** 16
# a Prometheus sample value as the API writes it
_NUMBER = re.compile(r'[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?|[+-]?Inf|NaN')
_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = 60
_SHORT.maxlevel = 2


class QueryError(ValueError):
    """The request or its answer is unusable; the message says why."""


def get(url, target, headers, seconds=DEADLINE, max_bytes=MAX_ANSWER,
        stated=None):
    """(status, body) of GET ``url`` + ``target`` within ``seconds``."""
    stated = seconds if stated is None else stated
    held, box = [], {}

    def work():
        try:
            box['got'] = _get(url, target, headers,
                              time.monotonic() + seconds, max_bytes, held,
                              stated)
        except BaseException as err:    # raised again in the caller
            box['err'] = err
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        # a read blocked on a trickle (or a name lookup) ends here; the
        # daemon thread cannot outlive the command
        for sock in held:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        raise QueryError(_late(url, stated))
    if 'err' in box:
        raise box['err']
    return box['got']


def _late(url, seconds):
    return f'{url}: no whole answer within {seconds:g} s (--deadline)'


def _left(url, end, stated):
    left = end - time.monotonic()
    if left <= 0:
        raise QueryError(_late(url, stated))
    return left


def _get(url, target, headers, end, max_bytes, held, stated):
    parts = urllib.parse.urlsplit(url)
    kind = http.client.HTTPSConnection if parts.scheme == 'https' else \
        http.client.HTTPConnection
    conn = kind(parts.hostname, parts.port,
                timeout=_left(url, end, stated))
    try:
        conn.connect()
        sock = conn.sock
        held.append(sock)
        conn.request('GET', parts.path + target, headers=headers)
        sock.settimeout(_left(url, end, stated))
        resp = conn.getresponse()
        # an error's text is shown, cut; a success is the answer
        limit = max_bytes if resp.status == 200 else 2000
        chunks, size = [], 0
        with progress.bar(desc=f'reading {parts.hostname}', unit='B',
                          unit_scale=True) as shown:
            while size <= limit:
                sock.settimeout(_left(url, end, stated))
                chunk = resp.read1(_CHUNK)
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
                shown.update(len(chunk))
        if size > limit and resp.status == 200:
            raise QueryError(f'{url}: the answer exceeds {max_bytes} bytes '
                             f'(the most read); give a shorter --since/'
                             f'--until')
        return resp.status, b''.join(chunks)[:limit]
    except TimeoutError:
        raise QueryError(_late(url, stated)) from None
    except (OSError, http.client.HTTPException) as err:
        raise QueryError(f'{url}: no answer ({err or type(err).__name__})'
                         ) from None
    finally:
        conn.close()


def matrix(url, raw, max_series=MAX_SERIES):
    """[(labels, [(time, value)])] of a matrix answer, else QueryError."""
    try:
        data = json.loads(raw)
    except RecursionError:
        raise QueryError(f'{url}: not a Prometheus query answer: nested '
                         f'too deep') from None
    except ValueError:
        raise QueryError(f'{url}: not a Prometheus query answer: not JSON: '
                         f'{_SHORT.repr(raw[:60])}') from None
    if not isinstance(data, dict):
        _wrong(url, 'the answer', 'an object', data)
    if data.get('status') == 'error':
        raise QueryError(f'{url}: the server\'s error: '
                         f'{_SHORT.repr(data.get("error"))}')
    if data.get('status') != 'success':
        _wrong(url, 'status', '"success"', data.get('status'))
    inner = data.get('data')
    if not isinstance(inner, dict):
        _wrong(url, 'data', 'an object', inner)
    if inner.get('resultType') != 'matrix':
        _wrong(url, 'data.resultType', '"matrix"', inner.get('resultType'))
    result = inner.get('result')
    if not isinstance(result, list):
        _wrong(url, 'data.result', 'a list', result)
    if len(result) > max_series:
        raise QueryError(f'{url}: {len(result)} series in one answer, more '
                         f'than the {max_series} read; give a shorter '
                         f'--since/--until')
    return [_series(url, f'data.result[{i}]', s) for i, s in
            enumerate(result)]


def _series(url, where, series):
    if not isinstance(series, dict):
        _wrong(url, where, 'an object', series)
    labels = series.get('metric')
    if not isinstance(labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str)
            for k, v in labels.items()):
        _wrong(url, f'{where}.metric', 'labels, each a text', labels)
    values = series.get('values')
    if not isinstance(values, list):
        _wrong(url, f'{where}.values', 'a list', values)
    pairs = []
    for j, pair in enumerate(values):
        if not (isinstance(pair, list) and len(pair) == 2 and
                _finite(pair[0]) and isinstance(pair[1], str) and
                _NUMBER.fullmatch(pair[1])):
            _wrong(url, f'{where}.values[{j}]', '[timestamp, "number"]',
                   pair)
        pairs.append((float(pair[0]), float(pair[1])))
    return labels, pairs


def _finite(number):
    # an int of 400 digits is JSON too, and no float
    return type(number) in (int, float) and abs(number) < 1e15 and \
        math.isfinite(number)


def _wrong(url, where, expected, got):
    raise QueryError(f'{url}: not a Prometheus query answer: {where}: '
                     f'expected {expected}, got {_SHORT.repr(got)}')
