"""gpu-burn: cuBLAS GEMM rate (float, double, float on tensor cores) and
compute errors of every NVIDIA GPU of a node at once."""
import reframe as rfm
from reframe.core.builtins import fixture

from hpcval import features as ft
from hpcval.benchmarks.gpu_burn import GpuBurn, GpuBurnBuild


@rfm.simple_test
class GpuBurnCudaCheck(GpuBurn):
    build = fixture(GpuBurnBuild, scope='environment')
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']
