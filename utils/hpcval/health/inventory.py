"""The expected inventory of a partition's nodes (docs/health.md)."""
import reprlib

TOOLS = {'nvidia': ('nvidia-smi',), 'amd': ('amd-smi', 'rocm-smi'),
         'habana': ('hl-smi',)}
VENDOR_OF_TOOL = {t: v for v, tools in TOOLS.items() for t in tools}
_KEYS = {'partition', 'gpus', 'vendor', 'model', 'memory_gib', 'pcie',
         'nvlink', 'driver', 'baseline', 'pin', 'source', 'notes'}
#: What a baseline records, and so what can be CHANGED or pinned.
BASELINE_KEYS = ('driver', 'vbios', 'kernel', 'serial')
#: the comment above the inventory entries that a tool wrote (hpcval
#: calibrate, hpcval site from-slurm), which the next run may rewrite
INVENTORY_MARKER = '# hpcval calibrate inventory:'


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel, _SHOWN.maxstring, _SHOWN.maxother = 2, 60, 60


class InventoryError(ValueError):
    """An inventory breaks the schema; the message names file and key."""


def _fail(path, key, msg):
    raise InventoryError(f'{path}: {key}: {msg}')


def _int(path, key, val, least):
    if isinstance(val, bool) or not isinstance(val, int) or val < least:
        _fail(path, key, f'must be an integer >= {least}, got {_SHOWN.repr(val)}')
    return val


def _text(path, key, val):
    if not isinstance(val, str) or not val.strip() or len(val) > 2000:
        _fail(path, key, f'must be a non-empty string, got {_SHOWN.repr(val)}')
    return val


def _known(path, key, data, allowed):
    extra = sorted(set(data) - allowed, key=str)
    if extra:
        _fail(path, key, f'unknown key(s) {", ".join(map(str, extra))} '
                         f'(allowed: {", ".join(sorted(allowed))})')


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
        _known(path, key, entry, _KEYS)
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
                      f'{", ".join(sorted(TOOLS))}, got {_SHOWN.repr(vendor)}')
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
        if 'nvlink' in entry:
            rec['nvlink'] = _nvlink(path, f'{key}.nvlink', entry['nvlink'])
        if 'driver' in entry:
            rec['driver'] = _text(path, f'{key}.driver', entry['driver'])
        if 'baseline' in entry:
            rec['baseline'] = _baseline(path, f'{key}.baseline',
                                        entry['baseline'])
        if 'pin' in entry:
            pin = entry['pin']
            if not isinstance(pin, list) or not pin or \
                    any(p not in BASELINE_KEYS for p in pin):
                _fail(path, f'{key}.pin', f'must be a list of '
                      f'{", ".join(BASELINE_KEYS)}, got {_SHOWN.repr(pin)}')
            if not rec.get('baseline'):
                _fail(path, f'{key}.pin', 'needs a baseline to pin')
            unpinnable = [p for p in pin if (
                'serials' if p == 'serial' else p) not in rec['baseline']]
            if unpinnable:
                # a pin on a version nobody recorded could never fail
                _fail(path, f'{key}.pin', f'{", ".join(unpinnable)}: the '
                      f'baseline records no such version to pin')
            rec['pin'] = list(pin)
        out.append(rec)
    return out


def _nvlink(path, key, data):
    """{links: N, gbs: X}: each GPU's active NVLinks / xGMI links and speed."""
    if not isinstance(data, dict) or not set(data) <= {'links', 'gbs'} or \
            'links' not in data:
        _fail(path, key, 'must be {links: N, gbs: X} (gbs optional)')
    out = {'links': _int(path, f'{key}.links', data['links'], 1)}
    if 'gbs' in data:
        gbs = data['gbs']
        if isinstance(gbs, bool) or not isinstance(gbs, (int, float)) or \
                not 0 < gbs < 10000:
            _fail(path, f'{key}.gbs', f'must be a number of GB/s, got '
                                      f'{gbs!r}')
        out['gbs'] = gbs
    return out


def nvlink_of(records):
    """{links, gbs} of ``records`` before the benchmark (least), or None."""
    counts, speeds = [], []
    for r in records:
        status = r.before.nvlink.status
        if not status:
            return None
        for links in status.values():
            up = [v for v in links.values() if v is not None]
            counts.append(len(up))
            speeds += up
    if not counts or not min(counts):
        return None
    return {'links': min(counts), 'gbs': min(speeds)}


def _baseline(path, key, data):
    if not isinstance(data, dict) or not data:
        _fail(path, key, 'must be a mapping of driver, vbios, kernel, '
                         'serials')
    _known(path, key, data, {'driver', 'vbios', 'kernel', 'serials'})
    out = {k: _text(path, f'{key}.{k}', data[k])
           for k in ('driver', 'vbios', 'kernel') if k in data}
    if 'serials' in data:
        serials = data['serials']
        if not isinstance(serials, dict) or not serials or any(
                not isinstance(v, list) or not v for v in serials.values()):
            _fail(path, f'{key}.serials', 'must map each node to a '
                                          'non-empty list of serials')
        out['serials'] = {
            _text(path, f'{key}.serials', str(node)):
            [_text(path, f'{key}.serials.{node}', str(v)) for v in vals]
            for node, vals in serials.items()}
    return out


def for_partition(entries, partition):
    """The entry of ``partition`` (its own before '*'), or None."""
    own = [e for e in entries if e['partition'] == partition]
    return (own or [e for e in entries if e['partition'] == '*'] or [None])[0]


def _common(values):
    """The one value of ``values``, or None when they differ or are none."""
    values = {v for v in values if v not in (None, '')}
    return values.pop() if len(values) == 1 else None


def from_records(records, partition, source):
    """``partition``'s inventory entry from its baseline runs' records."""
    snaps = [r.before for r in records]
    tools = {r.tool for r in records}
    if len(tools) != 1 or not snaps:
        return None
    tool = tools.pop()
    gpus = [s.gpus for s in snaps if s.rc == 0]
    counts = {len(g) for g in gpus}
    if len(counts) != 1 or len(gpus) != len(snaps):
        return None
    flat = [g for node in gpus for g in node]
    entry = {'partition': partition, 'gpus': counts.pop()}
    if not entry['gpus']:
        entry['source'] = source
        return entry
    entry['vendor'] = VENDOR_OF_TOOL.get(tool)
    entry['model'] = _common(g.model for g in flat)
    if not entry['vendor'] or not entry['model']:
        return None
    mem = [g.memory_total_mib for g in flat]
    if all(isinstance(m, (int, float)) for m in mem):
        entry['memory_gib'] = max(1, int(min(mem) / 1024))
    gen = [g.pcie_gen_max for g in flat]
    width = [g.pcie_width_max for g in flat]
    if all(isinstance(v, int) for v in gen + width):
        entry['pcie'] = {'gen': min(gen), 'width': min(width)}
    links = nvlink_of(records)
    if links:
        entry['nvlink'] = links
    base = {'driver': _common(g.driver for g in flat),
            'vbios': _common(g.vbios for g in flat),
            'kernel': _common(r.kernel for r in records)}
    base = {k: v for k, v in base.items() if v}
    serials = {}
    for r in records:
        for g in r.before.gpus if r.node else ():
            if g.serial:
                serials.setdefault(r.node, set()).add(str(g.serial))
    if serials:
        base['serials'] = {n: sorted(v) for n, v in sorted(serials.items())}
    if base:
        entry['baseline'] = base
    entry['source'] = source
    return entry
