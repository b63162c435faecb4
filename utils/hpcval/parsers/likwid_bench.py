"""``likwid-bench -t KERNEL -W DOMAIN:SIZE:THREADS``.

The result block lists ``Key:<tabs>value`` lines; the figure we need is
``MByte/s:`` (10^6 bytes per second, counting the kernel's loads and
stores).  One block per run; several ``-W`` groups still print one total.
"""
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
    fields: dict          # every "Key: value" line, as printed


def parse_likwid_bench(text):
    fields = {m['key'].strip(): m['value'] for m in _FIELD.finditer(text)}
    missing = [k for k in ('MByte/s', 'Time') if k not in fields]
    if missing:
        raise ParseError(f'likwid-bench printed no {", ".join(missing)} '
                         f'line: the kernel did not run to completion')

    m = re.search(r'^Using (\d+) threads', text, re.MULTILINE)
    if not m:
        raise ParseError("no 'Using N threads' line")

    return LikwidResult(
        bandwidth=number(fields['MByte/s'].split()[0], 'MByte/s'),
        threads=int(m.group(1)),
        time=number(fields['Time'].split()[0], 'Time'),
        fields=fields
    )
