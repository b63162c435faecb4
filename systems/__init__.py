"""One module per system, found by name: ``systems/frontier.py`` is
``--system frontier``.

Each module defines ``system`` (a ReFrame system entry) and
``environments`` (the programming environments its partitions use).
``ALL`` lists them in matching order: ``local`` matches any host name, so it
comes last.
"""
import importlib
import pkgutil

_NAMES = sorted(m.name for m in pkgutil.iter_modules(__path__)
                if not m.name.startswith('_'))

ALL = [importlib.import_module(f'systems.{name}')
       for name in sorted(_NAMES, key=lambda n: (n == 'local', n))]
