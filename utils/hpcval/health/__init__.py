"""Node inventory and GPU health: tool parsers, kernel log, probe, judge."""
