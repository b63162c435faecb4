"""``hpcval site init DIR [--from SYSTEM]``: a site folder to start from.

A site keeps its systems, references and checks in one folder, named by
$HPCVAL_SITE and layered over the built-in ones (docs/site.md).  ``init``
makes its three folders and a README; ``--from SYSTEM`` copies a built-in
system's module and reference file into it, where they replace the
built-in ones and can be edited.  Nothing existing is overwritten.

The folder is made by the running user and writable by it alone (an
existing empty one only when it is already so): hpcval loads code from it
(hpcval.trust, docs/security.md).
"""
import os
import re

from hpcval import paths, trust
from hpcval.inputs import is_safe_path

# a built-in system's name, as its module's file is named
_SYSTEM_NAME = re.compile(r'[a-z0-9][a-z0-9_-]*')

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

    sources = _sources(from_system) if from_system else []
    try:
        os.makedirs(os.path.dirname(folder), 0o755, exist_ok=True)
        trust.own_folder(folder, 0o755)
    except trust.UntrustedPath as err:
        raise SiteInitError(f'{folder}: {err}; hpcval would load code from '
                            f'it (docs/security.md); nothing written'
                            ) from None
    except OSError as err:
        raise SiteInitError(f'{folder}: {err.strerror}') from None

    written = []
    for kind in paths.KINDS:
        os.mkdir(os.path.join(folder, kind), 0o755)
    readme = os.path.join(folder, 'README.md')
    _write_new(readme, README.format(path=folder).encode())
    written.append(readme)
    for source, kind in sources:
        if os.path.isfile(source):
            target = os.path.join(folder, kind, os.path.basename(source))
            with open(source, 'rb') as fp:
                _write_new(target, fp.read())
            written.append(target)
    return written


def _sources(name):
    """The built-in system ``name``'s module and reference file."""
    root = paths.repo_root()
    known = sorted(f[:-3] for f in os.listdir(os.path.join(root, 'systems'))
                   if f.endswith('.py') and not f.startswith('_'))
    if not _SYSTEM_NAME.fullmatch(name) or name not in known:
        raise SiteInitError(f'--from {name!r}: not the name of a built-in '
                            f'system (known: {", ".join(known)})')
    return [(os.path.join(root, 'systems', f'{name}.py'), 'systems'),
            (os.path.join(root, 'references', f'{name}.yaml'), 'references')]


def _write_new(path, data):
    # a new file, never through a link, never writable by others whatever
    # the umask
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                 0o644)
    with os.fdopen(fd, 'wb') as fp:
        fp.write(data)
