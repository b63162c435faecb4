"""BabelStream v4.0, v5.0 and main, text or ``--csv``, in MB/s; v4/v5 print
a failed validation to stderr and exit 0, so it is looked for there."""
import re
from dataclasses import dataclass, field

from hpcval.parsers.common import ParseError, number

CLASSIC_KERNELS = ('Copy', 'Mul', 'Add', 'Triad', 'Dot')
_ALL_KERNELS = CLASSIC_KERNELS + ('Nstream',)

# bytes per unit that BabelStream may print in its table or CSV header
_UNIT_BYTES = {
    'mbytes/sec': 1e6, 'mibytes/sec': 2**20,
    'mb/s': 1e6, 'mib/s': 2**20, 'gb/s': 1e9, 'gib/s': 2**30,
    'tb/s': 1e12, 'tib/s': 2**40,
    'mbytes': 1e6, 'mibytes': 2**20, 'mb': 1e6, 'mib': 2**20,
    'gb': 1e9, 'gib': 2**30, 'tb': 1e12, 'tib': 2**40,
}
_VALIDATION = re.compile(r'^.*(Validation failed|FAILED validation).*$',
                         re.MULTILINE)
# v4, v5 and main print the row with std::fixed: bandwidth with 3 decimals
# and times with 5, each in setw(12), so fused columns still split
_STRICT_ROW = re.compile(r'^(?P<name>[A-Z][a-z]+)\s+(?P<bw>\d+\.\d{3})\s*'
                         r'(?P<min>\d+\.\d{5})\s*(?P<max>\d+\.\d{5})\s*'
                         r'(?P<avg>\d+\.\d{5})\s*$')


@dataclass(frozen=True)
class Kernel:
    name: str
    bandwidth: float    # MB/s (10^6 B/s), best iteration
    time_min: float     # seconds
    time_max: float
    time_avg: float


@dataclass
class BabelStreamResult:
    version: str = ''
    implementation: str = ''
    device: str = ''
    flavour: str = ''           # 'v5' (or v4) or 'main', from the format
    num_times: int = 0          # 'Running kernels N times'; 0: not printed
    kernels: dict = field(default_factory=dict)

    def bandwidth(self, kernel):
        return self.kernels[kernel].bandwidth


def _banner(text, key):
    m = re.search(rf'^{key}:\s*(.+?)\s*$', text, re.MULTILINE)
    return m.group(1) if m else ''


def _unit_scale(unit, where):
    try:
        return _UNIT_BYTES[unit.lower()] / 1e6
    except KeyError:
        raise ParseError(f'unknown bandwidth unit {unit!r} in {where}') \
            from None


def _parse_table(lines, start, result):
    header = lines[start].split()
    scale = _unit_scale(header[1], 'the table header')
    for line in lines[start + 1:]:
        tokens = line.split()
        if not tokens or tokens[0] not in _ALL_KERNELS:
            continue

        name = tokens[0]
        m = _STRICT_ROW.match(line.strip())
        values = ([m['bw'], m['min'], m['max'], m['avg']] if m
                  else tokens[1:5])
        if len(values) < 4:
            raise ParseError(f'{name} row is truncated: {line.strip()!r}')

        bw, tmin, tmax, tavg = (number(v, f'{name} {col}') for v, col in
                                zip(values, ('bandwidth', 'min time',
                                             'max time', 'average time')))
        if not m:
            # finite numbers, yet not as printed: e.g. "0.000" for "0.00098"
            raise ParseError(f'{name} row is truncated or malformed (expected '
                             f'bandwidth with 3 and times with 5 decimals): '
                             f'{line.strip()!r}')

        result.kernels[name] = Kernel(name, bw * scale, tmin, tmax, tavg)


def _parse_csv(lines, start, result):
    header = [h.strip() for h in lines[start].split(',')]
    try:
        bw_col = next(i for i, h in enumerate(header)
                      if h.startswith('max_') and h.endswith('_per_sec'))
        cols = [header.index(c) for c in
                ('min_runtime', 'max_runtime', 'avg_runtime')]
    except (StopIteration, ValueError):
        raise ParseError(f'unexpected CSV header {lines[start]!r}') from None

    scale = _unit_scale(header[bw_col][4:-8], 'the CSV header')
    for line in lines[start + 1:]:
        cells = [c.strip() for c in line.split(',')]
        if not cells or cells[0] not in _ALL_KERNELS:
            continue

        name = cells[0]
        if len(cells) != len(header):
            raise ParseError(f'{name} CSV row is truncated: {line!r}')

        bw = number(cells[bw_col], f'{name} bandwidth')
        times = [number(cells[i], f'{name} {header[i]}') for i in cols]
        result.kernels[name] = Kernel(name, bw * scale, *times)


def parse_babelstream(stdout, stderr='', expected=CLASSIC_KERNELS):
    """Parse one BabelStream run; every ``expected`` kernel must be present."""
    failed = _VALIDATION.search(stdout + '\n' + stderr)
    if failed:
        raise ParseError(f'BabelStream validation failed: '
                         f'{failed.group(0).strip()}')

    result = BabelStreamResult(_banner(stdout, 'Version'),
                               _banner(stdout, 'Implementation'))
    times = re.search(r'^Running kernels (\d+) times', stdout, re.MULTILINE)
    result.num_times = int(times.group(1)) if times else 0
    # v5 and main HIP: 'Using HIP device NAME'; main CUDA: 'CUDA Device 0:
    # "NAME" 132 SMs(9,0) Memory: ...'
    m = (re.search(r'^Using \S+ device (.+?)\s*$', stdout, re.MULTILINE)
         or re.search(r'^\S+ Device \d+: "(.+?)"', stdout, re.MULTILINE))
    result.device = m.group(1) if m else ''
    lines = stdout.splitlines()
    tables = [i for i, line in enumerate(lines)
              if (line.startswith('Function ') and len(line.split()) >= 5)
              or line.startswith('function,')]
    if not tables:
        last = [e.strip() for e in stderr.splitlines() if e.strip()]
        tail = f'; stderr ends with {last[-1]!r}' if last else ''
        raise ParseError('no result table (neither a "Function" header nor '
                         'a "function," CSV header): the run did not finish'
                         + tail)

    if len(tables) > 1:
        # rows of one run would be overwritten by the next: refuse
        raise ParseError(f'{len(tables)} result tables in one output: '
                         f'expected one BabelStream run (several processes '
                         f'writing to the same file?)')

    i = tables[0]
    line = lines[i]
    if line.startswith('function,'):
        result.flavour = 'v5' if 'mbytes' in line or 'mibytes' in line \
            else 'main'
        _parse_csv(lines, i, result)
    else:
        result.flavour = 'v5' if line.split()[1].endswith('/sec') else 'main'
        _parse_table(lines, i, result)

    missing = [k for k in expected if k not in result.kernels]
    if missing:
        raise ParseError(f'kernels missing from the results: '
                         f'{", ".join(missing)}')

    return result


#: model of the checks -> the implementation BabelStream's banner names
IMPLEMENTATIONS = {'omp': 'OpenMP', 'cuda': 'CUDA', 'hip': 'HIP'}


def check_run(result, model, num_times):
    """ParseError unless the banner names ``model`` and ``num_times``."""
    wanted = IMPLEMENTATIONS[model]
    if result.implementation and result.implementation != wanted:
        raise ParseError(f'the output is of BabelStream\'s '
                         f'{result.implementation} implementation (its '
                         f'banner), this test runs {model} ({wanted})')
    if result.num_times and result.num_times != num_times:
        raise ParseError(f'the output ran the kernels {result.num_times} '
                         f'times, this test asks -n {num_times}: not this '
                         f'test\'s run')
