"""The validation suites as ReFrame modes (docs/after-maintenance.md); the
fixed ones accept only options known harmless (``narrowing``)."""
import functools
import os

#: The tags that put a test into a suite (a benchmark's ``suites()``)
QUICK_TAG, SCREEN_TAG = 'quick', 'screen'
QUICK = ['-t', f'^{QUICK_TAG}$']
SCREEN = ['-t', f'^{SCREEN_TAG}$']
#: a failure measured again once, in its session, before it fails the node
RETRY = '--max-retries=1'
#: seconds of ``--mode burnin``: DCGM diagnostics' level 3 (about 15 min)
BURNIN_S = 900

MODES = [
    {'name': 'quick', 'options': [*QUICK, RETRY]},
    {'name': 'screen', 'options': [*SCREEN, '--distribute=all', RETRY,
                                   '-S', 'LikwidBenchCheck.repeats=2']},
    {'name': 'acceptance', 'options': ['-S', 'strict=yes', RETRY]},
    {'name': 'burnin', 'options': [
        '-n', 'GpuBurnCudaCheck%precision=float$',
        '-S', f'GpuBurnCudaCheck.burnin={BURNIN_S}', RETRY]},
]

#: Modes whose verdict is a statement about the system: fixed checks
FIXED_MODES = ('acceptance', 'screen')
#: variables -S may set in those modes: where sources, builds and tools
#: come from, and how long a job may wait or run; not what is measured
WHERE_FROM = frozenset({
    'src_mirror', 'prebuilt_dir', 'repo_url', 'submodules',
    'submodule_root', 'stack_modules', 'spack_spec', 'image', 'cuda_arch',
    'nccl_home', 'mpi_home', 'mpicc', 'mpicxx', 'python', 'hl_qual',
    'scratch_dir', 'time_limit', 'max_pending_time'})
#: ReFrame's options (by their field) a fixed mode accepts as they are;
#: -S, -c, -p and the mode's own are checked by value (docs/security.md)
HARMLESS = frozenset({
    'run', 'dry_run', 'list', 'list_detailed', 'list_tags', 'describe',
    'mode', 'config_files', 'system', 'prefix', 'output', 'stage',
    'perflogdir', 'report_file', 'report_junit', 'compress_report',
    'keep_stage_files', 'clean_stagedir', 'save_log_files', 'timestamp',
    'recursive', 'exec_policy', 'verbose', 'quiet', 'colorize',
    'warn_as_error', 'failure_stats', 'performance_report',
    'session_extras', 'table_format', 'table_format_delim',
    'retries_threshold'})


class _Parsed(Exception):
    """Carries ReFrame's argument parser out of its main()."""


@functools.lru_cache(maxsize=None)
def _reframe_parser():
    # ReFrame builds its parser inside main() and offers no other way to
    # it: main() runs until its first parse, which hands the parser out
    from reframe.frontend import argparse as rfm_argparse, cli
    parse = rfm_argparse.ArgumentParser.parse_args

    def hand_out(parser, *args, **kwargs):
        raise _Parsed(parser)
    rfm_argparse.ArgumentParser.parse_args = hand_out
    try:
        cli.main()
    except _Parsed as parsed:
        return parsed.args[0]
    finally:
        rfm_argparse.ArgumentParser.parse_args = parse
    raise RuntimeError('ReFrame parsed no command line')


def parse(argv):
    """{field: value} of ``argv`` by ReFrame's own parser, or ValueError."""
    parser = _reframe_parser()
    holder = parser._holder

    def refuse(message):
        raise ValueError(message)
    holder.error, holder.exit = refuse, lambda *a, **k: refuse('exits')
    try:
        namespace = parser.parse_args(argv, suppress_required=True)
    finally:
        del holder.error, holder.exit
    return {field: value for field, value in
            vars(namespace.cmd_options).items() if value is not None}


def _from_environment(environ):
    """{field: value} of ReFrame's options that ``environ`` sets (RFM_*)."""
    parser = _reframe_parser()
    flags = {a.dest for a in parser._holder._actions if a.option_strings}
    out = {}
    for field, (envvar, *_) in parser._option_map.items():
        name, *delim = (envvar or '-').split(maxsplit=1)
        if field in flags and environ.get(name):
            text = environ[name]
            action = parser._option_map[field][2]
            out[field] = text.split(delim[0] if delim else ',') \
                if action.startswith('append') else text
    return out


def narrowing(argv, suite_files, environ=None):
    """(mode, [what makes the run not that suite]) of a fixed mode's ``argv``;
    None for no fixed mode; ('?', [why]) where ReFrame's parser refuses it."""
    try:
        given = parse(argv)
    except ValueError as err:
        if any(m in a for a in argv for m in FIXED_MODES):
            return '?', [f'ReFrame cannot parse the command line: {err}']
        return None
    if given.get('mode') not in FIXED_MODES:
        return None
    mode = given['mode']
    env = {f: v for f, v in _from_environment(environ or {}).items()
           if f not in given}
    own = next((parse(m['options']) for m in MODES if m['name'] == mode), {})
    plain = parse([])
    what = []
    for field, value in {**env, **given}.items():
        if field not in env and value == plain.get(field):
            # ReFrame's parser fills in its defaults: unset, or set to
            # what ReFrame does without it (--max-retries=0 only leaves a
            # failure unconfirmed, which fails as it is)
            continue
        values = _listed(value)
        extra = [v for v in values if v not in _listed(own.get(field))]
        if field == 'vars':
            extra = [v for v in extra if v.partition('=')[0].rsplit(
                '.', 1)[-1] not in WHERE_FROM]
        elif field == 'prgenv':
            extra = [v for v in extra if v != '.*']
        elif field == 'checkpath':
            extra = _left_out(values, suite_files)
        elif field in HARMLESS:
            extra = []
        what += [_shown(field, v, field in env) for v in extra]
    return (mode, what) if what else None


def _listed(value):
    return value if isinstance(value, list) else \
        [] if value is None else [value]


def _left_out(checkpaths, suite_files):
    """['-c ... leaves out NAME, ...'] where ``checkpaths`` miss a file."""
    if all('/' not in f for f in suite_files):
        named = {os.path.basename(c) for c in checkpaths if c.endswith('.py')}
        if len(named) < len(checkpaths):
            return []   # a folder: the suite's, as far as a report tells
        missing = sorted(set(suite_files) - named)
    else:
        found = set()
        for path in checkpaths:
            if os.path.isdir(path):
                found.update(os.path.realpath(os.path.join(path, f))
                             for f in os.listdir(path) if f.endswith('.py'))
            elif path:
                found.add(os.path.realpath(path))
        missing = sorted(set(suite_files) - found)
    if not missing:
        return []
    more = f' and {len(missing) - 1} more' if len(missing) > 1 else ''
    return [f'{" -c ".join(checkpaths)} leaves out {missing[0]}{more}']


def _shown(field, value, from_environment):
    flag = {a.dest: a.option_strings for a in
            _reframe_parser()._holder._actions}.get(field, [field])[0]
    text = flag if value is True or value == 'true' else f'{flag} {value}'
    return f'{text} (from the environment)' if from_environment else text
