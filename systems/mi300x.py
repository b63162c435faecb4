"""mi300x: one AMD Instinct MI300X platform, 8 GPUs in one box.

As AMD's ROCm documentation describes it (rocm.docs.amd.com):
8x MI300X OAM (gfx942, 192 GB HBM3), each on PCIe Gen5 x16 to a dual-socket
EPYC host, all pairs linked by one xGMI link.  No batch system: ReFrame's
local scheduler runs jobs on the box itself and Open MPI's ``mpirun`` starts
ranks (the guide's ``mpirun -np 8 --bind-to numa``); that choice is the
project's, not AMD's.  The host CPU varies between boxes, so it is detected
when the configuration loads; the GPUs are the platform's and declared.
ROCm is expected in /opt/rocm ($ROCM_PATH overrides).

Select it with ``--system mi300x``: no host name pattern is claimed.
"""
from hpcval import features as ft
from systems._site import box_partition, detect_host_cpu, environ

NAME = 'mi300x'

detect = detect_host_cpu

system = {
    'name': NAME,
    'descr': 'AMD Instinct MI300X platform: 8x MI300X (gfx942), one box',
    'hostnames': [],
    'modules_system': 'nomod',
    'partitions': [
        box_partition(
            'The box: local scheduler, Open MPI mpirun',
            environs=['gnu', 'rocm'],
            features=[ft.CPU, ft.MPI, ft.GPU, ft.AMDGPU, ft.GPU_AWARE_MPI],
            devices=[{'type': 'gpu', 'arch': 'gfx942', 'num_devices': 8}],
            extras={
                'gpu_layouts': {
                    'rank_per_gpu': {'launcher_options': ['--bind-to',
                                                          'numa']},
                },
                # Open MPI with UCX's ROCm transport (AMD's GPU-aware MPI page)
                'gpu_aware_mpi': {
                    'launcher_options': ['-x', 'UCX_TLS=sm,self,rocm',
                                         '--mca', 'pml', 'ucx'],
                },
                'scratch_dir': '/tmp',
            },
        )
    ]
}

_rocm = {'ROCM_PATH': '${ROCM_PATH:-/opt/rocm}',
         'PATH': '${ROCM_PATH:-/opt/rocm}/bin:$PATH',
         'NCCL_HOME': '${ROCM_PATH:-/opt/rocm}'}

environments = [
    environ('gnu', NAME, features=[ft.OPENMP], cc='gcc', cxx='g++',
            ftn='gfortran'),
    environ('rocm', NAME, features=[ft.OPENMP, ft.ROCM], cc='hipcc',
            cxx='hipcc', ftn='gfortran', env_vars=_rocm),
]
