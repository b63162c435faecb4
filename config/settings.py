"""hpcval's ReFrame configuration.

Found without ``-C`` through ``RFM_CONFIG_FILES``, which the activate
script of bootstrap.sh's virtual environment exports.  Systems come from
systems/ (one module each, their partition extras checked here, and the
``jsrun`` launcher registered); every reference file is validated here, so a
malformed one stops ReFrame at load time with file and key named.
"""
import os
import sys

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from reframe.core.exceptions import ConfigError  # noqa: E402

try:
    import systems  # noqa: E402
    from hpcval import launchers, layouts, paths, references  # noqa: E402,F401

    references.load_dir(paths.references_dir())
    for _mod in systems.ALL:
        layouts.validate_system(_mod.system,
                                f'systems/{_mod.system["name"]}.py')
except (ValueError, OSError) as _err:
    # a bad reference file or HPCVAL_* variable is the user's to fix: one
    # line naming file and key (ReFrame prints a ConfigError so and exits
    # 1), not a traceback through the configuration's imports
    raise ConfigError(str(_err)) from None

site_configuration = {
    'systems': [mod.system for mod in systems.ALL],
    'environments': [env for mod in systems.ALL for env in mod.environments],
    'general': [
        {
            'check_search_path': [os.path.join(_ROOT, 'checks')],
        }
    ],
    'storage': [
        {
            # results database for --performance-compare and hpcval report
            'enable': True,
        }
    ],
}
