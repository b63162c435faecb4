"""amd-smi and rocm-smi JSON into GPU records (keys: ROCm/amdsmi
``amdsmi_cli/amdsmi_commands.py``); no JSON fails (rocm-smi exits 0 then)."""
import json
import re

from hpcval.health.common import clean, first_line, value
from hpcval.health.nvidia import ToolError

TOOLS = ('amd-smi', 'rocm-smi')

#: amd-smi violation statuses (MI300 and later): a slow-down a healthy
#: GPU never shows under a benchmark, by the judge's reason name
VIOLATIONS = {'prochot_violation_status': 'prochot',
              'socket_thermal_violation_status': 'socket_thermal',
              'vr_thermal_violation_status': 'vr_thermal',
              'hbm_thermal_violation_status': 'hbm_thermal',
              'ppt_violation_status': 'ppt'}
#: PCIe transfer rate per lane (GT/s) of each generation
GT_PER_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def documents(text):
    """Every JSON document of ``text`` (ToolError if none)."""
    dec, out, pos = json.JSONDecoder(), [], 0
    for m in re.finditer(r'[{[]', text):
        if m.start() >= pos:
            try:
                doc, pos = dec.raw_decode(text, m.start())
                out.append(doc)
            except ValueError:
                pass        # no document starts at this bracket
    if not out:
        raise ToolError(first_line(text) or 'no output')
    return out


def _entries(doc):
    if isinstance(doc, dict) and isinstance(doc.get('gpu_data'), list):
        doc = doc['gpu_data']
    if isinstance(doc, list):
        return [e for e in doc if isinstance(e, dict) and
                isinstance(e.get('gpu'), int) and
                not isinstance(e.get('gpu'), bool)]
    return []


def _num(v):
    """A number of ``{"value": 10, "unit": "W"}``, ``"10 W"``; or None."""
    if isinstance(v, dict):
        v = v.get('value')
    if isinstance(v, str):
        v = value(v)
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) \
        else None


def _text(v):
    if not isinstance(v, (str, int, float)) or isinstance(v, bool):
        return None
    v = clean(v)
    return None if value(v) is None else v


def _serial(v):
    """A serial, None for N/A or zeros (a board without one)."""
    v = _text(v)
    return None if v is None or set(v) <= {'0'} else v


def _get(entry, *path):
    for key in path:
        if not isinstance(entry, dict):
            return None
        entry = entry.get(key)
    return entry


def gen_of(gt_per_s):
    """PCIe generation of a per-lane rate in GT/s (or MT/s: 16000)."""
    if not isinstance(gt_per_s, (int, float)) or gt_per_s <= 0:
        return None
    if gt_per_s >= 1000:
        gt_per_s /= 1000
    return GT_PER_GEN.get(float(gt_per_s))


def _static(e, gpu):
    gpu['model'] = _text(_get(e, 'asic', 'market_name')) or \
        _text(_get(e, 'board', 'product_name'))
    gpu['serial'] = _serial(_get(e, 'board', 'product_serial')) or \
        _serial(_get(e, 'asic', 'asic_serial'))
    gpu['bus_id'] = _text(_get(e, 'bus', 'bdf'))
    gpu['vbios'] = _text(_get(e, 'vbios', 'version')) or \
        _text(_get(e, 'ifwi', 'version')) or \
        _text(_get(e, 'vbios', 'part_number')) or \
        _text(_get(e, 'vbios', 'name'))
    gpu['driver'] = _text(_get(e, 'driver', 'version'))
    gpu['memory_total_mib'] = _num(_get(e, 'vram', 'size'))
    gpu['pcie_width_max'] = _num(_get(e, 'bus', 'max_pcie_width'))
    gpu['pcie_gen_max'] = gen_of(_num(_get(e, 'bus', 'max_pcie_speed')))
    gpu['power_limit_w'] = _num(_get(e, 'limit', 'socket_power')) or \
        _num(_get(e, 'limit', 'max_power'))


def _metric(e, gpu):
    width = _num(_get(e, 'pcie', 'width'))
    if width is not None:
        gpu['pcie_width'] = width
        gpu['pcie_gen'] = gen_of(_num(_get(e, 'pcie', 'speed')))
    for key, path in (('power_w', ('power', 'socket_power')),
                      ('temp_c', ('temperature', 'hotspot')),
                      ('temp_mem_c', ('temperature', 'mem')),
                      ('util_pct', ('usage', 'gfx_activity')),
                      ('memory_used_mib', ('mem_usage', 'used_vram')),
                      ('ecc_corrected', ('ecc', 'total_correctable_count')),
                      ('ecc_uncorrected',
                       ('ecc', 'total_uncorrectable_count'))):
        n = _num(_get(e, *path))
        if n is not None:
            gpu[key] = n
    # one gfx_N per XCD (eight on an MI300X): the fastest names the GPU,
    # so one XCD idling between kernels never reads as a slow GPU
    for key, field in (('sm_mhz', 'clk'), ('sm_max_mhz', 'max_clk')):
        mhz = [n for k, v in (_get(e, 'clock') or {}).items()
               if str(k).startswith('gfx_') for n in [_num(_get(v, field))]
               if n is not None]
        if mhz:
            gpu[key] = max(mhz)
    reasons = ['throttled'] if str(_get(
        e, 'power', 'throttle_status')).upper() == 'THROTTLED' else []
    reasons += [name for key, name in VIOLATIONS.items()
                if str(_get(e, 'throttle', key)).upper() == 'ACTIVE']
    gpu['throttle'] += [r for r in reasons if r not in gpu['throttle']]


def _amd_smi(docs, lenient):
    by_index = {}
    for doc in docs:
        for e in _entries(doc):
            gpu = by_index.setdefault(e['gpu'], {'index': e['gpu'],
                                                 'throttle': []})
            if any(k in e for k in ('asic', 'bus', 'vram', 'driver',
                                    'board')):
                _static(e, gpu)
            _metric(e, gpu)
    if not by_index and not lenient:
        raise ToolError('amd-smi printed JSON without a GPU in it')
    return [{k: v for k, v in by_index[i].items() if v is not None}
            for i in sorted(by_index)]


_CARD = re.compile(r'card(\d+)$')
# "sclk clock speed:": "(800Mhz)"; "Valid sclk range": "500Mhz - 1700Mhz"
_MHZ = re.compile(r'(\d+)\s*Mhz', re.IGNORECASE)
_LINK = re.compile(r'([\d.]+)\s*GT/s,?\s*x(\d+)')
_ROCM_KEYS = (
    ('model', ('Card Series', 'Card series', 'Device Name'), _text),
    ('serial', ('Serial Number', 'Unique ID'), _serial),
    ('bus_id', ('PCI Bus',), _text),
    ('vbios', ('VBIOS version',), _text),
    ('temp_c', ('Temperature (Sensor junction) (C)',), _num),
    ('temp_mem_c', ('Temperature (Sensor memory) (C)',), _num),
    ('power_w', ('Current Socket Graphics Package Power (W)',
                 'Average Graphics Package Power (W)'), _num),
    ('power_limit_w', ('Max Graphics Package Power (W)',), _num),
    ('util_pct', ('GPU use (%)',), _num))


def _rocm_smi(doc, lenient):
    if not isinstance(doc, dict):
        raise ToolError('rocm-smi printed JSON without a card in it')
    driver = _text(_get(doc, 'system', 'Driver version'))
    out = []
    for key in sorted(doc, key=lambda k: (len(k), k)):
        m = _CARD.match(key)
        card = doc[key]
        if not m or not isinstance(card, dict):
            continue
        gpu = {'index': int(m.group(1)), 'throttle': []}
        for name, labels, read in _ROCM_KEYS:
            gpu[name] = next((v for v in (read(card.get(k)) for k in labels)
                              if v is not None), None)
        total = _num(card.get('VRAM Total Memory (B)'))
        gpu['memory_total_mib'] = None if total is None else \
            round(total / 2 ** 20)
        # the current link: "pcie clock level": "0 (16.0GT/s x16)" in the
        # JSON of rocm-smi 5.7 and 6.0; its text prints "pcie clock level:
        # 1 (16.0GT/s, x16 619Mhz)"
        link = next((m for k, v in card.items() if str(k).startswith('pcie')
                     for m in [_LINK.search(str(v))] if m), None)
        if link:
            gpu['pcie_gen'] = gen_of(float(link.group(1)))
            gpu['pcie_width'] = int(link.group(2))
        now = _MHZ.findall(str(card.get('sclk clock speed:', '')))
        top = _MHZ.findall(str(card.get('Valid sclk range', '')))
        gpu['sm_mhz'] = int(now[0]) if now else None
        gpu['sm_max_mhz'] = int(top[1]) if len(top) == 2 else None
        gpu['driver'] = driver
        out.append({k: v for k, v in gpu.items() if v is not None})
    if not out and not lenient:
        raise ToolError('rocm-smi printed JSON without a card in it')
    return out


def gpus(text, tool='amd-smi', lenient=False):
    """[GPU record] of ``tool``'s JSON; ``lenient``: of every document."""
    docs = documents(text)
    if tool == 'rocm-smi':
        return [g for d in (docs if lenient else docs[:1])
                for g in _rocm_smi(d, lenient)]
    if lenient:
        return [g for d in docs for g in _amd_smi([d], True)]
    return _amd_smi(docs, False)
