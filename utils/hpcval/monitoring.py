"""Performance records to a time-series database, through ReFrame's own
``httpjson`` perflog handler (config/monitoring.py, docs/monitoring.md).

``victoriametrics(record, extras, ignore_keys)`` is the handler's
``json_formatter``: it turns one perflog record into VictoriaMetrics' JSON
lines for ``/api/v1/import``, one sample per series::

    hpcval_check_passed       1 or 0, per test case (a sanity failure too)
    hpcval_perf_value         each performance variable
    hpcval_perf_reference     its reference value, where it has one
    hpcval_perf_lower_bound   the absolute bounds it was judged against,
    hpcval_perf_upper_bound   where bounded

labelled with the test (display name), system, partition, environ, the job's
nodes and, per variable, metric, unit and result.  ``extras`` of the handler
become labels of every series (a site's cluster or instance name).
"""
import json
import math

from hpcval.judgement import Band

_CASE_LABELS = {'test': 'check_display_name', 'system': 'check_system',
                'partition': 'check_partition', 'environ': 'check_environ'}


def _labels(record, extras, ignore_keys):
    labels = {name: str(getattr(record, attr, '') or '')
              for name, attr in _CASE_LABELS.items()}
    labels['nodes'] = ','.join(getattr(record, 'check_job_nodelist', None)
                               or [])
    labels.update({str(k): str(v) for k, v in (extras or {}).items()})
    return {k: v for k, v in labels.items()
            if k not in ignore_keys and f'check_{k}' not in ignore_keys}


def _line(name, labels, value, millis):
    return json.dumps({'metric': {'__name__': name, **labels},
                       'values': [value], 'timestamps': [millis]})


def victoriametrics(record, extras, ignore_keys):
    """VictoriaMetrics JSON lines of one perflog record."""
    when = getattr(record, 'check_job_completion_time_unix', None) or \
        record.created
    millis = int(float(when) * 1000)
    labels = _labels(record, extras, ignore_keys)
    passed = 1 if getattr(record, 'check_result', '') == 'pass' else 0
    lines = [_line('hpcval_check_passed', {
        **labels, 'fail_phase': str(getattr(record, 'check_fail_phase', '')
                                    or '')}, passed, millis)]
    for var, info in (getattr(record, 'check_perfvalues', None) or {}).items():
        value, ref, lower, upper, unit, result = info
        if value is None:
            continue
        series = {**labels, 'metric': var.split(':')[-1],
                  'unit': str(unit or ''), 'result': str(result or '')}
        lines.append(_line('hpcval_perf_value', series, value, millis))
        band = Band.of(ref, lower, upper)
        low, high = band.limits() if band else (None, None)
        for name, figure in (('reference', ref if ref else None),
                             ('lower_bound', low), ('upper_bound', high)):
            if figure is not None and not math.isnan(figure):
                lines.append(_line(f'hpcval_perf_{name}', series, figure,
                                   millis))
    return '\n'.join(lines) + '\n'
