"""Progress of hpcval's long commands: a bar on standard error where that
is a terminal, nothing in pipes, files and CI."""
import sys

from tqdm import tqdm


def bar(iterable=None, **kwargs):
    """``tqdm(iterable, **kwargs)``, disabled unless standard error is a
    terminal; shown after a second (none for quick work), cleared when
    done."""
    kwargs = {'delay': 1.0, 'leave': False, **kwargs}
    return tqdm(iterable, disable=not sys.stderr.isatty(), **kwargs)
