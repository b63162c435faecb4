"""Progress of hpcval's long commands: a bar on a terminal's stderr."""
import sys


def bar(iterable=None, **kwargs):
    """``tqdm(iterable, **kwargs)`` on a terminal only, after one second."""
    from tqdm import tqdm       # imported by the commands that show one
    kwargs = {'delay': 1.0, 'leave': False, **kwargs}
    return tqdm(iterable, disable=not sys.stderr.isatty(), **kwargs)
