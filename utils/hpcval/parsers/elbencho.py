"""elbencho's end-of-phase result table (console and ``--resfile``): rows
split on `` : ``, labels matched by name (PDF copies lose the columns)."""
import re
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

from hpcval.parsers.common import ParseError, number

# labels elbencho prints, longest first so that 'IOPS read' wins over 'IOPS'
_LABELS = sorted([
    'Elapsed time', 'Elapsed ms', 'IOPS', 'IOPS write', 'IOPS read',
    'IOPS total', 'Throughput MiB/s', 'Throughput MB/s', 'MiB/s write',
    'MiB/s read', 'MiB/s total', 'MB/s write', 'MB/s read', 'MB/s total',
    'Total MiB', 'MiB write', 'MiB read', 'IOs total', 'IOs write',
    'IOs read', 'CPU util %', 'Time ms each', 'Files/s', 'Dirs/s',
    'Files total', 'Dirs total', 'Files/s write', 'Files/s read',
    'Files/s total', 'Dirs/s write', 'Dirs/s read', 'Dirs/s total',
    'Files write', 'Files read', 'Dirs write', 'Dirs read', 'IO latency',
    'Entries latency', 'Files latency', 'Dirs latency',
], key=len, reverse=True)
_OPERATION = re.compile(r'^[A-Z][A-Z0-9_()-]*$')
_HUMAN_TIME = re.compile(r'^(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?'
                         r'(?:(?P<s>\d+(?:\.\d+)?)s)?(?:(?P<ms>\d+)ms)?$')
TIME_LIMIT = 'Terminating due to phase time limit'


@dataclass(frozen=True)
class Phase:
    operation: str                                   # WRITE, READ, ...
    rows: Dict[str, Tuple[float, float]] = field(default_factory=dict)
    raw: Dict[str, str] = field(default_factory=dict)  # bracketed rows

    def value(self, label, which='last'):
        if label not in self.rows:
            raise ParseError(f'{self.operation}: no "{label}" row (rows: '
                             f'{", ".join(self.rows) or "none"})')
        return self.rows[label][0 if which == 'first' else 1]

    @property
    def elapsed_ms(self):
        """(first, last) elapsed milliseconds, whichever format printed."""
        for label in ('Elapsed time', 'Elapsed ms'):
            if label in self.rows:
                return self.rows[label]
        raise ParseError(f'{self.operation}: no elapsed time row')

    @property
    def base10(self):
        return 'Throughput MB/s' in self.rows

    def throughput_mib_s(self, which='last'):
        """Throughput in MiB/s; ``--base10`` output (MB/s) converted."""
        if self.base10:
            return self.value('Throughput MB/s', which) * 1e6 / 2**20
        return self.value('Throughput MiB/s', which)


def elapsed_to_ms(token, what):
    """``712ms``, ``1.089s``, ``2m3.241s``, ``1h2m3s`` -> milliseconds."""
    m = _HUMAN_TIME.match(token)
    if not token or not m or not any(m.groupdict().values()):
        raise ParseError(f'{what}: {token!r} is not an elapsed time')
    parts = {k: float(v) if v else 0.0 for k, v in m.groupdict().items()}
    return round(((parts['h'] * 60 + parts['m']) * 60 + parts['s']) * 1000
                 + parts['ms'], 3)


def _split_label(left, current):
    """(operation, label) of the text left of ' : '."""
    left = ' '.join(left.split())
    for label in _LABELS:
        if left == label:
            return current, label
        if left.endswith(' ' + label):
            op = left[:-len(label) - 1]
            if _OPERATION.match(op):
                return op, label
    first, _, rest = left.partition(' ')
    if rest and _OPERATION.match(first) and not left.startswith(' '):
        return first, rest        # a label this parser does not know
    return current, left


def _values(op, label, right):
    tokens = right.split()
    if len(tokens) != 2:
        raise ParseError(f'{op} "{label}": expected FIRST DONE and LAST '
                         f'DONE values, got {right.strip()!r} (truncated?)')
    read = elapsed_to_ms if label == 'Elapsed time' else number
    return tuple(read(t, f'{op} "{label}"') for t in tokens)


def parse_elbencho(text, require_end=True):
    """[Phase] of a run; ``require_end=False``: the last ``---`` optional."""
    if TIME_LIMIT in text:
        raise ParseError(f'"{TIME_LIMIT}": the phase was cut short, its '
                         f'figures cover only part of the data (raise '
                         f'--timelimit or reduce the size)')

    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if line.split()[:2] == ['OPERATION', 'RESULT']), None)
    if start is None:
        raise ParseError('no result table ("OPERATION  RESULT TYPE  FIRST '
                         'DONE  LAST DONE"): elbencho printed no phase '
                         'result')

    phases, current, closed = [], None, True
    for line in lines[start + 1:]:
        if line.strip() == '---':
            closed = True
            continue
        if ' : ' not in line:
            continue    # blank and '===' lines, warnings and messages
        left, _, right = line.partition(':')
        op, label = _split_label(left, current.operation if current else None)
        if op is None:
            raise ParseError(f'row before any operation name: {line!r}')
        if current is None or op != current.operation or closed:
            if current is not None and not closed and require_end:
                raise ParseError(f'{current.operation}: no "---" after its '
                                 f'rows (output cut short?)')
            current = Phase(op)
            phases.append(current)
            closed = False
        if right.strip().startswith('['):
            current.raw[label] = right.strip()
            continue
        current.rows[label] = _values(op, label, right)

    if not phases:
        raise ParseError('result table header without any phase rows: the '
                         'run died before its first phase finished')
    if not closed and require_end:
        raise ParseError(f'{phases[-1].operation}: no "---" after its rows: '
                         f'the output is truncated')
    for phase in phases:
        phase.elapsed_ms         # every phase must say how long it took
    return phases


def phase(phases, operation):
    """The only phase named ``operation`` (WRITE, READ)."""
    found = [p for p in phases if p.operation == operation]
    if len(found) != 1:
        raise ParseError(f'expected one {operation} phase, found '
                         f'{len(found)} (phases: '
                         f'{", ".join(p.operation for p in phases) or "none"})')
    return found[0]


def total_mib(p, which='last') -> Optional[float]:
    return p.rows.get('Total MiB', (None, None))[0 if which == 'first' else 1]
