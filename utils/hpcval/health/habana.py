"""The ``hl-smi`` summary table (Intel Gaudi) into GPU records, two rows
per AIP::

    |   0  HL-225              N/A  | 0000:4d:00.0     N/A |                   0  |
    | N/A   31C   N/A    95W / 600W |    768MiB / 98304MiB |     0%           N/A |
"""
import re

from hpcval.health.common import BDF, clean, first_line
from hpcval.health.nvidia import ToolError

TOOL = 'hl-smi'

_ROW1 = re.compile(r'^\|\s*(\d+)\s+(\S+)\s+\S+\s*\|\s*(' + BDF +
                   r')\s+\S+\s*\|\s*(\S+)\s*\|\s*$')
_ROW2 = re.compile(r'^\|\s*\S+\s+(\d+|N/A)C?\s+\S+\s+(\d+|N/A)W?\s*/\s*'
                   r'(\d+|N/A)W?\s*\|\s*(\d+)Mi[Bb]\s*/\s*(\d+)Mi[Bb]\s*\|'
                   r'\s*(\d+|N/A)%?\s+\S+\s*\|\s*$')
_HEAD = re.compile(r'^\|\s*(HL-SMI Version|Driver Version):\s*(\S+)\s*\|')
_PROC = re.compile(r'^\|\s*(\d+)\s+(\d+)\s+\S+\s+(\S+)\s+(\d+)\s*Mi[Bb]')
_FW = re.compile(r'fw-([0-9][0-9.]*)')
_TOP = '+----'


def _int(text):
    return int(text) if text.isdigit() else None


def _tables(text):
    """The text of each table (a sampler's file holds one per second)."""
    out, cur = [], []
    for line in text.splitlines():
        if line.startswith(_TOP) and any(
                l.startswith(('| Compute Processes', '+===')) for l in cur):
            out.append(cur)
            cur = []
        cur.append(line)
    if cur:
        out.append(cur)
    return out


def _table(lines):
    head, gpus, apps, row = {}, [], [], None
    for line in lines:
        line = line.rstrip()
        if m := _HEAD.match(line):
            head[m.group(1)] = clean(m.group(2))
        elif m := _ROW1.match(line):
            row = {'index': int(m.group(1)), 'model': clean(m.group(2)),
                   'bus_id': m.group(3).lower(), 'throttle': []}
            ecc = _int(m.group(4))
            if ecc is not None:
                row['ecc_uncorrected'] = ecc
        elif (m := _ROW2.match(line)) and row is not None:
            for key, grp in (('temp_c', 1), ('power_w', 2),
                             ('power_limit_w', 3), ('memory_used_mib', 4),
                             ('memory_total_mib', 5), ('util_pct', 6)):
                n = _int(m.group(grp))
                if n is not None:
                    row[key] = n
            gpus.append(row)
            row = None
        elif m := _PROC.match(line):
            apps.append({'index': int(m.group(1)), 'pid': int(m.group(2)),
                         'name': clean(m.group(3)),
                         'memory_mib': int(m.group(4))})
    fw = _FW.search(head.get('HL-SMI Version', ''))
    for gpu in gpus:
        if head.get('Driver Version'):
            gpu['driver'] = head['Driver Version']
        if fw:
            gpu['vbios'] = fw.group(1)
    return gpus, apps


def gpus(text, lenient=False):
    """[GPU record] of ``hl-smi``'s table(s); ToolError without an AIP row."""
    tables = _tables(text)
    out = [gpu for lines in (tables if lenient else tables[:1])
           for gpu in _table(lines)[0]]
    if not out and not lenient:
        raise ToolError(first_line(text) or 'no output')
    return out


def apps(text):
    """[{index, pid, name, memory_mib}] of the compute processes."""
    tables = _tables(text)
    return _table(tables[0])[1] if tables else []
