"""The mpi4py ping-pong check through real ReFrame runs on ``local``."""
from rfmrun import by_name, reframe


def test_mpi4py_device_buffers_skip_without_gpu_aware_mpi(tmp_path):
    proc, report = reframe('-r', '--system', 'local', '-n',
                           'Mpi4pyPingPongCheck', '-S', 'array=cupy',
                           tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert {tc['result'] for tc in by_name(report, 'Mpi4pyPingPong')} == \
        {'skip'}
    assert 'does not declare gpu-aware-mpi: MPI is not GPU-aware here' in \
        proc.stdout
