"""What one step of a job script's assembly adds (JOB_SCRIPT_STEPS)."""
from typing import NamedTuple


class Lines(NamedTuple):
    """Prerun lines before and after the benchmark's, and kept files."""
    before: tuple = ()
    after: tuple = ()
    keep: tuple = ()


NOTHING = Lines()
