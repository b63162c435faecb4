"""``hpcval site init DIR [--from SYSTEM]``: a site folder to start from, its
README and a copy of a built-in system's module, made by the running user,
writable by it alone, nothing overwritten (docs/site.md, docs/security.md)."""
import os
import re

from hpcval import paths, references, trust
from hpcval.inputs import is_safe_path

# a built-in system's name, as its module's file is named
_SYSTEM_NAME = re.compile(r'[a-z0-9][a-z0-9_-]*')

README = """\
# hpcval site folder

Layered over hpcval's built-in systems, references and checks when
`HPCVAL_SITE` names this folder ({docs}/site.md, "Your site without a
fork"; `hpcval paths docs` prints that folder):

    export HPCVAL_SITE={path}

- `systems/<name>.py`: a system module (`system`, `environments`), exactly as
  in hpcval's systems/, built on `hpcval.sitesystem`; the same name as a
  built-in system replaces it.
- `references/<name>.yaml`: the references of system `<name>`; for a
  built-in system, only the entries and metrics the site changes (or
  `replace: true` for a whole file).  `hpcval references --system <name>`
  shows where each figure comes from.  `hpcval calibrate --write` writes here.
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

    source = _source(from_system) if from_system else None
    try:
        os.makedirs(os.path.dirname(folder), 0o755, exist_ok=True)
        trust.own_folder(folder, 0o755)
    except trust.UntrustedPath as err:
        raise SiteInitError(f'{folder}: {err}; hpcval would load code from '
                            f'it (docs/security.md); nothing written'
                            ) from None
    except OSError as err:
        raise SiteInitError(f'{folder}: {err.strerror}') from None

    for kind in paths.KINDS:
        os.mkdir(os.path.join(folder, kind), 0o755)
    readme = os.path.join(folder, 'README.md')
    trust.write_new(readme, README.format(
        path=folder, docs=os.path.join(paths.repo_root(), 'docs')).encode())
    written = [readme]
    if source:
        target = os.path.join(folder, 'systems', os.path.basename(source))
        with open(source, 'rb') as fp:
            trust.write_new(target, fp.read())
        written.append(target)
    return written


# Rules whose bounds follow from a figure's value and spread, as their text
# in references/ says; a site figure citing one is checked against it.
# Bounds in the files are rounded to three decimals.
_ROUNDING = 0.0005 + 1e-9


def _sandia_spread(value, spread):
    """sandia-spread: 3 std / mean, at least 0.05 below and 0.10 above."""
    ratio = 3 * spread / value
    return -max(ratio, 0.05), max(ratio, 0.10)


RULE_BOUNDS = {'sandia-spread': (_sandia_spread,
                                 'lower = -max(3 x spread / value, 0.05), '
                                 'upper = max(3 x spread / value, 0.10)')}


def rule_warnings(refs):
    """One message per site figure whose bound breaks the rule it names."""
    out = []
    for ref in refs:
        origin = ref.origin
        if ref.value is None or origin is None or \
                origin.layer == references.BUILT_IN:
            continue
        where = (f'{origin.path}: entries[{origin.entry}] ({ref.check}, '
                 f'{_place(ref)}) {ref.metric}')
        for bound, want, how in _broken(ref, origin):
            out.append(f'{where}: {bound} {_frac(getattr(ref, bound))} '
                       f'breaks rule {ref.rule!r}, which gives '
                       f'{_frac(want)} ({how}); name the site\'s own rule '
                       f'under rules: if the change is meant')
    return out


def _broken(ref, origin):
    formula = RULE_BOUNDS.get(ref.rule)
    if formula:
        if ref.spread is None or not ref.value:
            return [(b, None, f'needs value and spread: {formula[1]}')
                    for b in ('lower', 'upper') if getattr(ref, b) is not None]
        lower, upper = formula[0](ref.value, ref.spread)
        return [(b, want, formula[1]) for b, want in (('lower', lower),
                                                      ('upper', upper))
                if getattr(ref, b) is not None and
                abs(getattr(ref, b) - want) > _ROUNDING]
    before = origin.before
    if not isinstance(before, dict) or before.get('rule') != ref.rule or \
            before.get('value') != ref.value or \
            before.get('spread') != ref.spread:
        return []
    return [(b, before.get(b), f'the bound of {origin.before_path} for the '
             f'same value under the same rule')
            for b in ('lower', 'upper') if before.get(b) != getattr(ref, b)]


def _frac(value):
    return 'unbounded' if value is None else f'{value:+g}'


def _place(ref):
    where = ''.join(f', {k}={v}' for k, v in ref.where.items())
    return f'partition {ref.partition}{where}'


def effective(refs):
    """Rows of every judged figure of one system, and the layer that set it."""
    rows = []
    for ref in refs:
        if ref.value is None:
            continue
        origin = ref.origin
        if origin is None:
            said = ''
        elif origin.layer == references.BUILT_IN or \
                origin.changed == ('*',):
            said = f'{origin.layer} ({origin.path})'
        else:
            said = (f'{origin.layer}: {", ".join(origin.changed) or "nothing"}'
                    f' changed ({origin.path}) over {origin.before_path}')
        rows.append((ref.check, _place(ref), ref.metric, f'{ref.value:g}',
                     ref.unit, _frac(ref.lower), _frac(ref.upper), ref.rule,
                     said))
    return rows


def builtin_systems():
    """The names of hpcval's built-in systems."""
    return {f[:-3] for f in os.listdir(paths.builtin_folder('systems'))
            if f.endswith('.py') and not f.startswith('_')}


def _source(name):
    """The path of the built-in system ``name``'s module."""
    known = sorted(builtin_systems())
    if not _SYSTEM_NAME.fullmatch(name) or name not in known:
        raise SiteInitError(f'--from {name!r}: not the name of a built-in '
                            f'system (known: {", ".join(known)})')
    return os.path.join(paths.builtin_folder('systems'), f'{name}.py')


