"""What every test and fixture records for the verdict, and ``strict``.

A skip's reason is kept in ``hpcval_skip_reason``; with ``-S
strict=yes`` what would be skipped fails instead."""
import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, variable
from reframe.core.exceptions import ReframeError

from hpcval import features, inputs


class NotValidated(ReframeError):
    """A check that would be skipped, under ``-S strict=yes``."""


class Validation(rfm.RegressionTestPlugin):
    #: A check that cannot run (no source, no GPU, no tool) fails instead
    #: of being skipped.
    # typ.Bool: from the command line "no" / "false" / "0" is False
    strict = variable(typ.Bool, value=False)

    #: Why the test was skipped; in the run report for ``hpcval verdict``.
    hpcval_skip_reason = variable(str, value='')
    input_policy = {'strict': inputs.FLAG, 'hpcval_skip_reason': inputs.RECORD}

    def skip(self, msg=None):
        self.hpcval_skip_reason = msg or 'skipped (no reason given)'
        if self.strict:
            raise NotValidated(f'strict, and it would be skipped: '
                               f'{self.hpcval_skip_reason}')
        super().skip(msg)

    #: A fixture whose environment ReFrame may pick from any check sharing
    #: it (a session-scope source also used by CPU checks) does not skip
    #: for its environment.
    any_environ = False

    @run_after('setup')
    def skip_unusable_environ(self):
        # a GPU check listed where its environment cannot be used
        why = self.current_partition.extras.get(features.UNUSABLE, {})
        self.skip_if(not self.any_environ and
                     self.current_environ.name in why,
                     why.get(self.current_environ.name))
