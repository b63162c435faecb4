"""The usual ReFrame 4.7+ run report, decoded straight into typed records."""
import functools
from typing import Annotated, Any, Optional, Union

import msgspec
from msgspec import Meta, Struct

from hpcval.publish.measures import LAYOUT_FIELDS

# no benchmark figure comes near; sums and spreads of larger ones overflow
LARGEST = 1e300

_Text = Annotated[str, Meta(min_length=1)]
_Number = Annotated[float, Meta(ge=-LARGEST, le=LARGEST)]
_UnixTime = Annotated[float, Meta(ge=0, lt=1e11)]
# "sys:part:metric": a metric name after the last colon, checked after
# decoding (_metrics_named): a pattern in the schema made decoding a third
# slower
_PerfKey = str
# [value, reference, lower, upper, unit, result]
_PerfValue = tuple[_Number, Optional[_Number], Optional[_Number],
                   Optional[_Number], _Text, Any]
_LayoutValue = Optional[Union[str, int]]
# what hpcval's checks log beside their figures, as hpcval_<name>
EXTRAS = ('components', 'unjudged', 'provenance', 'plot_data',
          'skip_reason', 'partition_nodes', 'screen_excluded', 'job_nodes',
          'health', 'node_load', 'measured_gpus', 'sanity_is_health',
          'lineage', 'suite', 'job_fate')


class _Case(Struct):
    display_name: _Text
    system: _Text
    partition: _Text
    environ: _Text
    result: _Text
    job_nodelist: list[str]
    filename: Optional[str] = None
    tags: Optional[list[str]] = None
    job_completion_time_unix: Optional[_UnixTime] = None
    perfvalues: Optional[dict[_PerfKey, _PerfValue]] = None
    outputdir: Optional[str] = None
    job_stdout: Optional[str] = None
    fail_phase: Optional[str] = None
    fail_reason: Any = None
    unique_name: Optional[str] = None
    fixture: Any = None
    dependencies_actual: Any = None


TestCase = msgspec.defstruct(
    'TestCase', [*((name, _LayoutValue, None) for name in LAYOUT_FIELDS),
                 *((f'hpcval_{name}', Any, None) for name in EXTRAS)],
    bases=(_Case,))


class SessionInfo(Struct):
    data_version: Annotated[str, Meta(pattern=r'^4\.')]
    uuid: Optional[str] = None
    hostname: Optional[str] = None
    version: Optional[str] = None
    time_start_unix: Optional[_UnixTime] = None
    cmdline: Any = None


@functools.lru_cache(maxsize=8)
def _decoder(attrs):
    """A report decoder whose test cases also keep the fields ``attrs``."""
    case = msgspec.defstruct(
        'TestCase', [(a, Any, None) for a in attrs
                     if a not in TestCase.__struct_fields__ and
                     not a.startswith('_')],
        bases=(TestCase,))
    run = msgspec.defstruct('Run', [('testcases', list[case])])
    report = msgspec.defstruct('Report', [('session_info', SessionInfo),
                                          ('runs', list[run])])
    return msgspec.json.Decoder(report)


def decode(text, attrs=()):
    """The Report of ``text``, or None where the checked reading must read."""
    try:
        report = _decoder(attrs).decode(text)
    except (msgspec.DecodeError, RecursionError):
        return None
    return report if _metrics_named(report) else None


def _metrics_named(report):
    """Whether every perfvalues key ends in a metric name."""
    return all(key and key[-1] != ':' for run in report.runs
               for case in run.testcases for key in case.perfvalues or ())
