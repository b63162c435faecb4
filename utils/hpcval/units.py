"""Units of the figures hpcval measures, and conversion within a family."""
import math
import sys

_FAMILIES = {
    'bandwidth': {
        'B/s': 1.0, 'KB/s': 1e3, 'MB/s': 1e6, 'GB/s': 1e9, 'TB/s': 1e12,
        'KiB/s': 2**10, 'MiB/s': 2**20, 'GiB/s': 2**30, 'TiB/s': 2**40,
    },
    'time': {'s': 1.0, 'ms': 1e-3, 'us': 1e-6, 'ns': 1e-9},
    'flops': {'MFLOP/s': 1e6, 'GFLOP/s': 1e9, 'TFLOP/s': 1e12},
    'rate': {'IOPS': 1.0, 'op/s': 1.0},
    # what the GPU tools sample during a run
    'clock': {'MHz': 1e6, 'GHz': 1e9},
    'power': {'W': 1.0},
    'temperature': {'C': 1.0},
    # a figure over another of its kind (a GPU's over its siblings')
    'ratio': {'x': 1.0},
}
_FAMILY_OF = {u: f for f, units in _FAMILIES.items() for u in units}
KNOWN_UNITS = frozenset(_FAMILY_OF)


def family(unit):
    try:
        return _FAMILY_OF[unit]
    except KeyError:
        raise ValueError(f'unknown unit {unit!r} (known: '
                         f'{", ".join(sorted(KNOWN_UNITS))})') from None


def extremes(unit):
    """The units of ``unit``'s family giving the most and fewest digits."""
    scale = _FAMILIES[family(unit)]
    return min(scale, key=scale.get), max(scale, key=scale.get)


def convert(value, from_unit, to_unit):
    """``value`` in ``from_unit`` expressed in ``to_unit``."""
    if from_unit == to_unit:
        # exact (through the base unit 7.7 us would be 7.6999...), and a
        # unit hpcval does not know converts to itself
        return value
    src, dst = family(from_unit), family(to_unit)
    if src != dst:
        raise ValueError(f'cannot convert {from_unit} ({src}) to '
                         f'{to_unit} ({dst})')
    return value * _FAMILIES[src][from_unit] / _FAMILIES[dst][to_unit]


#: Suffixes of sizes in metric names (``bandwidth_4MiB``) and on axes (``8G``)
METRIC_SIZES = (('MiB', 20), ('KiB', 10))
AXIS_SIZES = (('G', 30), ('M', 20), ('K', 10))


def size_label(nbytes, suffixes=METRIC_SIZES, unit='B'):
    """8 -> '8B', 4194304 -> '4MiB'; exact multiples only take a suffix."""
    for suffix, shift in suffixes:
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f'{nbytes >> shift}{suffix}'
    return f'{nbytes}{unit}'


def better(unit):
    """'lower' for times, 'higher' for the rest, 'unknown' if not known."""
    fam = _FAMILY_OF.get(unit)
    return 'unknown' if fam is None else 'lower' if fam == 'time' else 'higher'


#: The smallest figure of a family a benchmark can have measured, in the
#: family's first unit: no timer resolves a picosecond (a clock cycle is
#: 200 ps at 5 GHz), and no benchmark moves under a byte or a FLOP in a
#: second; a rate (IOPS) may be a fraction of one per second.
_FLOORS = {'time': (1e-12, '1 ps'), 'bandwidth': (1.0, '1 B/s'),
           'flops': (1e-6, '1 FLOP/s'),
           'rate': (sys.float_info.min, '2.2e-308 (subnormal)')}


def outside_range(name, value, unit, zero_ok=False):
    """Why ``name`` = ``value`` ``unit`` cannot be a measurement, or None:
    not finite, negative, or under its family's floor (0 passes zero_ok)."""
    shown = f'{name} = {value:g} {unit}'
    if not math.isfinite(value):
        return f'{shown} is not a finite number'
    fam = _FAMILY_OF.get(unit)
    if fam is None:
        return None
    if math.copysign(1.0, value) < 0:   # -0.0 too: computed from a negative
        return f'{shown} is negative: a {fam} never is'
    if fam not in _FLOORS or (value == 0 and zero_ok):
        return None
    if value == 0:
        return f'{shown}: a {fam} of 0 is no measurement'
    floor, words = _FLOORS[fam]
    if convert(value, unit, next(iter(_FAMILIES[fam]))) < floor:
        return (f'{shown} is below {words}, smaller than any '
                f'benchmark measures')
    return None


#: GT/s per lane of each PCIe generation
SPEED_GT_S = {'gen1': 2.5, 'gen2': 5.0, 'gen3': 8.0, 'gen4': 16.0,
              'gen5': 32.0}


def link_bandwidth(gen, width):
    """GB/s of one direction of a PCIe link: ``(width / 8.0) * speed``."""
    if gen not in SPEED_GT_S:
        raise ValueError(f'unknown PCIe generation {gen!r} (one of '
                         f'{", ".join(SPEED_GT_S)})')
    if width not in (1, 2, 4, 8, 12, 16, 32):
        raise ValueError(f'PCIe width x{width} does not exist')
    return (width / 8.0) * SPEED_GT_S[gen]
