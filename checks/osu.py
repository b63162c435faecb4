"""OSU micro-benchmarks: MPI latency and bandwidth between two ranks on one
socket, across sockets and across nodes (host buffers), and between two
GPUs with device buffers on one node and across nodes where the partition
declares GPU-aware MPI (the base adds +mpi, +multinode, +gpu-aware-mpi)."""
import reframe as rfm
from reframe.core.builtins import fixture, parameter

from hpcval import features as ft
from hpcval.benchmarks.osu import GPU_PLACEMENTS, OsuBenchmark, OsuBuild


@rfm.simple_test
class OsuCpuCheck(OsuBenchmark):
    build = fixture(OsuBuild, scope='environment')
    valid_systems = [f'+{ft.CPU}']
    # host buffers: one run per partition, in a CPU environment
    valid_prog_environs = [ft.CPU_ENVIRONS]


@rfm.simple_test
class OsuCudaCheck(OsuBenchmark):
    placement = parameter(GPU_PLACEMENTS)
    build = fixture(OsuBuild, scope='environment',
                    variables={'accelerator': 'cuda'})
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']


@rfm.simple_test
class OsuRocmCheck(OsuBenchmark):
    placement = parameter(GPU_PLACEMENTS)
    build = fixture(OsuBuild, scope='environment',
                    variables={'accelerator': 'rocm'})
    valid_systems = [f'+{ft.AMDGPU}']
    valid_prog_environs = [f'+{ft.ROCM}']
