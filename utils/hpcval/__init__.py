"""hpcval: helpers for the ReFrame checks in checks/.

Installed from the repository's utils/ folder under the name ``hpcval``.
Parsers (``hpcval.parsers``) are plain functions over text and need no
ReFrame; the benchmark base classes (``hpcval.benchmarks``) do.
"""
__version__ = '0.1.0'
