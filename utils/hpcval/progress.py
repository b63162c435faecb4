"""Progress of hpcval's long commands: a bar on standard error where that
is a terminal, nothing in pipes, files and CI."""
import sys


def bar(iterable=None, **kwargs):
    """``tqdm(iterable, **kwargs)``, disabled unless standard error is a
    terminal; shown after a second (none for quick work), cleared when
    done."""
    from tqdm import tqdm       # imported by the commands that show one
    kwargs = {'delay': 1.0, 'leave': False, **kwargs}
    return tqdm(iterable, disable=not sys.stderr.isatty(), **kwargs)
