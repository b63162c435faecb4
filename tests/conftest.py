"""Shared fixtures: the two-node Slurm minicluster, started once a session,
and the markers that follow what a test runs.

Without root, Slurm or munge the tests that use it are skipped with the
reason; with CI=true a missing prerequisite fails them instead, so that CI
cannot pass by skipping the only real Slurm runs it has.

Markers are set here, never by hand: a test that (itself, through a helper
of tests/ or through any fixture it uses) calls ``rfmrun.reframe`` is
``reframe``; one that starts a ``MiniCluster`` or asks
``require_minicluster`` is ``minicluster``; both are ``slow``, which the
quick selection leaves out (``pytest -m "not slow"``, README).  Should the
look at the code miss a way in, the run-time guard below fails the test
that starts ``reframe`` or a Slurm daemon without its marker.
"""
import builtins
import collections
import dis
import functools
import importlib
import inspect
import json
import os
import pathlib
import re
import shutil
import time
import subprocess
import sys
import tempfile
import types

import pytest

from hpcval.testing.minicluster import MiniCluster, missing_prerequisites
import readme
from rfmrun import ROOT, VENV_BIN, reframe

# a real ReFrame run: its process, its JSON report, the report's path
Run = collections.namedtuple('Run', 'proc report path')

# where Debian's Slurm and munge keep files by default: the minicluster
# must leave all of them as it found them
SYSTEM_PATHS = ('/etc/slurm', '/etc/munge', '/run/munge', '/run/slurm',
                '/var/run/munge', '/var/lib/munge', '/var/lib/slurm',
                '/var/spool/slurmd', '/var/spool/slurmctld', '/var/spool/slurm',
                '/var/log/slurm', '/var/log/munge')


def snapshot(paths=SYSTEM_PATHS):
    """{file: (size, mtime)} of everything under ``paths``."""
    found = {}
    for top in map(pathlib.Path, paths):
        for path in [top, *top.rglob('*')] if top.exists() else []:
            try:
                stat = path.lstat()
            except OSError:
                continue
            found[str(path)] = (stat.st_size, stat.st_mtime_ns)

    return found


@pytest.fixture
def ref_dir(tmp_path):
    """A copy of the built-in references/ that a test may change."""
    target = tmp_path / 'references'
    shutil.copytree(ROOT / 'references', target)
    return target


def require_minicluster():
    """Skip the test where the minicluster cannot run here; fail it under
    CI=true, where a skip would hide the only real Slurm runs."""
    why = missing_prerequisites()
    if why:
        if os.environ.get('CI') == 'true':
            pytest.fail(f'CI=true, and the minicluster cannot run: {why}')

        pytest.skip(f'minicluster: {why}')


@pytest.fixture(scope='session')
def minicluster(tmp_path_factory):
    require_minicluster()
    cluster = MiniCluster(tmp_path_factory.mktemp('mc'))
    cluster.system_files_before = snapshot()
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def faults(minicluster):
    """The session's minicluster, without planted faults before and after
    (started again if a test stopped it: stop, then start, must work)."""
    if not minicluster.running():
        minicluster.start()
    minicluster.clear_faults()
    yield minicluster
    minicluster.clear_faults()


@pytest.fixture(scope='module')
def waiting_cluster(tmp_path_factory):
    """A two-node cluster per module for the tests that mostly wait on
    Slurm (time limits, controller outages, hung and cancelled jobs): each
    module's run on a pytest-xdist worker of their own, beside the
    session cluster's screens and each other.  Its nodes are not
    dedicated, so its jobs never take the host's CPUs from a screen that
    measures."""
    require_minicluster()
    # its URGENT partition preempts only the jobs a test sends it
    cluster = MiniCluster(tmp_path_factory.mktemp('mcw'), dedicated=False,
                          preempting=True)
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture
def waits(waiting_cluster):
    """The waiting cluster without planted faults before and after, every
    node back in service: its tests leave hung, killed and cancelled jobs
    behind, and Slurm drains a node whose job it could not kill in time
    ("Kill task failed")."""
    if not waiting_cluster.running():
        waiting_cluster.start()
    waiting_cluster.clear_faults()
    _back_in_service(waiting_cluster)
    yield waiting_cluster
    waiting_cluster.clear_faults()


def _back_in_service(cluster, timeout=30):
    if all(s == 'idle' for s in cluster.node_states().values()):
        return
    cluster.run('scancel', '--full', '--user=root', check=False)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = cluster.node_states()
        if all(s == 'idle' for s in states.values()):
            return
        for node, state in states.items():
            if state.startswith(('drain', 'drng', 'down')):
                cluster.run('scontrol', 'update', f'nodename={node}',
                            'state=resume', check=False)
        time.sleep(1)
    cluster.stop()
    cluster.start()


@pytest.fixture(scope='session')
def local_run(tmp_path_factory):
    """README command 1 as written (``reframe -c checks/ -r --system local
    --report-file local.json; hpcval verdict local.json``), once, in a
    folder that stands in for the checkout (readme.link_checkout), from a
    fresh shell's environment without network (readme.OFFLINE); its
    results database beside the report, warnings as errors (a check file
    that fails to import fails the run instead of vanishing from it)."""
    tmp = readme.link_checkout(tmp_path_factory.mktemp('local'))
    env = readme.bare_env(HOME=str(tmp), RFM_WARN_AS_ERROR='y',
                          RFM_SQLITE_DB_FILE=str(tmp / 'results.db'),
                          **readme.OFFLINE)
    proc = readme.shell_reframe(readme.command('./bootstrap.sh && '),
                                cwd=tmp, env=env)
    path = tmp / 'local.json'
    assert path.exists(), proc.stdout[-3000:] + proc.stderr[-3000:]
    return Run(proc, json.loads(path.read_text()), path)


@pytest.fixture(scope='session')
def failing_smi_run(tmp_path_factory):
    """``reframe -c checks/ -r --system local`` with an nvidia-smi that
    fails the real way (exit 9, test_health.FAKE_SMI) first on PATH, once:
    every check of checks/ that runs here, beside the node's failed
    health; the ping-pong's 100 round trips a size (not 1000) are enough
    for its flow, and were most of the run's CPU."""
    from test_health import FAKE_SMI
    tmp = tmp_path_factory.mktemp('local-failing-smi')
    bindir = tmp / 'bin'
    bindir.mkdir()
    (bindir / 'nvidia-smi').write_text(FAKE_SMI)
    (bindir / 'nvidia-smi').chmod(0o755)
    proc, report = reframe(
        '-r', '--system', 'local', '-S', 'Mpi4pyPingPongCheck.loops=100',
        tmp_path=tmp,
        env={'PATH': os.pathsep.join((str(bindir), str(VENV_BIN),
                                      os.environ['PATH'])),
             **readme.OFFLINE})
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Run(proc, report, tmp / 'report.json')


@pytest.fixture(scope='session')
def minicluster_pingpong(minicluster, tmp_path_factory):
    """The MPI ping-pong on one minicluster node and across two, once."""
    tmp = tmp_path_factory.mktemp('mc-pingpong')
    proc, report = reframe('-r', '--system', 'minicluster', '-n',
                           'Mpi4pyPingPongCheck', '-S', 'max_size=65536',
                           tmp_path=tmp, env=minicluster.env(),
                           checks=('checks/mpi4py_pingpong.py',))
    assert report is not None, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Run(proc, report, tmp / 'report.json')


@pytest.fixture(scope='session')
def dry_run(tmp_path_factory):
    """``dry_run(system)``: (process, report, stage folder) of one
    ``--dry-run`` of every check on ``system`` (Lmod over empty
    modulefiles), made once a session for every module that reads the job
    scripts."""
    from lmodenv import system_env
    runs = {}

    def run(system):
        if system not in runs:
            tmp = tmp_path_factory.mktemp(f'dry-{system}')
            proc, report = reframe('--dry-run', '--system', system,
                                   tmp_path=tmp,
                                   env=system_env(tmp / 'modulefiles'))
            runs[system] = (proc, report, tmp / 'rfm' / 'stage' / system)
        return runs[system]

    return run


@pytest.fixture(scope='session')
def replay_reports(tmp_path_factory):
    """{system: report path}: the seeds' example outputs replayed through
    the checks (tests/replays.py)."""
    from replays import make_replay_reports
    return make_replay_reports(tmp_path_factory.mktemp('replays'))


# -- markers follow what a test runs ------------------------------------------

TESTS = pathlib.Path(__file__).resolve().parent
# what makes a test slow, and the marker it gets
TRIGGERS = {id(reframe): 'reframe', id(readme.shell_reframe): 'reframe',
            id(MiniCluster): 'minicluster',
            id(require_minicluster): 'minicluster'}
SLOW = ('reframe', 'minicluster')


_GLOBAL = {'LOAD_GLOBAL', 'LOAD_NAME'}
_ATTR = {'LOAD_ATTR', 'LOAD_METHOD', 'IMPORT_FROM'}


@functools.lru_cache(maxsize=None)
def _names(code):
    """(globals, attributes, imported modules, string constants) that
    ``code`` and its nested code (lambdas, comprehensions, inner functions)
    load."""
    found = (set(), set(), set(), set())
    for ins in dis.get_instructions(code):
        slot = 0 if ins.opname in _GLOBAL else 1 if ins.opname in _ATTR \
            else 2 if ins.opname == 'IMPORT_NAME' else None
        if slot is not None and isinstance(ins.argval, str):
            found[slot].add(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            for mine, theirs in zip(found, _names(const)):
                mine |= theirs
        elif isinstance(const, str):
            found[3].add(const)
        elif isinstance(const, (tuple, frozenset)):     # a folded list
            found[3].update(c for c in const if isinstance(c, str))
    return tuple(map(frozenset, found))


def _commands(consts, values):
    """Markers of the commands a function spells out itself:
    ``[.../hpcval, 'run', ...]`` runs reframe, ``python -m
    hpcval.testing.minicluster start`` a cluster."""
    words = consts | {os.path.basename(os.fspath(v)) for v in values
                      if isinstance(v, os.PathLike) or
                      isinstance(v, str) and not re.search(r'\s', v)}
    kinds = set()
    if {'hpcval', 'run'} <= words:
        kinds.add('reframe')
    if 'hpcval.testing.minicluster' in words and \
            words & {'start', 'restart-node'}:
        kinds.add('minicluster')
    return kinds


@functools.lru_cache(maxsize=None)
def _ours(obj):
    """A function or class defined in tests/ (whose code is followed)."""
    try:
        return pathlib.Path(inspect.getfile(obj)).resolve().parent == TESTS
    except (TypeError, OSError):
        return False


def _reaches(func, cls=None, seen=None):
    """The markers of what ``func`` calls, directly or through functions
    and classes of tests/ (a static look: names the code loads, resolved
    in its module, its closure, its class and the modules it imports)."""
    seen = set() if seen is None else seen
    func = inspect.unwrap(getattr(func, '__func__', func))
    code = getattr(func, '__code__', None)
    if code is None or code in seen or code.co_filename == __file__ and \
            func.__name__.startswith('_'):
        # (this file's own machinery spells the commands it looks for)
        return set()
    seen.add(code)
    loads, attrs, imports, consts = _names(code)
    scope = getattr(func, '__globals__', {})
    found = [scope.get(n, getattr(builtins, n, None)) for n in loads]
    kinds = _commands(consts, found)
    for cell in func.__closure__ or ():
        try:
            found.append(cell.cell_contents)
        except ValueError:      # a cell not yet filled
            pass
    if cls is not None:
        found += [getattr(cls, n, None) for n in attrs]
    # rfmrun.reframe, or ``from conftest import x`` inside a function
    modules = [m for m in found if isinstance(m, types.ModuleType)]
    # a helper module of tests/ imported inside a function: import it now,
    # or what it reaches depends on whether another module imported it first
    modules += [sys.modules.get(n) or importlib.import_module(n)
                for n in imports
                if n in sys.modules or (TESTS / f'{n}.py').is_file()]
    found += [getattr(m, n, None) for m in modules for n in attrs]

    for obj in found:
        if id(obj) in TRIGGERS:
            kinds.add(TRIGGERS[id(obj)])
        elif isinstance(obj, (types.FunctionType, types.MethodType)) and \
                _ours(obj):
            kinds |= _reaches(obj, cls, seen)
        elif isinstance(obj, type) and _ours(obj) and obj is not cls:
            for member in vars(obj).values():
                kinds |= _reaches(member, obj, seen)
    return kinds


@functools.lru_cache(maxsize=None)
def _kinds(func, cls=None):
    """``_reaches``, once a function: most tests share their fixtures and
    helpers, and collection (on every xdist worker) walked them for each."""
    return frozenset(_reaches(func, cls))


def _fixture_kinds(item):
    """{fixture name: (scope, markers, defined in tests/)} of every fixture
    ``item`` uses."""
    defs = item._fixtureinfo.name2fixturedefs
    found = {}
    for name in item.fixturenames:
        if name in defs and defs[name]:
            fixdef = defs[name][-1]
            found[name] = (fixdef.scope, _kinds(fixdef.func),
                           _ours(fixdef.func))
    return found


def _shared(item, name, scope):
    """Which instance of a fixture ``item`` gets: one per session, module
    or class."""
    if scope in ('session', 'package'):
        return (scope, name)
    where = item.module.__name__
    if scope == 'class' and getattr(item, 'cls', None) is not None:
        where += '::' + item.cls.__name__
    return (where, name)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark each test by what it runs, and group the tests that share a
    costly fixture (kept for a class, module or session: one that runs
    reframe or a minicluster, or any of tests/ that a slow test uses), so
    that pytest-xdist's ``--dist loadgroup`` makes each such fixture once,
    on one worker; tests that share nothing costly are spread one by
    one."""
    parent = {}

    def root(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    shared = {}
    for item in items:
        fixtures = _fixture_kinds(item)
        kinds = set(_kinds(getattr(item.obj, '__func__', item.obj),
                           getattr(item, 'cls', None)))
        kinds |= {k for _, ks, _ in fixtures.values() for k in ks}
        kinds |= {m.name for m in item.iter_markers() if m.name in SLOW}
        for kind in sorted(kinds):
            item.add_marker(kind)
        slow = bool(kinds or item.get_closest_marker('slow'))
        if slow:
            item.add_marker('slow')

        keys = [_shared(item, name, scope)
                for name, (scope, ks, ours) in fixtures.items()
                if (ks or (slow and ours)) and scope != 'function']
        if 'waiting_cluster' in fixtures:
            pass    # tests that wait on Slurm: their module's own cluster
        elif 'minicluster' in kinds:
            # every measuring Slurm cluster on one worker, one at a time and
            # never beside the session's local run: a screen's slowed node
            # must stand out from its peers (two screens at once failed that)
            keys.append(('session', 'minicluster'))
        for key in keys[1:]:
            parent[root(key)] = root(keys[0])
        shared[item] = keys

    groups = {}
    for item, keys in shared.items():
        if keys:
            groups[item.nodeid] = '+'.join(root(keys[0]))
            item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    _tell_the_scheduler(config, groups)

    # a test that stops what its group shares runs after the group's others;
    # slow tests first: xdist hands out groups by size, then in this order,
    # so the quick ones fill the end instead of a long one starting last
    items.sort(key=lambda item: (item.get_closest_marker('runs_last')
                                 is not None, not item.get_closest_marker(
                                     'slow')))


# -- pytest-xdist: the groups reach the scheduler ----------------------------
# xdist's loadgroup learns a test's group from a suffix it appends to the
# test's id, which pytest 9 no longer lets it change (the id is silently
# kept): here each worker writes {test id: group} to a folder the controller
# made, and the controller's scheduler reads it.

GROUPS_KEY = 'hpcval_groups'


def _tell_the_scheduler(config, groups):
    folder = getattr(config, 'workerinput', {}).get(GROUPS_KEY)
    if folder:
        path = pathlib.Path(folder, config.workerinput['workerid'])
        path.with_suffix('.tmp').write_text(json.dumps(groups))
        path.with_suffix('.tmp').replace(path.with_suffix('.json'))


def pytest_configure(config):
    if not hasattr(config, 'workerinput'):
        config.hpcval_groups = tempfile.mkdtemp(prefix='hpcval-groups-')


def pytest_unconfigure(config):
    folder = getattr(config, 'hpcval_groups', None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    node.workerinput[GROUPS_KEY] = node.config.hpcval_groups


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    if config.getvalue('dist') != 'loadgroup':
        return None
    from xdist.scheduler import LoadGroupScheduling

    class Scheduling(LoadGroupScheduling):
        """loadgroup, with the groups the workers wrote."""
        groups = None

        def _split_scope(self, nodeid):
            if self.groups is None:
                found = sorted(pathlib.Path(config.hpcval_groups)
                               .glob('*.json'))
                # every worker collects the same tests: any file will do
                self.groups = json.loads(found[0].read_text()) if found \
                    else {}
            return self.groups.get(nodeid) or super()._split_scope(nodeid)

    return Scheduling(config, log)


# -- the run-time guard --------------------------------------------------------

_running = []   # the test item now running (set up, called, torn down)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    _running.append(item)
    try:
        yield
    finally:
        _running.pop()


def _starts(args):
    """The marker a command needs: 'reframe' for ReFrame (also through
    ``hpcval run`` or a ``bash -c`` script that runs either),
    'minicluster' for Slurm's and munge's daemons."""
    argv = [args] if isinstance(args, (str, bytes, os.PathLike)) \
        else list(args)
    argv = [os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else
            str(a) for a in argv]
    if not argv:
        return None
    first = os.path.basename(argv[0].split()[0]) if argv[0].split() else ''
    if first in ('slurmctld', 'slurmd', 'slurmdbd', 'munged') or \
            re.search(r'hpcval\.testing\.minicluster\b.*\b(start|'
                      r'restart-node)\b', ' '.join(argv), re.S):
        return 'minicluster'
    if first == 'reframe' or (first == 'hpcval' and argv[1:2] == ['run']):
        return 'reframe'
    # a shell script (a README block): a command of it, not a comment,
    # that runs ReFrame
    script = re.sub(r'(^|\s)#.*', '', ' '.join(argv[2:3]), flags=re.M)
    if first in ('bash', 'sh') and argv[1:2] == ['-c'] and re.search(
            r'(^|[\s;&|{(/])(reframe|hpcval\s+run)\s', script):
        return 'reframe'
    return None


class _GuardedPopen(subprocess.Popen):
    def __init__(self, args, *rest, **kwargs):
        need = _starts(args)
        item = _running[-1] if _running else None
        if need and item is not None and \
                item.get_closest_marker(need) is None:
            pytest.fail(f'{item.nodeid} starts {need} ({args!r:.200}) but '
                        f'is not marked {need!r}: tests/conftest.py did not '
                        f'see how it gets there; mark the test (or its '
                        f'module) with @pytest.mark.{need}')
        super().__init__(args, *rest, **kwargs)


subprocess.Popen = _GuardedPopen
