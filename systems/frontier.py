"""frontier: OLCF's HPE Cray EX, 4x AMD MI250X (8 GCDs) per node.

As OLCF's Frontier user guide documents it (guide edited 2026-07-07,
https://docs.olcf.ornl.gov/systems/frontier_user_guide.html): Slurm and ``srun``, no launch nodes, every job
charged to a project (``--account`` from $HPCVAL_ACCOUNT), partition
``batch``, 30-minute jobs (well inside the 2 h cap for 1-91 nodes).

A job sees 56 of the 64 cores (core specialization ``-S 8`` is the default),
so the processor is declared as those 56 cores x 2 hardware threads.  One
rank per GCD is OLCF's canonical ``-c7 --gpus-per-task=1
--gpu-bind=closest``: each rank then sees one GPU, its closest.  RCCL across
nodes uses the ``rccl-net-plugin`` module and OLCF's recommended libfabric
settings, but not ``FI_CXI_RDZV_PROTO=alt_read`` (it needs
``--network=disable_rdzv_get`` and may slow MPI) and not on one node (the
plugin does not initialise there).
"""
from hpcval import features as ft
from systems._site import (account, account_access, environ, processor,
                           slurm_partition)

NAME = 'frontier'

_extras = {
    'gpu_layouts': {
        'rank_per_gpu': {
            'launcher_options': ['--gpus-per-task=1', '--gpu-bind=closest'],
            'cpus_per_task': 7,
            'env_vars': {'OMP_NUM_THREADS': '7'},
            'one_visible_gpu': True,
        },
        'process_per_node': {
            'launcher_options': ['--gpus-per-task={gpus}'],
            'cpus_per_task': 56,
        },
    },
    'multinode_collectives': {
        'modules': ['rccl-net-plugin'],
        'env_vars': {
            'NCCL_NET': 'OFI',
            'NCCL_CROSS_NIC': '1',
            'NCCL_NET_GDR_LEVEL': 'PHB',
            'NCCL_SOCKET_IFNAME': 'hsn0,hsn1,hsn2,hsn3',
            'HSA_FORCE_FINE_GRAIN_PCIE': '1',
            'FI_MR_CACHE_MONITOR': 'kdreg2',
            'FI_CXI_DISABLE_HOST_REGISTER': '1',
            'FI_CXI_DEFAULT_CQ_SIZE': '131072',
            'FI_CXI_DEFAULT_TX_SIZE': '2048',
            'FI_CXI_RX_MATCH_MODE': 'hybrid',
        },
    },
    'gpu_aware_mpi': {'env_vars': {'MPICH_GPU_SUPPORT_ENABLED': '1'}},
}
if account(NAME):
    _extras['scratch_dir'] = f'/lustre/orion/{account(NAME)}/scratch/$USER'

system = {
    'name': NAME,
    'descr': 'OLCF Frontier (HPE Cray EX): AMD EPYC 64c + 4x MI250X',
    'hostnames': [r'^login\d+\.frontier\.olcf\.ornl\.gov$',
                  r'^frontier\d+$'],
    'modules_system': 'lmod',
    'partitions': [
        slurm_partition(
            'batch',
            'Compute nodes: 56 usable Zen 3 cores, 8 GCDs (gfx90a, 64 GB '
            'HBM2E each), 4x Slingshot 200 Gb/s',
            access=['--partition=batch',
                    *account_access(NAME, '--account={}')],
            environs=['PrgEnv-gnu', 'rocm'],
            features=[ft.CPU, ft.MPI, ft.MULTINODE, ft.GPU, ft.AMDGPU,
                      ft.GPU_AWARE_MPI],
            cpu=processor('zen3', cores=56, threads_per_core=2, sockets=1),
            devices=[{'type': 'gpu', 'arch': 'gfx90a', 'num_devices': 8}],
            extras=_extras,
        )
    ]
}

environments = [
    environ('PrgEnv-gnu', NAME, modules=['PrgEnv-gnu'],
            features=[ft.OPENMP]),
    # hipcc, RCCL and rocBLAS from the rocm module; cray-mpich's GTL for
    # GPU buffers comes with craype-accel-amd-gfx90a
    environ('rocm', NAME,
            modules=['PrgEnv-amd', 'rocm', 'craype-accel-amd-gfx90a'],
            features=[ft.OPENMP, ft.ROCM],
            env_vars={'NCCL_HOME': '$ROCM_PATH', 'MPI_HOME': '$MPICH_DIR'}),
]
