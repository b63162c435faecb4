"""Units of the figures hpcval measures, and conversion within a family.

A reference may be written in the unit its source published (the MI300X
guide's MB/s, Sandia's GB/s); the loader converts it to the unit the check
reports, and refuses to convert across families (GB/s to us).
"""

_FAMILIES = {
    'bandwidth': {
        'B/s': 1.0, 'KB/s': 1e3, 'MB/s': 1e6, 'GB/s': 1e9, 'TB/s': 1e12,
        'KiB/s': 2**10, 'MiB/s': 2**20, 'GiB/s': 2**30, 'TiB/s': 2**40,
    },
    'time': {'s': 1.0, 'ms': 1e-3, 'us': 1e-6, 'ns': 1e-9},
    'flops': {'MFLOP/s': 1e6, 'GFLOP/s': 1e9, 'TFLOP/s': 1e12},
    'rate': {'IOPS': 1.0, 'op/s': 1.0},
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


#: Suffixes of message sizes in metric names (``latency_8B``,
#: ``bandwidth_4MiB``) and on plot axes (``1K``, ``8G``).
METRIC_SIZES = (('MiB', 20), ('KiB', 10))
AXIS_SIZES = (('G', 30), ('M', 20), ('K', 10))


def size_label(nbytes, suffixes=METRIC_SIZES, unit='B'):
    """8 -> '8B', 4194304 -> '4MiB'; with AXIS_SIZES and unit '', 1024 ->
    '1K' and 12 -> '12'.  Only exact multiples take a suffix."""
    for suffix, shift in suffixes:
        if nbytes >= 1 << shift and nbytes % (1 << shift) == 0:
            return f'{nbytes >> shift}{suffix}'

    return f'{nbytes}{unit}'


def better(unit):
    """'lower' for times, 'higher' for everything else hpcval measures,
    'unknown' for a unit hpcval does not know (a report from elsewhere)."""
    try:
        fam = family(unit)
    except ValueError:
        return 'unknown'

    return 'lower' if fam == 'time' else 'higher'
