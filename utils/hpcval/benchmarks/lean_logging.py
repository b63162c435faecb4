"""ReFrame's per-record check attributes without the deprecated
``variables``."""
import reframe as rfm


class LeanLogging(rfm.RegressionTestPlugin):
    """ReFrame 4.10's logger reads every loggable attribute of the test at
    each log record, ``variables`` too, whose deprecation warning walks the
    whole call stack with its source lines even when suppressed: 45 % of a
    ``--dry-run``.  It is ``env_vars`` under an old name, in no perflog."""

    @classmethod
    def loggable_attrs(cls):
        return [attr for attr in type(cls).loggable_attrs(cls)
                if attr[0] != 'variables']
