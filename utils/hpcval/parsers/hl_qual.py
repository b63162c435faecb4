"""hl_qual report log of the ``-mb`` and ``-p`` plugins.  UNVERIFIED FORMAT
(docs/benchmarks/hl_qual.md): every sub-test asked must show a figure and a
PASS with no FAIL, so an unknown format fails the check, never passes it."""
import re
from dataclasses import dataclass
from typing import Dict, Tuple

from hpcval.parsers.common import ParseError, number

# sub-test key -> (source, arrow kind, destination) as the manual writes it
MEMORY_SUBTESTS = {
    'host_to_hbm': ('HOST', '=>', 'HBM'),
    'hbm_to_host': ('HBM', '=>', 'HOST'),
    'hbm_host_bidir': ('HBM', '<=>', 'HOST'),
    'host_to_sram': ('HOST', '=>', 'SRAM'),
    'sram_to_host': ('SRAM', '=>', 'HOST'),
    'sram_host_bidir': ('SRAM', '<=>', 'HOST'),
    'sram_to_hbm': ('SRAM', '=>', 'HBM'),
    'hbm_to_sram': ('HBM', '=>', 'SRAM'),
    'hbm_to_hbm': ('HBM', '=>', 'HBM'),
}
PCI_SUBTESTS = {'pci_download': 'download', 'pci_upload': 'upload',
                'pci_bidirectional': 'bidirectional'}

_ARROWS = {'==>': '=>', '⇒': '=>', '<==>': '<=>', '⇔': '<=>'}
_MEMORY_LINE = re.compile(
    r'\b(?P<src>HOST|HBM|DRAM|SRAM)\s*(?P<arrow><==>|==>|⇔|⇒)\s*'
    r'(?P<dst>HOST|HBM|DRAM|SRAM)\b')
_PCI_LINE = re.compile(r'\b(?P<kind>upload|download|bidirectional)\b',
                       re.IGNORECASE)
_BANDWIDTH = re.compile(r'(?P<value>[-+]?\d[\d.eE+-]*|nan|N/A)\s*GB/s',
                        re.IGNORECASE)
_DEVICE = re.compile(r'\b(?P<bus>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:'
                     r'[0-9a-fA-F]{2}\.[0-7])\b')
_VERDICT = re.compile(r'\b(?P<word>PASS(?:ED)?|FAIL(?:ED|URE)?)\b',
                      re.IGNORECASE)


@dataclass(frozen=True)
class HlQualReport:
    #: sub-test key -> ((device or '', GB/s), ...) in report order
    figures: Dict[str, Tuple[Tuple[str, float], ...]]

    def worst(self, key):
        """The lowest figure of a sub-test over the devices."""
        return min(bw for _, bw in self.figures[key])


def _subtest(line):
    if m := _MEMORY_LINE.search(line):
        src, dst = (m[k].replace('DRAM', 'HBM') for k in ('src', 'dst'))
        arrow = _ARROWS[m['arrow']]
        return next((key for key, spec in MEMORY_SUBTESTS.items()
                     if spec == (src, arrow, dst) or
                     (arrow == '<=>' and spec == (dst, arrow, src))), None)
    if m := _PCI_LINE.search(line):
        return f'pci_{m["kind"].lower()}'
    return None


def parse_hl_qual_report(text, expected):
    """Figures of the sub-tests in ``expected``; hl_qual's verdict checked."""
    failures = [line.strip() for line in text.splitlines()
                if (m := _VERDICT.search(line)) and
                m['word'].upper().startswith('FAIL')]
    if failures:
        raise ParseError(f'hl_qual reports a failure: {failures[0]!r}'
                         + (f' (and {len(failures) - 1} more FAIL lines)'
                            if len(failures) > 1 else ''))

    figures = {}
    for line in text.splitlines():
        key = _subtest(line)
        bws = list(_BANDWIDTH.finditer(line))
        if key is None or not bws:
            continue
        if len(bws) > 1:
            # measured and expected side by side: which is which is unknown
            raise ParseError(f'unrecognised hl_qual report: {len(bws)} GB/s '
                             f'figures on one line, {line.strip()!r}')
        value = number(bws[0]['value'], f'{key} bandwidth in {line.strip()!r}')
        device = _DEVICE.search(line)
        figures.setdefault(key, []).append(
            (device['bus'] if device else '', value))

    missing = [k for k in expected if k not in figures]
    if missing:
        raise ParseError(
            f'unrecognised hl_qual report: no "<sub-test> ... <N> GB/s" line '
            f'for {", ".join(missing)}; hpcval knows no public sample of '
            f'this report (docs/benchmarks/hl_qual.md), so it fails rather '
            f'than guess')

    if not any((m := _VERDICT.search(line)) for line in text.splitlines()):
        raise ParseError('unrecognised hl_qual report: no PASS verdict in it')

    return HlQualReport({k: tuple(v) for k, v in figures.items()})
