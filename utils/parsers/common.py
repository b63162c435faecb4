"""What every parser shares: the error type and strict number conversion."""
import math


class ParseError(ValueError):
    """The output lacks something the benchmark must print, or holds junk."""


def number(token, what):
    """Convert ``token`` to a finite float or raise ParseError naming ``what``.

    ``N/A``, ``nan`` and ``inf`` are rejected: a benchmark that prints them
    has not measured anything, and a NaN silently passes every comparison.
    """
    try:
        value = float(token)
    except (TypeError, ValueError):
        raise ParseError(f'{what}: {token!r} is not a number') from None

    if not math.isfinite(value):
        raise ParseError(f'{what}: {token!r} is not a finite number')

    return value


def read_text(path):
    """Read a benchmark log as UTF-8, keeping undecodable bytes visible."""
    with open(path, encoding='utf-8', errors='replace') as fp:
        return fp.read()
