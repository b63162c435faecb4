"""nvidia-smi ``--query-gpu`` / ``--query-compute-apps`` CSV into GPU records.

The fields were each checked on driver 580.159.04 (H100); an older driver
that rejects one (``Field "..." is not a valid field to query.``, exit 2)
is asked again with ``BASIC_FIELDS`` by the probe.  Columns are read by
their header, so either list (and ``--format=csv,nounits``) parses.
"""
import csv
import io

from hpcval.health.common import clean, first_line, header_name, value

TOOL = 'nvidia-smi'

FIELDS = (
    'index', 'name', 'uuid', 'serial', 'pci.bus_id', 'vbios_version',
    'driver_version', 'memory.total', 'memory.used',
    'pcie.link.gen.current', 'pcie.link.gen.max', 'pcie.link.width.current',
    'pcie.link.width.max', 'clocks_event_reasons.active',
    'clocks_event_reasons_counters.sw_power_cap',
    'clocks_event_reasons_counters.sw_thermal_slowdown',
    'clocks_event_reasons_counters.hw_thermal_slowdown',
    'clocks_event_reasons_counters.hw_power_brake_slowdown',
    'power.draw', 'power.limit', 'temperature.gpu', 'temperature.memory',
    'utilization.gpu', 'utilization.memory', 'clocks.sm', 'clocks.max.sm',
    'ecc.errors.corrected.volatile.total',
    'ecc.errors.uncorrected.volatile.total', 'retired_pages.pending',
    'remapped_rows.uncorrectable', 'remapped_rows.pending',
    'remapped_rows.failure')

#: Fields drivers before the clock-event names (R535) know.
BASIC_FIELDS = (
    'index', 'name', 'uuid', 'serial', 'pci.bus_id', 'vbios_version',
    'driver_version', 'memory.total', 'memory.used',
    'pcie.link.gen.current', 'pcie.link.gen.max', 'pcie.link.width.current',
    'pcie.link.width.max', 'clocks_throttle_reasons.active', 'power.draw',
    'power.limit', 'temperature.gpu', 'utilization.gpu', 'clocks.sm',
    'ecc.errors.corrected.volatile.total',
    'ecc.errors.uncorrected.volatile.total', 'retired_pages.pending')

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

# header as printed (nvidia-smi prints some under another name) -> key
_KEYS = {
    'index': 'index', 'name': 'model', 'uuid': 'uuid', 'serial': 'serial',
    'pci.bus_id': 'bus_id', 'vbios_version': 'vbios',
    'driver_version': 'driver', 'memory.total': 'memory_total_mib',
    'memory.used': 'memory_used_mib', 'pcie.link.gen.current': 'pcie_gen',
    'pcie.link.gen.max': 'pcie_gen_max',
    'pcie.link.width.current': 'pcie_width',
    'pcie.link.width.max': 'pcie_width_max',
    'clocks_event_reasons.active': 'reasons',
    'clocks_throttle_reasons.active': 'reasons',
    'power.draw': 'power_w', 'power.limit': 'power_limit_w',
    'temperature.gpu': 'temp_c', 'temperature.memory': 'temp_mem_c',
    'utilization.gpu': 'util_pct', 'utilization.memory': 'mem_util_pct',
    'clocks.current.sm': 'sm_mhz', 'clocks.sm': 'sm_mhz',
    'clocks.max.sm': 'sm_max_mhz',
    'ecc.errors.corrected.volatile.total': 'ecc_corrected',
    'ecc.errors.uncorrected.volatile.total': 'ecc_uncorrected',
    'retired_pages.pending': 'retired_pending',
    'remapped_rows.uncorrectable': 'remapped_uncorrectable',
    'remapped_rows.pending': 'remap_pending',
    'remapped_rows.failure': 'remap_failure',
    'timestamp': 'time',
}
_COUNTERS = 'clocks_event_reasons_counters.'


#: Record keys kept as text (a serial of digits is not a number).
TEXT_KEYS = ('model', 'uuid', 'serial', 'bus_id', 'vbios', 'driver',
             'time')


class ToolError(ValueError):
    """The tool's output is not what it prints when it works."""


def reasons(mask):
    """Active slow-down reasons of a clocks-event bit mask, by name."""
    if not isinstance(mask, int) or isinstance(mask, bool):
        return []
    return [name for bit, name in REASON_BITS.items() if mask & bit]


def _rows(text, lenient=False):
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].lower().startswith(('index', 'timestamp',
                                                      'gpu_uuid')):
        raise ToolError(first_line(text) or 'no output')
    reader = csv.reader(io.StringIO('\n'.join(lines)),
                        skipinitialspace=True)
    header = [header_name(h) for h in next(reader)]
    for row in reader:
        if len(row) != len(header):
            if lenient:         # a sampler stopped mid-line
                continue
            raise ToolError(f'a row of {len(row)} fields under a header of '
                            f'{len(header)}: {first_line(",".join(row))}')
        yield header, row


def gpus(text, lenient=False):
    """[GPU record] of ``--query-gpu=... --format=csv`` output (header
    line first).  Raises ToolError naming the tool's own message when the
    output is not a table (a failing driver prints one line); ``lenient``
    skips rows cut short (a sampler's last line)."""
    out = []
    for header, row in _rows(text, lenient):
        gpu, counters = {}, {}
        for name, raw in zip(header, row):
            if name.startswith(_COUNTERS):
                counters[name[len(_COUNTERS):]] = value(raw)
            elif name in _KEYS and _KEYS[name] not in gpu:
                key = _KEYS[name]
                gpu[key] = (clean(raw) or None) if key in TEXT_KEYS \
                    else value(raw)
        if not isinstance(gpu.get('index'), int):
            if lenient:
                continue
            raise ToolError(f'no GPU index in {first_line(",".join(row))}')
        gpu['throttle'] = reasons(gpu.pop('reasons', None))
        if counters:
            gpu['throttle_us'] = {k: v for k, v in counters.items()
                                  if isinstance(v, (int, float))}
        out.append(gpu)
    return out


def apps(text):
    """[{uuid, pid, name, memory_mib}] of ``--query-compute-apps`` CSV."""
    if not text.strip():
        return []
    out = []
    for header, row in _rows(text):
        rec = dict(zip(header, (value(r) for r in row)))
        out.append({'uuid': rec.get('gpu_uuid'), 'pid': rec.get('pid'),
                    'name': rec.get('process_name'),
                    'memory_mib': rec.get('used_gpu_memory')})
    return out
