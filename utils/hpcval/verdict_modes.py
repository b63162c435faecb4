"""Whether a session that ran ``--mode acceptance`` or ``--mode screen``
ran the whole suite, read from the command line its report records.

``hpcval run`` and ReFrame under hpcval's configuration refuse a
narrowed acceptance or screen (hpcval.inputs.check_command_line,
hpcval.preflight.narrowed_checks); a report made elsewhere (another
configuration that defines the mode, an older hpcval) may still say it
ran one.  The verdict reads the command line as written, without
ReFrame's abbreviations of long options, and names what narrowed it: the
run is then not validated as that suite (exit 2 at best).
"""
import os
import shlex

from hpcval import inputs, preflight

# options that take a value and narrow the selection
_NARROWING = (('-n', '--name'), ('-x', '--exclude'), ('-t', '--tag'),
              ('-T', '--exclude-tag'), ('-E', '--filter-expr'),
              ('-p', '--prgenv'), ('--maintainer', '--maintainer'))
# flags that narrow it, or leave a check out
_FLAGS = ('--cpu-only', '--gpu-only', '--failed', '--skip-sanity-check',
          '--skip-performance-check', '--skip-system-check',
          '--skip-prgenv-check')


def narrowing(cmdline, suite_checks):
    """(mode, [what narrowed it]) of a session's ReFrame ``cmdline`` that
    ran a fixed mode (hpcval.inputs.FIXED_MODES) narrowed, else None.
    ``suite_checks``: the file names of the suite's check files."""
    try:
        argv = shlex.split(cmdline)
    except ValueError:
        return None
    modes = preflight.values(argv, '--mode', '--mode')
    mode = modes[-1] if modes else None
    if mode not in inputs.FIXED_MODES:
        return None
    what = [f'{short} {value}' for short, long in _NARROWING
            for value in preflight.values(argv, short, long)
            if not (short == '-p' and value == '.*')]
    what += [a for a in argv if a.split('=', 1)[0] in _FLAGS]
    own = inputs._mode_given(mode)['vars']
    what += [f'-S {value}' for value in preflight.values(argv, '-S',
                                                         '--setvar')
             if value not in own and value.partition('=')[0].rsplit(
                 '.', 1)[-1] not in inputs.WHERE_FROM]
    what += [f'--max-retries {value}' for value in preflight.values(
        argv, '--max-retries', '--max-retries') if value != '0']
    checks = preflight.values(argv, '-c', '--checkpath')
    if checks and all(c.endswith('.py') for c in checks):
        # files, not folders: their names against the suite's
        missing = sorted(set(suite_checks) -
                         {os.path.basename(c) for c in checks})
        if missing:
            what.append(f'-c {" -c ".join(checks)} leaves out '
                        f'{", ".join(missing)}')
    return (mode, what) if what else None


def suite_checks():
    """The file names of the suite's check files (the check search path:
    built-in checks/ less what a site replaces, and the site's)."""
    return sorted({os.path.basename(f)
                   for f in preflight.suite_check_files()})


def not_the_suite(sessions_of, commands):
    """One line per session of ``sessions_of`` ({group name: {session
    uuid}}) whose command (``commands``: {uuid: cmdline}) ran a fixed
    mode narrowed: why that group was not validated as that suite."""
    names = None
    out = []
    for group in sorted(sessions_of):
        for uuid in sorted(sessions_of[group]):
            cmdline = commands.get(uuid) or ''
            if '--mode' not in cmdline:
                continue
            if names is None:
                names = suite_checks()
            found = narrowing(cmdline, names)
            if found:
                mode, what = found
                out.append(f'{group}: session {uuid} ran --mode {mode} '
                           f'narrowed ({"; ".join(what)}): not the {mode} '
                           f'suite')
    return out
