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

import systems  # noqa: E402
from hpcval import launchers, layouts, paths, references  # noqa: E402,F401
from hpcval import suites  # noqa: E402

references.load_dir(paths.references_dir())
for _mod in systems.ALL:
    layouts.validate_system(_mod.system, f'systems/{_mod.system["name"]}.py')

site_configuration = {
    'systems': [mod.system for mod in systems.ALL],
    'environments': [env for mod in systems.ALL for env in mod.environments],
    # validation suites: reframe -c checks/ -m quick|screen|acceptance
    'modes': suites.MODES,
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
