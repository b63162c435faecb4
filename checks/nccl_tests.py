"""Collective bus bandwidth: nccl-tests on NVIDIA GPUs, rccl-tests on AMD
GPUs; one process driving every GPU of a node, and one MPI rank per GPU
across nodes (the base adds +mpi +multinode for that mode)."""
import reframe as rfm
from reframe.core.builtins import fixture

from hpcval import features as ft
from hpcval.benchmarks.nccl_tests import (CollectiveBandwidth, NcclTestsBuild,
                                          RcclTestsBuild)


@rfm.simple_test
class NcclTestsNodeCheck(CollectiveBandwidth):
    mode = 'single_process'
    build = fixture(NcclTestsBuild, scope='environment')
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']
    tags = {'nccl'}


@rfm.simple_test
class NcclTestsMultiNodeCheck(CollectiveBandwidth):
    mode = 'rank_per_gpu'
    num_nodes = 2
    build = fixture(NcclTestsBuild, scope='environment',
                    variables={'mpi': True})
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']
    tags = {'nccl'}


@rfm.simple_test
class RcclTestsNodeCheck(CollectiveBandwidth):
    mode = 'single_process'
    build = fixture(RcclTestsBuild, scope='environment')
    valid_systems = [f'+{ft.AMDGPU}']
    valid_prog_environs = [f'+{ft.ROCM}']
    tool = 'rccl-tests'
    tags = {'rccl'}


@rfm.simple_test
class RcclTestsMultiNodeCheck(CollectiveBandwidth):
    mode = 'rank_per_gpu'
    num_nodes = 2
    build = fixture(RcclTestsBuild, scope='environment',
                    variables={'mpi': True})
    valid_systems = [f'+{ft.AMDGPU}']
    valid_prog_environs = [f'+{ft.ROCM}']
    tool = 'rccl-tests'
    tags = {'rccl'}
