"""One module per system, found by name: ``systems/frontier.py`` is
``--system frontier``.

Each module defines ``system`` (a ReFrame system entry) and
``environments`` (the programming environments its partitions use), and,
where the system detects hardware when selected, ``detect(system)``
(config/settings.py calls it for the selected system only).  ``ALL`` lists
them in matching order: ``local`` matches any host name, so it comes last.

A site's systems/ ($HPCVAL_SITE, docs/site.md) is searched first: its
module of a built-in's name replaces that one, other names add systems.
"""
import importlib
import pkgutil

from hpcval import paths

__path__[:0] = paths.site_folders('systems')

_NAMES = sorted({m.name for m in pkgutil.iter_modules(__path__)
                 if not m.name.startswith('_')})



def _import(name):
    try:
        return importlib.import_module(f'systems.{name}')
    except Exception as err:    # a module's own mistake, named in one line
        raise paths.SiteError(paths.import_error(f'systems/{name}.py',
                                                 err)) from None


ALL = [_import(name)
       for name in sorted(_NAMES, key=lambda n: (n == 'local', n))]
