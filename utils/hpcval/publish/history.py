"""Runs of one system read back from monitoring (calibrate --from URL)."""
import json
import math
import os
import re
import stat
import time
import urllib.parse

from hpcval import references, units
from hpcval.monitoring import BASE
from hpcval.publish import prometheus, results

# the unit part of a series name -> (unit its values are in, scale back)
_UNITS = {name: (unit, 1 / scale) for unit, name, scale in BASE.values()}
# units a calibrated figure is written in when the old file has none
_READABLE = {'time': ('s', 'ms', 'us', 'ns'),
             'bandwidth': ('TB/s', 'GB/s', 'MB/s', 'KB/s', 'B/s'),
             'flops': ('TFLOP/s', 'GFLOP/s', 'MFLOP/s'), 'rate': ('op/s',)}
_SYSTEM = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]*')
_KEEP = ('test', 'system', 'partition', 'environ', 'node', 'site')
# label values ReFrame and Slurm give (a name, never a pattern like `*`)
_NAME = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.+-]{0,127}')
# a display name: the check class, then parameters
_TEST = re.compile(r'[A-Za-z_][A-Za-z0-9_]*( [ -~]{1,1000})?')
_METRIC = re.compile(r'[ -~]{1,200}')


class HistoryError(ValueError):
    """The history cannot be read; the message names the URL and why."""


def check_url(url):
    """``url`` if http(s)://HOST[:PORT][/PATH] without user or password."""
    parsed = urllib.parse.urlsplit(url or '')
    if parsed.scheme not in ('http', 'https') or not parsed.hostname or \
            parsed.username or parsed.password or parsed.query or \
            parsed.fragment:
        raise HistoryError(f'--from {url!r}: expected http(s)://HOST[:PORT]'
                           f'[/PATH] of a Prometheus query API, no user, '
                           f'password or query in it')
    return url.rstrip('/')


def token_from(path):
    """The bearer token in ``path``: a regular file only its owner reads."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise HistoryError(f'--token-file {path}: {err.strerror}') from None
    with os.fdopen(fd, encoding='utf-8') as fp:
        st = os.fstat(fp.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077:
            raise HistoryError(f'--token-file {path}: must be a regular '
                               f'file that only its owner can read')
        token = fp.read(4096).strip()
    if not re.fullmatch(r'[\x21-\x7e]+', token):
        raise HistoryError(f'--token-file {path}: not one printable token')
    return token


def query(url, promql, at, token=None, timeout=prometheus.DEADLINE,
          max_bytes=prometheus.MAX_ANSWER, stated=None):
    """The series of an instant query at ``at``, within ``timeout`` s."""
    body = urllib.parse.urlencode({'query': promql, 'time': f'{at:.3f}'})
    try:
        status, raw = prometheus.get(
            url, f'/api/v1/query?{body}',
            {'Authorization': f'Bearer {token}'} if token else {},
            timeout, max_bytes, stated)
        if status != 200:
            raise HistoryError(f'{url}: HTTP {status} for {promql}: '
                               f'{_error_of(raw)}')
        return prometheus.matrix(url, raw)
    except prometheus.QueryError as err:
        raise HistoryError(str(err)) from None


def _error_of(raw):
    text = raw.decode('utf-8', 'replace')
    try:
        error = json.loads(text).get('error')
    except (ValueError, AttributeError, RecursionError):
        error = None
    return error[:200] if isinstance(error, str) and error else text[:200]


def readable_unit(unit, values):
    """The unit of ``unit``'s family in which the values' median is >= 1."""
    family = units.family(unit)
    mid = sorted(values)[len(values) // 2]
    for cand in _READABLE[family]:
        if abs(units.convert(mid, unit, cand)) >= 1:
            return cand
    return _READABLE[family][-1]


def _old_unit(old_refs, check, partition, params, metric):
    """The unit of the figure's reference: the system's, else any file's."""
    found = [r for r in old_refs
             if r.metric == metric and r.check == check and r.unit]
    mine = [r for r in found
            if references.applies(r, [check], partition, dict(params))]
    return (mine[-1] if mine else found[0]).unit if found else None


def samples(url, system, since, until, old_refs=(), token=None,
            timeout=prometheus.DEADLINE):
    """(Samples, notes) of ``system``'s runs in [since, until] at ``url``."""
    url = check_url(url)
    if not _SYSTEM.fullmatch(system or ''):
        raise HistoryError(f'--system {system!r}: not a system name')
    if not (math.isfinite(since) and math.isfinite(until)) or until <= since:
        raise HistoryError(f'--since {since} must be before --until {until}')
    partitions = references.configured_partitions().get(system)
    if not partitions:
        raise HistoryError(f'--system {system}: no partitions configured '
                           f'(systems/*.py) to check the series against')
    end = time.monotonic() + timeout
    window = f'[{int(math.ceil(until - since)) + 1}s]'
    values = query(url, f'{{__name__=~"hpcval_perf_value_.+",system='
                        f'"{system}"}}{window}', until, token,
                   end - time.monotonic(), stated=timeout)
    passed = query(url, f'hpcval_check_passed{{system="{system}"}}{window}',
                   until, token, end - time.monotonic(), stated=timeout)
    skipped = _Skipped()
    result_at = {}
    for labels, pairs in passed:
        if labels.get('__name__', 'hpcval_check_passed') != \
                'hpcval_check_passed':
            raise HistoryError(f'{url}: series {_brief(labels)} in the '
                               f'answer for hpcval_check_passed')
        if not _usable(url, labels, system, partitions, skipped):
            continue
        key = _case_key(labels)
        for when, val in pairs:
            got = 'pass' if val == 1 else 'fail'
            if result_at.setdefault((key, round(when, 3)), got) != got:
                raise HistoryError(f'{url}: hpcval_check_passed of '
                                   f'{labels["test"]} at {when:.3f} is '
                                   f'given both 1 and not 1')
    cases, raw, seen = {}, [], set()
    for labels, pairs in values:
        name, metric = labels.get('__name__', ''), labels.get('metric', '')
        if not _usable(url, labels, system, partitions, skipped):
            continue
        known = _UNITS.get(name[len('hpcval_perf_value_'):])
        if not known or not metric:
            skipped.add(f'series {name}{{metric="{metric}"}}: ' + (
                'a unit hpcval does not calibrate from monitoring' if
                metric else 'no figure name (metric label)'))
            continue
        unit, scale = known
        key = _case_key(labels)
        for when, val in pairs:
            if not (since <= when <= until):
                continue
            # one run's figure is one sample, however often the store
            # gives it (other labels, another unit's series)
            result = result_at.get((key, round(when, 3)))
            why = ('given again (same run, figure and time)'
                   if (key, metric, when) in seen else
                   str(val) if not math.isfinite(val) else
                   'no hpcval_check_passed sample of its run'
                   if result is None else None)
            seen.add((key, metric, when))
            if why:
                skipped.add(f'{labels["test"]} {metric} at {when:.0f}: '
                            f'{why}')
                continue
            case = cases.get((key, when))
            if case is None:
                case = cases[(key, when)] = _case(url, labels, when, result)
            if labels.get('unjudged'):
                # as the check's report says it (calibrate leaves it out)
                case.extras['unjudged'][metric] = labels['unjudged']
            raw.append((case, metric, val * scale, unit))
    out = _in_units(raw, old_refs)
    notes = [f'left out {skipped.count} sample(s) or series of the history; '
             f'the first: {skipped.first[:300]}'] if skipped.count else []
    if not out:
        notes.append(f'{url}: no hpcval series of system {system} between '
                     f'{since:.0f} and {until:.0f}')
    return out, notes


class _Skipped:
    """Samples and series left out: counted, the first one named."""
    count, first = 0, None

    def add(self, why):
        self.count += 1
        self.first = self.first or why


def _usable(url, labels, system, partitions, skipped):
    """Whether a series' labels are of ``system``; foreign ones are errors."""
    test = labels.get('test', '')
    where = f'{url}: series {_brief(labels)}'
    if labels.get('system') != system:
        raise HistoryError(f'{where}: system label is not {system}')
    if not _TEST.fullmatch(test):
        raise HistoryError(f'{where}: the test label is not a test\'s '
                           f'display name')
    for label in ('metric', 'unjudged'):
        if label in labels and not _METRIC.fullmatch(labels[label]):
            raise HistoryError(f'{where}: the {label} label is not a '
                               f'figure\'s name or why it is unjudged')
    for label in ('partition', 'environ', 'node'):
        value = labels.get(label)
        if value is None and label == 'node':
            continue        # multi-node jobs have none
        if value is None or not _NAME.fullmatch(value):
            raise HistoryError(f'{where}: label {label} is not a name: '
                               f'{value!r:.60}')
    if labels['partition'] not in partitions:
        skipped.add(f'series {_brief(labels)}: partition '
                    f'{labels["partition"]!r} is not one of system '
                    f'{system}\'s ({", ".join(sorted(partitions))})')
        return False
    return True


def _brief(labels):
    return '{' + ', '.join(f'{k:.40}={v!r:.60}' for k, v in
                           sorted(labels.items())[:8]) + '}'


def _case_key(labels):
    return tuple((k, labels.get(k, '')) for k in _KEEP)


def _case(url, labels, when, result):
    test = labels['test']
    check, params, _ = results.named(test, '')
    return results.Case(
        source=url, session='', check=check, test=test, params=params,
        benchmark='', system=labels.get('system', ''),
        partition=labels.get('partition', ''),
        environ=labels.get('environ', ''), result=result, time=when,
        hostname='', nodes=(labels['node'],) if labels.get('node') else (),
        version='', replay=False, outputdir=None, stdout=None,
        extras={'unjudged': {}})


def _in_units(raw, old_refs):
    """Samples of ``raw``, each figure in its old reference's unit."""
    by_figure = {}
    for case, metric, value, unit in raw:
        key = (case.check, case.partition, case.params, metric)
        by_figure.setdefault(key, []).append((case, value, unit))
    out = []
    for (check, part, params, metric), items in by_figure.items():
        unit = items[0][2]
        want = _old_unit(old_refs, check, part, params, metric)
        try:
            units.convert(1.0, unit, want or unit)
        except (ValueError, KeyError):
            want = None
        want = want or readable_unit(unit, [v for _, v, _ in items])
        out += [results.Sample(case=case, metric=metric, unit=want,
                               value=units.convert(value, unit, want),
                               reference=None, lower=None, upper=None)
                for case, value, unit in items]
    return out
