"""Where hpcval's data folders are: the built-in ones and a site's.

The built-in ``checks/``, ``config/``, ``references/`` and ``systems/`` are
those of the checkout, or, in an installed wheel, their copy inside the
package (``hpcval/suite/``, made by setup.py).  A site keeps its own systems,
references and checks in one folder named by $HPCVAL_SITE (docs/site.md):
its files are layered over the built-in ones, a file of the same name
replacing the built-in one.
"""
import functools
import os

from reframe.core.exceptions import ConfigError

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

    return path


def site_folders(kind):
    """[the site's ``kind`` folder] where it has one, else []."""
    site = site_dir()
    folder = os.path.join(site, kind) if site else ''
    return [folder] if folder and os.path.isdir(folder) else []


def references_dirs():
    """The references folders in layering order: built-in, then the
    site's (hpcval.references.load_layered)."""
    return [references_dir(), *site_folders('references')]


def writable_references_dir():
    """Where ``hpcval calibrate --write`` writes: the site's references/
    under a site layer, else the built-in folder."""
    site = site_dir()
    return os.path.join(site, 'references') if site else references_dir()
