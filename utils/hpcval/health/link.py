"""The host <-> device link's ceiling for a host <-> device bandwidth figure:
``(width / 8) * GT/s`` of the GPU's link in the run (docs/health.md)."""
import re

from hpcval import units

#: Host <-> device figures of Comm|Scope, TransferBench p2p and hl_qual by
#: metric name; a bidirectional one adds both directions (twice the ceiling)
_ONE_WAY = re.compile(r'^((h2d|d2h|host_gpu)_bandwidth|uni_(gpu_to_cpu|'
                      r'cpu_to_gpu)|host_to_(hbm|sram)|(hbm|sram)_to_host|'
                      r'pci_(download|upload))$')
_TWO_WAY = re.compile(r'^(bidir_(gpu_to_cpu|cpu_to_gpu)|(hbm|sram)_host_'
                      r'bidir|pci_bidirectional)$')


def directions(metric):
    """1 or 2 (directions added) for a host <-> device figure, else None."""
    if _ONE_WAY.match(metric or ''):
        return 1
    return 2 if _TWO_WAY.match(metric or '') else None


def ceiling(gen, width):
    """GB/s of one direction of a PCIe Gen``gen`` x``width`` link."""
    return units.link_bandwidth(f'gen{gen}', width)


def gpu_index(component):
    """N of the component 'GPU N'; None for any other."""
    head, _, num = (component or '').partition(' ')
    return int(num) if head == 'GPU' and num.isdigit() else None


def links(record):
    """{GPU index: (gen, width, gen_max, width_max)} of the record's links."""
    out = {}
    for gpu in record.before.gpus + record.after.gpus:
        s = record.samples.get(str(gpu.index))
        old = out.get(gpu.index, (None, None, None, None))
        gens = [v for v in (gpu.pcie_gen, s and s.pcie_gen_max, old[0]) if v]
        widths = [v for v in (gpu.pcie_width, s and s.pcie_width_min, old[1])
                  if v]
        out[gpu.index] = (max(gens, default=None), min(widths, default=None),
                          gpu.pcie_gen_max or old[2],
                          gpu.pcie_width_max or old[3])
    return out


def context(record, component, metric, value, unit):
    """A narrow or slow link as the cause of a host <-> device figure, or
    the figure's share of the ceiling ('': another figure, or no link)."""
    n = directions(metric)
    if not n or record is None or not isinstance(value, (int, float)):
        return ''
    try:
        gbs = units.convert(value, unit, 'GB/s')
    except ValueError:
        return ''
    want = gpu_index(component)
    found = {i: l for i, l in links(record).items()
             if (want is None or i == want) and l[0] and l[1]}
    if not found:
        return ''
    narrow = []
    for idx, (gen, width, gen_max, width_max) in sorted(found.items()):
        if (width_max and width < width_max) or (gen_max and gen < gen_max):
            full = (gen_max or gen, width_max or width)
            top = n * ceiling(gen, width)
            # above the trained link's ceiling: the link was not in that
            # state during the transfer
            when = ' at some point of the run' if gbs > top else ''
            narrow.append(f'GPU {idx}\'s link trained at Gen{gen} x{width}'
                          f'{when} (ceiling {top:.1f} GB/s), below the '
                          f'Gen{full[0]} x{full[1]} it can train '
                          f'({n * ceiling(*full):.1f} GB/s)')
    if narrow:
        return '; '.join(narrow)
    idx, (gen, width, _, _) = min(found.items(),
                                  key=lambda kv: ceiling(*kv[1][:2]))
    top = n * ceiling(gen, width)
    return (f'{gbs / top:.0%} of the Gen{gen} x{width} link\'s ceiling '
            f'{top:.1f} GB/s (width / 8 x GT/s'
            f'{", both directions" if n == 2 else ""})')
