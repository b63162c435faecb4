"""What one step of a job script's assembly adds (hpcval.benchmarks.base,
``ParsedBenchmark.JOB_SCRIPT_STEPS``)."""
from typing import NamedTuple


class Lines(NamedTuple):
    """Prerun lines a step puts before and after the benchmark's own, and
    stage files the test keeps."""
    before: tuple = ()
    after: tuple = ()
    keep: tuple = ()


NOTHING = Lines()


def assemble(test, steps):
    """Run ``steps`` (methods of ``test``, in order) and put what they add
    around the test's prerun commands; a step may also replace the
    commands themselves (a replay)."""
    added = [step() for step in steps]
    test.prerun_cmds = [*(c for a in added for c in a.before),
                        *test.prerun_cmds,
                        *(c for a in added for c in a.after)]
    test.keep_files = [*test.keep_files, *(f for a in added for f in a.keep)]
