"""Does every reference entry match a test?  A misspelt check, partition
or ``where`` would otherwise turn a judged figure into a logged one
without a word.

ReFrame knows the tests only once it has loaded the checks, so the match
is checked there: by ``hpcval references``, which loads every check for
each system as ReFrame would (default variables), and at every run by the
checks themselves (``ParsedBenchmark``), against the tests that run loaded.
"""
import ast
import functools
import glob
import os

from hpcval import paths, references

_HERE = os.path.dirname(os.path.abspath(__file__))


def _suite(*parts):
    """A file or folder of the suite: $HPCVAL_ROOT's where it has one,
    else this package's own (the installed copy or the checkout; a root
    holding only references/ is what tests give)."""
    own = os.path.join(_HERE, 'suite')
    if not os.path.isdir(own):
        own = os.path.dirname(os.path.dirname(_HERE))
    for root in (paths.repo_root(), own):
        path = os.path.join(root, *parts)
        if os.path.exists(path):
            return path
    return os.path.join(own, *parts)


def checks_dirs():
    """The built-in checks/ and a site's."""
    return [_suite('checks'), *paths.site_folders('checks')]


def shape(test):
    """references.TestShape of a loaded ReFrame test (in a runtime of its
    system)."""
    from reframe.core.runtime import valid_sysenv_comb
    parts = valid_sysenv_comb(test.valid_systems, test.valid_prog_environs)
    return references.TestShape(
        names=tuple(cls.__name__ for cls in type(test).__mro__),
        partitions=frozenset(p.name for p, envs in parts.items() if envs),
        attrs=_Attrs(test), params=frozenset(type(test).param_space.params))


class _Attrs:
    def __init__(self, test):
        self._test = test

    def get(self, key):
        try:
            return getattr(self._test, key, None)
        except Exception:    # an attribute ReFrame only sets later
            return None


@functools.lru_cache(maxsize=None)
def known_checks():
    """Every class name of the loaded tests, hpcval.benchmarks and the
    checks/ folder beside this package, read without importing them."""
    files = [*(f for d in checks_dirs()
               for f in glob.glob(os.path.join(d, '*.py'))),
             *glob.glob(os.path.join(_HERE, 'benchmarks', '*.py'))]
    names = {cls.__name__ for t in _LOADED for cls in type(t).__mro__}
    for path in files:
        with open(path, encoding='utf-8') as fp:
            tree = ast.parse(fp.read(), path)
        names |= {n.name for n in ast.walk(tree)
                  if isinstance(n, ast.ClassDef)}
    return frozenset(names)


def problems_of_system(system, refs, path):
    """references.unmatched of ``system``'s file (``path``) against the
    tests of the built-in and site checks, loaded by ReFrame for
    ``system`` with default variables: (errors, notes)."""
    from reframe.core import config
    from reframe.frontend.loader import RegressionCheckLoader

    site = config.load_config(_suite('config', 'settings.py'))
    for entry in site._site_config['systems']:
        # matching needs tests, not modules: no Lmod to ask
        entry['modules_system'] = 'nomod'
    site.validate()
    site.select_subconfig(system, ignore_resolve_errors=True)
    with _runtime(site):
        loaded = RegressionCheckLoader(checks_dirs()).load_all(force=True)
        tests = [shape(t) for t in loaded if not t.is_fixture()]
    return references.unmatched(refs, tests, path)


class _runtime:
    """ReFrame's runtime of one system, for as long as the block runs."""

    def __init__(self, site):
        self._site = site

    def __enter__(self):
        from reframe.core import runtime
        self._saved = runtime._runtime_context
        runtime._runtime_context = runtime.RuntimeContext(self._site)

    def __exit__(self, *exc):
        from reframe.core import runtime
        runtime._runtime_context = self._saved


# the tests this process loaded (ParsedBenchmark registers each one)
_LOADED = []


def register(test):
    _LOADED.append(test)


@functools.lru_cache(maxsize=None)
def _run_errors(system, path):
    from hpcval.benchmarks.base import _reference_files
    refs = _reference_files().get(system, [])
    errors, _ = references.unmatched(refs, [shape(t) for t in _LOADED],
                                     path, known_checks())
    return tuple(errors)


def reference_path(system, ref_dir=None):
    """The file ``system``'s references come from: in ``ref_dir``, else
    the last layer that has one (hpcval.paths.references_dirs)."""
    if ref_dir:
        return os.path.join(ref_dir, f'{system}.yaml')
    for folder in reversed(paths.references_dirs()):
        path = os.path.join(folder, f'{system}.yaml')
        if os.path.isfile(path):
            return path
    return os.path.join(paths.references_dir(), f'{system}.yaml')


def check_loaded(test):
    """Raise if an entry of this system's file meant for ``test``'s class
    (or naming a class nobody defines) matches none of the tests this run
    loaded.  Called once all are loaded: at each test's setup."""
    system = test.current_system.name
    names = {cls.__name__ for cls in type(test).__mro__}
    mine = [e for e in _run_errors(system, reference_path(system))
            if e.check in names or e.check not in known_checks()]
    if mine:
        from reframe.core.exceptions import ReframeError
        raise ReframeError('; '.join(mine))


def check_metrics(test, reported):
    """Raise if an entry applying to ``test`` gives a value for a metric
    it did not report, and that looks like a mistake (references.
    unreported); ``reported``: its metric names."""
    from hpcval.benchmarks.base import _Attrs, _reference_files
    system = test.current_system.name
    refs = _reference_files().get(system, [])
    missing = references.unreported(
        refs, [cls.__name__ for cls in type(test).__mro__],
        test.current_partition.name, _Attrs(test), reported)
    if missing:
        from reframe.core.exceptions import PerformanceError
        raise PerformanceError('; '.join(
            f'{reference_path(system)}: entries[{i}].metrics.{metric}: '
            f'the test reports no metric {metric!r} ('
            f'{f"did you mean {close!r}? " if close else ""}it reports '
            f'{", ".join(sorted(reported))})' for i, metric, close in missing))
