"""The input policy: every ``-S`` value and ``HPCVAL_*`` variable, checked
in one place before any script is written (docs/input-policy.md)."""
import contextlib
import functools
import os
import re
import sys

import reframe as rfm
from reframe.core.builtins import run_after
from reframe.core.exceptions import ReframeError

# a character class body; '-' last, where it is literal
_PATH_CHARS = r'A-Za-z0-9_.,:=+@%/-'
_URL_CHARS = r'A-Za-z0-9_.,:=+@%/~-'
_SAFE_PATH = re.compile(rf'[{_PATH_CHARS}]+')
_SAFE_TOKEN = re.compile(r'[A-Za-z0-9_.,:=+@%-]+')
# a git or tarball location: scheme://..., user@host:path or an absolute path
_URL = re.compile(rf'(?:https?|ssh|git|file)://[{_URL_CHARS}]+|'
                  rf'[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:[{_URL_CHARS}]+|'
                  rf'/[{_PATH_CHARS}]*')
# a byte count with an optional unit: 8, 8G, 64M, 2GB, 500kB
_SIZE = re.compile(r'[0-9]+(?:[kKMGT]i?B?|B)?')
# a folder that may name $VARIABLES of the job's environment (scratch)
_SHELL_PATH = re.compile(r'[A-Za-z0-9_.,:=+@%/${}-]+')
_GPU_IDS = re.compile(r'[0-9]+(?:,[0-9]+)*')
_CARDS = re.compile(r'all|[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}'
                    r'\.[0-7]')
_COUNT = re.compile(r'[0-9]+')
# a module name (hpcval.stacks): the punctuation of versions and paths
MODULE_NAME = re.compile(r'[A-Za-z0-9_.+@%/-]+')
# a Spack spec: names, versions, variants, compilers and dependencies
SPACK_SPEC = re.compile(r'[A-Za-z0-9_.,:=+@%/^~ -]+')


class InputError(ReframeError):
    """A user-supplied variable is unsafe or points nowhere."""


def _refuse(name, value, why):
    shown = value if isinstance(value, (int, float)) else repr(value)
    raise InputError(f'-S {name}={shown}: {why}')


def is_safe_path(value):
    """True for a path of safe characters not starting with ``-``."""
    return (isinstance(value, str) and bool(_SAFE_PATH.fullmatch(value))
            and not value.startswith('-'))


def checked_path(value, name, must_exist=True):
    """Absolute form of a path given with -S, or InputError."""
    if not is_safe_path(value):
        _refuse(name, value, 'only letters, digits and _ . , : = + @ % / - '
                             'are allowed in paths, not first a -')
    path = os.path.abspath(value)
    if must_exist and not os.path.exists(path):
        raise InputError(f'-S {name}={value}: {path} does not exist')
    return path


def checked_token(value, name, allowed=None):
    """A single shell word (a version, a device list), or InputError."""
    if allowed is not None and value not in allowed:
        _refuse(name, value, f'must be one of {", ".join(sorted(allowed))}')
    text = str(value)
    if not _SAFE_TOKEN.fullmatch(text) or text.startswith('-'):
        _refuse(name, value, 'not a single safe word (letters, digits and '
                             '_ . , : = + @ % -, not first a -)')
    return value


def checked_word_or_path(value, name):
    """A command given by name (``python3``) or by path: never an option."""
    if not isinstance(value, str):
        _refuse(name, value, 'a command name or path')
    return checked_path(value, name, must_exist=False) if '/' in value \
        else checked_token(value, name)


def checked_pattern(value, name, pattern, what):
    """``value`` matching ``pattern`` as a whole, or InputError."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        _refuse(name, value, f'expected {what}')
    return value


# the kinds of an input_policy: each takes (value, name) and raises
# InputError

def _matching(pattern, what):
    return lambda value, name: checked_pattern(value, name, pattern, what)


def _path(value, name):
    checked_path(value, name, must_exist=False)


def _relative_path(value, name):
    _path(value, name)
    if os.path.isabs(value) or '..' in value.split('/'):
        _refuse(name, value, 'a folder inside the stage directory '
                             '(relative, no ..)')


def _url(value, name):
    if not isinstance(value, str) or value.startswith('-') or \
            not _URL.fullmatch(value):
        _refuse(name, value, 'a repository or download location: '
                             'https://, ssh://, git://, file://, '
                             'user@host:path or an absolute path of safe '
                             'characters')


def _shell_path(value, name):
    checked_pattern(value, name, _SHELL_PATH,
                    'a folder of letters, digits, _ . , : = + @ % / - and '
                    '$VARIABLES')
    if '$(' in value or '`' in value or value.startswith('-'):
        _refuse(name, value, 'no command substitution, not first a -')


def _each(check, what):
    """A kind of lists whose every item ``check`` accepts."""
    def each(value, name):
        if not isinstance(value, (list, tuple)):
            _refuse(name, value, what)
        for item in value:
            check(item, name)
    return each


def number(low=None, high=None, low_open=False):
    def check(value, name):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            _refuse(name, value, 'not a number')
        too_low = low is not None and (value <= low if low_open
                                       else value < low)
        if high is not None and (too_low or value > high):
            _refuse(name, value, f'must be in {"(" if low_open else "["}'
                                 f'{low}, {high}]')
        if too_low:
            _refuse(name, value, f'must be {">" if low_open else ">="} {low}')
    return check


def numbers(low):
    return _each(number(low), 'a list of numbers')


def _flag(value, name):
    if not isinstance(value, bool):
        _refuse(name, value, 'true or false')


def _module_name(item, name):
    checked_pattern(item, name, MODULE_NAME, 'module names (letters, '
                                             'digits, _ . + @ % / -)')
    if item.startswith('-'):
        _refuse(name, item, 'a module name, not first a -')


MODULE_NAMES = _each(_module_name, 'a list of module names')


def _spack_spec(value, name):
    checked_pattern(value, name, SPACK_SPEC, 'a Spack spec (letters, digits, '
                                             'spaces and _ . , : = + @ % / ^ '
                                             '~ -)')
    if value.strip().startswith('-'):
        _refuse(name, value, 'a Spack spec, not first a -')


def _record(value, name):
    # written by the test itself after it ran; nothing sets it from outside
    if value:
        _refuse(name, value, 'nothing: the test writes it itself')


PATH, RELATIVE_PATH, URL, TOKEN, WORD_OR_PATH = (
    _path, _relative_path, _url, checked_token, checked_word_or_path)
SHELL_PATH, FLAG, RECORD, SPACK_SPEC_KIND = (
    _shell_path, _flag, _record, _spack_spec)
TOKENS = _each(checked_token, 'a list of words')
SIZE = _matching(_SIZE, 'a byte count such as 8, 64M or 8G')
GPU_IDS = _matching(_GPU_IDS, 'GPU numbers separated by commas, e.g. 0,1')
CARDS = _matching(_CARDS, '"all" or one PCI bus id (0000:b3:00.0)')
COUNT, POSITIVE = number(0), number(1)


def policy_of(cls):
    """{variable: kind} of a test class, a subclass's entry over its base's."""
    policy = {}
    for klass in reversed(cls.__mro__):
        policy.update(vars(klass).get('input_policy', {}))
    return policy


#: Environment variables hpcval reads: (kind, what it must be).
ENVIRONMENT = {
    'HPCVAL_ACCOUNT': (re.compile(r'[A-Za-z0-9_.][A-Za-z0-9_.-]*'),
                       'an account is letters, digits, _ . - only'),
    'HPCVAL_NCCL_NET_PLUGIN_DIR': (
        re.compile(rf'/[{_PATH_CHARS}]*'),
        'must be an absolute path of safe characters'),
    'HPCVAL_MINICLUSTER_LAUNCH_GPUS': (_COUNT,
                                       'expected a number of GPUs per node'),
    'HPCVAL_MINICLUSTER_MAX_JOBS': (_COUNT,
                                    'expected a number of jobs at once'),
    # read as a folder only, never on a command line: any one-line path
    'HPCVAL_ROOT': (re.compile(r'/[^\n\r\x00]*'),
                    'must be an absolute path on one line'),
    # a site folder (hpcval.paths), relative to where hpcval started or not
    'HPCVAL_SITE': (re.compile(rf'[A-Za-z0-9_.,:=+@%/][{_PATH_CHARS}]*'),
                    'only letters, digits and _ . , : = + @ % / - are '
                    'allowed in the path, not first a -'),
    # VictoriaMetrics' import URL and this installation's label
    'HPCVAL_PERFLOG_URL': (re.compile(r'https?://[A-Za-z0-9.-]+(:[0-9]+)?'
                                      r'(/[A-Za-z0-9_./-]*)?'),
                           'expected http(s)://HOST[:PORT][/PATH]'),
    'HPCVAL_PERFLOG_SITE': (re.compile(r'[A-Za-z0-9_.:][A-Za-z0-9_.:-]*'),
                            'a label of letters, digits and _ . : -'),
    # hpcval commands show the traceback of an unforeseen error
    'HPCVAL_DEBUG': (re.compile(r'[01]'),
                     'expected 1 (show tracebacks) or 0'),
}


class EnvironmentValueError(ValueError):
    """An HPCVAL_* environment variable holds a value the policy refuses."""


def environment(name, default=''):
    """``$name`` (one of ENVIRONMENT) checked, or ``default`` when unset."""
    value = os.environ.get(name, '')
    if not value:
        return default
    kind, what = ENVIRONMENT[name]
    if not kind.fullmatch(value):
        raise EnvironmentValueError(f'{name}={value!r}: {what}')
    return value


@functools.lru_cache(maxsize=None)
def reframe_variables():
    return frozenset().union(*(
        base._rfm_var_space.vars for base in (
            rfm.RegressionTest, rfm.RunOnlyRegressionTest,
            rfm.CompileOnlyRegressionTest)))


def hpcval_variables(cls):
    """Names of the variables hpcval's classes declare on ``cls``."""
    return sorted(set(cls._rfm_var_space.vars) - reframe_variables())


def _unlisted(value, name):
    # a variable no input_policy lists yet (tests/test_hostile_run.py fails
    # on it): its strings must be safe words all the same
    if isinstance(value, str):
        checked_token(value, name)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _unlisted(item, name)


def check_variable(name, value, policy):
    """Apply ``policy`` to one variable (an empty one is unset)."""
    if value is None or value == '':
        return
    policy.get(name, _unlisted)(value, name)


# -S on ReFrame's own variables: ReFrame writes them into the job script as
# they are (``export NAME=VALUE``, the launch line, ``module load``), so the
# text given is checked before ReFrame converts it
_SAFE_TEXT = re.compile(rf'[{_PATH_CHARS}]*')
_ENV_ITEM = r'[A-Za-z_][A-Za-z0-9_]*:[A-Za-z0-9_.=+@%/-]*'
_ENV_VARS = re.compile(rf'{_ENV_ITEM}(?:,{_ENV_ITEM})*')
_OPTIONS = re.compile(r'[A-Za-z0-9_.:=+@%/-]+(?:,[A-Za-z0-9_.:=+@%/-]+)*')
_SELECTORS = re.compile(r'[A-Za-z0-9_.,:=+%*-]+')
#: ReFrame variables that are commands or make them: never from -S
_COMMAND_VARIABLES = frozenset({'prerun_cmds', 'postrun_cmds',
                                'prebuild_cmds', 'postbuild_cmds',
                                'build_system', 'container_platform'})
_WAY_OUT = ('a site check deriving from the check does it (docs/site.md, '
            '"Your site without a fork")')


def check_reframe_variable(name, text):
    """The text of ``-S [TEST.]name=text`` for a ReFrame variable."""
    if name in _COMMAND_VARIABLES:
        _refuse(name, text, f'commands are not given with -S (they would '
                            f'reach the job script as they are); {_WAY_OUT}')
    if name in ('env_vars', 'variables'):
        checked_pattern(text, name, _ENV_VARS,
                        'NAME:VALUE[,NAME:VALUE...] with values of letters, '
                        'digits and _ . = + @ % / -; for anything else, ' +
                        _WAY_OUT)
    elif name == 'executable':
        checked_word_or_path(text, name)
    elif name == 'executable_opts':
        checked_pattern(text, name, _OPTIONS,
                        'options of letters, digits and _ . : = + @ % / -, '
                        'separated by commas; for anything else, ' + _WAY_OUT)
    elif name == 'modules':
        MODULE_NAMES(text.split(','), name)
    elif name in ('valid_systems', 'valid_prog_environs'):
        checked_pattern(text, name, _SELECTORS, 'system:partition or '
                                                'environment names')
    else:
        checked_pattern(text, name, _SAFE_TEXT,
                        'letters, digits and _ . , : = + @ % / - only')


def reframe_options():
    """The options of the ``reframe`` command this process runs, or None."""
    # ReFrame hands tests the -S values it parsed but not the rest of the
    # command line; its main() on the stack holds them all
    frame = sys._getframe(1)
    while frame is not None:
        if (frame.f_code.co_name == 'main' and
                frame.f_globals.get('__name__') == 'reframe.frontend.cli'):
            return frame.f_locals.get('options')
        frame = frame.f_back
    return None


@contextlib.contextmanager
def at_load(test):
    """Refused values while ReFrame creates tests stop the run."""
    try:
        yield
    except InputError as err:
        raise SystemExit(f'ERROR: {err} (in {type(test).__name__}); '
                         f'nothing was run') from None


class ValidatedInputs(rfm.RegressionTestPlugin):
    """Applies its class's policy to every hpcval variable of a test."""

    @run_after('init')
    def validate_inputs(self):
        policy = policy_of(type(self))
        with at_load(self):
            for name in hpcval_variables(type(self)):
                try:
                    value = getattr(self, name)
                except AttributeError:
                    continue        # required, set by a later hook
                check_variable(name, value, policy)
