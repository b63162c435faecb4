"""nvidia-smi ``--query-gpu`` / ``--query-compute-apps`` CSV into GPU records,
columns read by their header (fields checked on driver 580.159.04)."""
import csv
import io
import re

import msgspec

from hpcval import records
from hpcval.health.common import clean, first_line, header_name, value

TOOL = 'nvidia-smi'

_COUNTERS = 'clocks_event_reasons_counters.'
#: The fields the probe asks, in order, and the GPU record key of each (a
#: slow-down counter's is its reason in ``throttle_us``).
_ASKED = {
    'index': 'index', 'name': 'model', 'uuid': 'uuid', 'serial': 'serial',
    'pci.bus_id': 'bus_id', 'vbios_version': 'vbios',
    'driver_version': 'driver', 'memory.total': 'memory_total_mib',
    'memory.used': 'memory_used_mib', 'pcie.link.gen.current': 'pcie_gen',
    'pcie.link.gen.max': 'pcie_gen_max',
    'pcie.link.width.current': 'pcie_width',
    'pcie.link.width.max': 'pcie_width_max',
    'clocks_event_reasons.active': 'reasons',
    **{_COUNTERS + why: 'throttle_us' for why in (
        'sw_power_cap', 'sw_thermal_slowdown', 'hw_thermal_slowdown',
        'hw_power_brake_slowdown')},
    'power.draw': 'power_w', 'power.limit': 'power_limit_w',
    'temperature.gpu': 'temp_c', 'temperature.memory': 'temp_mem_c',
    'utilization.gpu': 'util_pct', 'utilization.memory': 'mem_util_pct',
    'clocks.sm': 'sm_mhz', 'clocks.max.sm': 'sm_max_mhz',
    'ecc.errors.corrected.volatile.total': 'ecc_corrected',
    'ecc.errors.uncorrected.volatile.total': 'ecc_uncorrected',
    'retired_pages.pending': 'retired_pending',
    'remapped_rows.uncorrectable': 'remapped_uncorrectable',
    'remapped_rows.pending': 'remap_pending',
    'remapped_rows.failure': 'remap_failure'}
FIELDS = tuple(_ASKED)
# header as printed -> key: nvidia-smi prints some fields under another
# name, and the sampler asks the time
_KEYS = {**_ASKED, 'clocks_throttle_reasons.active': 'reasons',
         'clocks.current.sm': 'sm_mhz', 'timestamp': 'time'}

#: What the ~1 Hz sampler asks for.
SAMPLE_FIELDS = (
    'timestamp', 'index', 'pcie.link.gen.current', 'pcie.link.width.current',
    'clocks_event_reasons.active', 'power.draw', 'power.limit',
    'temperature.gpu', 'temperature.memory', 'utilization.gpu',
    'utilization.memory', 'memory.used', 'clocks.sm')
BASIC_SAMPLE_FIELDS = (
    'timestamp', 'index', 'pcie.link.gen.current', 'pcie.link.width.current',
    'clocks_throttle_reasons.active', 'power.draw', 'power.limit',
    'temperature.gpu', 'utilization.gpu', 'memory.used', 'clocks.sm')

APPS_FIELDS = ('gpu_uuid', 'pid', 'process_name', 'used_gpu_memory')

# nvmlClocksEventReasons bits (nvml.h); idle, application clocks, sync
# boost and display clocks slow nothing down that a benchmark would feel
REASON_BITS = {
    0x4: 'sw_power_cap', 0x8: 'hw_slowdown', 0x20: 'sw_thermal_slowdown',
    0x40: 'hw_thermal_slowdown', 0x80: 'hw_power_brake_slowdown'}

#: Record keys kept as text (a serial of digits is not a number).
TEXT_KEYS = ('model', 'uuid', 'serial', 'bus_id', 'vbios', 'driver', 'time')

#: What nvidia-smi prints where a field does not apply or may not be read;
#: any other bracketed text ([GPU is lost]...) is a state of the GPU.
NO_VALUE = ('[n/a]', '[not supported]', '[insufficient permissions]')
#: Fields every working GPU has a value for: N/A in one is a state too.
REQUIRED = ('name', 'uuid', 'pci.bus_id', 'memory.total')
_STATE = re.compile(r'\[[^\[\]]+\]')
#: A state is kept to this many characters.
STATE_CHARS = 60


def state(name, raw):
    """The bracketed state printed for ``name`` if it is a fault, else None."""
    text = clean(raw)
    if not _STATE.fullmatch(text) or (text.lower() in NO_VALUE and
                                      name not in REQUIRED):
        return None
    return text if len(text) <= STATE_CHARS else \
        text[:STATE_CHARS - 4] + '...]'


class ToolError(ValueError):
    """The tool's output is not what it prints when it works."""


def reasons(mask):
    """Active slow-down reasons of a clocks-event bit mask, by name."""
    if not isinstance(mask, int) or isinstance(mask, bool):
        return []
    return [name for bit, name in REASON_BITS.items() if mask & bit]


_HEADS = ('index', 'timestamp', 'gpu_uuid')
#: nvidia-smi's PCI address of a GPU: a domain of 4 or 8 digits
_BUS = r'[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]'
# what nvidia-smi prints between or before the rows of a table:
# "WARNING: infoROM is corrupted at gpu 0000:B3:00.0" (exit 14)
_WARNING = re.compile(rf'^(WARNING|NOTICE|ERROR): (.*?)'
                      rf'(?: at gpu ({_BUS}))?\.?$')


def _lines(text):
    """Lines split at newlines only: a name may hold other line breaks."""
    return [line.rstrip('\r') for line in text.split('\n')]


def warnings(text):
    """[(bus id or '', message)] of the warnings among a table's lines."""
    return [((m.group(3) or '').lower(), clean(f'{m.group(1)}: {m.group(2)}'))
            for line in _lines(text) for m in [_WARNING.match(line.strip())]
            if m]


def _rows(text, lenient=False):
    lines = [line for line in _lines(text) if line.strip() and
             not _WARNING.match(line.strip())]
    if not lines or not lines[0].lower().startswith(_HEADS):
        raise ToolError(first_line(text) or 'no output')
    reader = csv.reader(io.StringIO('\n'.join(lines)), skipinitialspace=True)
    header = [header_name(h) for h in next(reader)]
    for row in reader:
        if len(row) != len(header):
            if lenient:         # a sampler stopped mid-line
                continue
            raise ToolError(f'a row of {len(row)} fields under a header of '
                            f'{len(header)}: {first_line(",".join(row))}')
        yield header, row


def gpus(text, lenient=False):
    """[GPU record] of ``--query-gpu`` CSV; ``lenient`` skips cut rows."""
    out = []
    for header, row in _rows(text, lenient):
        gpu, counters, states = {}, {}, {}
        for name, raw in zip(header, row):
            found = state(name, raw) if name != 'index' else None
            if found:
                states[name] = found
            elif name.startswith(_COUNTERS):
                counters[name[len(_COUNTERS):]] = value(raw)
            elif name in _KEYS and _KEYS[name] not in gpu:
                key = _KEYS[name]
                # a text field of N/A (a serial it does not know) is none
                gpu[key] = (clean(raw) if value(raw) is not None else None) \
                    if key in TEXT_KEYS else value(raw)
        if not isinstance(gpu.get('index'), int):
            if lenient:
                continue
            raise ToolError(f'no GPU index in {first_line(",".join(row))}')
        gpu['throttle'] = reasons(gpu.pop('reasons', None))
        if counters:
            gpu['throttle_us'] = {k: v for k, v in counters.items()
                                  if _valid(v, records.Amount) is not None}
        if states:
            gpu['states'] = states
        out.append(gpu)
    return out


_UUID = re.compile(r'(?:GPU|MIG)-[0-9a-fA-F-]{8,}')


def _valid(v, typ):
    """``v`` where the health record's type admits it (hpcval.records)."""
    try:
        return msgspec.convert(v, typ)
    except msgspec.ValidationError:
        return None


def apps(text):
    """[{uuid, pid, name, memory_mib}] of ``--query-compute-apps`` CSV; the
    name (its owner's choice) lies between columns read from both ends."""
    header, rows = None, []
    for line in _lines(text):
        if _WARNING.match(line.strip()) or not line.strip():
            continue
        if header is None:
            if not line.lower().startswith('gpu_uuid'):
                raise ToolError(first_line(text) or 'no output')
            header = [header_name(h) for h in line.split(',')]
        elif _UUID.fullmatch(line.split(',', 1)[0].strip()):
            rows.append(line)
        elif rows:
            rows[-1] += '?' + line
    if header is None:
        return []
    at = header.index('process_name') if 'process_name' in header else None
    out = []
    for row in rows:
        cells = row.split(',')
        if at is None or len(cells) < len(header):
            raise ToolError(f'a process row of {len(cells)} fields under a '
                            f'header of {len(header)}')
        tail = len(header) - at - 1
        rec = dict(zip(header[:at], cells[:at]))
        rec.update(zip(header[at + 1:], cells[len(cells) - tail:]))
        name = ','.join(cells[at:len(cells) - tail])
        pid = value(rec.get('pid', ''))
        mem = value(rec.get('used_gpu_memory', ''))
        out.append({'uuid': clean(rec.get('gpu_uuid', '')) or None,
                    'pid': _valid(pid, records.Count),
                    'name': clean(name, 100),
                    'memory_mib': _valid(mem, records.Amount)})
    return out


_GPU_HEAD = re.compile(r'^GPU (\d+): (.*?) \(UUID: ([^)]*)\)$')
_LINK = re.compile(r'^Link (\d+): (.*)$')
_LINK_ERR = re.compile(r'^(.*?) Errors?: (\d+|N/A)$', re.IGNORECASE)


def _by_gpu(text):
    """{GPU index: [(link, rest)]} of ``nvidia-smi nvlink -s`` / ``-e``."""
    out, cur = {}, None
    for line in _lines(text):
        line = line.strip()
        if m := _GPU_HEAD.match(line):
            cur = out.setdefault(int(m.group(1)), [])
        elif (m := _LINK.match(line)) and cur is not None:
            cur.append((int(m.group(1)), m.group(2).strip()))
    return out


def nvlink_status(text):
    """{GPU index: {link: GB/s, or None where inactive}} of ``nvlink -s``."""
    def speed(rest):
        v = value(rest.replace('GB/s', ''))
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) \
            else None
    return {idx: {link: speed(rest) for link, rest in links}
            for idx, links in _by_gpu(text).items()}


def nvlink_errors(text):
    """{GPU index: {link: {'replay': n, 'crc': n, ...}}} of ``nvlink -e``."""
    out = {}
    for idx, links in _by_gpu(text).items():
        out[idx] = {}
        for link, rest in links:
            m = _LINK_ERR.match(rest)
            if m and m.group(2).isdigit():
                kind = re.sub(r'[^a-z]+', '_', m.group(1).lower()).strip('_')
                out[idx].setdefault(link, {})[kind] = int(m.group(2))
    return out


_Q_GPU = re.compile(rf'^GPU ({_BUS})$')


def pcie_replays(text):
    """{bus id: replays since reset, or None: N/A (a vGPU guest's)}."""
    out, bus = {}, None
    for line in _lines(text):
        m = _Q_GPU.match(line.strip())
        bus = m.group(1) if m else bus
        key, _, val = line.partition(':')
        val = value(val)
        if bus and key.strip() == 'Replays Since Reset' and \
                (val is None or type(val) is int and val >= 0):
            out[bus] = val
    return out
