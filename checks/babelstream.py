"""BabelStream memory bandwidth: CPUs with OpenMP, NVIDIA GPUs with CUDA,
AMD GPUs with HIP (every GPU of the node at once)."""
import reframe as rfm
from reframe.core.builtins import fixture

from hpcval import features as ft
from hpcval.benchmarks.babelstream import BabelStream, BabelStreamBuild


@rfm.simple_test
class BabelStreamCpuCheck(BabelStream):
    build = fixture(BabelStreamBuild, scope='environment',
                    variables={'model': 'omp'})
    valid_systems = [f'+{ft.CPU}']
    valid_prog_environs = [f'+{ft.OPENMP} {ft.CPU_ENVIRONS}']
    tags = {'babelstream', 'cpu-bandwidth'}


@rfm.simple_test
class BabelStreamCudaCheck(BabelStream):
    array_size = 2**28
    num_times = 50
    build = fixture(BabelStreamBuild, scope='environment',
                    variables={'model': 'cuda'})
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']


@rfm.simple_test
class BabelStreamHipCheck(BabelStream):
    array_size = 2**28
    num_times = 50
    build = fixture(BabelStreamBuild, scope='environment',
                    variables={'model': 'hip'})
    valid_systems = [f'+{ft.AMDGPU}']
    valid_prog_environs = [f'+{ft.ROCM}']
