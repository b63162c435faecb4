"""What ``hpcval run`` checks before and after ReFrame runs.

Before: the system and mode it names exist (a typo lists the valid names),
and this host is one of the named system's (its ``hostnames`` patterns), so
that nothing is submitted from the wrong machine (``--dry-run`` and the
listings submit nothing: they may read any system anywhere).  A system without host
patterns (a standalone box, the test cluster) is selected by name only and
runs anywhere.  An acceptance or screen (hpcval.inputs.FIXED_MODES) is
refused with check paths (``-c``) that leave out a file of the suite's
checks: ``-c checks/osu.py --mode acceptance`` would say PASSED of one
benchmark.  After: a selection of no test case at all (``-n`` matching
nothing, ``-t nccl`` on a node without GPUs) ran nothing, which ReFrame
reports as PASSED; ``hpcval run`` turns it into a refusal naming the
filter.

A refusal is one line and exit code ``REFUSED`` (3), never one of the
verdict's 0/1/2: the monitoring plugins' convention, where 3 is UNKNOWN.
"""
import os
import re

from hpcval import paths

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
    """Every value of the option ``short``/``long`` in ReFrame's ``argv``
    ('-n X', '-nX', '--name X', '--name=X')."""
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
    from hpcval import suites
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
    return narrowed_checks(*_mode_and_checkpaths(argv, environ))


def narrowed_checks(mode, checkpaths):
    """'' where the check paths ``checkpaths`` (-c values: files or
    folders) hold every check file of the ``mode`` suite (ReFrame's check
    search path: the built-in checks/ less what a site replaces, and the
    site's), or ``mode`` is not a fixed one; else the one-line reason,
    naming a file left out."""
    from hpcval import inputs
    if mode not in inputs.FIXED_MODES or not checkpaths:
        return ''
    suite = suite_check_files()
    missing = sorted(suite - _check_files(checkpaths))
    if not missing:
        return ''
    more = f' and {len(missing) - 1} more' if len(missing) > 1 else ''
    return (f'--mode {mode}: -c {" -c ".join(checkpaths)}: leaves out '
            f'{missing[0]}{more} of the {mode} suite\'s checks; a narrowed '
            f'selection is not the {mode} suite; run without -c (the '
            f'suite\'s check search path), or without --mode {mode} to '
            f'test a part')


def suite_check_files():
    """The real paths of the suite's check files (ReFrame's check search
    path: hpcval.reference_service.checks_dirs)."""
    from hpcval import reference_service
    return _check_files(reference_service.checks_dirs())


def _check_files(checkpaths):
    """The real paths of the check files ``checkpaths`` name (a folder:
    its ``*.py``, as ReFrame loads it without -R)."""
    out = set()
    for path in checkpaths:
        if os.path.isdir(path):
            out.update(os.path.realpath(os.path.join(path, f))
                       for f in os.listdir(path) if f.endswith('.py'))
        elif path:
            out.add(os.path.realpath(path))
    return out


def _mode_and_checkpaths(argv, environ):
    modes = values(argv, '--mode', '--mode')
    given = values(argv, '-c', '--checkpath') or [
        p for p in environ.get('RFM_CHECK_SEARCH_PATH', '').split(':') if p]
    return (modes[-1] if modes else None), given


def refusal_after(argv, saw_zero):
    """The reason to refuse a run whose selection was empty, or ''."""
    if not saw_zero:
        return ''
    given = selection(argv)
    return (f'the selection matched no test case'
            f'{f" ({given})" if given else ""}: nothing was run; '
            f'`hpcval run -l` with the same options lists what matches')
