"""ReFrame's logging without ``variables``; cheap ignored warnings."""
import inspect
import sys
import warnings

import reframe as rfm
import semver
from reframe.core import warnings as rfm_warnings


class LeanLogging(rfm.RegressionTestPlugin):
    """Log records without ``variables``, whose deprecation walk cost 45 %."""

    @classmethod
    def loggable_attrs(cls):
        return [attr for attr in type(cls).loggable_attrs(cls)
                if attr[0] != 'variables']


def _ignored(category, message):
    """True if the filters ignore ``message`` of ``category`` everywhere."""
    for action, text, kind, module, lineno in warnings.filters:
        if not issubclass(category, kind) or \
                (text is not None and not text.match(message)):
            continue
        if module is not None or lineno:
            return None
        return action == 'ignore'
    return False


_WALKING = rfm_warnings.user_deprecation_warning
_CATEGORY = rfm_warnings.ReframeDeprecationWarning


def user_deprecation_warning(message, from_version='0.0.0'):
    """ReFrame's warning, not walking the call stack when filters ignore it."""
    if _ignored(_CATEGORY, message) is True:
        return
    # raised, as ReFrame's, at the first frame outside ReFrame (and this
    # module), from ReFrame version ``from_version`` on
    level = 1
    for frame in inspect.stack(context=0):
        module = inspect.getmodule(frame.frame)
        if module is None or not (module.__name__.startswith('reframe') or
                                  module.__name__ == __name__):
            break
        level += 1
    version = semver.VersionInfo.parse(rfm.VERSION).finalize_version()
    if getattr(rfm_warnings, '_RAISE_DEPRECATION_ALWAYS', False) or \
            version >= semver.VersionInfo.parse(from_version):
        warnings.warn(message, _CATEGORY, stacklevel=level)


# each module of ReFrame that imported the function holds its own name
for _module in list(sys.modules.values()):
    if getattr(_module, '__name__', '').startswith('reframe') and \
            getattr(_module, 'user_deprecation_warning', None) is _WALKING:
        _module.user_deprecation_warning = user_deprecation_warning
