"""``hpcval``: the command line, one subcommand each (COMMANDS).  verdict,
diff and calibrate stay here: a module of theirs below this one would add
a floor (tests/bench_imports.py); the others are in hpcval.commands.  Exit
statuses: hpcval.exits.
"""
import argparse
import collections
import math
import os
import sys
import time

from hpcval import exits, inputs, paths, references, screen, verdict
from hpcval.commands import paths as paths_command
from hpcval.commands import print_table, printable, refused
from hpcval.commands import references as references_command
from hpcval.commands import run as run_command
from hpcval.commands import site as site_command
from hpcval.publish import (calibrate, changes, history, report, results,
                            sample_size)


def _number(fits=None, expected=''):
    """An argparse type: a finite number, and one ``fits`` accepts."""
    def parse(text):
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f'{text!r} is not a finite '
                                             f'number')
        if fits and not fits(value):
            raise argparse.ArgumentTypeError(f'{text!r}: expected {expected}')
        return value
    return parse


_finite = _number()
_deadline = _number(lambda v: 0 < v <= 600, 'seconds above 0, at most 600')
_peer_factor = _number(lambda v: v > 1, 'a number above 1 (2: half as fast)')


def _node_list(text):
    try:
        nodes = screen.expand(text)
    except ValueError:
        nodes = []
    if not nodes or not all(screen.plain_node(n) for n in nodes):
        raise argparse.ArgumentTypeError(f'{text!r}: expected node names '
                                         f'in Slurm\'s syntax (n4,n[7-9])')
    return tuple(nodes)


def _calibrate_arguments(cal):
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


def _calibrate(args):
    try:
        if len(args.system) != 1:
            raise calibrate.CalibrationError('give exactly one --system')
        # an installed package has no setup.py: its references/ are
        # replaced by its next upgrade
        if args.write and not args.ref_dir and paths.site_dir() is None \
                and not os.path.isfile(os.path.join(paths.repo_root(),
                                                    'setup.py')):
            raise calibrate.CalibrationError(
                f'--write needs a site folder: the built-in references of '
                f'an installed hpcval ({paths.references_dir()}) are '
                f'replaced by its next upgrade; make one with `hpcval site '
                f'init DIR --from {args.system[0]}` and `export '
                f'{paths.SITE_VAR}=DIR`, or name a folder with --ref-dir; '
                f'nothing was written')
        # --ref-dir alone, else the layered references, written into the
        # site's folder under a site layer (a new file starts from base_dir)
        ref_dir, base_dir = args.ref_dir, None
        if ref_dir:
            by_system = references.load_dir(ref_dir)
        else:
            site, base_dir = paths.site_dir(), paths.references_dir()
            ref_dir = os.path.join(site, 'references') if site else base_dir
            by_system = references.ReferenceSet.layered(
                paths.references_dirs())
        if args.from_url:
            samples = _history(args, by_system)
        elif not args.reports and args.db is None:
            raise calibrate.CalibrationError(
                'nothing to calibrate from: give run reports, --db or '
                '--from URL')
        else:
            loaded, samples = report.load_selected(args)
            if report.unreadable(loaded):
                raise calibrate.CalibrationError(
                    'no input could be read (each named above); nothing '
                    'written')
        result = calibrate.calibrate(
            samples, args.system[0], by_system, floor=args.floor, k=args.k,
            min_samples=args.min_samples, budget=args.budget,
            false_alarm=args.false_alarm, allow_replays=args.allow_replays,
            include_absent=args.include_absent,
            accept_performance_failures=args.accept_performance_failures,
            ref_dir=ref_dir, write=args.write, base_dir=base_dir,
            keep_outliers=args.keep_outliers)
    except (references.ReferenceFileError, calibrate.CalibrationError,
            results.InputRejected, paths.SiteError) as err:
        return refused('calibrate', err)

    sys.stdout.write(result.diff)
    for note in result.notes:
        # names in notes come from reports or monitoring: data
        print(f'hpcval calibrate: {printable(note)}', file=sys.stderr)
    if result.figures:
        # per figure: its runs, spread and bound, and the runs it needs for
        # the requested false-alarm rate (publish.sample_size)
        rule = result.rule
        node = '' if rule.budget is None else \
            f'node budget {rule.budget:g} over {rule.judged} judged figures, '
        print(f'hpcval calibrate: per figure, at false-alarm rate '
              f'{rule.false_alarm:.3g} ({node}docs/calibrate.md, "How many '
              f'runs"):', file=sys.stderr)
        print_table([('figure', 'n', 'spread', 'bound', 'set by',
                      'runs for half the bound'),
                     *sample_size.table(result.figures, rule)], sys.stderr)
    if result.diff and not args.write:
        print(f'hpcval calibrate: not written; rerun with --write to '
              f'replace {result.path}', file=sys.stderr)
    return 0


def _history(args, by_system):
    """The samples of ``--from URL``, or CalibrationError."""
    if args.reports or args.db is not None or args.since is None:
        raise calibrate.CalibrationError(
            '--from reads the monitoring history alone (no reports, no '
            '--db) and needs --since')
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
        raise calibrate.CalibrationError(printable(str(err))) from None
    if args.name is not None:
        samples = [s for s in samples if args.name.search(s.case.test)]
    runs = len({(s.case.test, s.case.partition, s.case.time)
                for s in samples})
    for note in notes:
        print(f'hpcval calibrate: {printable(note)}', file=sys.stderr)
    print(f'hpcval calibrate: read {len(samples)} figure(s) of {runs} '
          f'test case run(s) from {args.from_url}', file=sys.stderr)
    return samples


def _verdict_arguments(ver):
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


def _verdict(args):
    if not args.reports and args.db is None:
        return refused('verdict', 'nothing to judge: give run reports '
                        '(--report-file) or --db')
    try:
        refs = references.ReferenceSet.given(args.references)
        loaded = results.load(args.reports, db=args.db,
                              on_error=args.on_error, since=args.since,
                              until=args.until, bounds=refs,
                              attrs=('scheduler',))
    except (results.InputRejected, references.ReferenceFileError,
            paths.ConfigError) as err:
        return refused('verdict', verdict.escape(str(err)))

    keep = _verdict_selection(args, loaded)
    if isinstance(keep, str):
        return refused('verdict', verdict.escape(keep))
    result = verdict.judge(loaded, keep, strict=args.strict,
                           allow_unjudged=args.allow_unjudged,
                           peer_factor=args.peer_factor,
                           accept_out=args.accept_out,
                           accept_unscreened=args.accept_unscreened)
    if result.usage:        # nothing judged: no node's fault to print
        return refused('verdict', verdict.escape(result.usage),
                       result.status)
    sys.stdout.write(verdict.render_json(result) if args.format == 'json'
                     else verdict.render_text(result, per_node=args.per_node))
    return result.status


def _verdict_selection(args, loaded):
    """The test cases the verdict judges, as a filter; or the line saying
    why none (--db of several systems and partitions: which to choose)."""
    def in_time(case):
        return ((args.since is None or case.time >= args.since)
                and (args.until is None or case.time <= args.until))

    # a failed case may have no completion time (its time is then the
    # session's start): it stays with every session the window keeps
    every = loaded.cases + loaded.fixtures
    kept = {c.session for c in every if in_time(c)}
    unknown = report.unknown_selection(args, every)
    if unknown:
        return unknown

    def chosen(case):
        return ((not args.system or case.system in args.system)
                and (not args.partition or case.partition in args.partition)
                and (args.name is None or args.name.search(case.test))
                and (in_time(case) or (case.result in ('fail', 'abort')
                                       and case.session in kept)))

    cases = [c for c in every if chosen(c)]
    if args.session:
        found = {c.session for c in cases}
        missing = [u for u in args.session if u not in found]
        if missing:
            return f'no such session among the inputs: {", ".join(missing)}'
        wanted = set(args.session)
    elif args.latest:
        if not cases:
            return 'no session to judge among the inputs'
        wanted = {max(cases, key=lambda c: c.time).session}
    else:
        wanted = {c.session for c in cases}
    cases = [c for c in cases if c.session in wanted]

    if args.db is not None:
        found = collections.defaultdict(set)
        for c in cases:
            found[f'{c.system}:{c.partition}'].add(c.session)
        if len(found) > 1 and not (args.system and args.partition):
            listed = ', '.join(f'{w} ({len(n)} session(s))'
                               for w, n in sorted(found.items()))
            return (f'--db holds {len(found)} systems and partitions: '
                    f'{listed}; judge one with --system NAME --partition '
                    f'NAME (and --latest or --session UUID for one run)')

    return lambda case: chosen(case) and case.session in wanted


def _diff_arguments(dif):
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


def _diff(args):
    if not args.reports and args.db is None:
        return refused('diff', 'nothing to compare: give run reports or '
                        '--db')
    try:
        base, refs = _diff_baseline(args)
    except (ValueError, paths.ConfigError) as err:
        return refused('diff', f'--baseline {verdict.escape(args.baseline)}'
                        f': {verdict.escape(str(err))}')
    try:
        loaded, samples = report.load_selected(args, replays=False,
                                               bounds=refs)
    except results.InputRejected as err:
        return refused('diff', f'rejected {err}')
    unknown = report.unknown_selection(args, loaded.cases)
    if unknown or report.unreadable(loaded):
        return refused('diff', verdict.escape(unknown) if unknown else
                        'no input could be read (each named above)')
    if base != changes.CALIBRATION and \
            any(getattr(p, 'source', '') == base for p in loaded.problems):
        return refused('diff', f'--baseline {verdict.escape(base)}: left '
                        f'out (named above)')
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
    ``calibration``); ValueError or ConfigError where there is none."""
    text = args.baseline
    if text is None:
        return None, None
    if text == changes.CALIBRATION:
        refs = references.ReferenceSet.given(args.references)
        if not any(r.rule == calibrate.RULE for rs in refs.values()
                   for r in rs):
            raise ValueError('no reference file holds a calibrated value '
                             '(hpcval calibrate --write makes them)')
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
        raise ValueError(f'no such report file, not calibration, and '
                         f'not a time ({err})') from None


#: each subcommand, in the order --help lists them: (name, help, what adds
#: its arguments, what it does)
COMMANDS = (
    ('references', 'validate and summarise references/*.yaml',
     references_command.add_arguments, references_command.run),
    ('report', 'cross-system comparison tables and plots of run reports',
     report.add_arguments, report.run),
    ('calibrate', 'a system\'s references from its own good runs',
     _calibrate_arguments, _calibrate),
    ('verdict', 'is the system healthy: judged, failed, skipped, unjudged, '
                'and which node, GPU or link failed',
     _verdict_arguments, _verdict),
    ('diff', 'each node\'s newest run against its baseline (--baseline): '
             'provenance that differs, figures moved, ranked',
     _diff_arguments, _diff),
    ('paths', 'where hpcval\'s configuration, checks, systems and '
              'references are', paths_command.add_arguments,
     paths_command.run),
    # parsed by ReFrame (main): listed here for --help
    ('run', 'reframe with hpcval\'s configuration: hpcval run -r --system '
            'local', None, None),
    ('site', 'a site folder layered over the built-in systems and '
             'references', site_command.add_arguments, None),
)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ['run']:
        if {'-h', '--help'} & set(argv[1:]):
            return run_command.show_help()
        # everything after `run` is ReFrame's, options included
        return run_command.run_reframe(argv[1:], main)

    try:
        parser = exits.Parser(prog='hpcval', epilog=exits.CONTRACT)
        parser.add_argument('--version', action=exits.Version)
        sub = parser.add_subparsers(dest='command', required=True)
        for name, text, add_arguments, action in COMMANDS:
            command = sub.add_parser(
                name, help=text, epilog=exits.epilog(name),
                formatter_class=argparse.RawDescriptionHelpFormatter)
            if add_arguments:
                add_arguments(command)
            if action:
                command.set_defaults(func=action)
        args = parser.parse_args(argv)
    except SystemExit as done:
        # --help, --version (0) and usage errors (exits.INPUT): a status,
        # for callers in-process as for the console script
        return done.code
    except paths.SiteError as err:
        print(f'hpcval: {err}', file=sys.stderr)
        return exits.INPUT
    return _run(args)


def _run(args):
    """The command, with no traceback a user can reach (HPCVAL_DEBUG=1
    shows it); a closed pipe (``| head``) ends it quietly."""
    try:
        return args.func(args)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        # what was not read is unknown, not "failed" (set -o pipefail)
        return exits.INPUT
    except Exception as err:
        try:
            debug = inputs.environment('HPCVAL_DEBUG') == '1'
        except inputs.EnvironmentValueError:
            debug = False
        if debug:
            raise
        print(f'hpcval {args.command}: unexpected error: '
              f'{type(err).__name__}: {err} (HPCVAL_DEBUG=1 shows where)',
              file=sys.stderr)
        # never "failed" nor "healthy": what it would have said is unknown
        return exits.INPUT


if __name__ == '__main__':
    sys.exit(main())
