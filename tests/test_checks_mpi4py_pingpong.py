"""The mpi4py ping-pong check through real ReFrame runs on ``local``."""
from rfmrun import by_name, reframe


def test_mpi4py_device_buffers_skip_without_gpu_aware_mpi(tmp_path):
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'Mpi4pyPingPongCheck', '-S', 'array=cupy',
                           tmp_path=tmp_path,
                           checks=('checks/mpi4py_pingpong.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert {tc['result'] for tc in by_name(report, 'Mpi4pyPingPong')} == \
        {'skip'}
    assert 'does not declare gpu-aware-mpi: MPI is not GPU-aware here' in \
        proc.stdout


def test_fewer_loops_shorten_every_size(tmp_path):
    """``loops`` below mpi4py's 1000 also caps the sizes from 16 KiB up
    (``--loop-large``), whose 1000 round trips each took most of a short
    run's time."""
    proc, _ = reframe('--dry-run', '--system', 'local', '-n',
                      'Mpi4pyPingPongCheck%placement=on_node', '-S',
                      'loops=100', tmp_path=tmp_path,
                      checks=('checks/mpi4py_pingpong.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    [script] = (tmp_path / 'rfm' / 'stage').glob('**/rfm_job.sh')
    assert '-l 100 --loop-large 100' in script.read_text()
