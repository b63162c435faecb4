"""gpu-burn output: per-GPU GEMM rates and compute errors, summed over the
``Summary at:`` windows where counts restart (docs/benchmarks/gpu_burn.md)."""
import re
import statistics
from dataclasses import dataclass, field

from hpcval.parsers.common import ParseError, number

_HEAD = re.compile(r'Burning for (\d+) seconds\.')
_PROGRESS = re.compile(r"(\d+(?:\.\d+)?)%  proc'd: (.*)  errors: (.*)"
                       r"  temps: ")
_DONE = re.compile(r'(-?\d+) \((\S+) Gflop/s\)')
_ERRORS = re.compile(r'(-?\d+)(?: +(\((?:WARNING|DIED)!\)))?')
_TESTED = re.compile(r'^Tested (\d+) GPUs:$', re.M)
_VERDICT = re.compile(r'^[\t ]+GPU (\d+): (OK|FAULTY)$', re.M)
_SUMMARY = 'Summary at:'
_NO_CUDA = re.compile(r"^Couldn't init CUDA: .+$", re.M)    # on stderr
_MODE = re.compile(r'using \d+ MB of it\), using '
                   r'(\w+(?:, using Tensor Cores)?)$', re.M)


@dataclass
class GpuBurnGpu:
    """One GPU's reports: rates, times, GEMMs, errors, died or FAULTY."""
    index: int
    rates: list = field(default_factory=list)
    times: list = field(default_factory=list)
    gemms: int = 0
    errors: int = 0
    died: bool = False
    faulty: bool = False

    @property
    def gflops(self):
        """Median rate after the first report (it covers set-up), or None."""
        steady = self.rates[1:]
        return statistics.median(steady) if steady else None


@dataclass
class GpuBurnResult:
    seconds: int
    gpus: dict          # {index: GpuBurnGpu}
    names: list         # nvidia-smi -L lines gpu-burn printed
    # what the GPU processes announced ('FLOATS', 'DOUBLES, Tensor Cores');
    # empty where a process killed at the end lost its buffered line
    modes: set


def _split(part):
    # a noted count ends in ')' with no space: '0 - 3  (WARNING!)- 0'
    return [v.strip() for v in part.split('- ')]


def _fields(part, pattern, count, what, line):
    found = [pattern.fullmatch(v) for v in _split(part)]
    if len(found) != count or not all(found):
        raise ParseError(f'unreadable {what} in progress line {line!r}')
    return found


def _progress_lines(text):
    """[(line, window)] of progress lines; ``window``: ``Summary at:`` seen."""
    out, window = [], 0
    for line in re.split(r'[\r\n]', text):
        if _SUMMARY in line:
            window += 1
        elif m := _PROGRESS.match(line):
            out.append((m, window))
    return out


def parse_gpu_burn(text, stderr=''):
    """``GpuBurnResult`` of a complete run; ParseError naming FAULTY GPUs
    and why CUDA did not start, where gpu-burn's ``stderr`` says."""
    try:
        return _parse(text)
    except ParseError as err:
        said = [str(err), *_NO_CUDA.findall(stderr)[:1]]
        faulty = [f'GPU {m.group(1)}' for m in _VERDICT.finditer(text)
                  if m.group(2) == 'FAULTY']
        if faulty:
            said.append(f'gpu-burn called {", ".join(faulty)} FAULTY')
        if len(said) == 1:
            raise
        raise ParseError('; '.join(said)) from None


def _parse(text):
    head = _HEAD.search(text)
    if not head or 'Using compare file:' not in text:
        # gpu-burn before 2023 printed neither: not judged (its run
        # length and GPUs unknown), as a cut output is not
        raise ParseError('not gpu-burn output (or cut, or of a gpu-burn '
                         'before 2023): no "Using compare file" / '
                         '"Burning for N seconds." header')
    seconds = int(head.group(1))
    lines = _progress_lines(text)
    if not lines:
        raise ParseError('gpu-burn printed no progress line: no GPU '
                         'reported a result')
    count = len(_DONE.findall(lines[0][0].group(2)))
    gpus = {i: GpuBurnGpu(i) for i in range(count)}
    last_errors = {}    # (window, gpu) -> errors, the window's last count
    for m, window in lines:
        done = _fields(m.group(2), _DONE, count, 'GEMM counts', m.group(0))
        errs = _fields(m.group(3), _ERRORS, count, 'error counts', m.group(0))
        for i, (d, e) in enumerate(zip(done, errs)):
            gpu = gpus[i]
            gemms, rate = int(d.group(1)), d.group(2)
            if gemms < 0 or e.group(2) == '(DIED!)':
                gpu.died = True
            elif gemms > gpu.gemms:     # a new report of this GPU
                gpu.gemms = gemms
                try:
                    gpu.rates.append(number(rate, 'rate'))
                    gpu.times.append(float(m.group(1)) * seconds / 100)
                except ParseError:
                    pass        # a report without a rate ('nan', 'inf')
            # a negative count: gpu-burn's int counter wrapped round
            last_errors[window, i] = int(e.group(1)) % 2**32
    for (_, i), errors in last_errors.items():
        gpus[i].errors += errors

    tested = _TESTED.search(text)
    if not tested:
        # with all its GPUs dead gpu-burn aborts before the summary
        dead = [f'GPU {i}' for i, g in gpus.items() if g.died]
        why = f'{", ".join(dead)} died' if dead else \
            'killed, or the output is cut'
        raise ParseError(f'gpu-burn did not finish: no "Tested N GPUs" '
                         f'summary ({why})')
    if int(tested.group(1)) != count:
        raise ParseError(f'gpu-burn tested {tested.group(1)} GPUs but its '
                         f'progress lines show {count}')
    for m in _VERDICT.finditer(text[tested.end():]):
        index = int(m.group(1))
        if index in gpus:
            gpus[index].faulty = m.group(2) == 'FAULTY'
    return GpuBurnResult(
        seconds=seconds,
        gpus=gpus,
        names=re.findall(r'^GPU \d+: .*\(UUID: .*\)$', text, re.M),
        modes={m.group(1).replace(', using ', ', ')
               for m in _MODE.finditer(text)})


def problems(result):
    """Per GPU what fails it: died, compute errors, too few reports."""
    out = []
    for gpu in result.gpus.values():
        label = f'GPU {gpu.index}'
        if gpu.died:
            out.append(f'{label}: its gpu-burn process died')
        elif gpu.errors or gpu.faulty:
            out.append(f'{label}: {gpu.errors} compute errors (repeated '
                       f'GEMMs on it gave different results)')
        elif gpu.gflops is None:
            out.append(f'{label}: {len(gpu.rates)} report(s) in '
                       f'{result.seconds} s, too few for a rate (a longer '
                       f'duration, or less memory with -m)')
    return out


def gpus_reported(text):
    """GPU indices with a report and a live process, of any output part."""
    found = set()
    for m, _ in _progress_lines(text):
        done = [_DONE.fullmatch(v) for v in _split(m.group(2))]
        errs = [_ERRORS.fullmatch(v) for v in _split(m.group(3))]
        for i, (d, e) in enumerate(zip(done, errs)):
            if d and e and int(d.group(1)) > 0 and e.group(2) != '(DIED!)':
                found.add(i)
            elif d and int(d.group(1)) < 0:
                found.discard(i)
    return found
