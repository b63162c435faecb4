"""Whether a session that ran ``--mode acceptance`` or ``screen`` ran the
whole suite, read from its recorded command line with ReFrame's own parser
(docs/security.md, "modes")."""
import shlex

from hpcval import suites

#: in place of the suite's files where a session recorded none: check
#: paths naming files, not the folder, then leave it out (fail closed)
UNRECORDED = 'the suite\'s other files (the run recorded none)'


def _narrowing(cmdline, names):
    try:
        argv = shlex.split(cmdline)
    except ValueError as err:
        return '?', [f'it cannot be split: {err}']
    # the first word is the program that ran (reframe, or its path)
    return suites.narrowing(argv[1:] if argv and not argv[0].startswith('-')
                            else argv, names)


def _suites(cases):
    """{session: the suite's check file names its cases recorded}."""
    out = {}
    for case in cases:
        names = case.extras.get('suite')
        if isinstance(names, list) and all(isinstance(n, str) and
                                           '/' not in n for n in names):
            out.setdefault(case.session, set()).update(names)
    return out


def not_the_suite(sessions_of, commands, cases):
    """Why each group of ``sessions_of`` ({group: {uuid}}) whose command
    (``commands``: {uuid: cmdline}) ran a fixed mode narrowed is not that
    suite; ``cases`` record the suite's files."""
    recorded = _suites(cases)
    out = []
    for group in sorted(sessions_of):
        for uuid in sorted(sessions_of[group]):
            cmdline = commands.get(uuid) or ''
            if not isinstance(cmdline, str) or '--mode' not in cmdline and \
                    not any(m in cmdline for m in suites.FIXED_MODES):
                continue
            found = _narrowing(cmdline,
                               sorted(recorded.get(uuid) or [UNRECORDED]))
            if found and found[0] == '?':
                out.append(f'{group}: session {uuid}: its command line '
                           f'cannot be read ({found[1][0]}): not validated '
                           f'as an acceptance or screen')
            elif found:
                mode, what = found
                out.append(f'{group}: session {uuid} ran --mode {mode} '
                           f'narrowed ({"; ".join(what)}): not the {mode} '
                           f'suite')
    return out
