"""What of a node's health record fails it, and why a figure was low."""
import collections

from hpcval.health import kernel_log, link
from hpcval.health.common import (  # noqa: F401 (docs: judge.MESSAGE_CHARS)
    BUSY_PCT, MESSAGE_CHARS, clean)

#: Slow-downs a healthy GPU never shows under a benchmark: any sample with
#: one active fails the GPU (docs/health.md).
FAILING_REASONS = {
    'hw_slowdown': 'HW slowdown', 'hw_thermal_slowdown': 'HW thermal slowdown',
    'sw_thermal_slowdown': 'SW thermal slowdown',
    'hw_power_brake_slowdown': 'HW power brake',
    # amd-smi violation status (hpcval.health.amd)
    'prochot': 'PROCHOT', 'socket_thermal': 'socket thermal violation',
    'vr_thermal': 'VR thermal violation',
    'hbm_thermal': 'HBM thermal violation'}
#: Slow-downs that keep a GPU inside its power limit (amd-smi's
#: THROTTLE_STATUS names none): a cause, never a failure.
POWER_REASONS = {'sw_power_cap': 'power-capped', 'ppt': 'power-capped (PPT)',
                 'throttled': 'throttled (amd-smi THROTTLE_STATUS)'}
REASON_WORDS = {**FAILING_REASONS, **POWER_REASONS}
#: Share of the samples under the power cap that is named as a cause.
POWER_CAP_SHARE = 0.05
#: A busy GPU's graphics clock below this share of its maximum fails it
#: where a busy sibling runs above it (a node-wide limit slows all alike).
CLOCK_LOW = 0.5
#: ... and below this share it fails alone: nothing a healthy GPU does
#: under full use (ROCm/legacy-rocm-build#4414: MI300Xs at ~60 of 2100 MHz).
CLOCK_STUCK = 0.1
#: Tools whose clock is judged this way: nvidia-smi names why its clock is
#: low (clock-event reasons), AMD's tools do not.
CLOCK_TOOLS = ('amd-smi', 'rocm-smi')
#: GPU temperature, C, named beside a cause (HBM GPUs slow down from ~85).
HOT_C = 85
#: States a line names of one GPU before it says how many more.
STATE_FIELDS = 4
#: nvidia-smi's exit code and message on a node without NVIDIA GPUs.
_NO_DEVICES = 'No devices were found'
#: nvidia-smi's exit code when an infoROM is corrupted (nvidia-smi(1),
#: RETURN VALUE): the table is printed all the same.
_INFOROM_EXIT = 14


def _tool_failed(record, snap):
    rc, tool, message = snap.rc, clean(record.tool, 40), clean(snap.message)
    if snap.error:
        return f'{tool}: {clean(snap.error)}'
    if rc == 0:
        return ''
    if rc == 124:
        return (f'{message or tool + " timed out"} (a GPU that '
                f'fell off the bus hangs its tool)')
    if _NO_DEVICES in snap.message:
        return ''
    if tool == 'none':
        return message or 'no GPU tool on PATH'
    if rc == _INFOROM_EXIT and snap.gpus and snap.warnings:
        return ''       # the table is there; the warning names the GPU
    return f'{tool} failed (exit {rc}): {message}'


def _states(gpu, tool):
    """A line per state the tool printed instead of values, naming fields."""
    fields = {}
    for name, text in sorted(gpu.states.items()):
        fields.setdefault(text, []).append(name)
    return [f'{tool} printed {text} for {", ".join(names[:STATE_FIELDS])}'
            + (f' and {len(names) - STATE_FIELDS} more field(s)'
               if len(names) > STATE_FIELDS else '')
            for text, names in fields.items()]


_RESET_NEEDED = (
    ('remap_failure', 'row remapping failed'),
    ('remap_pending', 'row remapping pending (the GPU needs a reset)'),
    ('retired_pending', 'page retirement pending (the GPU needs a reset)'))


def _gpu_failures(gpu, expected, samples, tool=''):
    out = _states(gpu, clean(tool, 40))
    model = str(gpu.model or '?')
    want = expected or {}
    if want.get('model') and want['model'].lower() not in model.lower():
        out.append(f'{model}, expected {want["model"]}')
    mem = gpu.memory_total_mib
    if want.get('memory_gib') and mem is not None \
            and mem < 0.95 * want['memory_gib'] * 1024:
        out.append(f'{mem / 1024:.1f} GiB of memory, expected '
                   f'{want["memory_gib"]} GiB')
    gen = max((g for g in (gpu.pcie_gen, samples and samples.pcie_gen_max)
               if g), default=None)
    width, pcie = gpu.pcie_width, want.get('pcie')
    if pcie and width and (width < pcie['width'] or
                           (gen and gen < pcie['gen'])):
        out.append(f'PCIe Gen{gen} x{width}, expected Gen{pcie["gen"]} '
                   f'x{pcie["width"]}')
    elif not pcie and width and gpu.pcie_width_max and \
            width < gpu.pcie_width_max:
        out.append(f'PCIe x{width}, the link can train x{gpu.pcie_width_max}')
    if want.get('driver') and gpu.driver and gpu.driver != want['driver']:
        out.append(f'driver {gpu.driver}, pinned {want["driver"]}')
    if gpu.ecc_uncorrected:
        out.append(f'{gpu.ecc_uncorrected} uncorrectable ECC error(s) since '
                   f'the driver loaded')
    return out + [text for key, text in _RESET_NEEDED if getattr(gpu, key)]


def _temp(c):
    return '' if c is None else f', {c} C'


def _count_failures(record, expected):
    """The tool's failure, the GPU count, and a GPU lost before -> after."""
    want = (expected or {}).get('gpus', 0)
    model = (expected or {}).get('model', 'GPU')
    before, after = record.before, record.after
    out, first = [], None
    for phase, snap in (('before', before), ('after', after)):
        failed = _tool_failed(record, snap)
        if failed and not want and record.tool == 'none':
            continue            # no tool, and no GPU expected
        if not failed and expected is not None and len(snap.gpus) != want:
            failed = (f'{len(snap.gpus)} of {want} GPUs (expected '
                      f'{want} x {model})')
        if not failed or failed == first:
            continue
        out.append(('', failed if phase == 'before'
                    else f'after the benchmark: {failed}'))
        first = failed
    if before.gpus and not _tool_failed(record, after):
        left = {_gpu_key(g) for g in after.gpus}
        for gpu in before.gpus:
            ident = ', '.join(str(v) for v in (gpu.bus_id, gpu.uuid) if v) \
                or f'index {gpu.index}'
            if _gpu_key(gpu) not in left:
                out.append((f'GPU {gpu.index}', 'lost during the run: '
                            f'listed before the benchmark ({ident}), '
                            f'not after it'))
    return out


def _gpu_key(gpu):
    return gpu.uuid or gpu.bus_id or gpu.index


def _throttle_failures(record):
    """A line per GPU and slow-down: phases, share, growth time, peak temp."""
    seen = collections.defaultdict(lambda: {'phases': [], 'temps': []})
    for phase, snap in (('before', record.before), ('after', record.after)):
        for gpu in snap.gpus:
            for why in gpu.throttle:
                if why in FAILING_REASONS:
                    seen[gpu.index, why]['phases'].append(phase)
                    seen[gpu.index, why]['temps'].append(gpu.temp_c)
    for idx, s in record.samples.items():
        for why, share in s.throttle.items():
            if why in FAILING_REASONS:
                got = seen[int(idx), why]
                got.update(share=share, span=s.throttle_span.get(why))
                got['temps'].append(s.temp_max)
    old = {gpu.index: gpu.throttle_us for gpu in record.before.gpus}
    for gpu in record.after.gpus:
        for why, us in gpu.throttle_us.items():
            was = old.get(gpu.index, {}).get(why, us)
            if why in FAILING_REASONS and us > was:
                seen[gpu.index, why]['us'] = us - was
    out = []
    for (idx, why), got in sorted(seen.items(), key=lambda kv: (
            str(kv[0][0]), kv[0][1])):
        parts = [' and '.join(got['phases']) + ' the benchmark'] \
            if got['phases'] else []
        if 'share' in got:
            span = got['span']
            parts.append(f'{got["share"]:.0%} of the run' + (
                f' (seen {span[0]:g} s to {span[1]:g} s after its first '
                f'sample)' if span else ''))
        if 'us' in got:
            parts.append(f'{got["us"] / 1e6:.1f} s by its counter')
        hottest = max((t for t in got['temps'] if t is not None),
                      default=None)
        out.append((f'GPU {idx}', f'{FAILING_REASONS[why]} active '
                    f'{", ".join(parts)}{_temp(hottest)}'))
    return out


def _busy_clocks(record):
    """{(phase, index): (MHz, maximum MHz, use)} of each GPU seen busy."""
    top = {}
    for gpu in record.before.gpus + record.after.gpus:
        if gpu.sm_max_mhz:
            top[gpu.index] = max(top.get(gpu.index, 0), gpu.sm_max_mhz)
    out = {}
    for idx, s in record.samples.items():
        top_mhz = s.max_mhz or top.get(int(idx))
        if s.busy_n and s.busy_mhz is not None and top_mhz:
            out[('during', int(idx))] = (s.busy_mhz, top_mhz,
                                         f'{s.busy_n} of {s.n}')
    for phase, snap in (('before', record.before), ('after', record.after)):
        for gpu in snap.gpus:
            use, mhz = gpu.util_pct, gpu.sm_mhz
            top_mhz = gpu.sm_max_mhz or top.get(gpu.index)
            if use is not None and use >= BUSY_PCT and mhz is not None \
                    and top_mhz:
                out[(phase, gpu.index)] = (mhz, top_mhz, use)
    return out


def _clock_failures(record):
    """Busy AMD GPUs clocked below CLOCK_STUCK, or CLOCK_LOW beside a peer."""
    if record.tool not in CLOCK_TOOLS:
        return []
    seen = _busy_clocks(record)
    out = []
    order = ('before', 'during', 'after')
    for (phase, idx), (mhz, top, use) in sorted(
            seen.items(), key=lambda kv: (kv[0][1], order.index(kv[0][0]))):
        share = mhz / top
        fast_sibling = any(p == phase and i != idx and m >= CLOCK_LOW * t
                           for (p, i), (m, t, _) in seen.items())
        if share < CLOCK_STUCK or (share < CLOCK_LOW and fast_sibling):
            # the samples' figure is the fastest of those at busy use
            used = f'at {use:g}% use' if phase != 'during' else \
                f'at most in {use} samples at {BUSY_PCT}%+ use'
            out.append((f'GPU {idx}', f'graphics clock {mhz:g} MHz {used} '
                        f'{phase} the benchmark, {share:.0%} of its '
                        f'maximum {top:g} MHz'))
    return out


def _warning_findings(record):
    """(component, text, fails) of tool warnings: infoROM fails its GPU."""
    out = []
    gpus = _all_gpus(record)
    for bus, text in record.before.warnings + record.after.warnings:
        bus, text = clean(bus, 40), clean(text)
        inforom = 'inforom' in text.lower()
        what = (f'infoROM corrupted ({record.tool}: {text})'
                if inforom else f'{record.tool}: {text}')
        out.append((_component_of_bus(gpus, bus), what, inforom))
    return _unique(out)


def _all_gpus(record):
    return record.before.gpus or record.after.gpus


def _kernel_findings(record, fatal):
    """(component, text) per GPU and event kind/code, read from its line."""
    gpus = _all_gpus(record)
    groups = {}
    for recorded in record.kernel_events:
        ev = kernel_log.event(recorded.line)
        if ev is None or ev['fatal'] != fatal:
            continue        # the record's decoding refused such a line
        bus = ev['bus_id']
        sw = kernel_log.switch(ev['line'])
        comp = f'{sw[0]} (PCI {bus})' if sw else _component_of_bus(gpus, bus)
        groups.setdefault((comp, ev['what']), []).append(ev['line'])
    return [(comp, f'{what}{_links(lines)} in the kernel log'
                   f'{f" ({len(lines)} times)" if len(lines) > 1 else ""}: '
                   f'{lines[0]}')
            for (comp, what), lines in groups.items()]


def _links(lines):
    """The NVSwitch links SXid lines name: ' on link 63', '' for none."""
    links = sorted({sw[1] for line in lines
                    for sw in [kernel_log.switch(line)] if sw and
                    sw[1] is not None})
    return f' on link{"s" if len(links) > 1 else ""} ' \
        f'{", ".join(map(str, links))}' if links else ''


def _nvlink_failures(record, expected):
    """Inactive, fewer or slower NVLinks, and error counters that grew."""
    want = (expected or {}).get('nvlink') or {}
    found = {}      # (component, text, text after the phases) -> [phases]
    for phase, snap in (('before', record.before), ('after', record.after)):
        status = snap.nvlink.status
        if status is None and want and not _tool_failed(record, snap):
            why = clean(snap.nvlink.status_error) or 'not read by the probe'
            found.setdefault(('', 'NVLink state', f': {why} (the inventory '
                              f'expects {want.get("links")} links per GPU)'),
                             []).append(phase)
        for idx, per in sorted((status or {}).items()):
            for text in _link_findings(per, want):
                found.setdefault((f'GPU {idx}', text, ''), []).append(phase)
    out = [(comp, head + ('' if phases == ['before'] else
                          f' {" and ".join(phases)} the benchmark') + tail)
           for (comp, head, tail), phases in found.items()]
    return out + [(c, t) for c, t, fails in _nvlink_growth(record) if fails]


def _link_findings(per, want):
    """What fails in one GPU's {link: GB/s or None} against ``want``."""
    out = []
    down = sorted(int(k) for k, v in per.items() if v is None)
    out += [f'NVLink {n} inactive' for n in down]
    up = [v for v in per.values() if v is not None]
    if want.get('links') and len(up) + len(down) < want['links']:
        out.append(f'{len(up)} of {want["links"]} NVLinks active')
    for n in sorted(int(k) for k, v in per.items() if v is not None and
                    want.get('gbs') and v < 0.99 * want['gbs']):
        out.append(f'NVLink {n} at {per[str(n)]} GB/s, expected '
                   f'{want["gbs"]} GB/s')
    return out


def _nvlink_growth(record):
    """(component, text, fails) of each link counter that grew."""
    old = record.before.nvlink.errors or {}
    new = record.after.nvlink.errors or {}
    out = []
    for idx, links in sorted(new.items()):
        for lane, counts in sorted(links.items(), key=lambda kv: int(kv[0])):
            for kind, n in sorted(counts.items()):
                was = old.get(idx, {}).get(lane, {}).get(kind)
                if was is not None and n > was:
                    out.append((f'GPU {idx}', f'NVLink {lane}: {n - was} '
                                f'{kind.replace("_", " ")} error(s) during '
                                f'the benchmark', kind != 'replay'))
    return out


def failures(record, expected=None):
    """[(component, text)] of what fails ``record`` against ``expected``."""
    if record is None:
        return []
    if record.unreadable:
        return [('', clean(record.unreadable))]
    out = _count_failures(record, expected)
    if _sampler_unreadable(record):     # a probe file (docs/health.md)
        out.append(('', f'probe output unreadable: '
                        f'{clean(record.samples_error)}'))
    for gpu in record.before.gpus + record.after.gpus:
        s = record.samples.get(str(gpu.index))
        out += [(f'GPU {gpu.index}', text)
                for text in _gpu_failures(gpu, expected, s, record.tool)]
    out += _throttle_failures(record)
    out += _clock_failures(record)
    out += [(c, t) for c, t, fails in _warning_findings(record) if fails]
    out += _nvlink_failures(record, expected)
    out += _kernel_findings(record, fatal=True)
    out += _aer_growth(record, ('fatal', 'nonfatal'))
    out += [(c, t) for c, t, fails in _replay_growth(record) if fails]
    pins = (expected or {}).get('pin') or ()
    out += [(comp, f'{text} (pinned)')
            for comp, text, key in changes(record, expected) if key in pins]
    return _unique(out)


def _aer_growth(record, kinds):
    """(component, text) of each AER counter of ``kinds`` that grew."""
    words = {'cor': 'corrected'}
    return [(_component_of_bus(_all_gpus(record), dev),
             f'{grown[kind]} PCIe AER {words.get(kind, kind)} error(s) '
             f'during the benchmark')
            for dev, grown in sorted(record.aer_grown.items())
            for kind in kinds if grown.get(kind)]


#: More PCIe replays than this in one run fail the GPU: the default
#: ``max_pcie_replays`` of DCGM's PCIe plugin (its targeted stress: 160)
MAX_PCIE_REPLAYS = 80


def _replay_growth(record):
    """(component, text, fails) of PCIe replays grown, or not read."""
    unread = [('', f'PCIe replays not read {phase} the benchmark: '
                   f'{clean(snap.pcie_error)}', True)
              for phase, snap in (('before', record.before),
                                  ('after', record.after))
              if snap.pcie_error and not _tool_failed(record, snap)]
    old = record.before.pcie_replays
    return unread + [(_component_of_bus(_all_gpus(record), bus),
             f'{n - old[bus]} PCIe replay(s) during the benchmark (more '
             f'than {MAX_PCIE_REPLAYS} fail: DCGM\'s max_pcie_replays)',
             n - old[bus] > MAX_PCIE_REPLAYS)
            for bus, n in sorted(record.after.pcie_replays.items())
            if bus in old and n > old[bus]]


def _sampler_unreadable(record):
    """Whether the sampler's file was there and unreadable (empty is fine)."""
    err = record.samples_error
    return bool(err) and not err.endswith(' sampler: no output')


def firmware_word(record):
    """What the record's ``vbios`` is called: hl-smi's is the firmware."""
    return 'firmware' if record and record.tool == 'hl-smi' else 'VBIOS'


def identity(record):
    """{(component, key): value} of the kernel, driver and VBIOS shown."""
    gpus = _all_gpus(record)
    out = {}
    if record.kernel:
        out[('', 'kernel')] = record.kernel
    drivers = {g.driver for g in gpus if g.driver}
    if len(drivers) == 1:
        out[('', 'driver')] = drivers.pop()
    out.update({(f'GPU {g.index}', 'vbios'): g.vbios for g in gpus if g.vbios})
    return out


def changes(record, expected):
    """[(component, text, key)] of what differs from the baseline."""
    base = (expected or {}).get('baseline') or {}
    if record is None or not base:
        return []
    words = {'kernel': 'kernel', 'driver': 'driver',
             'vbios': firmware_word(record)}
    out = [(comp, f'{words[key]} {val}, baseline {base[key]}', key)
           for (comp, key), val in identity(record).items()
           if base.get(key) and val != base[key]]
    serials = (base.get('serials') or {}).get(record.node)
    for g in _all_gpus(record) if serials else ():
        if g.serial and str(g.serial) not in serials:
            out.append((f'GPU {g.index}', f'serial {g.serial}, '
                        f'not one of the node\'s {len(serials)} at '
                        f'calibration (another card)', 'serial'))
    return out


def _unique(items):
    return list(dict.fromkeys(items))


def _component_of_bus(gpus, bus):
    """'GPU N' at PCI address ``bus``, else 'PCI <bus>'; '' for no bus."""
    if not bus:
        return ''
    for gpu in gpus:
        if kernel_log.same_device(str(gpu.bus_id or ''), bus):
            return f'GPU {gpu.index}'
    return f'PCI {bus}'


def notes(record):
    """[(component, text)] reported but failing nothing: each once."""
    out = []
    if record is None or record.unreadable:
        return out
    if record.kernel_log:
        out.append(('', f'kernel log {clean(record.kernel_log)}'))
    out += [('', f'{record.tool}: {clean(snap.apps_error)}')
            for snap in (record.before, record.after) if snap.apps_error]
    if record.samples_error and not _sampler_unreadable(record):
        out.append(('', clean(record.samples_error)))
    before = {g.index: g.ecc_corrected for g in record.before.gpus}
    for gpu in record.after.gpus:
        a, b = gpu.ecc_corrected, before.get(gpu.index)
        if a is not None and b is not None and a > b:
            out.append((f'GPU {gpu.index}', f'{a - b} correctable ECC '
                        f'error(s) during the benchmark'))
    out += [(c, t) for c, t, fails in _warning_findings(record) if not fails]
    out += [(c, t) for c, t, fails in _nvlink_growth(record) if not fails]
    out += _kernel_findings(record, fatal=False)
    out += _aer_growth(record, ('cor',))
    out += [(c, t) for c, t, fails in _replay_growth(record) if not fails]
    out += [(comp, f'{text} before the benchmark started')
            for comp, text in _other_processes(record)]
    return _unique(out)


def gpu_identity(record):
    """[{index, model, uuid, serial, vbios, bus_id}] of a record's GPUs."""
    keys = ('index', 'model', 'uuid', 'serial', 'vbios', 'bus_id')
    return [{k: getattr(gpu, k) for k in keys if getattr(gpu, k) is not None}
            for gpu in (_all_gpus(record) if record is not None else ())]


def _other_processes(record):
    """Processes on a GPU before the benchmark started (not its own)."""
    before = record.before
    uuid_to_idx = {g.uuid: g.index for g in before.gpus}
    out = []
    for app in before.apps:
        idx = app.index if app.index is not None else uuid_to_idx.get(app.uuid)
        held = 'memory' if app.memory_mib is None else \
            f'{app.memory_mib} MiB'
        out.append((f'GPU {idx}' if idx is not None else '',
                    f'another process, {clean(app.name, 100)} (pid '
                    f'{app.pid}), held {held} on GPU {idx}'))
    return out


def cause(record, component='', figure=None):
    """Why a figure of ``component`` may be low ('': nothing stands out)."""
    if record is None:
        return ''
    idx = link.gpu_index(component)
    parts = []
    for key, s in sorted(record.samples.items(), key=lambda kv: int(kv[0])):
        if idx is not None and key != str(idx):
            continue
        shares = [f'{REASON_WORDS[w]} {v:.0%} of the time'
                  for w, v in sorted(s.throttle.items(), key=lambda kv: -kv[1])
                  if w in REASON_WORDS and (w not in POWER_REASONS or
                                            v >= POWER_CAP_SHARE)]
        if shares or (s.temp_max is not None and s.temp_max >= HOT_C):
            parts.append(f'during the run GPU {key} was '
                         f'{", ".join(shares) or "hot"}{_temp(s.temp_max)}')
    before = {g.index: g for g in record.before.gpus}
    for comp, text in _other_processes(record):
        if idx is None or comp == f'GPU {idx}':
            util = getattr(before.get(link.gpu_index(comp)), 'util_pct', 0)
            busy = f' at {util}% utilization' if isinstance(util, int) \
                and util > 0 else ''
            parts.append(f'{text}{busy} before the benchmark started')
    if not parts:
        parts = [f'GPU {key} was {gpu.util_pct}% busy before the benchmark '
                 f'started' for key, gpu in sorted(before.items())
                 if idx in (None, key) and isinstance(gpu.util_pct, int)
                 and gpu.util_pct >= 50]
    if figure:
        parts.append(link.context(record, component, *figure))
    return '; '.join(p for p in parts if p)
