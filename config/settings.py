"""hpcval's ReFrame configuration.

Found without ``-C`` through ``RFM_CONFIG_FILES``, which the activate
script of bootstrap.sh's virtual environment exports (installed from a
wheel: ``hpcval run``, or ``RFM_CONFIG_FILES=$(hpcval paths config)``).
Systems come from systems/ (one module each, their partition extras checked
here, and the ``jsrun`` launcher registered), layered under a site's
systems/ when $HPCVAL_SITE names one (docs/site.md); every reference file,
built-in or the site's, is validated here, so a malformed one stops ReFrame
at load time with file and key named.  Only the system ReFrame will use
detects its hardware (hpcval.selection).

``sys.path`` is left as it is: ReFrame loads this file inside its
``temp_sys_path``, which removes an entry by position, so an entry inserted
in front of it took the virtual environment's site-packages (and polars,
which ReFrame's results commands need) away.  The ``systems`` package is
imported from its file instead.
"""
import os
import sys

from reframe.core.exceptions import ConfigError

from hpcval import (launchers, layouts, paths, reference_service,  # noqa: F401
                    references, selection)
from hpcval import suites
from hpcval.benchmarks import configured, container

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _import_systems():
    return paths.import_systems(_ROOT)


def _shown(path):
    # built-in modules by their place in the repository, a site's in full
    rel = os.path.relpath(path, _ROOT)
    return path if rel.startswith('..') else rel


try:
    systems = _import_systems()
    reference_service.files()      # validated once, kept for the run
    for _mod in systems.ALL:
        _origin = _shown(_mod.__file__)
        _stem = os.path.basename(_mod.__file__)[:-3]
        if _mod.system['name'] != _stem:
            # a site module replaces the built-in one of its file's name
            raise layouts.SystemConfigError(
                f'{_origin}: system name {_mod.system["name"]!r} must be '
                f'the module\'s name, {_stem!r}')
        layouts.validate_system(_mod.system, _origin,
                                container.validate_extras)
        layouts.validate_general(getattr(_mod, 'general', {}), _origin)
    # an inventory of a misspelt partition would judge no node
    reference_service.files().check_partitions(
        references.configured_partitions(systems.ALL))
    paths.announce_replacements(sys.stderr)
except (paths.SiteError, layouts.SystemConfigError,
        references.ReferenceFileError, ValueError, OSError) as _err:
    # ReFrame prints a ConfigError as one line, without a traceback (any
    # bad HPCVAL_* variable a system module reads is a ValueError)
    raise ConfigError(str(_err)) from None


def _require_lmod(name):
    """Refuse, in one line saying how to initialise it, a system that
    loads modules with Lmod where this shell has not initialised Lmod
    (ReFrame's own error names only LMOD_CMD)."""
    # config/replay.py loads this file as hpcval_settings: no module
    # system there
    if __name__ == 'hpcval_settings' or os.environ.get('LMOD_CMD'):
        return
    for mod in systems.ALL:
        if mod.system['name'] == name and \
                mod.system.get('modules_system') == 'lmod':
            raise ConfigError(
                f'system {name} loads modules with Lmod, but LMOD_CMD is '
                f'not set: initialise Lmod in this shell first (source '
                f'/usr/share/lmod/lmod/init/bash, or /etc/profile.d/lmod.sh '
                f'where the site installed it), then rerun')


_require_lmod(selection.detect_selected(systems.ALL))
# the check that fails without this configuration stands down
configured.mark_loaded()


def _state_dir():
    """Where an installed hpcval's runs go: $XDG_STATE_HOME/hpcval, by
    default ~/.local/state/hpcval (the XDG base directory rules, which
    ignore a relative $XDG_STATE_HOME)."""
    base = os.environ.get('XDG_STATE_HOME', '')
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser('~'), '.local', 'state')
    return os.path.join(base, 'hpcval')


def _with_prefix(system):
    # a checkout keeps ReFrame's own default (the working folder);
    # an installed package never writes there nor into site-packages;
    # --prefix, $RFM_PREFIX and a system's own prefix still win
    installed = not os.path.isfile(os.path.join(_ROOT, 'setup.py'))
    if not installed or 'prefix' in system:
        return system
    return {**system, 'prefix': _state_dir()}


def _general():
    # a site check file replaces the built-in one of its name
    base = {'check_search_path': paths.check_search_path(
        os.path.join(_ROOT, 'checks'))}
    # a system module's ``general`` (ReFrame's general options for that
    # system alone, such as its poll rates) comes first: ReFrame takes the
    # first entry that names the system, and the shared one for the rest
    own = [{**base, **mod.general, 'target_systems': [mod.system['name']]}
           for mod in systems.ALL if getattr(mod, 'general', None)]
    return [*own, base]


site_configuration = {
    'systems': [_with_prefix(mod.system) for mod in systems.ALL],
    'environments': [env for mod in systems.ALL for env in mod.environments],
    # validation suites: reframe -c checks/ --mode quick|screen|acceptance|burnin
    'modes': suites.MODES,
    'general': _general(),
    'storage': [
        {
            # results database for --performance-compare and hpcval report
            'enable': True,
        }
    ],
}
