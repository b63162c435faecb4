"""``hpcval references``: validate every reference file (each entry must
match a test); count them, or print them all as a table."""
import sys

from hpcval import exits, paths, reference_service, references, site
from hpcval.commands import print_table, printable


def add_arguments(parser):
    parser.add_argument('--dir', default=None,
                        help='one references folder (default: the built-in '
                             'ones, layered under $HPCVAL_SITE\'s)')
    parser.add_argument('--markdown', action='store_true',
                        help='print every reference as a Markdown table')
    parser.add_argument('--system', action='append', default=[],
                        help='match only these systems\' entries against '
                             'their tests, and show each judged figure with '
                             'where it came from (built-in, site, '
                             'calibrated) (repeatable; default: all)')
    parser.add_argument('--schema-only', action='store_true',
                        help='check the files\' schema only, without '
                             'loading the checks to match every entry to a '
                             'test')


def run(args):
    try:
        by_system = references.load_dir(args.dir) if args.dir else \
            references.ReferenceSet.layered(paths.references_dirs())
        by_system.check_partitions(references.configured_partitions())
    except references.ReferenceFileError as err:
        print(f'hpcval: {err}', file=sys.stderr)
        return 1

    if args.markdown:
        print(references.markdown(by_system), end='')
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
            # each judged figure as the layers give it, where it came from,
            # and a warning per site figure breaking the rule it names
            print_table([('check', 'where', 'metric', 'value', 'unit',
                          'lower', 'upper', 'rule', 'origin'),
                         *site.effective(refs)])
            for warning in site.rule_warnings(refs):
                print(f'hpcval: warning: {printable(warning)}',
                      file=sys.stderr)
        found = problems.get(system)
        if isinstance(found, Exception):     # ReFrame's own errors: say
            print(f'hpcval: {selected[system][1]}: cannot load the checks '
                  f'for system {system!r} to match its entries: {found}',
                  file=sys.stderr)
            failed = True
        elif found:
            # the entries of the system's file that match no test
            errors, notes = found
            for note in notes:
                print(f'hpcval: note: {note}', file=sys.stderr)
            for error in errors:
                print(f'hpcval: {error}', file=sys.stderr)
            failed |= bool(errors)
    unknown = [s for s in args.system if s not in by_system]
    for system in unknown:
        print(f'hpcval references: --system {system}: no reference file '
              f'of that name (known: {", ".join(sorted(by_system))})',
              file=sys.stderr)
    if unknown:
        return exits.INPUT
    return exits.FAILED if failed else exits.OK

