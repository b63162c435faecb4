"""Samples of ReFrame run reports and its results database, read-only."""
import contextlib
import functools
import gc
import json
import math
import os
import re
import sqlite3
import stat
import types
import urllib.parse
from dataclasses import dataclass, field

import msgspec
from reframe.core import config
from reframe.utility import osext

from hpcval import paths, records, verdict_refs
from hpcval.health import kernel_log
from hpcval.publish import typed_sessions
from hpcval.publish.measures import LAYOUT_FIELDS

REPLAY_TAG = 'replay'
_PARAM = re.compile(r'\s%(\w+)=(\S+)')


class InputRejected(ValueError):
    """An input is unusable and the user asked to reject, not skip."""


@dataclass(frozen=True)
class Problem:
    source: str
    reason: str

    def __str__(self):
        return f'{self.source}: {self.reason}'


# made in C, untracked by the cyclic GC: a database makes millions of them
class Case(msgspec.Struct, frozen=True, gc=False):
    """One test case of one run: where and how a sample was taken."""
    source: str          # report file, or "DB#session-uuid"
    session: str         # ReFrame session uuid
    check: str           # test class name
    test: str            # display name: class and parameters
    params: tuple        # ((name, value), ...) from the display name
    benchmark: str       # stem of the check file, e.g. nccl_tests
    system: str
    partition: str
    environ: str
    result: str          # pass, fail, skip, abort (ReFrame 4.x spelling)
    time: float          # job completion (else session start), unix
    hostname: str        # where ReFrame ran
    nodes: tuple         # job node list
    version: str         # ReFrame version
    replay: bool         # a recorded output replayed, not a measurement
    outputdir: object    # ReFrame's output folder of a passed case, or None
    stdout: object       # job stdout file name, or None
    label: str = ''      # the column name the user gave this input, if any
    fields: tuple = ()   # ((name, value), ...) of LAYOUT_FIELDS it reported
    reason: str = ''     # why it failed or was skipped
    phase: str = ''      # in which ReFrame stage
    extras: dict = {}    # what hpcval's checks record beside figures (EXTRAS)
    fixture: bool = False
    name: str = ''       # ReFrame's unique name (fixtures' dependants cite it)
    deps: tuple = ()     # unique names of the fixtures it depended on
    attrs: tuple = ()    # ((name, value), ...) of load()'s ``attrs``
    run: int = 0         # the report's run: 0, or a retry or rerun

    @property
    def plot_data(self):
        """The figures' data the check stored (hpcval_plot_data), or None."""
        val = self.extras.get('plot_data')
        return val if isinstance(val, dict) else None

    @property
    def provenance(self):
        """What the node reported about itself (hpcval_provenance)."""
        return self.extras.get('provenance')

    def __hash__(self):
        # extras (a mapping) cannot be hashed; equal cases agree on these
        return hash((self.source, self.session, self.test, self.time,
                     self.system, self.partition, self.environ))


class Sample(msgspec.Struct, frozen=True, gc=False):
    case: Case
    metric: str
    value: float
    unit: str
    reference: object    # float or None
    lower: object        # fraction or None
    upper: object        # fraction or None
    result: object = None  # ReFrame's own 'pass' / 'fail' for the figure


@dataclass(frozen=True)
class Damaged:
    """A test case (or fixture) left out: a field of it cannot be trusted."""
    source: str
    test: str           # its display name, or its place in the report
    result: str         # pass, fail, skip, abort, or '' when unreadable
    reason: str


@dataclass(frozen=True)
class Conflict:
    """One test case of one session given twice with different contents."""
    test: str
    session: str
    first: str          # the two sources
    second: str
    differs: str        # which part differs: 'result', 'figures', 'nodes'


@dataclass
class Loaded:
    samples: list = field(default_factory=list)
    cases: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    sources: list = field(default_factory=list)
    duplicates: int = 0  # test cases given more than once, counted once
    fixtures: list = field(default_factory=list)   # Cases of fixtures
    damaged: list = field(default_factory=list)    # Damaged
    conflicts: list = field(default_factory=list)  # Conflict
    by_case: dict = field(default_factory=dict)   # {id(case): [samples]}
    commands: dict = field(default_factory=dict)  # {uuid: ReFrame command}
    started: dict = field(default_factory=dict)   # {source: start or None}
    references: object = None                     # load's ``bounds``
    # {id(sample): (Cross or None, why unjudged or None)} of re-banded ones
    rebanded: dict = field(default_factory=dict)


_RESULTS = {'success': 'pass', 'failure': 'fail', 'skipped': 'skip',
            'aborted': 'abort'}


class _Bad(Exception):
    pass


_KIND = {str: 'a string', list: 'a list', dict: 'a mapping',
         (int, float): 'a number'}


def _field(data, key, kind, where, required=False):
    """``data[key]`` if of ``kind``; None (_Bad if required) if empty."""
    val = data.get(key)
    if val is None or val == '':
        if required:
            raise _Bad(f'{where}: missing field {key!r}')
        return None
    if isinstance(val, bool) or not isinstance(val, kind):
        raise _Bad(f'{where}: field {key!r} is {_short(val)}, not '
                   f'{_KIND[kind]}')
    return val


def _strings(data, key, where):
    vals = _field(data, key, list, where) or []
    if not all(isinstance(v, str) for v in vals):
        raise _Bad(f'{where}: field {key!r} is {vals!r}, not a list of '
                   f'strings')
    return tuple(vals)


def _finite(val):
    try:
        return math.isfinite(val) and abs(val) <= typed_sessions.LARGEST
    except OverflowError:       # an integer beyond any float
        return False


def _number_or_none(val, what):
    if val is None:
        return None
    if isinstance(val, bool) or not isinstance(val, (int, float)) \
            or not _finite(val):
        raise _Bad(f'{what} is {_short(val)}, not a finite number '
                   f'(at most {typed_sessions.LARGEST:g} in size)')
    return float(val)


def _short(val, most=60):
    text = repr(val)
    return text if len(text) <= most else f'{text[:most]}... ' \
                                          f'({len(text)} characters)'


def _time(data, key, where):
    """A unix time field, or None; a time no clock shows is an error."""
    val = _field(data, key, (int, float), where)
    if val is not None and not (_finite(val) and 0 <= val < 1e11):
        raise _Bad(f'{where}: field {key!r} is {_short(val)}, not a unix '
                   f'time')
    return val


def _perf_entries(tc, major, where):
    """(metric, value, reference, lower, upper, unit) of one test case."""
    if major == 3:
        for i, pv in enumerate(_field(tc, 'perfvars', list, where) or []):
            if not isinstance(pv, dict):
                raise _Bad(f'{where}: perfvars[{i}] is {pv!r}, not a mapping')
            yield (pv.get('name'), pv.get('value'), pv.get('reference'),
                   pv.get('thres_lower'), pv.get('thres_upper'),
                   pv.get('unit'), pv.get('result'))
        return
    for key, tup in (_field(tc, 'perfvalues', dict, where) or {}).items():
        if not isinstance(tup, (list, tuple)) or len(tup) < 5:
            raise _Bad(f'{where}: perfvalues[{key!r}] is {tup!r}, not '
                       f'[value, ref, lower, upper, unit, ...]')
        yield (key.rsplit(':', 1)[-1], *tup[:5],
               tup[5] if len(tup) > 5 else None)


@functools.cache
def named(display, filename):
    """(check, params, benchmark) of a test's display name and file."""
    check = display.split(' ', 1)[0]
    stem = os.path.splitext(os.path.basename(filename))[0]
    return (check, tuple(_PARAM.findall(display)) if '%' in display else (),
            stem or check)


_ATTRS = {}         # one tuple per distinct attribute set, shared


def _attrs(value_of, names):
    """((name, value), ...) of ``names`` whose value is a scalar."""
    if not names:
        return ()
    got = tuple((n, v) for n in names
                if isinstance(v := value_of(n, None), (str, int, float)))
    return _ATTRS.setdefault(got, got)


def _case(tc, major, source, session, where, label, attrs=(), run=0):
    """_typed_case of a test case mapping, each field checked first."""
    def text(key, required=False):
        return _field(tc, key, str, where, required)
    if major == 3:
        system, _, partition = text('system', True).partition(':')
        environ = text('environment', True)
    else:
        system, partition = text('system', True), text('partition', True)
        environ = text('environ', True)
    checked = types.SimpleNamespace(
        display_name=text('display_name') or text('name', True),
        system=system, partition=partition, environ=environ,
        result=text('result', True),
        job_nodelist=_strings(tc, 'job_nodelist' if 'job_nodelist' in tc
                              else 'nodelist', where),
        filename=text('filename'),
        job_completion_time_unix=_time(tc, 'job_completion_time_unix',
                                       where),
        tags=_strings(tc, 'tags', where), outputdir=text('outputdir'),
        job_stdout=text('job_stdout'), fail_reason=tc.get('fail_reason'),
        fail_phase=text('fail_phase'), fixture=tc.get('fixture'),
        unique_name=text('unique_name'),
        dependencies_actual=tc.get('dependencies_actual'))
    return _typed_case(checked, source, session, label, attrs, run, tc.get,
                       where)


EXTRAS = typed_sessions.EXTRAS
# a value of a wrong type is left out, never trusted
_EXTRA_TYPES = (dict, str, list, bool, records.NodeLoad, records.Health)


def _extras(value_of, where=''):
    """{name: value} of the EXTRAS ``value_of('hpcval_<name>')`` gives."""
    out = {}
    for name in EXTRAS:
        val = value_of(f'hpcval_{name}')
        if name in records.TYPES and val is not None:
            try:
                val = records.decode(name, val)
                if name == 'health':
                    kernel_log.check(val)
            except records.Unreadable as err:
                raise _Bad(f'{where}: {err}' if where else str(err)) \
                    from None
        if isinstance(val, _EXTRA_TYPES):
            out[name] = val
    return out


def _layout(value_of, where):
    """((name, value), ...) of the LAYOUT_FIELDS ``value_of`` gives."""
    out = []
    for name in LAYOUT_FIELDS:
        val = value_of(name)
        if val is None or val == '':
            continue
        if isinstance(val, bool) or not isinstance(val, (str, int)):
            raise _Bad(f'{where}: field {name!r} is {val!r}, not a string or '
                       f'an integer')
        out.append((name, val))
    return tuple(out)


def _samples(tc, major, case, where):
    out = []
    for metric, value, ref, lower, upper, unit, result in _perf_entries(
            tc, major, where):
        what = f'{where} metric {metric!r}'
        if not isinstance(metric, str) or not metric \
                or not isinstance(unit, str) or not unit:
            raise _Bad(f'{what}: no name or unit')
        if value is None:
            raise _Bad(f'{what}: no value')
        out.append(Sample(case, metric, _number_or_none(value, f'{what} value'),
                          unit, _number_or_none(ref, f'{what} reference'),
                          _number_or_none(lower, f'{what} lower bound'),
                          _number_or_none(upper, f'{what} upper bound'),
                          # anything else is no record of ReFrame's
                          result if result in ('pass', 'fail') else None))
    return out


def _typed_case(tc, source, session, label, attrs=(), run=0, value_of=None,
                where=''):
    """The Case of a typed_sessions.TestCase (types checked already)."""
    check, params, benchmark = named(tc.display_name, tc.filename or '')
    value_of = value_of or functools.partial(getattr, tc)
    return Case(
        source=source, session=session['uuid'],
        check=check, test=tc.display_name, params=params,
        benchmark=benchmark, system=tc.system, partition=tc.partition,
        environ=tc.environ, result=_RESULTS.get(tc.result, tc.result),
        time=tc.job_completion_time_unix or session['time'] or 0.0,
        hostname=session['hostname'], nodes=tuple(tc.job_nodelist),
        version=session['version'],
        replay=bool(tc.tags) and REPLAY_TAG in tc.tags,
        outputdir=tc.outputdir or None, stdout=tc.job_stdout or None,
        label=label, fields=_layout(value_of, where),
        # every line: the cause (sbatch's) is often not the first
        reason=(' | '.join(line.strip() for line in tc.fail_reason.splitlines()
                           if line.strip())
                if isinstance(tc.fail_reason, str) else ''),
        phase=tc.fail_phase or '',
        extras=_extras(value_of, where),
        fixture=bool(tc.fixture),
        name=tc.unique_name or '',
        deps=(tuple(d[0] for d in tc.dependencies_actual
                    if isinstance(d, list) and d and isinstance(d[0], str))
              if isinstance(tc.dependencies_actual, list) else ()),
        attrs=_attrs(value_of, attrs), run=run)


def _typed_samples(tc, case):
    """_samples of a typed_sessions.TestCase."""
    return [Sample(case, _metric_of(key), value, unit, ref, lower, upper,
                   result if result == 'pass' or result == 'fail' else None)
            for key, (value, ref, lower, upper, unit, result) in
            (tc.perfvalues or {}).items()]


@functools.cache
def _metric_of(key):
    """'metric' of 'system:partition:metric'."""
    return key[key.rfind(':') + 1:]


def _major(report):
    if not isinstance(report, dict) or \
            not isinstance(report.get('session_info'), dict) or \
            not isinstance(report.get('runs'), list):
        raise _Bad('not a ReFrame run report (no session_info mapping and '
                   'runs list)')
    version = str(report['session_info'].get('data_version', ''))
    major = version.split('.', 1)[0]
    if major not in ('3', '4'):
        raise _Bad(f'report data_version {version!r} is not one this '
                   f'reader knows (3.x: ReFrame 4.0-4.6, 4.x: ReFrame 4.7+)')
    return int(major)


def _session(info):
    where = 'session_info'
    return {'uuid': _field(info, 'uuid', str, where) or '',
            'hostname': _field(info, 'hostname', str, where) or '',
            'version': _field(info, 'version', str, where) or '',
            'time': _time(info, 'time_start_unix', where),
            # only shown and read for its mode: anything but text is none
            'cmdline': info.get('cmdline')
            if isinstance(info.get('cmdline'), str) else ''}


class _Collector:
    def __init__(self, on_error, attrs=()):
        self.on_error = on_error    # skip or reject (the option's choices)
        self.attrs = attrs
        self.loaded = Loaded()
        self.seen = {}      # case key: (case, samples) of its first copy

    def problem(self, source, reason):
        if self.on_error == 'reject':
            raise InputRejected(f'{source}: {reason}')
        self.loaded.problems.append(Problem(source, reason))

    def session(self, info, source):
        """The session of ``info``, its source counted as read."""
        session = _session(info)
        self.loaded.sources.append(source)
        self.loaded.commands[session['uuid']] = session['cmdline']
        self.loaded.started[source] = session['time']
        return session

    def report(self, report, source, label=''):
        try:
            major = _major(report)
            session = self.session(report['session_info'], source)
        except _Bad as err:
            self.problem(source, str(err))
            return
        for r, run in enumerate(report['runs']):
            tcs = run.get('testcases') if isinstance(run, dict) else None
            if not isinstance(tcs, list):
                self.problem(source, f'runs[{r}]: no testcases list')
                continue
            for t, tc in enumerate(tcs):
                where = f'runs[{r}].testcases[{t}]'
                if not isinstance(tc, dict):
                    self.damaged(source, where, {}, f'{where}: not a mapping')
                    continue
                where = _named_where(tc, where)
                try:
                    case = _case(tc, major, source, session, where, label,
                                 self.attrs, r)
                    samples = [] if case.fixture else \
                        _samples(tc, major, case, where)
                except _Bad as err:
                    # a fixture too: a failed build must not vanish
                    self.damaged(source, where, tc, str(err))
                    continue
                self._add(session, r, case, samples)

    def damaged(self, source, where, tc, reason):
        """A test case left out: a problem, and kept as Damaged."""
        self.problem(source, reason)
        if reason.startswith(where):
            reason = reason[len(where):].lstrip(': ')
        result = tc.get('result') if isinstance(tc, dict) else None
        self.loaded.damaged.append(Damaged(
            source, where,
            _RESULTS.get(result, result) if isinstance(result, str) else '',
            reason))

    def typed(self, report, source, label=''):
        """report() of a typed_sessions.Report."""
        session = self.session(msgspec.structs.asdict(report.session_info),
                               source)
        for r, run in enumerate(report.runs):
            cases = run.testcases
            for i, tc in enumerate(cases):
                # each record freed once read: its memory is reused
                cases[i] = None
                try:
                    case = _typed_case(tc, source, session, label,
                                       self.attrs, r)
                except _Bad as err:
                    where = _named_where({'display_name': tc.display_name},
                                         f'runs[{r}].testcases[{i}]')
                    self.damaged(source, where, {'result': tc.result},
                                 f'{where}: {err}')
                    continue
                self._add(session, r, case, _typed_samples(tc, case))

    def _add(self, session, run, case, samples):
        if case.fixture:
            # kept for what failed or skipped beneath the tests
            self.loaded.fixtures.append(case)
            return
        # a session given twice is one measurement; a session is its uuid
        # (none before ReFrame 4.7: its host and start time)
        key = (session['uuid'] or (session['hostname'], session['time']),
               run, case.test, case.system, case.partition, case.environ)
        first = self.seen.get(key)
        if first is not None:
            self.loaded.duplicates += 1
            # fingerprints made only for a copy: most cases have none
            was, mark = _fingerprint(*first), _fingerprint(case, samples)
            if was != mark:
                self.loaded.conflicts.append(Conflict(
                    case.test, session['uuid'] or case.hostname,
                    first[0].source, case.source, _differs(was, mark)))
            return
        self.seen[key] = (case, samples)
        self.loaded.by_case[id(case)] = samples
        self.loaded.cases.append(case)
        self.loaded.samples.extend(samples)


def _fingerprint(case, samples):
    """What two copies of one test case must agree on."""
    return (case.result, case.nodes,
            tuple((s.metric, s.value, s.unit, s.reference, s.lower, s.upper,
                   s.result) for s in samples))


def _differs(first, second):
    return ', '.join(what for what, a, b in zip(
        ('result', 'nodes', 'figures'), first, second) if a != b)


def _named_where(tc, where):
    """'runs[0].testcases[3] (name)': the place and, if any, the name."""
    name = tc.get('display_name') or tc.get('name')
    if isinstance(name, str) and name:
        return f'{where} ({name if len(name) <= 200 else name[:200] + "..."})'
    return where


def _read(text, source, col, label='', typed=True):
    """One report's test cases into ``col``: typed if usual, else checked."""
    report = typed_sessions.decode(text, col.attrs) \
        if typed and isinstance(text, (str, bytes)) else None
    if report is not None:
        col.typed(report, source, label)
        return
    report = _json(text, source, col)
    if report is not None:
        col.report(report, source, label)


def _json(text, source, collector):
    if not isinstance(text, (str, bytes)):
        collector.problem(source, f'holds {type(text).__name__}, not JSON '
                                  f'text')
        return None
    try:
        # not msgspec: NaN and Infinity (ReFrame writes them for a benchmark
        # that printed nan) and integers beyond 64 bits are JSON here
        return json.loads(text)
    except ValueError as err:   # number too long, not UTF-8, not JSON
        collector.problem(source, f'not valid JSON (truncated?): '
                                  f'{str(err)[:200]}')
    except RecursionError:
        collector.problem(source, 'not valid JSON: nested too deeply')
    return None


# a ReFrame report of thousands of test cases is a few MB
MAX_REPORT_BYTES = 1 << 30


def _read_report(path):
    """The bytes of a report file; only regular files are read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _Bad('not a regular file (a folder, FIFO or device): '
                       'not read')
        if info.st_size > MAX_REPORT_BYTES:
            raise _Bad(f'{info.st_size} bytes, more than any run report '
                       f'({MAX_REPORT_BYTES} at most): not read')
        os.set_blocking(fd, True)
        with os.fdopen(fd, 'rb') as fp:
            fd = None
            return fp.read(MAX_REPORT_BYTES + 1)
    finally:
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def without_gc():
    """The cyclic GC paused: a large database makes millions of objects."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            # kept out of later collections, or they would walk it all
            gc.freeze()
            gc.enable()


def load(report_files=(), db=None, on_error='skip', since=None, until=None,
         attrs=(), bounds=None):
    """Samples of the report files ((label, path) or path) and ``db``."""
    if bounds is not None:
        attrs = {*attrs, *bounds.where_keys()}
    with without_gc():
        loaded = _load(report_files, db, on_error, since, until,
                       tuple(sorted(set(attrs))))
        if bounds is not None:
            _reband(loaded, bounds)
    return loaded


def _reband(loaded, refs):
    """Each sample of ``loaded`` in the band ``refs`` give it."""
    judge, rebanded = verdict_refs.Bounds(refs), loaded.rebanded
    loaded.references = refs
    for case in loaded.cases:
        samples, of_case = loaded.by_case.get(id(case)), judge.of_case(case)
        for i, s in enumerate(samples or ()):
            decided = of_case(s, case)
            if decided is not s:
                samples[i], cross, why = decided
                rebanded[id(samples[i])] = (cross, why)
    loaded.samples = [s for c in loaded.cases
                      for s in loaded.by_case.get(id(c), ())]


def _load(report_files, db, on_error, since, until, attrs):
    col = _Collector(on_error, attrs)
    for path in report_files:
        label, path = path if isinstance(path, tuple) else ('', path)
        try:
            text = _read_report(path)
            report = typed_sessions.decode(text, col.attrs)
            if report is None:
                text = text.decode('utf-8')
        except _Bad as err:
            col.problem(path, str(err))
            continue
        except (OSError, UnicodeDecodeError) as err:
            col.problem(path, f'cannot read: '
                              f'{getattr(err, "strerror", None) or err}')
            continue
        if report is None:
            _read(text, path, col, label, typed=False)
            continue
        # a large report's peak memory less its size
        del text
        col.typed(report, path, label)
    if db is not None:
        db = db or default_db()
        for uuid, blob in _db_sessions(db, since, until, col):
            _read(blob, f'{db}#{uuid}', col)
    return col.loaded


def _db_sessions(path, since, until, col):
    if not os.path.isfile(path):
        col.problem(path, 'no such results database (or not a regular '
                          'file)')
        return
    # the blob as bytes: msgspec reads UTF-8 directly, no str made first
    query = 'SELECT uuid, CAST(json_blob AS BLOB) FROM sessions WHERE 1'
    bounds = [(' AND session_start_unix >= ?', since),
              (' AND session_start_unix <= ?', until)]
    query += ''.join(c for c, v in bounds if v is not None)
    args = [v for _, v in bounds if v is not None]
    try:
        # quoted: '#' or '?' in a path would end it in a URI
        uri = urllib.parse.quote(os.path.abspath(path))
        conn = sqlite3.connect(f'file:{uri}?mode=ro', uri=True)
    except sqlite3.Error as err:
        col.problem(path, f'cannot open: {err}')
        return
    try:
        # one session at a time: a large database does not fit in memory
        yield from conn.execute(query + ' ORDER BY session_start_unix', args)
    except sqlite3.Error as err:
        col.problem(path, f'not a ReFrame results database: {err}')
    finally:
        conn.close()


#: ``--db`` without a path: ReFrame's own database (default_db())
DEFAULT_DB = ''


def default_db():
    """ReFrame's results database: its env, its configuration, or default."""
    given = os.environ.get('RFM_SQLITE_DB_FILE')
    if given:
        return given
    fallback = os.path.join(os.path.expanduser('~'), '.reframe', 'reports',
                            'results.db')
    try:
        ours = paths.config_file()
        files = [ours, *[f for f in os.environ.get('RFM_CONFIG_FILES',
                                                   '').split(':')
                         if f and os.path.abspath(f) != ours]]
        site = config.load_config(*files)
        site.select_subconfig(os.environ.get('RFM_SYSTEM') or None,
                              ignore_resolve_errors=True)
        return osext.expandvars(site.get('storage/0/sqlite_db_file')) or \
            fallback
    except Exception:       # a configuration ReFrame itself would refuse
        return fallback
