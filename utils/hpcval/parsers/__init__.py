"""Parsers of upstream outputs: plain functions raising a naming ParseError."""
from hpcval.parsers.common import ParseError  # noqa: F401 (re-exported)
