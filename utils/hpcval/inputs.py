"""Validation of values a user sets with ``-S``: they end up in job scripts.

Every value that reaches a shell line passes through here and is quoted
as well; a rejected value fails the test with a message naming the
variable, before any script is written.
"""
import os
import re

from reframe.core.exceptions import ReframeError

# paths and tokens: letters, digits and the punctuation of paths and versions
_SAFE_PATH = re.compile(r'^[A-Za-z0-9_.,:=+@%/-]+$')
_SAFE_TOKEN = re.compile(r'^[A-Za-z0-9_.,:=+@%-]+$')


class InputError(ReframeError):
    """A user-supplied variable is unsafe or points nowhere."""


def is_safe_path(value):
    """True for a path of letters, digits and path punctuation only."""
    return bool(_SAFE_PATH.match(value))


def checked_path(value, name, must_exist=True):
    """Absolute form of a path given with -S, or InputError."""
    if not is_safe_path(value):
        raise InputError(f'-S {name}={value!r}: only letters, digits and '
                         f'_ . , : = + @ % / - are allowed in paths')

    path = os.path.abspath(value)
    if must_exist and not os.path.exists(path):
        raise InputError(f'-S {name}={value}: {path} does not exist')

    return path


def checked_token(value, name, allowed=None):
    """A single shell word (a version, a device list, a size), or InputError."""
    if allowed is not None and value not in allowed:
        raise InputError(f'-S {name}={value!r}: must be one of '
                         f'{", ".join(sorted(allowed))}')

    if not _SAFE_TOKEN.match(str(value)):
        raise InputError(f'-S {name}={value!r}: not a single safe word')

    return value
