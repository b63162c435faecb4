"""A test that fails wherever ReFrame runs hpcval's checks without its config
(ReFrame's ``generic`` system would pass "0 of 0"), naming the way out."""
import reframe as rfm
from reframe.core.builtins import run_after, sanity_function
from reframe.core.exceptions import SanityError

from hpcval import paths

_LOADED = []


def mark_loaded():
    """Called by config/settings.py once it has loaded."""
    _LOADED.append(True)


class ConfigurationLoaded(rfm.RunOnlyRegressionTest):
    """Fails where hpcval's configuration is not loaded."""

    valid_systems = ['*']
    valid_prog_environs = ['*']
    executable = 'true'
    local = True
    tags = {'configuration'}

    @run_after('init')
    def only_without_hpcval(self):
        if _LOADED:
            self.valid_systems = []

    @sanity_function
    def refuse(self):
        raise SanityError(
            f'hpcval\'s ReFrame configuration is not loaded, so no hpcval '
            f'check ran: set RFM_CONFIG_FILES={paths.config_file()} (what '
            f'. .venv/bin/activate does), or run hpcval run ... instead '
            f'of reframe')
