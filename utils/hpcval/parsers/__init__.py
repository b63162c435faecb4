"""Parsers of the upstream benchmarks' outputs: plain functions over text.

Each parser returns a small result object or raises :class:`ParseError`
whose message names what was missing or wrong, so that a check can turn it
into a sanity failure a person can act on.
"""
from hpcval.parsers.common import ParseError  # noqa: F401 (re-exported)
