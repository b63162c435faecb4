"""The smallest case of tests/bench_screen.py cost on the session's
minicluster: a screen of a check that does nothing asks Slurm for each
finished job's node list once (hpcval.benchmarks.screening's cache, which
every screen check gets, not only hpcval's benchmarks)."""
import bench_screen


def test_a_trivial_screen_asks_scontrol_once_a_node(faults, tmp_path):
    nodes = len(faults.nodes)
    _, calls, _, _, passed = bench_screen.screen_cost(faults,
                                                      tmp_path / 'cost')
    assert passed == nodes
    # 19 a node without the cache; one a job with it, and ReFrame's one
    assert calls['scontrol'][0] <= nodes + 1, calls
    assert calls['sbatch'][0] == nodes, calls
