"""The verdict matrix (tests/bench_verdict_matrix.py) on every committed
real capture: no false alarm on a healthy run, no planted fault passed,
none named on the wrong GPU or link.  Planted at each rule's limit only
(``--quick``); the full ladder of drops is the benchmark's."""
import bench_verdict_matrix as matrix


def test_every_capture_judged_right_at_once(capsys):
    rc = matrix.main(['--quick'])
    out = capsys.readouterr().out
    assert rc == 0, out
    # every capture set with runs committed was judged
    for cs in matrix.SETS:
        if cs.healthy:
            assert f'\n{cs.name} ' in f'\n{out}', out


def test_a_planted_fault_at_the_limit_is_counted(tmp_path):
    """The mutation itself: a link figure and its ratio move together, a
    time grows where a bandwidth shrinks."""
    report = {'runs': [{'testcases': [{'display_name': 'T', 'perfvalues': {
        'local:default:bidir_vs_siblings@gpu02_to_gpu01':
            [1.0, 1, -0.2, None, 'x', 'pass'],
        'local:default:bidir_gpu02_to_gpu01': [300.0, 0, None, None, 'GB/s',
                                               'pass'],
        'local:default:latency_8B': [2.0, 2, None, 0.5, 'us', 'pass']}}]}]}
    out = matrix.plant(report, 0,
                       'local:default:bidir_vs_siblings@gpu02_to_gpu01', 0.3)
    pv = out['runs'][0]['testcases'][0]['perfvalues']
    assert pv['local:default:bidir_vs_siblings@gpu02_to_gpu01'][0] == 0.7
    assert pv['local:default:bidir_gpu02_to_gpu01'][0] == 210.0
    out = matrix.plant(report, 0, 'local:default:latency_8B', 0.5)
    assert out['runs'][0]['testcases'][0]['perfvalues'][
        'local:default:latency_8B'][0] == 4.0
    assert matrix.family('TransferBenchCudaCheck', 'bidir_vs_siblings@'
                         'gpu02_to_gpu01') == 'link'
    assert matrix._expected('link', 'x:bidir_vs_siblings@gpu02_to_gpu01') \
        == 'GPU 02 -> GPU 01'
