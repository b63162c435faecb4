"""``hpcval report``: the cross-system table from reports and the DB."""
import argparse
import base64
import datetime
import math
import os
import re
import sys
import time

from hpcval import paths
from hpcval.publish import (changes, comparison, formats, latex, output,
                            page, published, results, sources)
from hpcval.references import ReferenceFileError, ReferenceSet

# hpcval.exits: a refused input or output is an input error, never "failed"
EXIT_OK, EXIT_EMPTY, EXIT_REJECTED = 0, 2, 3


def timestamp(text):
    """Unix time of an ISO date/time (local) or ``now-<N><d|h|m>``."""
    shown = text if len(text) <= 40 else f'{text[:40]}... ({len(text)} ' \
                                         f'characters)'
    match = re.fullmatch(r'now(?:-(\d+)([dhm]))?', text)
    if match:
        digits = (match.group(1) or '0').lstrip('0') or '0'
        ago = int(digits) * {'d': 86400, 'h': 3600, 'm': 60,
                             None: 0}[match.group(2)] \
            if len(digits) <= 12 else math.inf
        when = time.time() - ago
    else:
        try:
            when = datetime.datetime.fromisoformat(text).timestamp()
        except (ValueError, OverflowError, OSError):
            raise argparse.ArgumentTypeError(
                f'{shown!r} is neither an ISO date (2026-11-01, '
                f'2026-11-01T08:00) nor now-<N>d|h|m') from None
    if when < 0:
        raise argparse.ArgumentTypeError(
            f'{shown!r} is before 1970: no run is that old')
    return when


def _compiled(text):
    try:
        return re.compile(text)
    except re.error as err:
        raise argparse.ArgumentTypeError(f'{text!r}: {err}') from None


def _regex(text):
    _compiled(text)
    return text


_LABEL = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.@:+-]*')


def report_argument(text):
    """A report path, or (label, path) for ``LABEL=PATH``."""
    label, sep, path = text.partition('=')
    if not sep or os.path.exists(text) or not _LABEL.fullmatch(label):
        return text
    return (label, path)


def add_input_arguments(parser):
    parser.add_argument('reports', nargs='*', metavar='[LABEL=]REPORT',
                        type=report_argument,
                        help='ReFrame JSON run reports (--report-file), '
                             'from any system or site; LABEL= shows its '
                             'runs in column LABEL instead of their system')
    parser.add_argument('--db', nargs='?', const=results.DEFAULT_DB,
                        metavar='PATH',
                        help='also read ReFrame\'s results database '
                             '(default: ReFrame\'s storage/sqlite_db_file, '
                             '$RFM_SQLITE_DB_FILE or ~/.reframe/reports/'
                             'results.db)')
    parser.add_argument('--since', type=timestamp,
                        help='only runs from this time on')
    parser.add_argument('--until', type=timestamp,
                        help='only runs up to this time')
    parser.add_argument('--system', action='append', default=[],
                        help='only these systems (repeatable)')
    parser.add_argument('--name', type=_compiled, metavar='REGEX',
                        help='only tests whose name matches')
    parser.add_argument('--on-error', choices=('skip', 'reject'),
                        default='skip',
                        help='a bad input is left out and named (skip) or '
                             'stops the command (reject)')


def add_references_argument(parser):
    """``--references``, as the verdict and the report read it."""
    parser.add_argument('--references', action='append', default=[],
                        metavar='FILE|DIR',
                        help='judge by these reference files (a SYSTEM.yaml, '
                             'or a folder of them; repeatable) instead of '
                             'the installed ones and the site\'s; the runs\' '
                             'own bounds are only a cross-check')


def load_selected(args, replays=True, bounds=None):
    """Loaded inputs and the samples the arguments select."""
    loaded = results.load(args.reports, db=args.db, on_error=args.on_error,
                          since=args.since, until=args.until, bounds=bounds,
                          attrs=('version', 'num_tasks'))
    for problem in loaded.problems:
        print(f'hpcval: left out {problem}', file=sys.stderr)
    if loaded.duplicates:
        print(f'hpcval: dropped {loaded.duplicates} duplicate test case(s): '
              f'the same session, test case and run given more than once '
              f'(copies of a report, or a report and --db) count once',
              file=sys.stderr)
    if not args.system and args.name is None and args.since is None \
            and args.until is None and replays:
        return loaded, loaded.samples
    keep = case_filter(args, replays)
    kept = {id(c) for c in loaded.cases if keep(c)}
    return loaded, [s for s in loaded.samples if id(s.case) in kept]


def case_filter(args, replays=True):
    """Whether a test case is selected by the arguments."""
    def keep(c):
        return ((not args.system or c.system in args.system)
                and (args.name is None or args.name.search(c.test))
                and (args.since is None or c.time >= args.since)
                and (args.until is None or c.time <= args.until)
                and (replays or not c.replay))
    return keep


def unreadable(loaded):
    """Whether inputs were given and none of them could be read."""
    return bool(loaded.problems) and not loaded.sources


def unknown_selection(args, cases):
    """The line naming a --system/--partition no test case has, or None."""
    for option, given, attr in (
            ('--system', args.system, 'system'),
            ('--partition', getattr(args, 'partition', []), 'partition')):
        known = sorted({getattr(c, attr) for c in cases})
        unknown = [g for g in given if g not in known]
        if cases and unknown:
            return (f'{option} {unknown[0]}: no such {attr} among the '
                    f'inputs (known: {", ".join(known)})')
    return None


def add_arguments(parser):
    add_input_arguments(parser)
    parser.add_argument('--no-replays', action='store_true',
                        help='leave out replayed recorded outputs')
    parser.add_argument('--format', default='md',
                        help=f'comma-separated, of {",".join(formats.FORMATS)}'
                             f' (default md)')
    parser.add_argument('--out', metavar='DIR',
                        help='write comparison.<format> (and plots/) here; '
                             'without it the first format goes to stdout')
    parser.add_argument('--plots', action='store_true',
                        help='with --out: also draw the plots (PNG, SVG)')
    parser.add_argument('--plots-select', type=_regex, metavar='REGEX',
                        help='bar charts only for rows (test or metric) '
                             'matching REGEX')
    parser.add_argument('--force', action='store_true',
                        help='overwrite existing output files')
    parser.add_argument('--title', default='Cross-system comparison')
    add_references_argument(parser)
    parser.add_argument('--references-only', action='store_true',
                        help='the published-reference view: tables from '
                             'references/ alone, no runs')
    parser.add_argument('--with-published', action='store_true',
                        help='after the runs\' table, the published-'
                             'reference tables (as --references-only)')
    parser.add_argument('--per-node', action='store_true',
                        help='one column per node list instead of per '
                             'system')
    parser.add_argument('--group-by', type=_provenance_key, metavar='KEY',
                        help='runs side by side per value of a provenance '
                             'key (driver, vbios, cuda, nccl, kernel, '
                             'image, or any key the runs recorded), with n, '
                             'spread and Welch\'s t-test per figure; md '
                             '(default) or csv on stdout')


def _provenance_key(text):
    if not re.fullmatch(r'[a-z][a-z0-9_]{0,39}', text):
        raise argparse.ArgumentTypeError(
            f'{formats.visible(text)[:60]!r} is not a provenance key '
            f'(lower-case letters, digits, _)')
    return text


def _formats(text):
    chosen = [f.strip() for f in text.split(',') if f.strip()]
    bad = [f for f in chosen if f not in formats.FORMATS]
    if bad or not chosen:
        raise SystemExit(f'hpcval report: --format {text!r}: choose from '
                         f'{", ".join(formats.FORMATS)}')
    return chosen


def _said(err):
    """An OSError as one line (ours: a sentence; the system's: file)."""
    if err.filename is None:
        return str(err)
    return f'{err.filename}: {err.strerror}'


def _data_uri(path):
    with open(path, 'rb') as fp:
        return 'data:image/png;base64,' + base64.b64encode(fp.read()).decode()


def _draw(table, samples, outdir, select, force):
    from hpcval.publish import plots      # matplotlib only when plots are asked for
    drawn = plots.draw_all(table, samples, os.path.join(outdir, 'plots'),
                           select=select, force=force)
    for why in drawn.skipped:
        print(f'hpcval report: plot: {why}', file=sys.stderr)
    return drawn


def render(tables, fmt, inputs=(), problems=(), images=(), title=None,
           unplotted=()):
    """``images``: [(name, URI or path)]; ``unplotted``: why not drawn."""
    if fmt == 'html':
        return page.render(tables, inputs, problems, images, title,
                           unplotted)
    if fmt == 'tex':
        return latex.document(tables, title, images)
    if fmt == 'md':
        by_bench = page.by_benchmark(images)
        return '\n'.join([formats.to_markdown(t, by_bench if i == 0 else None)
                          for i, t in enumerate(tables)] +
                         formats.markdown_end(tables))
    return formats.to_csv(tables)


def _group_by(args, fmt, samples, cases):
    key = changes.ALIASES.get(args.group_by, args.group_by)
    known = changes.recorded_keys(cases)
    if key not in known:
        print(f'hpcval report: --group-by {args.group_by}: no selected run '
              f'recorded it (recorded: {", ".join(known) or "none"})',
              file=sys.stderr)
        return EXIT_EMPTY
    if fmt not in ('md', 'csv'):
        print(f'hpcval report: --group-by writes md or csv, not {fmt}',
              file=sys.stderr)
        return EXIT_REJECTED
    figures = changes.group_by(samples, cases, key)
    sys.stdout.write(changes.group_csv(figures, key) if fmt == 'csv'
                     else changes.group_text(figures, key))
    return EXIT_OK


def run(args):
    fmts = _formats(args.format)
    try:
        refs = ReferenceSet.given(args.references)
    except ReferenceFileError as err:
        print(f'hpcval report: {formats.visible(err)}', file=sys.stderr)
        return EXIT_REJECTED
    if args.references_only:
        tables = published.tables(refs)
        inputs, problems, samples = ['references/*.yaml'], [], []
    else:
        try:
            loaded, samples = load_selected(args, not args.no_replays, refs)
        except results.InputRejected as err:
            print(f'hpcval report: rejected {err}', file=sys.stderr)
            return EXIT_REJECTED
        unknown = unknown_selection(args, loaded.cases)
        if unknown:
            print(f'hpcval report: {formats.visible(unknown)}',
                  file=sys.stderr)
            return EXIT_REJECTED
        if not samples:
            print('hpcval report: no performance samples in the selected '
                  'inputs', file=sys.stderr)
            return EXIT_REJECTED if unreadable(loaded) else EXIT_EMPTY
        keep = case_filter(args, replays=not args.no_replays)
        cases = [c for c in loaded.cases if keep(c)]
        if args.group_by:
            return _group_by(args, fmts[0], samples, cases)
        with results.without_gc():
            tables = [comparison.build(samples, args.title, cases,
                                       per_node=args.per_node,
                                       fixtures=loaded.fixtures)]
        # the verdict's BOUND lines, in its words; the built-in files by
        # their place in hpcval (references/local.yaml), not on this machine
        builtin = os.path.join(paths.repo_root(), '')
        tables[0].bounds += dict.fromkeys(
            'BOUND ' + loaded.rebanded[id(s)][0].line().replace(builtin, '')
            for s in samples
            if loaded.rebanded.get(id(s), (None,))[0] is not None)
        inputs, problems = loaded.sources, loaded.problems
        if args.with_published:
            tables += published.tables(refs)
    if not args.out:
        sys.stdout.write(render(tables, fmts[0], inputs, problems))
        return EXIT_OK
    pngs, unplotted = [], []
    try:
        output.check_folder(args.out)
        if args.plots and samples:
            # refused as a link even where no figure comes to be drawn
            output.check_folder(os.path.join(args.out, 'plots'))
            try:
                drawn = _draw(tables[0], samples, args.out,
                              args.plots_select, args.force)
            except (ValueError, RuntimeError) as err:
                # a figure that cannot be drawn costs the figures, never
                # the tables
                print(f'hpcval report: plots not drawn: '
                      f'{formats.visible(err)}', file=sys.stderr)
                unplotted = [f'plots not drawn: {formats.visible(err)}']
            else:
                pngs = [p for p in drawn.files if p.endswith('.png')]
                unplotted = [why for why in drawn.skipped if why]
        for fmt in fmts:
            path = os.path.join(args.out, f'comparison.{fmt}')
            images = [(os.path.basename(p)[:-4],
                       _data_uri(p) if fmt == 'html' else
                       os.path.relpath(p, args.out)) for p in pngs]
            output.write(path, render(tables, fmt, inputs, problems, images,
                                      args.title, unplotted), args.force)
            print(path)
            if fmt == 'tex' and sources.cited(tables):
                bib = os.path.join(args.out, 'comparison.bib')
                output.write(bib, sources.bibtex(sources.cited(tables)),
                             args.force)
                print(bib)
    except OSError as err:      # exists, a link, not writable: say so
        print(f'hpcval report: {_said(err)}', file=sys.stderr)
        return EXIT_REJECTED
    return EXIT_OK

