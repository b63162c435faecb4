"""Where hpcval's data folders are: the built-in ones and a site's, used
only where trusted (docs/site.md)."""
import ast
import functools
import os
import re

from reframe.core.exceptions import ConfigError

from hpcval import trust
from hpcval.inputs import EnvironmentValueError, environment

SITE_VAR = 'HPCVAL_SITE'
# the folders of a suite, built-in or a site's
KINDS = ('checks', 'references', 'systems')


class SiteError(ConfigError):
    """$HPCVAL_SITE names no usable folder; the message says why."""


@functools.lru_cache(maxsize=None)
def repo_root():
    """$HPCVAL_ROOT, else the installed copy, else the checkout."""
    root = environment('HPCVAL_ROOT')
    if root:
        return os.path.abspath(root)
    here = os.path.dirname(os.path.abspath(__file__))
    installed = os.path.join(here, 'suite')
    if os.path.isfile(os.path.join(installed, 'config', 'settings.py')):
        return installed
    return os.path.dirname(os.path.dirname(here))


def config_file():
    """hpcval's ReFrame configuration file."""
    return os.path.join(repo_root(), 'config', 'settings.py')


def references_dir():
    """The built-in references/."""
    return os.path.join(repo_root(), 'references')


def site_dir():
    """The site folder of $HPCVAL_SITE as an absolute path, or None."""
    try:
        value = environment(SITE_VAR)
    except EnvironmentValueError as err:
        raise SiteError(str(err)) from None
    if not value:
        return None
    path = os.path.abspath(value)
    if not os.path.isdir(path):
        raise SiteError(f'{SITE_VAR}={value}: {path} is not a folder')
    _trusted(trust.check_path, path, f'{SITE_VAR}={value}:')
    return path


def _trusted(check, path, what):
    try:
        check(path)
    except trust.UntrustedPath as err:
        raise SiteError(f'{what} not used: {err} (a site folder is code '
                        f'hpcval runs; docs/security.md)') from None


def site_folders(kind):
    """[the site's ``kind`` folder] where it has one, else []; or SiteError."""
    site = site_dir()
    folder = os.path.join(site, kind) if site else ''
    if not (folder and os.path.isdir(folder)):
        return []
    _trusted(trust.check_tree, folder, f'{SITE_VAR}: {kind}/')
    # hpcval's own helpers (systems/_site.py) and the package itself
    private = sorted(name for name in os.listdir(folder) if name[0] == '_'
                     and name != '__pycache__') if kind == 'systems' else []
    if private:
        raise SiteError(f'{os.path.join(folder, private[0])}: names starting '
                        f'with _ are hpcval\'s own modules (systems/_site.py '
                        f'is every built-in system\'s helper); a site '
                        f'module cannot replace them (rename it)')
    if kind == 'checks':
        _refuse_shadowing_checks(folder)
    return [folder]


def parsed_check_file(path):
    """The syntax tree of a check file, never imported; empty if unreadable."""
    try:
        with open(path, encoding='utf-8') as fp:
            return ast.parse(fp.read(), path)
    except (OSError, SyntaxError, ValueError):
        return ast.Module(body=[], type_ignores=[])


def _check_classes(path):
    """Names of the classes a check file defines (read, not imported)."""
    return [node.name for node in parsed_check_file(path).body
            if isinstance(node, ast.ClassDef)]


def _py_files(folder):
    return sorted(f for f in os.listdir(folder) if f.endswith('.py'))


def _refuse_shadowing_checks(folder):
    # ReFrame would run both, under one name: a site check replaces a
    # built-in one by its file's name only
    builtin = builtin_folder('checks')
    classes = {cls: name for name in _py_files(builtin)
               for cls in _check_classes(os.path.join(builtin, name))}
    for name in _py_files(folder):
        for cls in _check_classes(os.path.join(folder, name)):
            if classes.get(cls, name) != name:
                raise SiteError(
                    f'{os.path.join(folder, name)}: class {cls} has the name '
                    f'of the built-in check in checks/{classes[cls]}; '
                    f'rename it, or name the file {classes[cls]} to replace '
                    f'that file')


def builtin_folder(kind):
    """The built-in ``checks/``, ``references/`` or ``systems/``."""
    return os.path.join(repo_root(), kind)


def replacements():
    """[(kind, built-in file, site file)] of every file a site replaces."""
    return [(kind, os.path.join(builtin_folder(kind), name),
             os.path.join(site, name))
            for kind, suffix in (('systems', '.py'), ('references', '.yaml'),
                                 ('checks', '.py'))
            for site in site_folders(kind)
            for name in sorted(os.listdir(site)) if name.endswith(suffix)
            and os.path.isfile(os.path.join(builtin_folder(kind), name))]


def check_search_path(builtin):
    """ReFrame's check search path: built-in checks left, then the site's."""
    site = site_folders('checks')
    replaced = {os.path.basename(r[1]) for r in replacements()
                if r[0] == 'checks'}
    if not replaced:
        return [builtin, *site]
    return [*(os.path.join(builtin, name) for name in _py_files(builtin)
              if name not in replaced), *site]


def layered(kind, site_file):
    """Whether the site file is layered over the built-in file of its name."""
    if kind != 'references':
        return False
    try:
        with open(site_file, encoding='utf-8', errors='replace') as fp:
            text = fp.read(1 << 20)
    except OSError:
        return True     # unreadable: its load names the error
    # the top-level key as references.py reads it (YAML 1.1 booleans)
    return not re.search(r'(?im)^replace[ \t]*:[ \t]*(true|yes|on)[ \t]*'
                         r'(#.*)?$', text)


def announce_replacements(stream):
    """One line on ``stream`` per built-in file a site file replaces."""
    for kind, builtin, site in replacements():
        # -c names the check files itself: the search path is not used
        when = ' (in runs without -c)' if kind == 'checks' else ''
        how = 'is layered over' if layered(kind, site) else 'replaces'
        print(f'hpcval: site {kind}: {site} {how} the built-in '
              f'{kind}/{os.path.basename(builtin)}{when}', file=stream)


def references_dirs():
    """The references folders in layering order: built-in, then the site's."""
    return [references_dir(), *site_folders('references')]


def import_error(name, err):
    """One line for ``err`` raised importing ``name``: file, line, error."""
    import traceback
    if isinstance(err, SyntaxError):
        return (f'{err.filename}:{err.lineno}: syntax error: {err.msg} '
                f'(importing {name})')
    frames = traceback.extract_tb(err.__traceback__)
    stem = os.path.basename(name)
    mine = [f for f in frames if os.path.basename(f.filename) == stem]
    where = f'{mine[-1].filename}:{mine[-1].lineno}: ' if mine else ''
    what = str(err).splitlines()[0] if str(err) else ''
    return f'{where}{type(err).__name__}: {what} (importing {name})'


def import_systems(root):
    """The ``systems`` package of the suite at ``root``, imported once."""
    import importlib.util
    import sys
    if 'systems' not in sys.modules:
        folder = os.path.join(root, 'systems')
        spec = importlib.util.spec_from_file_location(
            'systems', os.path.join(folder, '__init__.py'),
            submodule_search_locations=[folder])
        module = importlib.util.module_from_spec(spec)
        sys.modules['systems'] = module
        spec.loader.exec_module(module)
    return sys.modules['systems']
