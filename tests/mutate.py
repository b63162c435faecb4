"""Breaking real outputs on purpose: the transformations the parser tests
apply to captured text (layout kept, one thing changed)."""
import re


def set_cell(text, key, index, value, sep=None):
    """Replace field ``index`` (0: the key) of the row whose first field is
    ``key`` (a size or a kernel name); ``sep=','`` for CSV rows."""
    key = str(key)
    lines = text.splitlines(keepends=True)
    for n, line in enumerate(lines):
        if sep:
            cells = line.split(sep)
            if cells[0] == key:
                cells[index] = value
                lines[n] = sep.join(cells)
                return ''.join(lines)
        else:
            parts = re.split(r'(\S+)', line)    # tokens at the odd positions
            if parts[1:2] == [key]:
                parts[2 * index + 1] = value
                lines[n] = ''.join(parts)
                return ''.join(lines)

    raise AssertionError(f'no row {key!r}')


def cut_after(text, marker):
    """``text`` up to and including the line containing ``marker``."""
    lines = text.splitlines(keepends=True)
    i = next(i for i, line in enumerate(lines) if marker in line)
    return ''.join(lines[:i + 1])
