"""Comm|Scope: kernel launch and device synchronize latency, pinned
host<->GPU and GPU<->GPU copy bandwidth and latency, on every GPU (and
GPU pair) of one node: NVIDIA with CUDA, AMD with HIP."""
import reframe as rfm
from reframe.core.builtins import fixture

from hpcval import features as ft
from hpcval.benchmarks.comm_scope import CommScope, CommScopeBuild


@rfm.simple_test
class CommScopeCudaCheck(CommScope):
    build = fixture(CommScopeBuild, scope='environment',
                    variables={'model': 'cuda'})
    valid_systems = [f'+{ft.NVGPU}']
    valid_prog_environs = [f'+{ft.CUDA}']


@rfm.simple_test
class CommScopeHipCheck(CommScope):
    build = fixture(CommScopeBuild, scope='environment',
                    variables={'model': 'hip'})
    valid_systems = [f'+{ft.AMDGPU}']
    valid_prog_environs = [f'+{ft.ROCM}']
