"""Kernel log lines about GPUs and their PCIe links.

Lines as the kernel prints them (``dmesg``): NVIDIA Xid events (``NVRM: Xid
(PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus.``), amdgpu and
habanalabs errors, and PCIe AER reports (``pcieport 0000:00:01.1: AER:
Uncorrected (Fatal) error received: 0000:01:00.0``).
"""
import re

from hpcval.health.common import clean

_XID = re.compile(r'NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): (\d+)')
_AER = re.compile(r'AER: (Multiple )?(Corrected|Uncorrected \((Fatal|Non-Fatal)'
                  r'\)|Uncorrectable \((Fatal|Non-Fatal)\)) error')
_AER_DEV = re.compile(r'error (?:message )?received: (?:id=)?'
                      r'([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)')
_DEV = re.compile(r'(?:amdgpu|habanalabs|pcieport|nvidia) '
                  r'([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.\d)')
_AMD_ERR = re.compile(r'amdgpu.*(error|fault|timeout|hang|reset|RAS|poison)',
                      re.IGNORECASE)
# "habanalabs 0000:1a:00.0: Failed to initialize hl2. Device is NOT usable !"
# names the device only in its "Failed" line (HabanaAI/Setup_and_Install#1)
_HL_ERR = re.compile(r'habanalabs.*(error|fault|fail|timeout|reset|ECC|'
                     r'critical)', re.IGNORECASE)

#: Xid codes NVIDIA documents as application errors (a program's own
#: fault, not the GPU's): reported, not failed
APPLICATION_XIDS = {13, 31, 43, 45}


def events(text):
    """[{kind, bus_id, code, fatal, line}] of the lines of ``text`` that
    report a GPU or PCIe error.  kind: xid, amdgpu, habanalabs, aer."""
    out = []
    for raw in text.splitlines():
        line = clean(raw, 300)
        m = _XID.search(line)
        if m:
            code = int(m.group(2))
            out.append({'kind': 'xid', 'bus_id': m.group(1).lower(),
                        'code': code,
                        'fatal': code not in APPLICATION_XIDS, 'line': line})
            continue
        m = _AER.search(line)
        if m:
            dev = _AER_DEV.search(line) or _DEV.search(line)
            severity = m.group(3) or m.group(4) or 'Corrected'
            out.append({'kind': 'aer', 'bus_id': dev.group(1).lower()
                        if dev else '', 'code': severity,
                        'fatal': severity == 'Fatal', 'line': line})
            continue
        for kind, pattern in (('amdgpu', _AMD_ERR), ('habanalabs', _HL_ERR)):
            if pattern.search(line):
                dev = _DEV.search(line)
                out.append({'kind': kind, 'bus_id': dev.group(1).lower()
                            if dev else '', 'code': '', 'fatal': True,
                            'line': line})
                break
    return out


_BUS_DEV = re.compile(r'([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?$')


def same_device(bus_a, bus_b):
    """Whether two PCI addresses name one device: nvidia-smi prints
    ``00000000:3B:00.0``, the Xid line ``0000:3b:00`` (domains are 0 on
    every node hpcval has seen; bus and device decide)."""
    a = _BUS_DEV.search((bus_a or '').lower())
    b = _BUS_DEV.search((bus_b or '').lower())
    return bool(a and b) and a.groups() == b.groups()
