"""``hpcval site init DIR [--from SYSTEM]``: a site folder to start from.

A site keeps its systems, references and checks in one folder, named by
$HPCVAL_SITE and layered over the built-in ones (docs/site.md).  ``init``
makes its three folders and a README; ``--from SYSTEM`` copies a built-in
system's module and reference file into it, where they replace the
built-in ones and can be edited.  Nothing existing is overwritten.
"""
import os
import shutil

from hpcval import paths
from hpcval.inputs import is_safe_path

README = """\
# hpcval site folder

Layered over hpcval's built-in systems, references and checks when
`HPCVAL_SITE` names this folder (docs/site.md, "Your site without a fork"):

    export HPCVAL_SITE={path}

- `systems/<name>.py`: a system module (`system`, `environments`), exactly as
  in hpcval's systems/; the same name as a built-in system replaces it.
- `references/<name>.yaml`: the references of system `<name>`; the same
  name as a built-in file replaces it.  `hpcval calibrate --write` writes here.
- `checks/`: the site's own checks, found by ReFrame next to hpcval's.
"""


class SiteInitError(ValueError):
    """The folder cannot be made as asked; the message says why."""


def init(folder, from_system=None):
    """Make the site folder; return the paths written."""
    if not is_safe_path(folder):
        raise SiteInitError(f'{folder!r}: only letters, digits and '
                            f'_ . , : = + @ % / - are allowed in the path')

    folder = os.path.abspath(folder)
    if os.path.islink(folder) or (os.path.exists(folder) and
                                  (not os.path.isdir(folder) or
                                   os.listdir(folder))):
        raise SiteInitError(f'{folder} exists and is not an empty folder; '
                            f'nothing written')

    sources = []
    if from_system:
        root = paths.repo_root()
        sources = [(os.path.join(root, 'systems', f'{from_system}.py'),
                    'systems'),
                   (os.path.join(root, 'references', f'{from_system}.yaml'),
                    'references')]
        if not os.path.isfile(sources[0][0]):
            known = sorted(f[:-3] for f in os.listdir(
                os.path.join(root, 'systems'))
                if f.endswith('.py') and not f.startswith('_'))
            raise SiteInitError(f'--from {from_system}: no built-in system '
                                f'of that name (known: {", ".join(known)})')

    written = []
    for kind in paths.KINDS:
        os.makedirs(os.path.join(folder, kind), exist_ok=True)
    readme = os.path.join(folder, 'README.md')
    with open(readme, 'x', encoding='utf-8') as fp:
        fp.write(README.format(path=folder))
    written.append(readme)
    for source, kind in sources:
        if os.path.isfile(source):
            target = os.path.join(folder, kind, os.path.basename(source))
            shutil.copyfile(source, target)
            written.append(target)
    return written
