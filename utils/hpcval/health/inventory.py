"""The expected inventory of a partition's nodes, from the ``inventory:``
list of references/<system>.yaml (validated with the rest of the file by
hpcval.references)::

    inventory:
      - partition: gpu          # partition name, or '*' (default)
        gpus: 4                 # GPUs (GCDs, Gaudi cards) the tool lists
                                # per node; 0: a node without GPUs
        vendor: nvidia          # nvidia | amd | habana
        model: A100-SXM4        # text the tool's model name contains
        memory_gib: 40          # optional: each GPU's memory, at least
        pcie: {gen: 4, width: 16}   # optional: each GPU's link
        driver: 580.159.04      # optional: a pinned driver version
        source: "NERSC, Perlmutter Architecture, https://..."

A partition that expects GPUs and whose node cannot list them fails
(hpcval.health.judge).
"""
import os

TOOLS = {'nvidia': ('nvidia-smi',), 'amd': ('amd-smi', 'rocm-smi'),
         'habana': ('hl-smi',)}
_KEYS = {'partition', 'gpus', 'vendor', 'model', 'memory_gib', 'pcie',
         'driver', 'source', 'notes'}


def _fail(path, key, msg):
    from hpcval.references import ReferenceFileError
    raise ReferenceFileError(f'{path}: {key}: {msg}')


def _int(path, key, val, least):
    if isinstance(val, bool) or not isinstance(val, int) or val < least:
        _fail(path, key, f'must be an integer >= {least}, got {val!r}')
    return val


def _text(path, key, val):
    if not isinstance(val, str) or not val.strip() or len(val) > 2000:
        _fail(path, key, f'must be a non-empty string, got {val!r}')
    return val


def validate(path, data):
    """The inventory list of a reference file, checked; [] when absent."""
    if data is None:
        return []
    if not isinstance(data, list) or not data:
        _fail(path, 'inventory', 'must be a non-empty list')
    out, seen = [], set()
    for i, entry in enumerate(data):
        key = f'inventory[{i}]'
        if not isinstance(entry, dict):
            _fail(path, key, 'must be a mapping')
        extra = sorted(set(entry) - _KEYS)
        if extra:
            _fail(path, key, f'unknown key(s) {", ".join(map(str, extra))} '
                             f'(allowed: {", ".join(sorted(_KEYS))})')
        part = _text(path, f'{key}.partition', entry.get('partition', '*'))
        if part in seen:
            _fail(path, f'{key}.partition', f'{part!r} is given twice')
        seen.add(part)
        gpus = _int(path, f'{key}.gpus', entry.get('gpus'), 0)
        rec = {'partition': part, 'gpus': gpus,
               'source': _text(path, f'{key}.source', entry.get('source'))}
        if gpus:
            vendor = entry.get('vendor')
            if vendor not in TOOLS:
                _fail(path, f'{key}.vendor', f'must be one of '
                      f'{", ".join(sorted(TOOLS))}, got {vendor!r}')
            rec['vendor'] = vendor
            rec['model'] = _text(path, f'{key}.model', entry.get('model'))
        if 'memory_gib' in entry:
            rec['memory_gib'] = _int(path, f'{key}.memory_gib',
                                     entry['memory_gib'], 1)
        if 'pcie' in entry:
            pcie = entry['pcie']
            if not isinstance(pcie, dict) or set(pcie) != {'gen', 'width'}:
                _fail(path, f'{key}.pcie', 'must be {gen: N, width: N}')
            rec['pcie'] = {k: _int(path, f'{key}.pcie.{k}', pcie[k], 1)
                           for k in ('gen', 'width')}
        if 'driver' in entry:
            rec['driver'] = _text(path, f'{key}.driver', entry['driver'])
        out.append(rec)
    return out


def for_partition(entries, partition):
    """The entry of ``partition`` (its own before '*'), or None."""
    own = [e for e in entries if e['partition'] == partition]
    return (own or [e for e in entries if e['partition'] == '*'] or
            [None])[0]


def load_layered(dirs):
    """{system: [inventory entries]} of the reference folders ``dirs``, a
    later folder's file replacing an earlier one's (as the references)."""
    from hpcval import references
    out = {}
    for dirname in dirs:
        try:
            names = sorted(os.listdir(dirname))
        except OSError:
            continue
        for name in names:
            if name.endswith('.yaml'):
                path = os.path.join(dirname, name)
                data = references.parse(references._read(path), path)
                out[name[:-5]] = validate(
                    path, data.get('inventory') if isinstance(data, dict)
                    else None)
    return out


def describe(expected):
    """'8 x AMD Instinct MI300X'-like text of an entry."""
    return f'{expected["gpus"]} x {expected.get("model", "GPU")}'
