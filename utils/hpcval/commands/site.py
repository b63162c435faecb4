"""``hpcval site init``: a site folder (docs/site.md)."""
import argparse
import os
import sys

from hpcval import exits, paths, site, site_from_slurm, slurm_describe
from hpcval.commands import printable, refused


def add_arguments(parser):
    sub = parser.add_subparsers(dest='site_command', required=True)
    init = sub.add_parser('init', help='make a site folder',
                          epilog=exits.epilog('site'),
                          formatter_class=argparse.
                          RawDescriptionHelpFormatter)
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
    init.set_defaults(func=run)


def run(args):
    try:
        if args.from_slurm:
            cluster, files, written = site_from_slurm.init(
                args.dir, args.name, dry_run=args.dry_run,
                replace=args.replace)
        else:
            written = site.init(args.dir, args.from_system)
    except slurm_describe.SlurmOutputError as err:
        # Slurm's output is the input here: unusable, nothing written
        return refused('site init --from-slurm',
                       f'{printable(str(err))}; nothing written')
    except site.SiteInitError as err:
        return refused('site init', err)

    if args.from_slurm:
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
