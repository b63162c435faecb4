"""``likwid-bench -t KERNEL -W DOMAIN:SIZE:THREADS``: MByte/s and MFlops/s."""
import re
from dataclasses import dataclass

from hpcval.parsers.common import ParseError, number

# "Key:<tabs>value[ unit]", e.g. "Time:\t\t\t2.047498e+00 sec"
_FIELD = re.compile(r'^(?P<key>[A-Za-z][^:\n]*):[ \t]+(?P<value>\S[^\n]*?)\s*$',
                    re.MULTILINE)


@dataclass(frozen=True)
class LikwidResult:
    bandwidth: float      # MByte/s
    threads: int
    time: float           # seconds
    mflops: float         # MFlops/s (10^6 flop/s)
    fields: dict          # every "Key: value" line, as printed


def parse_likwid_bench(text, test=None, figure='MByte/s'):
    """The ``figure`` line of a ``test`` kernel's result block."""
    fields = {m['key'].strip(): m['value'] for m in _FIELD.finditer(text)}
    if test is not None and fields.get('Test', test) != test:
        raise ParseError(f"likwid-bench ran {fields['Test']!r}, not {test!r}")
    missing = [k for k in dict.fromkeys((figure, 'Time')) if k not in fields]
    if missing:
        raise ParseError(f'likwid-bench printed no {", ".join(missing)} '
                         f'line: the kernel did not run to completion')

    m = re.search(r'^Using (\d+) threads', text, re.MULTILINE)
    if not m:
        raise ParseError("no 'Using N threads' line")

    def read(key):
        return number(fields[key].split()[0], key) if key in fields else 0.0

    result = LikwidResult(bandwidth=read('MByte/s'), threads=int(m.group(1)),
                          time=read('Time'), mflops=read('MFlops/s'),
                          fields=fields)
    value = result.mflops if figure == 'MFlops/s' else result.bandwidth
    if value <= 0:
        raise ParseError(f'likwid-bench printed {figure} {value:g}: '
                         f'{fields.get("Test", "the kernel")} measured nothing')
    return result
