"""Numbers as a publication prints them: scaled unit, 4 digits."""
import math

from hpcval import units

# each ladder in increasing size; a unit off every ladder is kept as it is
_LADDERS = (('B/s', 'KB/s', 'MB/s', 'GB/s', 'TB/s'),
            ('KiB/s', 'MiB/s', 'GiB/s', 'TiB/s'),
            ('ns', 'us', 'ms', 's'),
            ('GFLOP/s', 'TFLOP/s'))


def sig(x, digits=4):
    """``x`` with ``digits`` significant digits, thousands separated."""
    if x is None:
        return ''
    if x == 0 or not math.isfinite(x):
        return f'{x:g}'
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(x)))))
    return f'{x:,.{decimals}f}'


def scaled_unit(unit, values):
    """The unit of ``unit``'s ladder where the largest value is >= 1."""
    ladder = next((lad for lad in _LADDERS if unit in lad), None)
    peak = max((abs(v) for v in values if v is not None and math.isfinite(v)),
               default=0)
    if ladder is None or peak == 0:
        return unit
    return next((u for u in reversed(ladder)
                 if units.convert(peak, unit, u) >= 1), ladder[0])


def scale(x, unit, to_unit):
    return None if x is None else units.convert(x, unit, to_unit)
