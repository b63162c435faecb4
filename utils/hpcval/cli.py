"""``hpcval``: command-line helpers around the checks.

    hpcval references [--dir DIR] [--markdown] [--system X]
                                      validate every reference file (each
                                      entry must match a test); count
                                      them, or print them all as a table
    hpcval report [REPORT ...] [--db [PATH]] [selection] [--format ...]
                                      the cross-system comparison table
                                      (and plots) of run reports and the
                                      results database; see hpcval.publish.report
    hpcval calibrate --system X [REPORT ...] [--db [PATH]] [--write]
    hpcval calibrate --system X --from URL --since T [--write]
                                      references/X.yaml from X's good runs,
                                      shown as a diff; written on --write
                                      (into the site's references/ under
                                      $HPCVAL_SITE)
    hpcval paths [config|checks|references|systems|monitoring|docs|site]
                                      where hpcval's suite and its docs are
                                      (installed or the checkout) and the
                                      site layer
    hpcval run [REFRAME ARGS ...]     reframe with hpcval's configuration;
                                      with --ci-generate=FILE a GitLab
                                      pipeline for any host with hpcval
                                      (hpcval.ci, docs/ci.md)
    hpcval site init DIR [--from SYSTEM | --from-slurm [--name N]
                         [--replace] [--dry-run]]
                                      a site folder (docs/site.md)
    hpcval verdict [REPORT ...] [--db [PATH]] [--since T] [--format json]
                   [--references FILE|DIR]
                                      healthy or not: counts per partition,
                                      one line per failure naming the node,
                                      GPU or link (hpcval.verdict)

Every command exits 0 healthy or nothing moved, 1 failed or moved, 2
incomplete, 3 input or usage error (hpcval.exits; each --help says which
it gives, docs/verdict.md has them all).
"""
import argparse
import contextlib
import io
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time

from hpcval import (ci, exits, inputs, paths, preflight,
                    reference_service, references, screen, selection, site,
                    site_from_slurm, slurm_describe, verdict)
from hpcval.publish import (calibrate, changes, history, reference_table,
                            report, results, sample_size)


def _references(args):
    try:
        by_system = references.load_dir(args.dir) if args.dir else \
            references.ReferenceSet.layered(paths.references_dirs())
        by_system.check_partitions(references.configured_partitions())
    except references.ReferenceFileError as err:
        print(f'hpcval: {err}', file=sys.stderr)
        return 1

    if args.markdown:
        print(reference_table.markdown(by_system), end='')
        return 0

    selected = {} if args.schema_only else {
        system: (refs, reference_service.reference_path(system, args.dir))
        for system, refs in by_system.items()
        if not args.system or system in args.system}
    problems = reference_service.problems_of_systems(selected)
    failed = False
    for system, refs in by_system.items():
        judged = sum(r.value is not None for r in refs)
        print(f'{system}: {judged} references, {len(refs) - judged} '
              f'explicitly absent')
        if system in args.system:
            _effective(refs)
        if system in problems:
            failed |= _unmatched(system, selected[system][1],
                                 problems[system])
    unknown = [s for s in args.system if s not in by_system]
    for system in unknown:
        print(f'hpcval references: --system {system}: no reference file '
              f'of that name (known: {", ".join(sorted(by_system))})',
              file=sys.stderr)
    if unknown:
        return exits.INPUT
    return exits.FAILED if failed else exits.OK


def _effective(refs):
    """Each judged figure as the layers give it, where it came from, and
    a warning per site figure breaking the rule it names."""
    rows = [('check', 'where', 'metric', 'value', 'unit', 'lower', 'upper',
             'rule', 'origin'), *site.effective(refs)]
    rows = [[_printable(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    for row in rows:
        print('  ' + '  '.join(c.ljust(w) for c, w in zip(row, widths))
              + '  ' + row[-1])
    for warning in site.rule_warnings(refs):
        print(f'hpcval: warning: {_printable(warning)}', file=sys.stderr)


def _printable(text):
    # names and texts of a site's file are data: no terminal escapes
    return ''.join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _unmatched(system, path, found):
    """Say which entries of ``system``'s file match no test; True if any."""
    if isinstance(found, Exception):     # ReFrame's own errors: say
        print(f'hpcval: {path}: cannot load the checks for system '
              f'{system!r} to match its entries: {found}', file=sys.stderr)
        return True
    errors, notes = found
    for note in notes:
        print(f'hpcval: note: {note}', file=sys.stderr)
    for error in errors:
        print(f'hpcval: {error}', file=sys.stderr)
    return bool(errors)


def _calibrate(args):
    if len(args.system) != 1:
        print('hpcval calibrate: give exactly one --system', file=sys.stderr)
        return exits.INPUT
    if args.write and not args.ref_dir and paths.site_dir() is None and \
            _installed():
        print(f'hpcval calibrate: --write needs a site folder: the '
              f'built-in references of an installed hpcval '
              f'({paths.references_dir()}) are replaced by its next '
              f'upgrade; make one with `hpcval site init DIR --from '
              f'{args.system[0]}` and `export {paths.SITE_VAR}=DIR`, or '
              f'name a folder with --ref-dir; nothing was written',
              file=sys.stderr)
        return exits.INPUT

    try:
        ref_dir, base_dir, by_system = _calibrated_dirs(args.ref_dir)
        if args.from_url:
            samples = _history(args, by_system)
            if samples is None:
                return exits.INPUT
        else:
            if not args.reports and args.db is None:
                print('hpcval calibrate: nothing to calibrate from: give run '
                      'reports, --db or --from URL', file=sys.stderr)
                return exits.INPUT
            loaded, samples = report.load_selected(args)
            if report.unreadable(loaded):
                print('hpcval calibrate: no input could be read (each '
                      'named above); nothing written', file=sys.stderr)
                return exits.INPUT
        result = calibrate.calibrate(
            samples, args.system[0], by_system, floor=args.floor, k=args.k,
            min_samples=args.min_samples, budget=args.budget,
            false_alarm=args.false_alarm, allow_replays=args.allow_replays,
            include_absent=args.include_absent,
            accept_performance_failures=args.accept_performance_failures,
            ref_dir=ref_dir, write=args.write, base_dir=base_dir,
            keep_outliers=args.keep_outliers)
    except (references.ReferenceFileError, calibrate.CalibrationError,
            report.results.InputRejected, paths.SiteError) as err:
        print(f'hpcval calibrate: {err}', file=sys.stderr)
        return exits.INPUT

    sys.stdout.write(result.diff)
    for note in result.notes:
        # names in notes come from reports or monitoring: data
        print(f'hpcval calibrate: {_printable(note)}', file=sys.stderr)
    _runs_needed(result, args)
    if result.diff and not args.write:
        print(f'hpcval calibrate: not written; rerun with --write to '
              f'replace {result.path}', file=sys.stderr)
    return 0


def _history(args, by_system):
    """The samples of ``--from URL`` (None after a message)."""

    if args.reports or args.db is not None or args.since is None:
        print('hpcval calibrate: --from reads the monitoring history alone '
              '(no reports, no --db) and needs --since', file=sys.stderr)
        return None
    try:
        token = history.token_from(args.token_file) if args.token_file \
            else None
        samples, notes = history.samples(
            args.from_url, args.system[0], args.since,
            args.until if args.until is not None else time.time(),
            [*by_system.get(args.system[0], []),
             *(r for name, refs in sorted(by_system.items())
               if name != args.system[0] for r in refs)], token=token,
            timeout=args.deadline)
    except history.HistoryError as err:
        print(f'hpcval calibrate: {_printable(str(err))}', file=sys.stderr)
        return None
    if args.name is not None:
        samples = [s for s in samples if args.name.search(s.case.test)]
    runs = len({(s.case.test, s.case.partition, s.case.time)
                for s in samples})
    for note in notes:
        print(f'hpcval calibrate: {_printable(note)}', file=sys.stderr)
    print(f'hpcval calibrate: read {len(samples)} figure(s) of {runs} '
          f'test case run(s) from {args.from_url}', file=sys.stderr)
    return samples


def _runs_needed(result, args):
    """Per calibrated figure: its runs, spread and bound, and the runs it
    needs for the requested false-alarm rate (publish.sample_size)."""
    if not result.figures:
        return
    rule = result.rule
    rows = [('figure', 'n', 'spread', 'bound', 'set by',
             'runs for half the bound'),
            *sample_size.table(result.figures, rule)]
    rows = [[_printable(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    node = '' if rule.budget is None else \
        f'node budget {rule.budget:g} over {rule.judged} judged figures, '
    print(f'hpcval calibrate: per figure, at false-alarm rate '
          f'{rule.false_alarm:.3g} ({node}docs/calibrate.md, "How many '
          f'runs"):', file=sys.stderr)
    for row in rows:
        print('  ' + '  '.join(c.ljust(w) for c, w in zip(row, widths))
              + '  ' + row[-1], file=sys.stderr)


def _installed():
    """Whether the suite is the copy inside an installed package, not a
    checkout (which has its setup.py)."""
    return not os.path.isfile(os.path.join(paths.repo_root(), 'setup.py'))


def _deadline(text):
    value = _finite(text)
    if not 0 < value <= 600:
        raise argparse.ArgumentTypeError(f'{text!r}: expected seconds '
                                         f'above 0, at most 600')
    return value


def _peer_factor(text):
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 1.0 or value == float('inf'):
        raise argparse.ArgumentTypeError(f'{text!r}: expected a number '
                                         f'above 1 (2: half as fast)')
    return value


def _node_list(text):
    try:
        nodes = screen.expand(text)
    except ValueError:
        nodes = []
    if not nodes or not all(screen.plain_node(n) for n in nodes):
        raise argparse.ArgumentTypeError(f'{text!r}: expected node names '
                                         f'in Slurm\'s syntax (n4,n[7-9])')
    return tuple(nodes)


def _verdict(args):
    if not args.reports and args.db is None:
        print('hpcval verdict: nothing to judge: give run reports '
              '(--report-file) or --db', file=sys.stderr)
        return verdict.EXIT_INPUT
    try:
        refs = references.ReferenceSet.given(args.references)
        loaded = results.load(args.reports, db=args.db,
                              on_error=args.on_error, since=args.since,
                              until=args.until, bounds=refs,
                              attrs=('scheduler',))
    except (results.InputRejected, references.ReferenceFileError,
            paths.ConfigError) as err:
        print(f'hpcval verdict: {verdict.escape(str(err))}',
              file=sys.stderr)
        return verdict.EXIT_INPUT

    keep = _verdict_selection(args, loaded)
    if isinstance(keep, str):
        print(f'hpcval verdict: {verdict.escape(keep)}', file=sys.stderr)
        return verdict.EXIT_INPUT
    result = verdict.judge(loaded, keep, strict=args.strict,
                           allow_unjudged=args.allow_unjudged,
                           peer_factor=args.peer_factor,
                           accept_out=args.accept_out,
                           accept_unscreened=args.accept_unscreened)
    if result.usage:        # nothing judged: no node's fault to print
        print(f'hpcval verdict: {verdict.escape(result.usage)}',
              file=sys.stderr)
        return result.status
    if args.format == 'json':
        sys.stdout.write(verdict.render_json(result))
    else:
        sys.stdout.write(verdict.render_text(result,
                                             per_node=args.per_node))
    return result.status


def _diff(args):
    if not args.reports and args.db is None:
        print('hpcval diff: nothing to compare: give run reports or --db',
              file=sys.stderr)
        return changes.EXIT_INPUT
    base, refs = _diff_baseline(args)
    if isinstance(base, Exception):
        print(f'hpcval diff: --baseline {verdict.escape(args.baseline)}: '
              f'{verdict.escape(str(base))}', file=sys.stderr)
        return changes.EXIT_INPUT
    args.no_replays = True
    try:
        loaded, samples = report.load_selected(args, replays=False,
                                               bounds=refs)
    except results.InputRejected as err:
        print(f'hpcval diff: rejected {err}', file=sys.stderr)
        return changes.EXIT_INPUT
    unknown = report.unknown_selection(args, loaded.cases)
    if unknown or report.unreadable(loaded):
        print(f'hpcval diff: {verdict.escape(unknown)}' if unknown else
              'hpcval diff: no input could be read (each named above)',
              file=sys.stderr)
        return changes.EXIT_INPUT
    if base != changes.CALIBRATION and \
            any(getattr(p, 'source', '') == base for p in loaded.problems):
        print(f'hpcval diff: --baseline {verdict.escape(base)}: left out '
              f'(named above)', file=sys.stderr)
        return changes.EXIT_INPUT
    keep = report.case_filter(args, replays=False)
    cases = [c for c in loaded.cases if keep(c)]
    diffs = changes.since(samples, cases, base, refs)
    left_out = bool(loaded.problems)
    empty = changes.unmeasured(loaded.started, cases, samples)
    sys.stdout.write(changes.diff_json(diffs, left_out, empty)
                     if args.format == 'json'
                     else changes.diff_text(diffs, args.all, empty))
    status = changes.diff_status(diffs, left_out, empty)
    if status == changes.EXIT_INPUT:
        print(f'hpcval diff: {len(loaded.problems)} input(s) left out '
              f'(named above): not "nothing moved"', file=sys.stderr)
    return status


def _diff_baseline(args):
    """(the baseline changes.since takes, the references for
    ``calibration``), or (the error naming why the value is none)."""
    text = args.baseline
    if text is None:
        return None, None
    if text == changes.CALIBRATION:
        try:
            refs = references.ReferenceSet.given(args.references)
        except (references.ReferenceFileError, paths.ConfigError) as err:
            return err, None
        if not any(r.rule == calibrate.RULE for rs in refs.values()
                   for r in rs):
            return ValueError('no reference file holds a calibrated value '
                              '(hpcval calibrate --write makes them)'), None
        return text, refs
    if os.path.isfile(text):
        given = {os.path.realpath(r[1] if isinstance(r, tuple) else r)
                 for r in args.reports}
        if os.path.realpath(text) not in given:     # else read twice
            args.reports = [*args.reports, text]
        return text, None
    try:
        return report.timestamp(text), None
    except argparse.ArgumentTypeError as err:
        return ValueError(f'no such report file, not calibration, and '
                          f'not a time ({err})'), None


def _verdict_selection(args, loaded):
    """The test cases the verdict judges, as a filter; or, where --db
    holds more than one system and partition and the arguments do not
    choose, the one-line question that names what it found."""
    def in_time(case):
        return ((args.since is None or case.time >= args.since)
                and (args.until is None or case.time <= args.until))

    # a failed case may have no completion time (its time is then the
    # session's start): it stays with every session the window keeps
    if args.since is not None or args.until is not None:
        kept = {c.session for c in loaded.cases + loaded.fixtures
                if in_time(c)}
    else:
        kept = set()

    unknown = report.unknown_selection(args, loaded.cases + loaded.fixtures)
    if unknown:
        return unknown

    def chosen(case):
        return ((not args.system or case.system in args.system)
                and (not args.partition or case.partition in args.partition)
                and (args.name is None or args.name.search(case.test))
                and (in_time(case) or (case.result in ('fail', 'abort')
                                       and case.session in kept)))

    cases = [c for c in loaded.cases + loaded.fixtures if chosen(c)]
    if args.session:
        found = {c.session for c in cases}
        missing = [u for u in args.session if u not in found]
        if missing:
            return f'no such session among the inputs: {", ".join(missing)}'
        wanted = set(args.session)
    elif args.latest:
        ends = {}
        for c in cases:
            ends[c.session] = max(ends.get(c.session, 0.0), c.time)
        if not ends:
            return 'no session to judge among the inputs'
        wanted = {max(ends, key=ends.get)}
    else:
        wanted = None
    if wanted is not None:
        cases = [c for c in cases if c.session in wanted]

    if args.db is not None:
        found = {}
        for c in cases:
            where = f'{c.system}:{c.partition}'
            found.setdefault(where, set()).add(c.session)
        if len(found) > 1 and not (args.system and args.partition):
            listed = ', '.join(f'{w} ({len(n)} session(s))'
                               for w, n in sorted(found.items()))
            return (f'--db holds {len(found)} systems and partitions: '
                    f'{listed}; judge one with --system NAME --partition '
                    f'NAME (and --latest or --session UUID for one run)')

    return lambda case: chosen(case) and (wanted is None or
                                          case.session in wanted)


def _run(args):
    """The command, with no traceback a user can reach: a closed pipe
    (``| head``) ends it quietly, anything unforeseen is one line
    (HPCVAL_DEBUG=1 shows the traceback)."""
    try:
        return args.func(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        # what was not read is unknown, not "failed" (set -o pipefail)
        return exits.INPUT
    except Exception as err:
        if _debug():
            raise
        print(f'hpcval {args.command}: unexpected error: '
              f'{type(err).__name__}: {err} (HPCVAL_DEBUG=1 shows where)',
              file=sys.stderr)
        # never "failed" nor "healthy": what it would have said is unknown
        return exits.INPUT


def _finite(text):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f'{text!r} is not a finite number')
    return value


def _calibrated_dirs(ref_dir):
    """(folder written, folder a new file starts from, references as
    judged): ``--ref-dir`` alone, else the layered references, written
    into the site's folder under a site layer."""
    if ref_dir:
        return ref_dir, None, references.load_dir(ref_dir)

    target = paths.writable_references_dir()
    base = paths.references_dir() if target != paths.references_dir() \
        else None
    return target, base, references.ReferenceSet.layered(
        paths.references_dirs())


def _paths(args):
    where = {'config': paths.config_file(),
             'checks': os.path.join(paths.repo_root(), 'checks'),
             'references': paths.references_dir(),
             'systems': os.path.join(paths.repo_root(), 'systems'),
             'monitoring': os.path.join(paths.repo_root(), 'config',
                                        'monitoring.py'),
             'docs': os.path.join(paths.repo_root(), 'docs'),
             'site': paths.site_dir() or ''}
    if args.what:
        print(where[args.what])
        return 0

    for name, path in where.items():
        print(f'{name:<11}{path or f"(none: set {paths.SITE_VAR})"}')
    # what the site layer puts in place of hpcval's own files
    for kind, builtin, replacement in paths.replacements():
        how = ('layered', 'under') if paths.layered(kind, replacement) \
            else ('replaced', 'by')
        print(f'{how[0]:<11}{kind}/{os.path.basename(builtin)} {how[1]} '
              f'{replacement}')
    return 0


def run_reframe(reframe_args):
    """``reframe`` with hpcval's configuration first in RFM_CONFIG_FILES
    (after it, the files already named there: a site's logging, say),
    after hpcval.preflight's checks; a selection of no test case is
    refused after the fact (exit preflight.REFUSED).  Its status is the
    verdict's of the run (hpcval.exits), ReFrame's own codes colliding
    with the verdict's."""
    config = paths.config_file()
    given = [f for f in os.environ.get('RFM_CONFIG_FILES', '').split(':')
             if f and os.path.abspath(f) != config]
    env = dict(os.environ, RFM_CONFIG_FILES=':'.join([config, *given]))
    try:
        refusal = preflight.refusal_before(reframe_args, os.environ,
                                           socket.gethostname())
    except paths.SiteError as err:      # a site module that does not load
        refusal = str(err)
    if refusal:
        print(f'hpcval run: {refusal}', file=sys.stderr)
        return preflight.REFUSED
    here = os.path.dirname(sys.executable)
    exe = shutil.which('reframe', path=os.pathsep.join(
        [here, env.get('PATH', '')]))
    if not exe:
        print('hpcval run: no reframe executable next to this Python or on '
              'PATH', file=sys.stderr)
        return exits.INPUT
    if any(a == '--ci-generate' or a.startswith('--ci-generate=')
           for a in reframe_args):
        try:
            return exits.INPUT if ci.generate(reframe_args, exe, env) \
                else exits.OK
        except (ci.CiError, OSError) as err:
            print(f'hpcval run: {err}', file=sys.stderr)
            return exits.INPUT
    started = time.time()
    status, saw_zero, session = _passthrough([exe, *reframe_args], env,
                                             preflight.ZERO)
    refusal = preflight.refusal_after(reframe_args, saw_zero)
    if refusal and status == 0:
        print(f'hpcval run: {refusal}', file=sys.stderr)
        return preflight.REFUSED
    judged = _verdict_after(reframe_args, session, started)
    if judged is None:
        # nothing ran to judge (-l, --dry-run, or ReFrame stopped first)
        return exits.OK if status == 0 else exits.INPUT
    headline, verdict_status = judged
    print(headline, flush=True)
    if verdict_status == exits.OK and status != 0:
        print(f'hpcval run: ReFrame exited {status} though the verdict '
              f'passed: not validated', file=sys.stderr)
        return exits.INCOMPLETE
    return verdict_status


RUN_HELP = """\
usage: hpcval run [REFRAME OPTIONS]

reframe with hpcval's configuration (first in RFM_CONFIG_FILES), from any
folder; every option of ReFrame's (reframe --help lists them) is accepted.
What hpcval adds to ReFrame:
  before it starts   an unknown --system or --mode, a system whose host
                     names do not match this host, a fixed --mode narrowed
                     by -n/-t/-x: refused in one line, nothing submitted
  after it ran       a selection of no test case is refused; the verdict's
                     headline of the run is printed (hpcval verdict judges
                     the report) and is the exit status
  --ci-generate FILE a GitLab pipeline whose jobs run hpcval run and whose
                     last stage runs hpcval verdict (docs/ci.md)

"""


def _run_help():
    try:
        print(f'{RUN_HELP}{exits.epilog("run")}', flush=True)
    except BrokenPipeError:     # | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return exits.OK


#: ReFrame's line naming the session it stored in its results database
_STORED = re.compile(r'Current session stored with UUID: ([0-9a-f-]{36})')


def _verdict_after(reframe_args, session, started):
    """(the verdict's headline of the run ReFrame just made with the
    command that prints all of it, its status); None where nothing ran."""
    report = selection.option_value(reframe_args, '--report-file')
    # a report older than the run is an earlier run's: never judged as this
    # one (a second of slack for file systems' coarse times)
    if report and '{' not in report and os.path.isfile(report) and \
            os.path.getmtime(report) >= started - 1:
        args = ['verdict', report]
    elif session:
        args = ['verdict', '--db', '--session', session]
    else:
        return None
    out = io.StringIO()
    with contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(io.StringIO()):
        status = main([*args, '--format', 'json'])
    try:
        judged = json.loads(out.getvalue())
        first = f'hpcval verdict: {judged["verdict"]} (exit {status})'
    except ValueError:
        judged, first = None, 'hpcval verdict: could not judge the run'
    if judged is not None and not judged['partitions'] and \
            not judged['problems']:
        # a session of fixtures alone (a CI pipeline's build job): no
        # test to judge, ReFrame's word stands
        return None
    return f'{first}  (all of it: {shlex.join(["hpcval", *args])})', status


def _passthrough(cmd, env, pattern):
    """Run ``cmd``, copying its standard output line by line; (exit
    status, whether a line matched ``pattern``, the session ReFrame
    stored or None).  Ctrl-C reaches ReFrame
    (same process group), which ends its jobs; this waits for it.  A
    SIGTERM of this process is passed on, to the same end."""
    seen, session = False, None
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE)
    with contextlib.suppress(ValueError):       # not the main thread
        signal.signal(signal.SIGTERM, lambda *_: proc.terminate())
    out = sys.stdout.buffer
    while True:
        try:
            line = proc.stdout.readline()
        except KeyboardInterrupt:
            continue
        if not line:
            break
        out.write(line)
        out.flush()
        text = line.decode('utf-8', 'replace')
        seen = seen or bool(pattern.search(text))
        stored = _STORED.search(text)
        session = stored.group(1) if stored else session
    while True:
        try:
            return proc.wait(), seen, session
        except KeyboardInterrupt:
            continue


def _site_init(args):
    if args.from_slurm:
        return _site_from_slurm(args)
    try:
        written = site.init(args.dir, args.from_system)
    except site.SiteInitError as err:
        print(f'hpcval site init: {err}', file=sys.stderr)
        return exits.INPUT

    for path in written:
        print(f'hpcval site init: wrote {path}', file=sys.stderr)
    print(f'export {paths.SITE_VAR}={os.path.abspath(args.dir)}')
    return 0


def _site_from_slurm(args):
    try:
        cluster, files, written = site_from_slurm.init(
            args.dir, args.name, dry_run=args.dry_run, replace=args.replace)
    except slurm_describe.SlurmOutputError as err:
        # Slurm's output is the input here: unusable, nothing written
        print(f'hpcval site init --from-slurm: {_printable(str(err))}; '
              f'nothing written', file=sys.stderr)
        return exits.INPUT
    except site.SiteInitError as err:
        print(f'hpcval site init: {err}', file=sys.stderr)
        return exits.INPUT

    for line in site_from_slurm.summary(cluster):
        print(f'hpcval site init: {line}', file=sys.stderr)
    if args.dry_run:
        for rel, text in files.items():
            print(f'# {os.path.join(os.path.abspath(args.dir), rel)} '
                  f'(not written: --dry-run)\n{text}')
        return 0
    for path in written:
        print(f'hpcval site init: wrote {path}', file=sys.stderr)
    print(f'export {paths.SITE_VAR}={os.path.abspath(args.dir)}')
    return 0


def _debug():
    try:
        return inputs.environment('HPCVAL_DEBUG') == '1'
    except inputs.EnvironmentValueError:
        return False


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['run']:
        if {'-h', '--help'} & set(argv[1:]):
            return _run_help()
        # everything after `run` is ReFrame's, options included
        return run_reframe(argv[1:])

    try:
        return _main(argv)
    except paths.SiteError as err:
        print(f'hpcval: {err}', file=sys.stderr)
        return exits.INPUT


def _main(argv):
    parser = exits.Parser(prog='hpcval', epilog=exits.CONTRACT)
    parser.add_argument('--version', action=exits.Version)
    sub = parser.add_subparsers(dest='command', required=True)

    def command(name, subs=sub, statuses=None, **kwargs):
        return subs.add_parser(name, epilog=exits.epilog(statuses or name),
                               formatter_class=argparse.
                               RawDescriptionHelpFormatter, **kwargs)
    refs = command('references',
                   help='validate and summarise references/*.yaml')
    refs.add_argument('--dir', default=None,
                      help='one references folder (default: the built-in '
                           'ones, layered under $HPCVAL_SITE\'s)')
    refs.add_argument('--markdown', action='store_true',
                      help='print every reference as a Markdown table')
    refs.add_argument('--system', action='append', default=[],
                      help='match only these systems\' entries against '
                           'their tests, and show each judged figure with '
                           'where it came from (built-in, site, '
                           'calibrated) (repeatable; default: all)')
    refs.add_argument('--schema-only', action='store_true',
                      help='check the files\' schema only, without loading '
                           'the checks to match every entry to a test')
    refs.set_defaults(func=_references)
    rep = command('report', help='cross-system comparison tables and '
                                 'plots of run reports')
    report.add_arguments(rep)
    rep.set_defaults(func=report.run)
    cal = command('calibrate', help='a system\'s references from its '
                                    'own good runs')
    report.add_input_arguments(cal)
    cal.add_argument('--ref-dir', default=None,
                     help='the references folder (default: the built-in '
                          'one, or the site\'s under $HPCVAL_SITE)')
    cal.add_argument('--budget', type=_finite, default=calibrate.BUDGET,
                     help='chance that a healthy run of the node fails any '
                          'figure it judges (default 0.005, 1 in 200 '
                          'runs), shared out over those figures')
    cal.add_argument('--false-alarm', type=_finite, default=None,
                     help='instead: the chance that a healthy run fails '
                          'one figure')
    cal.add_argument('--k', type=_finite, default=None,
                     help='instead: a fixed k standard deviations')
    cal.add_argument('--floor', type=_finite, default=None,
                     help='one floor for every metric instead of the floors '
                          'per kind (tiny-message latency 0.5, time 0.2, '
                          'bandwidth or rate 0.05)')
    cal.add_argument('--min-samples', type=int, default=5)
    cal.add_argument('--allow-replays', action='store_true')
    cal.add_argument('--include-absent', action='store_true',
                     help='also calibrate metrics the file marks absent')
    cal.add_argument('--accept-performance-failures', action='store_true',
                     help='also take runs that failed the old bounds')
    cal.add_argument('--keep-outliers', action='store_true',
                     help='also take runs that sit apart from the rest of '
                          'their metric (left out with a warning by '
                          'default; docs/calibrate.md)')
    cal.add_argument('--write', action='store_true',
                     help='replace references/<system>.yaml')
    cal.add_argument('--from', dest='from_url', metavar='URL',
                     help='read the runs from the monitoring hpcval sends '
                          'to: a VictoriaMetrics or Prometheus base URL '
                          '(its query API), with --since [--until]')
    cal.add_argument('--token-file', metavar='FILE',
                     help='with --from: a bearer token, in a file only its '
                          'owner can read (default: no credentials)')
    cal.add_argument('--deadline', type=_deadline,
                     default=history.prometheus.DEADLINE, metavar='SECONDS',
                     help='with --from: seconds the whole read may take '
                          '(default 60, at most 600)')
    cal.set_defaults(func=_calibrate)
    ver = command('verdict', help='is the system healthy: judged, '
                                  'failed, skipped, unjudged, and '
                                  'which node, GPU or link failed')
    report.add_input_arguments(ver)
    ver.add_argument('--partition', action='append', default=[],
                     help='only these partitions (repeatable)')
    one = ver.add_mutually_exclusive_group()
    one.add_argument('--latest', action='store_true',
                     help='judge only the latest session (by its last test '
                          'case\'s end): a passing rerun, alone')
    one.add_argument('--session', action='append', default=[],
                     metavar='UUID', help='judge only this ReFrame session '
                                          '(repeatable)')
    report.add_references_argument(ver)
    ver.add_argument('--format', choices=('text', 'json'), default='text')
    ver.add_argument('--strict', action='store_true',
                     help='a skip or a figure without a reference fails '
                          '(exit 1) instead of leaving the run incomplete')
    ver.add_argument('--allow-unjudged', action='store_true',
                     help='figures without a reference are logged only, '
                          'not a reason for exit 2')
    ver.add_argument('--peer-factor', type=_peer_factor,
                     default=screen.PEER_FACTOR,
                     help='in a node screen, a figure this many times worse '
                          'than its peers\' median fails (default: its '
                          'kind\'s floor, 5%% for rates and 20%% for '
                          'times, widened by the peers\' spread; '
                          'docs/screening.md)')
    ver.add_argument('--per-node', action='store_true',
                     help='in a node screen, every node\'s figures beside '
                          'their peers\' median')
    ver.add_argument('--accept-out', type=_node_list, default=(),
                     metavar='NODES',
                     help='in a node screen, nodes known to be out (Slurm '
                          'syntax: n4,n[7-9]): named, not a reason for '
                          'exit 2 (docs/screening.md)')
    ver.add_argument('--accept-unscreened', action='store_true',
                     help='in a node screen, a figure that cannot name a '
                          'node 20%% slower than its peers (too few nodes, '
                          'too wide a spread, no reference) is named, not '
                          'a reason for exit 2 (docs/screening.md)')
    ver.set_defaults(func=_verdict)
    dif = command('diff', help='each node\'s newest run against its '
                               'baseline (--baseline): provenance that '
                               'differs, figures moved, ranked')
    report.add_input_arguments(dif)
    dif.add_argument('--format', choices=('text', 'json'), default='text')
    dif.add_argument('--all', action='store_true',
                     help='every figure, also those that did not move')
    dif.add_argument('--baseline', metavar='TIME|REPORT|calibration',
                     help='compare with the newest passing session at or '
                          'before TIME (ISO, now-<N>d|h|m), the passing '
                          'session of REPORT, or the calibrated values '
                          '(default: the newest passing session before)')
    report.add_references_argument(dif)
    dif.set_defaults(func=_diff)
    where = command('paths', help='where hpcval\'s configuration, '
                                  'checks, systems and references are')
    where.add_argument('what', nargs='?', choices=[
        'config', 'checks', 'references', 'systems', 'monitoring', 'docs',
        'site'])
    where.set_defaults(func=_paths)
    command('run', help='reframe with hpcval\'s configuration: '
                        'hpcval run -r --system local')
    site = command('site', help='a site folder layered over the '
                                'built-in systems and references')
    site_sub = site.add_subparsers(dest='site_command', required=True)
    init = command('init', site_sub, 'site', help='make a site folder')
    init.add_argument('dir')
    source = init.add_mutually_exclusive_group()
    source.add_argument('--from', dest='from_system', metavar='SYSTEM',
                        help='copy this built-in system and its references')
    source.add_argument('--from-slurm', action='store_true',
                        help='write a system module and the expected GPUs '
                             'from scontrol and sinfo on this host')
    init.add_argument('--name', default=None,
                      help='with --from-slurm: the system\'s name (default: '
                           'Slurm\'s ClusterName)')
    init.add_argument('--dry-run', action='store_true',
                      help='with --from-slurm: print what would be written')
    init.add_argument('--replace', action='store_true',
                      help='with --from-slurm: the system may replace the '
                           'built-in one of the same name')
    init.set_defaults(func=_site_init)
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:
        # --help, --version (0) and usage errors (exits.INPUT): a status,
        # for callers in-process as for the console script
        return done.code
    return _run(args)


if __name__ == '__main__':
    sys.exit(main())
