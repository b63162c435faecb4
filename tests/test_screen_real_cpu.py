"""The node screen's peer rule on real clusters' per-node CPU figures:
mixbench-cpu double-precision GFLOPS at its most compute-bound point
(512 compute iterations, 128 flops/byte) of every node of two Slurm
clusters of identical nodes, five one-node jobs per node
(tests/fixtures/documents/README.md: AWS ParallelCluster, 32 x
hpc6a.48xlarge, 96 threads; Azure CycleCloud, 32 x HB120rs_v3, 3
threads as published).  A node's figure is its best of the first three
runs, as the screen mode's best of three; a slow node is a mutation of
the real figures (one node's rate x0.9), one defect at a time."""
import pathlib
import re

import pytest

from test_screen_real_stream import (named, reach, slowest_median_fastest,
                                     smallest_drop_named_alone)

DOCUMENTS = pathlib.Path(__file__).parent / 'fixtures' / 'documents'
AWS = 'llnl-cloud-study-aws-hpc6a-mixbench.txt'
AZURE = 'llnl-cloud-study-azure-hb120rs-v3-mixbench.txt'
DOCUMENT_NODES = {AWS: 32, AZURE: 32}
RULE = {'unit': 'GFLOP/s', 'metric': 'dp_gflops'}
# size32/results/mixbench/<node>-mixbench-1n-<job>-iter-<run>.out:  512,
# SP flops/byte, time, GFLOPS, GB/s, DP flops/byte, time, GFLOPS, ...
_ROW = re.compile(r'size32/results/mixbench/(\S+)-mixbench-1n-\d+-iter-'
                  r'(\d)\.out:\s+512,(?:\s+[\d.]+,){6}\s+([\d.]+),')


def runs(document):
    """{node: {run: DP GFLOPS}} of ``document``."""
    out = {}
    for line in (DOCUMENTS / document).read_text().splitlines():
        node, run, gflops = _ROW.match(line).groups()
        out.setdefault(node, {})[int(run)] = float(gflops)
    return out


def best_of_three(document):
    return {node: max(r[i] for i in (1, 2, 3))
            for node, r in runs(document).items()}


@pytest.mark.parametrize('document', DOCUMENT_NODES)
def test_the_documents_hold_every_run_of_every_node(document):
    found = runs(document)
    assert len(found) == DOCUMENT_NODES[document]
    assert all(sorted(r) == [1, 2, 3, 4, 5] for r in found.values())


@pytest.mark.parametrize('document', DOCUMENT_NODES)
def test_healthy_as_published_no_node_is_named(document):
    values = best_of_three(document)
    assert named(values, **RULE) == []
    r = reach(values, test='mixbench-cpu', **RULE)
    assert r.screened
    print(f'{document}: {r.line()}')


@pytest.mark.parametrize('document', DOCUMENT_NODES)
def test_single_runs_name_no_healthy_node(document):
    found = runs(document)
    assert [named({n: r[run] for n, r in found.items()}, **RULE)
            for run in range(1, 6)] == [[]] * 5


@pytest.mark.parametrize('document', DOCUMENT_NODES)
def test_a_node_10_percent_slow_is_named_alone(document):
    values = best_of_three(document)
    for node in slowest_median_fastest(values):
        assert named({**values, node: values[node] * 0.9}, **RULE) == [node]


# the smallest drop named alone of the slowest, median and fastest node
# (docs/measurements.md)
SMALLEST_DROPS = {AWS: (0.0439, 0.0522, 0.0598),
                  AZURE: (0.0498, 0.0500, 0.0502)}


@pytest.mark.parametrize('document', DOCUMENT_NODES)
def test_the_smallest_drop_named_alone(document):
    values = best_of_three(document)
    drops = [smallest_drop_named_alone(values, node, **RULE)
             for node in slowest_median_fastest(values)]
    print(f'{document}: smallest drop named alone '
          f'(slowest, median, fastest node): '
          + ', '.join(f'{d:.2%}' for d in drops))
    assert drops == pytest.approx(SMALLEST_DROPS[document], abs=2e-4)
