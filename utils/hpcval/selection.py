"""The system a ``reframe`` invocation is for, known while its configuration
loads.

Only that system's detection runs (``cpuinfo()``, ``nvidia-smi``,
``rocminfo``): ReFrame loads every system's entry before it picks one, and
the other systems' detection cost every invocation up to a minute for
nothing.  ReFrame takes the system from ``--system`` (or $RFM_SYSTEM), else
the first entry whose ``hostnames`` pattern matches the host name; so does
this.  A ``--system`` abbreviated in a way ReFrame accepts goes unseen here:
the host name then decides, which at worst detects one system too many.
"""
import os
import re
import socket
import sys


def option_value(argv, option):
    """The value of the long ``option`` in ``argv`` (``--x V`` or
    ``--x=V``; the first given), or None."""
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f'{option}='):
            return arg.split('=', 1)[1]
    return None


def selected(systems, argv=None, environ=None, hostname=None):
    """The name of the entry of ``systems`` (ReFrame system entries in
    configuration order) that ReFrame will use, or None when none matches."""
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    name = option_value(argv, '--system') or environ.get('RFM_SYSTEM')
    if name:
        return name.split(':', 1)[0]

    host = hostname or socket.gethostname()
    for system in systems:
        if any(re.match(pattern, host) for pattern in system['hostnames']):
            return system['name']
    return None


def detect_selected(modules, **kw):
    """Run ``detect(system)`` of the one system module (of ``modules``)
    that ReFrame will use, where it has one; returns its name."""
    name = selected([m.system for m in modules], **kw)
    for mod in modules:
        if mod.system['name'] == name and hasattr(mod, 'detect'):
            mod.detect(mod.system)
    return name
