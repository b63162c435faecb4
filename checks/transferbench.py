"""TransferBench a2a, p2p and config-file runs on every GPU of a node:
TransferBench (hipcc) on AMD GPUs, TransferBenchCuda (nvcc) on NVIDIA
GPUs; GPU pairs are screened one by one besides the averages."""
import reframe as rfm
from reframe.core.builtins import fixture

from hpcval import features as ft
from hpcval.benchmarks.transferbench import TransferBench, TransferBenchBuild


@rfm.simple_test
class TransferBenchCheck(TransferBench):
    build = fixture(TransferBenchBuild, scope='environment',
                    variables={'model': 'hip'})
    valid_systems = [f'+{ft.AMDGPU}']
    valid_prog_environs = [f'+{ft.ROCM}']


@rfm.simple_test
class TransferBenchCudaCheck(TransferBench):
    build = fixture(TransferBenchBuild, scope='environment',
                    variables={'model': 'cuda'})
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']
