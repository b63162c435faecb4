"""Storage throughput and IOPS with elbencho (CSC elbencho talk's cases): host
buffers on every CPU partition, GPU buffers (--gpuids) on NVIDIA GPU
partitions; one shared file or one file per thread, 1 MiB sequential or
4 KiB random, write then read."""
import reframe as rfm
from reframe.core.builtins import fixture

from hpcval import features as ft
from hpcval.benchmarks.elbencho import Elbencho, ElbenchoBuild


@rfm.simple_test
class ElbenchoCpuCheck(Elbencho):
    buffers = 'cpu'
    build = fixture(ElbenchoBuild, scope='environment')
    valid_systems = [f'+{ft.CPU}']
    valid_prog_environs = [ft.CPU_ENVIRONS]


@rfm.simple_test
class ElbenchoGpuCheck(Elbencho):
    buffers = 'gpu'
    build = fixture(ElbenchoBuild, scope='environment',
                    variables={'cuda': True})
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']
