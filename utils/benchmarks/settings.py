"""The -S variables of source acquisition, shared by every hpcval test.

Declared on checks and on their source and build fixtures alike, so that
``-S src_mirror=...``, ``-S prebuilt_dir=...`` or ``-S replay_dir=...`` meets
no test without the variable (ReFrame warns about those).  Only the fixtures
in hpcval.benchmarks.source act on the first two; checks that build nothing
ignore them.
"""
import reframe as rfm
from reframe.core.builtins import variable


class SourceSettings(rfm.RegressionTestPlugin):
    #: Local copy of the upstream source for air-gapped sites: a git
    #: repository (bare or not), a folder at the pinned version, or a
    #: release tarball with one top-level folder.
    src_mirror = variable(str, value='')

    #: Folder with the benchmark's executables under their upstream names;
    #: when set, nothing is fetched or built.
    prebuilt_dir = variable(str, value='')

    #: Folder of recorded outputs to replay instead of running anything
    #: (with -C config/replay.py; hpcval.replay, docs/replay.md).
    replay_dir = variable(str, value='')
