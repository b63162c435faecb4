"""The parsers' error type, strict numbers, logs and crashed-rank signs."""
import math
import re


class ParseError(ValueError):
    """The output lacks something the benchmark must print, or holds junk."""


def number(token, what):
    """``token`` as a finite float (a NaN passes every comparison)."""
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


# how MPI launchers and runtimes report a rank that died (Open MPI, MPICH)
_CRASH = re.compile(r'^.*(Segmentation fault|exited on signal|killed by '
                    r'signal|BAD TERMINATION).*$', re.MULTILINE)


def crash_report(text):
    """'': no crash report in ``text``; else '; <the report line>'."""
    m = _CRASH.search(text)
    return f'; {m.group(0).strip()}' if m else ''


# around a failed program: launchers' banners, hints and exit reports (kept
# only when nothing else is said), and success lines (CUDA's "(no error)")
_LAUNCHER = re.compile(r'^(?:srun|slurmstepd|mpirun|mpiexec|prterun|'
                       r'\[mpiexec@|jsrun|aprun)\b|^\[\S+:\d+\]')
_NOISE = re.compile(r'^[=*#-]|^-+$|^Please check|^For more information|'
                    r'^\s*(?:at |from )|^Primary job|^Process name|'
                    r'^Exit code:|\(no error\)$|^(?:YOUR APPLICATION|'
                    r'CLEANING UP|YOU CAN IGNORE)', re.IGNORECASE)
_ERRORISH = re.compile(r'error|invalid|requires|fail|abort|not found|'
                       r'cannot|unable|denied|killed|segmentation|signal|'
                       r'refus|unknown|unrecognized|usage|no such|missing|'
                       r'exceed|out of memory|not supported|not enabled',
                       re.IGNORECASE)
_MAX_REASON = 240


def stderr_reason(text):
    """The stderr line that says why a program failed; '' when none."""
    lines = [line.strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not _NOISE.search(line)]
    own = [line for line in lines if not _LAUNCHER.search(line)]
    for group in (own, lines):
        for line in reversed(group):
            if _ERRORISH.search(line):
                return line[:_MAX_REASON]
    return (own or lines or [''])[-1][:_MAX_REASON]


def row_at(rows, size, what='result', other='was asked for other sizes'):
    """The row of message ``size`` bytes, or ParseError naming the sizes."""
    for row in rows:
        if row.size == size:
            return row
    printed = ', '.join(str(r.size) for r in rows)
    raise ParseError(f'no {what} for {size} B (sizes printed: {printed}): '
                     f'the run stopped early or {other}')


def device_buffer_error(err, text, buffers):
    """``err`` for a GPU-buffer run, saying what a crashed rank means there."""
    if not crash_report(text):
        return err

    return ParseError(f'MPI is not GPU-aware (or its GPU support is not '
                      f'enabled): the run with {buffers} crashed; {err}')
