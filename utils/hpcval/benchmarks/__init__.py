"""Benchmark base classes: what a benchmark is, independent of where it runs.

Each module holds the abstract ReFrame tests for one upstream benchmark
(source and build fixtures, the run, sanity and metrics).  The runnable
leaves in checks/ pick the variants and the systems, by feature.
"""
