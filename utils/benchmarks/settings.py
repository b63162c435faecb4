"""The -S variables of source acquisition, shared by every hpcval test.

Declared on checks and on their source and build fixtures alike, so that
``-S src_mirror=...`` or ``-S prebuilt_dir=...`` meets no test without the
variable (ReFrame warns about those).  Only the fixtures in
hpcval.benchmarks.source act on them; checks that build nothing ignore them.
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
