"""The node's health (GPU tool, GPU inventory, kernel log) as a test that
passes or fails in ReFrame's own summary, judged as ``hpcval verdict``
judges it (docs/health.md)."""
import reframe as rfm

from hpcval.benchmarks.node_health import NodeHealth


@rfm.simple_test
class NodeHealthCheck(NodeHealth):
    pass
