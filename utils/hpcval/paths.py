"""Where the repository's data folders are."""
import functools
import os

from hpcval.inputs import environment


@functools.lru_cache(maxsize=None)
def repo_root():
    """The hpcval checkout: $HPCVAL_ROOT, else the folder holding utils/."""
    root = environment('HPCVAL_ROOT')
    if root:
        return os.path.abspath(root)

    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.dirname(os.path.dirname(here))


def references_dir():
    return os.path.join(repo_root(), 'references')
