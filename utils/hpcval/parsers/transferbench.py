"""TransferBench ``a2a``, ``p2p`` and config-file outputs in GB/s (``N/A``:
a pair not run); ``[ERROR]`` fails the parse anywhere (a2a exits 0)."""
import re
from dataclasses import dataclass
from typing import Dict, Optional, Tuple

from hpcval.parsers.common import ParseError, number

_ERROR = re.compile(r'^.*(?:\[ERROR\]|Parsing error:).*$', re.MULTILINE)
_VERSION = re.compile(r'^TransferBench v(\S+)', re.MULTILINE)
_BORDERS = str.maketrans({c: ' ' for c in '│┃┼├┤─'})
_DEVICE = re.compile(r'(CPU|GPU)\s+(\d+)')
_A2A_COPY = re.compile(r'^- Copying (\d+) bytes between (.*) pairs of GPUs '
                       r'using (\d+) CUs \((\d+) Transfers\)', re.MULTILINE)
_A2A_SUMMARY = {
    'average_gpu': 'Average bandwidth (GPU Timed)',
    'aggregate_gpu': 'Aggregate bandwidth (GPU Timed)',
    'aggregate_cpu': 'Aggregate bandwidth (CPU Timed)',
}
_P2P_TITLE = re.compile(r'^(Uni|Bi)directional copy peak bandwidth', re.M)
_P2P_AVG = re.compile(r'^Averages \(During\s*(UniDir|BiDir)\):(.*)$', re.M)
AVERAGE_KINDS = ('cpu_to_cpu', 'cpu_to_gpu', 'gpu_to_cpu', 'gpu_to_gpu')
_TEST = re.compile(r'^\s*Test (\d+):\s*$')
_BW = re.compile(r'^(\S+)\s*GB/s')


def check_errors(text):
    """Raise ParseError on the first ``[ERROR]`` or ``Parsing error:``."""
    err = _ERROR.search(text)
    if err:
        raise ParseError(f'TransferBench reported an error: '
                         f'{err.group(0).strip()}')


def version(text):
    """'1.52', or '' when the banner was hidden (HIDE_ENV=1)."""
    m = _VERSION.search(text)
    return m.group(1) if m else ''


def device(label):
    """'GPU 03' from 'GPU 03' or 'GPU 3'."""
    kind, index = label
    return f'{kind} {int(index):02d}'


def _devices(line):
    return [device(m) for m in _DEVICE.findall(line)]


def _cell(token, what):
    return None if token == 'N/A' else number(token, what)


@dataclass(frozen=True)
class A2AResult:
    version: str
    bytes_per_transfer: Optional[int]
    transfers: Optional[int]        # as the run announced it
    gpus: Tuple[str, ...]           # ('GPU 00', 'GPU 01', ...)
    links: Dict[Tuple[str, str], Optional[float]]   # off-diagonal pairs
    row_total: Dict[str, float]
    actual: Dict[str, float]
    average_gpu: float
    aggregate_gpu: float
    aggregate_cpu: float

    def measured(self):
        return {k: v for k, v in self.links.items() if v is not None}


def _matrix(lines, at, width, what):
    """Rows after ``lines[at]`` by device label, up to the first non-row."""
    rows = {}
    for line in lines[at + 1:]:
        tokens = line.split()
        if not tokens:
            continue
        m = re.match(r'^(CPU|GPU)\s+(\d+)\s*(->|<-|<->|min|max|sd)?\s+(.*)$',
                     line.strip())
        if not m:
            break
        label, direction = device(m.groups()[:2]), m.group(3) or ''
        cells = m.group(4).split()
        if len(cells) < width:
            raise ParseError(f'{what}: the row for {label} {direction} has '
                             f'{len(cells)} of {width} values: the output '
                             f'is truncated'.replace('  ', ' '))
        rows[(label, direction)] = cells
    return rows


def parse_a2a(text):
    """Parse ``TransferBench a2a`` output."""
    check_errors(text)
    text = text.translate(_BORDERS)
    lines = text.splitlines()
    head = [i for i, line in enumerate(lines)
            if line.strip().startswith('SRC\\DST') and 'STotal' in line]
    if not head:
        raise ParseError('no a2a summary matrix ("SRC\\DST GPU 00 ... '
                         'STotal Actual"): the run died before its summary')
    if len(head) > 1:
        raise ParseError(f'{len(head)} a2a summary matrices in one output: '
                         f'separate runs were concatenated')

    gpus = tuple(_devices(lines[head[0]].split('STotal')[0]))
    n = len(gpus)
    rows = _matrix(lines, head[0], n + 2, 'a2a matrix')
    missing = [g for g in gpus if (g, '') not in rows]
    if missing:
        raise ParseError(f'a2a matrix: no row for {", ".join(missing)} '
                         f'(header lists {n} GPUs): truncated output')

    links, row_total, actual = {}, {}, {}
    for src in gpus:
        cells = rows[(src, '')]
        for dst, token in zip(gpus, cells):
            if src != dst:
                links[(src, dst)] = _cell(token, f'a2a {src} -> {dst}')
        row_total[src] = number(cells[n], f'a2a STotal of {src}')
        actual[src] = number(cells[n + 1], f'a2a Actual of {src}')

    summary = {}
    for key, label in _A2A_SUMMARY.items():
        pattern = r'\s+'.join(map(re.escape, label.split())) + r':\s*(\S+)'
        m = re.search(pattern, text)
        if not m:
            raise ParseError(f'no "{label}:" line after the a2a matrix: '
                             f'truncated output')
        summary[key] = number(m.group(1), label)

    copy = _A2A_COPY.search(text)
    result = A2AResult(
        version=version(text),
        bytes_per_transfer=int(copy.group(1)) if copy else None,
        transfers=int(copy.group(4)) if copy else None,
        gpus=gpus, links=links, row_total=row_total, actual=actual,
        **summary)
    if result.transfers is not None and \
            len(result.measured()) != result.transfers:
        blank = [f'{s} -> {d}' for (s, d), v in links.items() if v is None]
        raise ParseError(f'a2a announced {result.transfers} transfers but '
                         f'the matrix holds {len(result.measured())} values '
                         f'(N/A: {", ".join(blank) or "none"})')
    return result


@dataclass(frozen=True)
class P2PMatrix:
    direction: str                  # 'uni' or 'bidir'
    devices: Tuple[str, ...]        # ('CPU 00', ..., 'GPU 00', ...)
    links: Dict[Tuple[str, str], Optional[float]]   # '->' rows, off-diagonal
    averages: Dict[str, Optional[float]]    # AVERAGE_KINDS; None: N/A


@dataclass(frozen=True)
class P2PResult:
    version: str
    bytes_per_direction: Optional[int]
    uni: Optional[P2PMatrix]        # None: P2P_MODE=2
    bidir: Optional[P2PMatrix]      # None: P2P_MODE=1


def _p2p_block(lines, at, direction):
    what = f'p2p {direction}directional matrix'
    head = next((i for i in range(at + 1, min(at + 4, len(lines)))
                 if 'DST' in lines[i]), None)
    if head is None:
        raise ParseError(f'{what}: no "SRC ... DST" header line')
    devices = tuple(_devices(lines[head]))
    rows = _matrix(lines, head, len(devices), what)
    links = {}
    for src in devices:
        if (src, '->') not in rows:
            raise ParseError(f'{what}: no row for {src} (header lists '
                             f'{len(devices)} devices): truncated output')
        for dst, token in zip(devices, rows[(src, '->')]):
            if src != dst:
                links[(src, dst)] = _cell(token, f'{what}: {src} -> {dst}')
    return devices, links


def parse_p2p(text):
    """Parse ``TransferBench p2p`` output."""
    check_errors(text)
    text = text.translate(_BORDERS)
    lines = text.splitlines()
    titles = [(i, m.group(1)) for i, line in enumerate(lines)
              for m in [_P2P_TITLE.match(line)] if m]
    if not titles:
        raise ParseError('no "Unidirectional/Bidirectional copy peak '
                         'bandwidth" matrix: the p2p run died first')

    averages = {m.group(1): m.group(2).split() for m in _P2P_AVG.finditer(text)}
    matrices = {}
    for at, kind in titles:
        direction = 'uni' if kind == 'Uni' else 'bidir'
        if direction in matrices:
            raise ParseError(f'two {kind}directional matrices in one output: '
                             f'separate runs were concatenated')
        devices, links = _p2p_block(lines, at, kind)
        key = 'UniDir' if kind == 'Uni' else 'BiDir'
        if key not in averages:
            raise ParseError(f'no "Averages (During {key}):" line after the '
                             f'{kind.lower()}directional matrix: truncated '
                             f'output')
        if len(averages[key]) != len(AVERAGE_KINDS):
            raise ParseError(f'"Averages (During {key}):" has '
                             f'{len(averages[key])} of {len(AVERAGE_KINDS)} '
                             f'values: {" ".join(averages[key])!r}')
        avgs = {k: _cell(t, f'{key} {k} average')
                for k, t in zip(AVERAGE_KINDS, averages[key])}
        matrices[direction] = P2PMatrix(direction, devices, links, avgs)

    size = re.search(r'^Bytes Per Direction\s*(\d+)', text, re.MULTILINE)
    return P2PResult(version(text), int(size.group(1)) if size else None,
                     matrices.get('uni'), matrices.get('bidir'))


@dataclass(frozen=True)
class Transfer:
    index: int
    bandwidth: float                # GB/s
    time_ms: float
    bytes: int
    path: str                       # 'G0 -> GPU00:004 -> G1'

    @property
    def src(self):
        return self.path.split('->')[0].strip()

    @property
    def dst(self):
        return self.path.split('->')[-1].strip()


@dataclass(frozen=True)
class ConfigTest:
    number: int
    comment: str                    # the '## ...' line before it, or ''
    executors: Dict[str, float]     # 'GPU 00' -> GB/s
    transfers: Tuple[Transfer, ...]
    aggregate_cpu: float


def _bandwidth(field, what):
    m = _BW.match(field)
    if not m:
        raise ParseError(f'{what}: no "<value> GB/s" in {field!r}')
    return number(m.group(1), what)


def _config_test(test, comment, lines):
    """The ConfigTest of the lines after ``Test N:``."""
    where = f'Test {test}'
    executors, transfers, aggregate = {}, [], None
    for line in lines:
        fields = [f.strip() for f in re.split(r'[|│]', line)]
        head, second = fields[0], (fields[1] if len(fields) > 1 else '')
        if head.startswith('Executor:'):
            name = ' '.join(head.split()[1:])
            executors[name] = _bandwidth(second, f'{where} {name}')
        elif head.startswith('Transfer'):
            if len(fields) < 5:
                raise ParseError(f'{where}: truncated transfer line '
                                 f'{line.strip()!r}')
            index = int(head.split()[1])
            bw = _bandwidth(second, f'{where} Transfer {index:02d}')
            time_ms = number(fields[2].split()[0],
                             f'{where} Transfer {index} time')
            nbytes = int(number(fields[3].split()[0],
                                f'{where} Transfer bytes'))
            transfers.append(Transfer(index, bw, time_ms, nbytes, fields[4]))
        elif head.startswith('Aggregate'):
            aggregate = _bandwidth(second, f'{where} Aggregate (CPU)')
    if not transfers or aggregate is None:
        raise ParseError(f'{where}: no '
                         f'{"Aggregate (CPU)" if transfers else "Transfer"}'
                         f' line: the output is truncated')
    return ConfigTest(test, comment, executors, tuple(transfers),
                      aggregate)


def parse_config_run(text, expected_tests=None):
    """Parse a config-file run of ``expected_tests`` test lines."""
    check_errors(text)
    blocks, comment = [], ''     # (number, comment, lines) of each test
    for line in text.splitlines():
        if line.startswith('##'):
            comment = line.lstrip('#').strip()
        elif m := _TEST.match(line):
            blocks.append((int(m.group(1)), comment, []))
            comment = ''
        elif blocks:
            blocks[-1][2].append(line)
    tests = [_config_test(*block) for block in blocks]
    if not tests:
        raise ParseError('no "Test N:" results: TransferBench ran no test '
                         'of the config file')
    if expected_tests is not None and len(tests) != expected_tests:
        raise ParseError(f'the config file has {expected_tests} tests, the '
                         f'output {len(tests)} (last: Test '
                         f'{tests[-1].number}): the run stopped early')
    return tests


def config_tests(cfg_text):
    """Test lines of a TransferBench config file (not comments, not blank)."""
    return [line.strip() for line in cfg_text.splitlines()
            if line.strip() and not line.lstrip().startswith('#')]


def unmeasured(links):
    """'GPU 04 -> GPU 02' for each link the output shows as N/A."""
    return [f'{src} -> {dst}' for (src, dst), bw in sorted(links.items())
            if bw is None]
