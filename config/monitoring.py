"""Example site logging: performance records to files and to
VictoriaMetrics (docs/monitoring.md).

Layered after hpcval's configuration, ReFrame merges its ``logging``
section into the default one:

    export HPCVAL_PERFLOG_URL=http://victoria.example.org:8428/api/v1/import
    export RFM_CONFIG_FILES="$(hpcval paths config):$(hpcval paths monitoring)"

(a site copies this file into its site folder and edits it there).  The
file handler writes one line per test case, every performance variable
with its reference and bounds, under
``perflogs/<system>/<partition>/<test>.log``; the ``httpjson`` handler,
present only while $HPCVAL_PERFLOG_URL is set, passes each record to
hpcval's own sender (hpcval.monitoring.Sender), which posts it as
VictoriaMetrics JSON lines from a background thread: a timeout on every
post, bounded retries, a bounded queue that drops and counts rather than
wait, no redirects followed, no proxy, no credentials but the ``headers``
a site writes below.  ReFrame drops the handler with a warning when the
server cannot be reached at start-up.
"""

from reframe.core.exceptions import ConfigError

from hpcval import monitoring
from hpcval.inputs import EnvironmentValueError, environment


_perflog = [
    {
        'type': 'filelog',
        'prefix': '%(check_system)s/%(check_partition)s',
        'level': 'info',
        'format': ('%(check_job_completion_time)s|%(check_display_name)s|'
                   '%(check_system)s:%(check_partition)s+%(check_environ)s|'
                   'nodes=%(check_job_nodelist)s|%(check_result)s|'
                   '%(check_perfvalues)s'),
        # each variable: name=value unit (reference, bounds, its result)
        'format_perfvars': ('%(check_perf_var)s=%(check_perf_value)s '
                            '%(check_perf_unit)s (ref %(check_perf_ref)s, '
                            'l %(check_perf_lower_thres)s, '
                            'u %(check_perf_upper_thres)s: '
                            '%(check_perf_result)s)|'),
        'append': True,
    },
]

try:
    _url = environment('HPCVAL_PERFLOG_URL')
    _site = environment('HPCVAL_PERFLOG_SITE', 'hpcval')
except EnvironmentValueError as _err:
    raise ConfigError(str(_err)) from None
if _url:
    # a site that needs a token writes it here, e.g.
    # headers={'Authorization': 'Bearer ' + open(TOKEN_FILE).read().strip()}
    sender = monitoring.Sender(_url, timeout=5, retries=2, backoff=1,
                               queue_size=1000, drain=10, headers=None)
    _extras = {'site': _site}     # labels on every series
    try:
        monitoring.check_label_names(_extras)
    except ValueError as _err:
        raise ConfigError(str(_err)) from None
    _perflog.append({
        'type': 'httpjson',
        'url': _url,
        'level': 'info',
        # queues the record for the sender and returns None: ReFrame's
        # handler itself (requests, no timeout, .netrc) then posts nothing
        'json_formatter': sender.formatter,
        'extras': _extras,
    })

site_configuration = {
    'logging': [{'handlers_perflog': _perflog}],
}
