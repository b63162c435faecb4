"""Kernel log records of GPU and PCIe faults, read by their driver's own
prefix only (docs/health.md); hpcval.health.catalogue says which fail."""
import itertools
import re

from hpcval.health import catalogue
from hpcval.records import unreadable
from hpcval.health.common import BDF, clean

# dmesg's seconds since boot, or dmesg -T's clock time
_STAMP = re.compile(r'^\[(?:\s*\d+\.\d+|\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d '
                    r'\d{4})\]\s?')
# the driver's own format: "NVRM: Xid (PCI:%04x:%02x:%02x[ GPU-I:..]): %d, "
_XID = re.compile(r'^NVRM: Xid \(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:'
                  r'[0-9a-fA-F]{2})(?: GPU-I:\d+)?(?: GPU-CI:\d+)?\): '
                  r'(\d{1,4}),')
# appended by the driver after the message, so it ends the record
_CAUSED_BY = re.compile(r' caused by previous Xid (\d{1,4})$')
# the NVSwitch driver's "nvidia-nvswitch%d: SXid (PCI:%s): %05d, "
_SXID = re.compile(r'^(nvidia-nvswitch\d{1,3}): SXid \(PCI:(' + BDF +
                   r')\): (\d{1,5}), (.*)$')
_SXID_WORD = re.compile(r'(Fatal|Non-fatal), (?:Link (\d{1,3}) )?')
_NVRM_GPU = re.compile(r'^NVRM: (?:GPU (?:at )?(?:PCI:)?|The NVIDIA GPU )(' +
                       BDF + r')\b')
_INIT = re.compile(r'RmInitAdapter failed|rm_init_adapter failed|'
                   r'Cannot initialize GSP firmware')
# the kernel's own lines about a user's process: "NAME[PID]: segfault at",
# "traps: NAME[PID] general protection"; NAME is at most 15 characters
_USER = re.compile(r'^(?:traps: )?.{1,15}\[\d+\]:? ')
_GSP = re.compile(r'^NVRM: (?:RmInitAdapter: )?Cannot initialize GSP '
                  r'firmware RM\.?$')
_DRIVER = re.compile(r'^(amdgpu|habanalabs|nvidia|pcieport) (' + BDF + r'): ')
_HL_NAME = re.compile(r'^habanalabs hl\d{1,3}: ')
_DRM_AMD = re.compile(r'^\[drm:[\w.]+ \[amdgpu\]\] \*ERROR\* ')
_AER = re.compile(r'AER: (?:Multiple )?(Corrected|Correctable|Uncorrected '
                  r'\((?:Fatal|Non-Fatal)\)|Uncorrectable \((?:Fatal|'
                  r'Non-Fatal)\)) error')
_AER_SOURCE = re.compile(r'error (?:message )?received(?: from)?:? (?:id=)?'
                         r'(' + BDF + r')')
_AMD_ERR = re.compile(r'error|fault|timeout|hang|reset|RAS|poison|failed',
                      re.IGNORECASE)
# "habanalabs 0000:1a:00.0: Failed to initialize hl2. Device is NOT usable !"
# names the device only in its "Failed" line (HabanaAI/Setup_and_Install#1)
_HL_ERR = re.compile(r'error|fault|fail|timeout|reset|ECC|critical',
                     re.IGNORECASE)
_MOST = 400
#: A record is kept (and read) to this many characters.
LINE_CHARS = 400


def records(text):
    """Records: a time-stamped line joined with the indented lines after it."""
    lines = [line.rstrip('\r') for line in text.split('\n')]
    stamped = any(_STAMP.match(line) for line in lines)
    out = []
    for raw in lines:
        if not raw.strip():
            continue
        if out and ((stamped and not _STAMP.match(raw)) or
                    (not stamped and raw[:1] in (' ', '\t'))):
            out[-1] += ' ' + raw.strip()
        else:
            out.append(raw.rstrip())
    return out


def _message(record):
    return _STAMP.sub('', record, count=1)


def _sxid_word(m):
    """(``Fatal`` / ``Non-fatal`` or '', link or None) of an SXid match."""
    word = _SXID_WORD.match(m.group(4))
    if not word:
        return '', None
    return word.group(1), int(word.group(2)) if word.group(2) else None


def switch(line):
    """(switch, link or None) an SXid record names; else None."""
    m = _SXID.match(_message(line))
    return (m.group(1), _sxid_word(m)[1]) if m else None


def _event(kind, bus, code, line, said='', **extra):
    """``said``: an SXid's own Fatal / Non-fatal word, which decides it."""
    key = catalogue.kernel_key(kind, code)
    return {'kind': kind, 'bus_id': bus.lower(), 'code': code, 'line': line,
            'fatal': catalogue.fails(key, code, said=said, **extra),
            'what': catalogue.kernel_what(kind, code, **extra), **extra}


def event(record):
    """The event of one kernel log record; None for no GPU or PCIe fault."""
    # read from the line as recorded, so that the verdict, reading the
    # recorded line again, finds the same event (hpcval.health.judge)
    line = clean(record, LINE_CHARS)
    msg = _message(line)
    if _USER.match(msg):
        return None
    if m := _XID.match(msg):
        cause = _CAUSED_BY.search(msg)
        extra = {'caused_by': int(cause.group(1))} if cause else {}
        return _event('xid', m.group(1), int(m.group(2)), line, **extra)
    if m := _SXID.match(msg):
        return _event('sxid', m.group(2), int(m.group(3)), line,
                      said=_sxid_word(m)[0])
    m = _NVRM_GPU.match(msg)
    if m and 'fallen off the bus' in msg:
        return _event('nvrm', m.group(1), 'fallen_off_bus', line)
    if m and _INIT.search(msg):
        return _event('nvrm', m.group(1), 'init_failed', line)
    if _GSP.match(msg):
        return _event('nvrm', '', 'init_failed', line)
    m = _DRIVER.match(msg)
    # one event per "error received" line; the "PCIe Bus Error:" lines
    # after it detail the same error
    aer = _AER.search(msg) if m else None
    if aer:
        src = _AER_SOURCE.search(msg)
        bus = src.group(1) if src else m.group(2)
        word = aer.group(1)
        severity = 'Non-Fatal' if 'Non-Fatal' in word else \
            'Fatal' if 'Fatal' in word else 'Corrected'
        return _event('aer', bus, severity, line)
    if m and m.group(1) == 'amdgpu' and _AMD_ERR.search(msg):
        return _event('amdgpu', m.group(2), '', line)
    if _DRM_AMD.match(msg):
        return _event('amdgpu', '', '', line)
    if m and m.group(1) == 'habanalabs' and _HL_ERR.search(msg):
        return _event('habanalabs', m.group(2), '', line)
    if _HL_NAME.match(msg) and _HL_ERR.search(msg):
        return _event('habanalabs', '', '', line)
    return None


def events(text):
    """[{kind, bus_id, code, fatal, what, line}] of faults (<=400)."""
    found = (ev for ev in map(event, records(text)) if ev is not None)
    return list(itertools.islice(found, _MOST))


def _parts(bus):
    """(domain, bus, device) of a PCI address (long or Xid-short form)."""
    m = re.fullmatch(r'(?:([0-9a-f]{4,8}):)?([0-9a-f]{2}):([0-9a-f]{2})'
                     r'(?:\.[0-7])?', (bus or '').strip().lower())
    if not m:
        return None
    return int(m.group(1) or '0', 16), m.group(2), m.group(3)


def same_device(bus_a, bus_b):
    """Whether two PCI addresses name one device (a GPU is function 0)."""
    a, b = _parts(bus_a), _parts(bus_b)
    return a is not None and a == b


def check(record):
    """``record`` once each kernel event reads as a fault; else Unreadable."""
    for i, ev in enumerate(record.kernel_events if record else ()):
        if event(ev.line) is None:
            raise unreadable('not a kernel log record of a GPU or PCIe '
                             'fault', f'$.kernel_events[{i}].line', ev.line)
    return record
