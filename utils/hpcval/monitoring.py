"""Performance records to a time-series database (docs/monitoring.md)."""
import collections
import contextlib
import json
import math
import queue
import re
import sys
import threading
import time
import types
import urllib.error
import urllib.parse
import urllib.request

from hpcval import records, units
from hpcval.judgement import PASS, Band, outcome

_CASE_LABELS = {'test': 'check_display_name', 'system': 'check_system',
                'partition': 'check_partition', 'environ': 'check_environ'}
_LABEL_NAME = re.compile(r'[a-zA-Z_][a-zA-Z0-9_]*')
_RESERVED = frozenset({*_CASE_LABELS, 'node', 'metric', 'unjudged',
                       '__name__'})
# ``--repeat N``'s ``%.repeat_no=<i>``: runs of one series; <i> ms are added
# to the time, so that two repeats ending in one (Slurm) second stay two
_REPEAT = re.compile(r' %\.?repeat_no=(\d{1,6})')

#: family -> (unit the value is converted to, its name in the metric name,
#: the factor from that unit to the name's)
BASE = {'bandwidth': ('B/s', 'bytes_per_second', 1),
        'time': ('s', 'seconds', 1),
        'flops': ('MFLOP/s', 'flop_per_second', 1e6),
        'rate': ('op/s', 'operations_per_second', 1)}


def base_unit(value, unit):
    """(value in the base unit, the unit's part of the metric name)."""
    try:
        fam = units.family(unit)
    except ValueError:
        name = re.sub(r'[^a-z0-9]+', '_', str(unit or '').lower()).strip('_')
        return value, name or 'value'
    to, name, scale = BASE[fam]
    return units.convert(value, unit, to) * scale, name


def _labels(record, extras, ignore_keys):
    labels = {name: str(getattr(record, attr, '') or '')
              for name, attr in _CASE_LABELS.items()}
    labels['test'] = _REPEAT.sub('', labels['test'])
    nodes = list(getattr(record, 'check_job_nodelist', None) or [])
    if len(nodes) == 1:
        labels['node'] = str(nodes[0])
    labels.update({str(k): str(v) for k, v in (extras or {}).items()})
    return {k: v for k, v in labels.items()
            if k not in ignore_keys and f'check_{k}' not in ignore_keys}


def _line(name, labels, value, millis):
    return json.dumps({'metric': {'__name__': name, **labels},
                       'values': [value], 'timestamps': [millis]})


def _finite(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool) and \
        math.isfinite(x)


def victoriametrics(record, extras, ignore_keys):
    """VictoriaMetrics JSON lines of one perflog record."""
    when = getattr(record, 'check_job_completion_time_unix', None) or \
        record.created
    repeat = _REPEAT.search(str(getattr(record, 'check_display_name', '')
                                or ''))
    millis = int(float(when) * 1000) + (int(repeat.group(1)) if repeat
                                        else 0)
    labels = _labels(record, extras, ignore_keys)
    passed = 1 if getattr(record, 'check_result', '') == PASS else 0
    nodes = getattr(record, 'check_job_nodelist', None) or []
    lines = [_line('hpcval_check_passed', labels, passed, millis),
             _line('hpcval_check_nodes', labels, len(nodes), millis)]
    unjudged = getattr(record, 'check_hpcval_unjudged', None)
    unjudged = unjudged if isinstance(unjudged, dict) else {}
    for var, info in (getattr(record, 'check_perfvalues', None) or {}).items():
        value, ref, lower, upper, unit, result = info
        if not _finite(value):
            continue
        series = {**labels, 'metric': var.split(':')[-1]}
        base, suffix = base_unit(value, unit)
        # only a diagnostic's series is labelled (printable ASCII, as the
        # history reader takes it): another keeps its labels when calibrated
        why = re.sub(r'[^ -~]', '?', str(unjudged.get(series['metric'])
                                        or ''))[:200]
        lines.append(_line(f'hpcval_perf_value_{suffix}', {**series, **(
            {'unjudged': why} if why.startswith('diagnostic: ') else {})},
            base, millis))
        sample = types.SimpleNamespace(value=value, reference=ref,
                                       lower=lower, upper=upper, unit=unit,
                                       result=result)
        judged = outcome(sample)
        if judged is None:
            continue
        lines.append(_line('hpcval_perf_passed', series,
                           1 if judged == PASS else 0, millis))
        low, high = Band.of_sample(sample).limits()
        for name, figure in (('reference', ref), ('lower_bound', low),
                             ('upper_bound', high)):
            if _finite(figure):
                lines.append(_line(f'hpcval_perf_{name}_{suffix}', series,
                                   base_unit(figure, unit)[0], millis))
    lines += _provenance_lines(record, labels, millis)
    return '\n'.join(lines) + '\n'


#: provenance keys the info series carries (a fixed set of label names)
PROVENANCE_LABELS = ('driver', 'vbios', 'cuda', 'rocm', 'nccl', 'rccl',
                     'mpi', 'kernel', 'image_digest')

_JOB_WIDE = ('nccl', 'rccl', 'mpi', 'image_digest')


def _provenance_lines(record, labels, millis):
    """hpcval_provenance_info (value 1) of each node the record names."""
    prov = getattr(record, 'check_hpcval_provenance', None)
    if not isinstance(prov, dict):
        return []
    nodes = prov.get(records.NODES)
    named = sorted(nodes) if isinstance(nodes, dict) and nodes else \
        [labels.get('node', '')]
    out = []
    for node in named:
        # the node's own record, and what the job ran for all its nodes
        own = {**{k: prov[k] for k in _JOB_WIDE if isinstance(prov.get(k),
                                                              str)},
               **records.of_node(prov, node)}
        info = {k: own[k][:200] for k in PROVENANCE_LABELS
                if isinstance(own.get(k), str) and own[k]}
        if info:
            out.append(_line('hpcval_provenance_info',
                             {**labels, 'node': str(node), **info}, 1,
                             millis))
    return out


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # a redirect would carry the records and headers where nobody configured
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


class Sender:
    """Posts JSON lines from a background thread through a bounded queue."""

    def __init__(self, url, *, timeout=5.0, retries=2, backoff=1.0,
                 max_backoff=5.0, queue_size=1000, drain=10.0, headers=None,
                 proxy=None, stream=None):
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ('http', 'https') or not parsed.hostname \
                or parsed.username or parsed.password:
            raise ValueError(f'monitoring URL {url!r}: expected '
                             f'http(s)://HOST[:PORT][/PATH], no user or '
                             f'password in it')
        self.url = url
        self.timeout, self.retries = float(timeout), int(retries)
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.drain = float(drain)
        self.headers = {'Content-Type': 'application/json',
                        **(headers or {})}
        self._opener = urllib.request.build_opener(
            _NoRedirect, urllib.request.ProxyHandler(
                {parsed.scheme: proxy} if proxy else {}))
        self._queue = queue.Queue(maxsize=int(queue_size))
        self._stream = stream
        self._lock = threading.Lock()
        self._thread = None
        self.sent = 0
        self.dropped = collections.Counter()     # reason -> records

    def __deepcopy__(self, memo):
        # ReFrame deep-copies its configuration: one sender, one queue
        return self

    def formatter(self, record, extras, ignore_keys):
        """httpjson's ``json_formatter``: queues the lines, returns None."""
        self.submit(victoriametrics(record, extras, ignore_keys))

    def submit(self, body):
        self._start()
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            self._drop('queue full')

    def flush(self, timeout):
        """Wait up to ``timeout`` s for the queue to empty; True if it did."""
        done = self._queue.all_tasks_done     # notified as the queue empties
        with done:
            return done.wait_for(lambda: not self._queue.unfinished_tasks,
                                 timeout)

    def summary(self):
        lost = sum(self.dropped.values())
        reasons = ', '.join(f'{n} {why}' for why, n in
                            sorted(self.dropped.items()))
        return (f'hpcval monitoring: {self.sent} records sent to '
                f'{self.url}, {lost} dropped' +
                (f' ({reasons})' if reasons else ''))

    def close(self):
        if self._thread is None:
            return
        if not self.flush(self.drain):
            self._drop('unsent at exit', self._queue.unfinished_tasks)
        if sum(self.dropped.values()):
            print(self.summary(), file=self._stream or sys.stderr)

    def _drop(self, why, count=1):
        with self._lock:
            self.dropped[why] += count

    def _start(self):
        with self._lock:
            if self._thread is None:
                import atexit
                self._thread = threading.Thread(
                    target=self._work, name='hpcval-monitoring', daemon=True)
                self._thread.start()
                atexit.register(self.close)

    def _work(self):
        while True:
            body = self._queue.get()
            try:
                self._post(body.encode())
            except Exception as err:    # never let the thread die
                self._drop(f'error {type(err).__name__}')
            finally:
                self._queue.task_done()

    def _post(self, data):
        for attempt in range(self.retries + 1):
            wait = self.backoff * 2 ** attempt
            try:
                request = urllib.request.Request(
                    self.url, data=data, headers=self.headers, method='POST')
                with self._opener.open(request, timeout=self.timeout):
                    pass
                with self._lock:
                    self.sent += 1
                return
            except urllib.error.HTTPError as err:
                err.close()
                if 300 <= err.code < 400:
                    return self._drop(f'HTTP {err.code} redirect not '
                                      f'followed')
                if err.code != 429 and err.code < 500:
                    return self._drop(f'HTTP {err.code}')
                why = f'HTTP {err.code}'
                with contextlib.suppress(TypeError, ValueError):
                    wait = max(0.0, float(err.headers.get('Retry-After',
                                                          wait)))
            except (OSError, ValueError) as err:
                why = ('timeout' if 'timed out' in str(err)
                       else f'network error {type(err).__name__}')
            if attempt < self.retries:
                time.sleep(min(wait, self.max_backoff))
        self._drop(f'{why} after {self.retries + 1} tries')


def check_label_names(extras):
    """Refuse extra labels that are no label names or are hpcval's own."""
    for name in extras:
        if not _LABEL_NAME.fullmatch(str(name)) or name in _RESERVED:
            raise ValueError(f'monitoring label {name!r}: a label name is '
                             f'[a-zA-Z_][a-zA-Z0-9_]* and not one of '
                             f'{", ".join(sorted(_RESERVED))}')
