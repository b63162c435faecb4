"""What one step of a job script's assembly adds (JOB_SCRIPT_STEPS)."""
from typing import NamedTuple


class Lines(NamedTuple):
    """Prerun lines before and after the benchmark's, and kept files."""
    before: tuple = ()
    after: tuple = ()
    keep: tuple = ()


NOTHING = Lines()


def assemble(test, steps):
    """Run ``steps`` in order; put their lines around the prerun."""
    added = [step() for step in steps]
    test.prerun_cmds = [*(c for a in added for c in a.before),
                        *test.prerun_cmds,
                        *(c for a in added for c in a.after)]
    test.keep_files = [*test.keep_files, *(f for a in added for f in a.keep)]
