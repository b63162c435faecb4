"""Benchmark base classes; the runnable leaves in checks/ pick variants."""
