"""What ``hpcval run`` checks before ReFrame runs (system, mode, host, a
fixed mode's options) and after (an empty selection): one line, exit 3."""
import os
import re
import sys

from hpcval import inputs, paths, reference_service, suites

REFUSED = 3
NEVER = '(?!)'
# ReFrame options that narrow the selection, named in a refusal
_FILTERS = (('-n', '--name'), ('-x', '--exclude'), ('-t', '--tag'),
            ('-p', '--prgenv'), ('-E', '--filter-expr'),
            ('--mode', '--mode'), ('--system', '--system'),
            ('-c', '--checkpath'))
# options under which nothing is submitted: any system may be read anywhere
_NOTHING_SUBMITTED = ('--dry-run', '-l', '-L', '--list', '--list-detailed',
                      '--describe', '--list-tags', '--ci-generate')
# what ReFrame prints when the selection is empty
ZERO = re.compile(r'Ran 0/0 test case\(s\)|Found 0 check\(s\)')


def values(argv, short, long):
    """Every value of the option ``short``/``long`` in ReFrame's ``argv``."""
    out = []
    for i, arg in enumerate(argv):
        if arg in (short, long) and i + 1 < len(argv):
            out.append(argv[i + 1])
        elif arg.startswith(long + '='):
            out.append(arg[len(long) + 1:])
        elif short != long and len(short) == 2 and arg.startswith(short) \
                and len(arg) > 2 and not arg.startswith('--'):
            out.append(arg[2:])
    return out


def selection(argv):
    """'-n NoSuchCheck --system local' (the filters given), or ''."""
    return ' '.join(f'{short if short != long else long} {v}'
                    for short, long in _FILTERS
                    for v in values(argv, short, long))


def system_names():
    """Names of the systems hpcval knows: built-in and the site's."""
    folders = [os.path.join(paths.repo_root(), 'systems'),
               *paths.site_folders('systems')]
    return sorted({f[:-3] for d in folders if os.path.isdir(d)
                   for f in os.listdir(d)
                   if f.endswith('.py') and not f.startswith('_')})


def _systems():
    return {m.system['name']: m.system
            for m in paths.import_systems(paths.repo_root()).ALL}


def mode_names():
    return [m['name'] for m in suites.MODES]


def refusal_before(argv, environ, hostname):
    """'' when ``argv`` may run here, else the one-line reason."""
    named = values(argv, '--system', '--system') or \
        ([environ['RFM_SYSTEM']] if environ.get('RFM_SYSTEM') else [])
    known = system_names()
    for value in named[-1:]:
        name = value.split(':', 1)[0]
        if name not in known:
            return (f'--system {value}: no such system; valid: '
                    f'{", ".join(known)}')
        patterns = [p for p in _systems()[name].get('hostnames', [])
                    if p != NEVER]
        submits = not any(a.split('=', 1)[0] in _NOTHING_SUBMITTED
                          for a in argv)
        if submits and patterns and \
                not any(re.match(p, hostname) for p in patterns):
            return (f'--system {name} is for hosts matching '
                    f'{" or ".join(patterns)}; this host is {hostname!r}: '
                    f'nothing was submitted (run it on {name}, or name '
                    f'this host\'s system)')
    extra_configs = [f for f in environ.get('RFM_CONFIG_FILES', '').split(':')
                     if f and os.path.abspath(f) != paths.config_file()]
    for mode in values(argv, '--mode', '--mode'):
        # a site's configuration file may add modes of its own
        if mode not in mode_names() and not extra_configs:
            return (f'--mode {mode}: no such mode; valid: '
                    f'{", ".join(mode_names())}')
    return narrowed(argv, environ)


def suite_check_files():
    """The real paths of the suite's check files."""
    return {os.path.realpath(f) for f in reference_service.check_files()}


def narrowed(argv, environ):
    """'', or why ``argv`` runs a fixed mode only in part (one line)."""
    found = suites.narrowing(argv, suite_check_files(), environ)
    if not found:
        return ''
    mode, what = found
    if mode == '?':
        return f'{what[0]}: an acceptance or screen runs only from a line ' \
               f'ReFrame reads'
    return (f'--mode {mode}: {"; ".join(what)}: not the {mode} suite, '
            f'which runs every check as it is (it accepts the options '
            f'docs/security.md lists, and -S only of '
            f'{", ".join(sorted(suites.WHERE_FROM))}); run without --mode '
            f'{mode} to test a part or a setting')


def check_command_line(argv, environ):
    """The run guard: -S on ReFrame's variables, a fixed mode's allow-list."""
    try:
        assignments = suites.parse(argv).get('vars', [])
    except ValueError:
        assignments = []    # ReFrame refuses the line itself
    for assignment in assignments:
        target, sep, text = assignment.partition('=')
        name = target.rsplit('.', 1)[-1]
        if sep and name in inputs.reframe_variables():
            inputs.check_reframe_variable(name, text)
    reason = narrowed(argv, environ)
    if reason:
        raise inputs.InputError(reason)


_CHECKED = []


def check_this_command_line():
    """check_command_line() once for this process's reframe command."""
    if _CHECKED or inputs.reframe_options() is None:
        return
    try:
        check_command_line(sys.argv[1:], os.environ)
    except inputs.InputError as err:
        raise SystemExit(f'ERROR: {err}; nothing was run') from None
    _CHECKED.append(True)


def refusal_after(argv, saw_zero):
    """The reason to refuse a run whose selection was empty, or ''."""
    if not saw_zero:
        return ''
    given = selection(argv)
    return (f'the selection matched no test case'
            f'{f" ({given})" if given else ""}: nothing was run; '
            f'`hpcval run -l` with the same options lists what matches')
