"""Where a test meets its references: one place, loaded once per process."""
import ast
import functools
import glob
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from hpcval import paths, references

_HERE = os.path.dirname(os.path.abspath(__file__))


@functools.lru_cache(maxsize=None)
def files():
    """The ReferenceSet of the built-in and site reference folders."""
    return references.ReferenceSet.layered(paths.references_dirs())


def _suite(*parts):
    """A file or folder of the suite: $HPCVAL_ROOT's, else this package's."""
    own = os.path.join(_HERE, 'suite')
    if not os.path.isdir(own):
        own = os.path.dirname(os.path.dirname(_HERE))
    for root in (paths.repo_root(), own):
        path = os.path.join(root, *parts)
        if os.path.exists(path):
            return path
    return os.path.join(own, *parts)


def checks_dirs():
    """ReFrame's check search path: built-in checks/, then the site's."""
    return paths.check_search_path(_suite('checks'))


def check_files():
    """The files of checks_dirs() (each a folder of checks or one file)."""
    return [f for d in checks_dirs() for f in (
        [d] if d.endswith('.py') else glob.glob(os.path.join(d, '*.py')))]


class Attrs:
    """A test's attributes as ``where`` reads them; None for a missing one."""

    def __init__(self, test):
        self._test = test

    def get(self, key):
        try:
            return getattr(self._test, key, None)
        except Exception:    # an attribute ReFrame only sets later
            return None


def _names(test):
    return [cls.__name__ for cls in type(test).__mro__]


def _place(test):
    """(its system's References, class names, partition, Attrs) of ``test``."""
    return (files().get(test.current_system.name, []), _names(test),
            test.current_partition.name, Attrs(test))


def for_test(test, metric_units):
    """ReFrame's reference tuples of ``metric_units`` (``m@x``: ``m``'s)."""
    found = references.select(*_place(test), {
        m.partition('@')[0]: u for m, u in metric_units.items()})
    return {m: found[m.partition('@')[0]] for m in metric_units
            if m.partition('@')[0] in found}


def unjudged(test, metrics, diagnostics):
    """{metric: why no reference judges it} of ``metrics``."""
    system = test.current_system.name
    absent = references.absent(*_place(test),
                               {m.partition('@')[0] for m in metrics})
    out = {}
    for metric in metrics:
        name = metric.partition('@')[0]
        declared = next((why for pattern, why in diagnostics.items()
                         if re.fullmatch(pattern, name)), None)
        if declared:
            out[metric] = f'diagnostic: {declared}'
        elif name in absent:
            out[metric] = (f'diagnostic: explicitly absent in references/'
                           f'{system}.yaml: {absent[name]}')
        else:
            out[metric] = f'no reference in references/{system}.yaml'
    return out


def shape(test, partitions):
    """references.TestShape of a loaded test running on ``partitions``."""
    return references.TestShape(
        names=tuple(_names(test)), partitions=frozenset(partitions),
        attrs=Attrs(test), params=frozenset(type(test).param_space.params))


def _partitions(test):
    from reframe.core.runtime import valid_sysenv_comb
    parts = valid_sysenv_comb(test.valid_systems, test.valid_prog_environs)
    return [p.name for p, envs in parts.items() if envs]


@functools.lru_cache(maxsize=None)
def known_checks():
    """Every class name of the loaded tests, benchmarks and checks/ folders."""
    found = [*check_files(),
             *glob.glob(os.path.join(_HERE, 'benchmarks', '*.py'))]
    names = {n for t in _LOADED for n in _names(t)}
    for path in found:
        names |= {n.name for n in ast.walk(paths.parsed_check_file(path))
                  if isinstance(n, ast.ClassDef)}
    return frozenset(names)


def reference_path(system, ref_dir=None):
    """The file ``system``'s references come from."""
    if ref_dir:
        return os.path.join(ref_dir, f'{system}.yaml')
    for folder in reversed(paths.references_dirs()):
        path = os.path.join(folder, f'{system}.yaml')
        if os.path.isfile(path):
            return path
    return os.path.join(paths.references_dir(), f'{system}.yaml')


# the tests this process loaded (the benchmark base registers each one)
_LOADED = []


def register(test):
    _LOADED.append(test)


@functools.lru_cache(maxsize=None)
def _run_errors(system, path):
    errors, _ = references.unmatched(
        files().get(system, []),
        [shape(t, _partitions(t)) for t in _LOADED], path, known_checks())
    return tuple(errors)


def check_loaded(test):
    """Raise if an entry meant for ``test``'s class matches no loaded test."""
    system = test.current_system.name
    names = set(_names(test))
    mine = [e for e in _run_errors(system, reference_path(system))
            if e.check in names or e.check not in known_checks()]
    if mine:
        from reframe.core.exceptions import ReframeError
        raise ReframeError('; '.join(mine))


def check_metrics(test, reported):
    """Raise if an entry names a metric ``test`` did not report (a typo)."""
    system = test.current_system.name
    # a reference for ``name`` judges every ``name@member`` figure, and
    # ``name_vs_peers`` is the node screen's bound of ``name`` (read by
    # the verdict: hpcval.verdict_refs.peer_factors)
    families = {m.partition('@')[0] for m in reported}
    missing = references.unreported(*_place(test), {
        *reported, *families, *(f'{m}_vs_peers' for m in families)})
    if missing:
        from reframe.core.exceptions import PerformanceError
        raise PerformanceError('; '.join(
            f'{reference_path(system)}: entries[{i}].metrics.{metric}: '
            f'the test reports no metric {metric!r} ('
            f'{f"did you mean {close!r}? " if close else ""}it reports '
            f'{", ".join(sorted(reported))})' for i, metric, close in missing))


def problems_of_systems(by_system):
    """references.unmatched of each {system: (refs, path)}, or its
    ShapesError; each system's tests loaded in a process of its own."""
    def one(item):
        system, (refs, path) = item
        keys = sorted({k for r in refs for k in r.where})
        try:
            shapes = _shapes_in_child(system, keys)
        except ShapesError as err:
            return system, err
        tests = [references.TestShape(
            tuple(t['names']), frozenset(t['partitions']), t['attrs'],
            frozenset(t['params'])) for t in shapes]
        return system, references.unmatched(refs, tests, path)

    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return dict(pool.map(one, by_system.items()))


class ShapesError(RuntimeError):
    """ReFrame could not load the checks for a system; says why."""


def _shapes_in_child(system, keys):
    proc = subprocess.run(
        [sys.executable, '-m', 'hpcval.reference_service', system, *keys],
        capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        lines = (proc.stderr or proc.stdout).strip().splitlines()
        raise ShapesError(lines[-1] if lines else
                          f'exit code {proc.returncode}')
    return json.loads(proc.stdout)


def _load_shapes(system, keys):
    """The loaded tests of ``system`` as plain data."""
    from reframe.core import config, runtime
    from reframe.frontend.loader import RegressionCheckLoader

    site = config.load_config(_suite('config', 'settings.py'))
    for entry in site['systems']:
        # matching needs tests, not modules: no Lmod to ask
        entry['modules_system'] = 'nomod'
    site.validate()
    site.select_subconfig(system, ignore_resolve_errors=True)
    runtime.init_runtime(site)
    loaded = RegressionCheckLoader(checks_dirs()).load_all(force=True)
    out = []
    for test in loaded:
        if test.is_fixture():
            continue
        attrs = Attrs(test)
        out.append({'names': _names(test), 'partitions': _partitions(test),
                    'attrs': {k: _plain(attrs.get(k)) for k in keys},
                    'params': sorted(type(test).param_space.params)})
    return out


def _plain(value):
    return value if value is None or isinstance(value, (bool, int, float)) \
        else str(value)


if __name__ == '__main__':
    print(json.dumps(_load_shapes(sys.argv[1], sys.argv[2:])))
