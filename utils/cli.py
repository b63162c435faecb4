"""``hpcval``: command-line helpers around the checks.

    hpcval references [--dir DIR] [--markdown]
                                      validate every reference file; count
                                      them, or print them all as a table
    hpcval report [REPORT ...] [--db [PATH]] [selection] [--format ...]
                                      the cross-system comparison table
                                      (and plots) of run reports and the
                                      results database; see hpcval.report
"""
import argparse
import sys

from hpcval import paths, reference_table, references, report


def _references(args):
    try:
        by_system = references.load_dir(args.dir)
    except references.ReferenceFileError as err:
        print(f'hpcval: {err}', file=sys.stderr)
        return 1

    if args.markdown:
        print(reference_table.markdown(by_system), end='')
        return 0

    for system, refs in by_system.items():
        judged = sum(r.value is not None for r in refs)
        print(f'{system}: {judged} references, {len(refs) - judged} '
              f'explicitly absent')

    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog='hpcval')
    sub = parser.add_subparsers(dest='command', required=True)
    refs = sub.add_parser('references',
                          help='validate and summarise references/*.yaml')
    refs.add_argument('--dir', default=paths.references_dir())
    refs.add_argument('--markdown', action='store_true',
                      help='print every reference as a Markdown table')
    refs.set_defaults(func=_references)
    rep = sub.add_parser('report', help='cross-system comparison tables and '
                                        'plots of run reports')
    report.add_arguments(rep)
    rep.set_defaults(func=report.run)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == '__main__':
    sys.exit(main())
