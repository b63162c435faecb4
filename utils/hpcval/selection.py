"""The system a ``reframe`` invocation is for while its configuration loads
(only its detection runs): ``--system``/$RFM_SYSTEM, else ``hostnames``."""
import os
import re
import socket
import sys


def option_value(argv, option):
    """The value of the long ``option`` in ``argv`` (first given), or None."""
    for i, arg in enumerate(argv):
        if arg == option and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith(f'{option}='):
            return arg.split('=', 1)[1]
    return None


def selected(systems, argv=None, environ=None, hostname=None):
    """The name of the entry of ``systems`` ReFrame will use, or None."""
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
    """Run ``detect(system)`` of the system module ReFrame will use."""
    name = selected([m.system for m in modules], **kw)
    for mod in modules:
        if mod.system['name'] == name and hasattr(mod, 'detect'):
            mod.detect(mod.system)
    return name
