"""rocblas-bench GEMMs of the MI300X validation guide (fp32, the guide's
"BF16" command that is fp16, a true bf16 variant, int8) on AMD GPUs."""
import reframe as rfm
from reframe.core.builtins import fixture

from hpcval import features as ft
from hpcval.benchmarks.rocblas_bench import RocblasBench, RocblasBenchBuild


@rfm.simple_test
class RocblasBenchCheck(RocblasBench):
    build = fixture(RocblasBenchBuild, scope='environment')
    valid_systems = [f'+{ft.AMDGPU}']
    valid_prog_environs = [f'+{ft.ROCM}']
