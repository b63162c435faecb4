"""ReFrame's deprecation warnings: the ones the warnings filters ignore
cost no walk of the call stack, the others are still raised."""
import inspect
import warnings

import pytest
from reframe.core import variables
from reframe.core.warnings import (ReframeDeprecationWarning,
                                   suppress_deprecations)

from hpcval.benchmarks import lean_logging


def _no_walk(*args, **kwargs):
    raise AssertionError('the call stack was walked')


def test_a_suppressed_warning_walks_no_stack(monkeypatch):
    monkeypatch.setattr(inspect, 'stack', _no_walk)
    assert variables.user_deprecation_warning is \
        lean_logging.user_deprecation_warning
    with suppress_deprecations():
        variables.user_deprecation_warning('old name')


def test_a_warning_in_force_is_raised_at_the_users_frame():
    with warnings.catch_warnings():
        warnings.simplefilter('always', ReframeDeprecationWarning)
        with pytest.warns(ReframeDeprecationWarning, match='old name') as got:
            variables.user_deprecation_warning('old name')
    assert got[0].filename == __file__


def test_a_filter_by_module_still_walks():
    with warnings.catch_warnings():
        warnings.filterwarnings('ignore', category=ReframeDeprecationWarning,
                                module='elsewhere')
        assert lean_logging._ignored(ReframeDeprecationWarning, 'x') is None
        warnings.simplefilter('ignore', ReframeDeprecationWarning)
        assert lean_logging._ignored(ReframeDeprecationWarning, 'x') is True
