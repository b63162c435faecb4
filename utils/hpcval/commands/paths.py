"""``hpcval paths``: where hpcval's suite, its docs and the site layer are."""
import os

from hpcval import paths

WHAT = ('config', 'checks', 'references', 'systems', 'monitoring', 'docs',
        'site')


def add_arguments(parser):
    parser.add_argument('what', nargs='?', choices=WHAT)


def run(args):
    root = paths.repo_root()
    where = {'config': paths.config_file(),
             'checks': os.path.join(root, 'checks'),
             'references': paths.references_dir(),
             'systems': os.path.join(root, 'systems'),
             'monitoring': os.path.join(root, 'config', 'monitoring.py'),
             'docs': os.path.join(root, 'docs'),
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
