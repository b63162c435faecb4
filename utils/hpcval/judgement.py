"""Whether a figure passes its reference, decided here and nowhere else by
ReFrame's band (``reference_bounds``), which every reader takes from
``Band``; a figure no benchmark can produce never passes (docs/verdict.md)."""
import functools
import math
from dataclasses import dataclass

from reframe.utility.sanity import reference_bounds

from hpcval import units

PASS, FAIL = 'pass', 'fail'

#: How many times its reference in size a figure may be and still be a
#: measurement: the widest real ratio in the captured reports is 25 (a
#: generic floor of 6,000 MB/s under 150,865 MB/s); a CPU's floor under a
#: GPU's figure is about 100
IMPLAUSIBLE = 1000


def num(value, digits=6):
    return f'{value:.{digits}g}' if isinstance(value, (int, float)) \
        else str(value)


@dataclass(frozen=True)
class Band:
    reference: float
    lower: object = None        # fraction (<= 0) or None: unbounded
    upper: object = None        # fraction (>= 0) or None: unbounded
    unit: str = ''

    @classmethod
    def of(cls, reference, lower, upper, unit=''):
        """The band of a recorded figure, or None where nothing judges it."""
        return cls(reference, lower, upper, unit) \
            if _judges(reference, lower, upper) else None

    @classmethod
    def of_sample(cls, sample):
        return cls.of(sample.reference, sample.lower, sample.upper,
                      sample.unit)

    def problem(self):
        """Why ReFrame refuses these fractions for this reference, or ''."""
        return _limits(self.reference, self.lower, self.upper)[2]

    def peer_factor(self, loosest):
        """1 / the low limit of a band against peers, else None."""
        if self.reference != 1 or self.upper is not None or \
                self.unit != 'x' or not isinstance(self.lower, float) or \
                not -loosest <= self.lower < 0:
            return None
        return 1 / self.limits()[0]

    def limits(self):
        """(low, high) as the decimals they mean; None: unbounded."""
        return tuple(None if x is None else float(f'{x:.15g}')
                     for x in _limits(self.reference, self.lower,
                                      self.upper)[:2])

    def passes(self, value):
        """Inside ReFrame's limits, to the last bit, and plausible."""
        return _inside(self.reference, self.lower, self.upper, value,
                       self.unit)

    def implausible(self, value):
        """Why no benchmark measures ``value`` against this band, or ''."""
        if _plausible(self.reference, value, self.unit):
            return ''
        if _plausible(self.reference, value):
            why = units.outside_range('the figure', value, self.unit,
                                      zero_ok=_zero_ok(self.unit))
            return f'implausible: not a measurement ({why})'
        return (f'implausible: not a measurement (not finite, or more '
                f'than {IMPLAUSIBLE} times its reference)')

    def deviation(self, value):
        """(value - reference) / |reference|, None for a reference of 0."""
        if not self.reference:
            return None
        return (value - self.reference) / abs(self.reference)

    def digits(self, value):
        """Digits (6 at least) that print ``value`` unlike its limits."""
        limits = [x for x in self.limits() if x is not None and x == x]
        if not isinstance(value, (int, float)) or value != value:
            return 6
        for digits in range(6, 18):
            if all(x == value or num(x, digits) != num(value, digits)
                   for x in limits):
                return digits
        return 17

    def value_text(self, value, digits=None):
        """``value`` with the digits that set it apart from its bound."""
        return num(value, digits or self.digits(value))

    def deviation_text(self, value):
        """'+717% vs ref 0.706', or '' without a deviation."""
        dev = self.deviation(value) if isinstance(value, (int, float)) \
            and value == value else None
        if dev is None:
            return ''
        pct = dev * 100
        text = f'{pct:+.3g}%' if abs(pct) >= 1e6 else \
            f'{pct:+.0f}%' if abs(pct) >= 100 else f'{pct:+.1f}%'
        return f'{text} vs ref {num(self.reference)}'

    def bound_text(self, digits=6, source=''):
        """'>= 3.16683e+06 MB/s (ref 3.5187e+06, -10.0%)', or by ``source``."""
        if self.problem():
            return f'invalid ({self.problem()})'
        low, high = self.limits()
        parts = []
        if low is not None:
            parts.append(f'>= {num(low, digits)}')
        if high is not None:
            parts.append(f'<= {num(high, digits)}')
        tol = ', '.join(f'{t:+.1%}' for t in (self.lower, self.upper)
                        if t is not None)
        return (f'{" and ".join(parts)} {self.unit} (' + (
            source or f'ref {num(self.reference)}, {tol}') + ')')

    def range_text(self):
        """'low .. high' with 'unbounded' on an open side."""
        low, high = self.limits()
        return (f'{"unbounded" if low is None else format(low, "g")} .. '
                f'{"unbounded" if high is None else format(high, "g")}')


@functools.lru_cache(maxsize=4096)
def _limits(reference, lower, upper):
    # cached: a database of 100,000 runs holds a few hundred bands
    try:
        low, high = reference_bounds(reference, lower, upper)
    except (ValueError, TypeError) as err:
        return math.nan, math.nan, f'reference {num(reference)}: {err}'
    return (None if low == -math.inf else low,
            None if high == math.inf else high, '')


def _plausible(reference, value, unit=''):
    # far below a reference is a count of 0 errors as well as a broken
    # benchmark, and a lower bound catches the latter; a time has no 0
    if not (isinstance(value, (int, float)) and math.isfinite(value) and
            (not reference or abs(value) <= abs(reference) * IMPLAUSIBLE)):
        return False
    # every unit's physical floor is far below 1e-3 of it: cheap for the
    # millions of figures a verdict reads
    return value >= 1e-3 or not unit or units.outside_range(
        '', value, unit, zero_ok=_zero_ok(unit)) is None


def _zero_ok(unit):
    return units.better(unit) != 'lower'    # a time of 0 is no measurement


def _inside(reference, lower, upper, value, unit=''):
    low, high, _ = _limits(reference, lower, upper)
    return _plausible(reference, value, unit) and \
        (low is None or value >= low) and (high is None or value <= high)


def _judges(reference, lower, upper):
    # ReFrame records a metric without a reference as (0, None, None)
    return reference is not None and (lower is not None or upper is not None)


def outcome(sample):
    """PASS, FAIL (by its band or its run's record), or None: not judged."""
    # Band.of and Band.passes without making a Band: a verdict asks this
    # of millions of figures
    reference, lower, upper = sample.reference, sample.lower, sample.upper
    if not _judges(reference, lower, upper):
        return None
    if not _inside(reference, lower, upper, sample.value, sample.unit):
        return FAIL
    return FAIL if getattr(sample, 'result', None) == FAIL else PASS


# the group of what the inputs held but could not be trusted
INPUT = ('(input)', '?')


@dataclass
class Failure:
    """One thing that failed, on one line."""
    system: str
    partition: str
    node: str             # node(s) of the job: 'n1', 'n1+n2'; '' unknown
    component: str        # what it names: 'GPU 1', 'link GPU 00 -> GPU 01'
    test: str
    metric: str           # '' for a sanity, build or abort failure
    value: object = None
    unit: str = ''
    bound: str = ''       # '>= 3166830 MB/s (ref 3518700, -10%)'
    reason: str = ''      # the failure's message, for non-figures
    session: str = ''
    shown: str = ''       # the value as printed: digits apart from the bound
    deviation: str = ''   # '+717% vs ref 0.706'
    cause: str = ''       # what the node's health record shows (hpcval.health)
    first: str = ''       # the first run's value, beside its re-measure's
    clear: str = ''       # what to end before a re-screen (records.clears)

    def where(self):
        if (self.system, self.partition) == INPUT:
            return 'input'
        node = f'node {self.node}' if self.node and '+' not in self.node \
            else f'nodes {self.node}' if self.node else 'node not recorded'
        return f'{node} {self.component}'.strip()

    def line(self):
        why = f': {self.cause}' if self.cause else ''
        if self.metric:
            dev = f'{self.deviation}, ' if self.deviation else ''
            value = f'{self.shown or num(self.value)} {self.unit}'
            if self.first:
                value = (f'{self.first} {self.unit} on first run, {value} '
                         f'on re-measure')
            return (f'{self.where()}: {self.test}: {self.metric} = '
                    f'{value}, {dev}bound {self.bound}{why}')
        test = f'{self.test}: ' if self.test else ''
        return f'{self.where()}: {test}{self.reason}'
