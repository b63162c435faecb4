"""kestrel: NREL's HPE Cray EX; H100 GPU nodes and Sapphire Rapids CPU nodes.

As NREL documents it (https://nrel.github.io/HPC/): Slurm and
``srun``; ``--account`` (from $HPCVAL_ACCOUNT) and ``--time`` on every job;
partitions are routed from the request.  GPU nodes are shared by default,
so every measurement asks for its nodes alone (the checks'
``exclusive_access``: ``--exclusive``) and here also ``--mem=0`` (all of the node's memory;
``--exclusive`` alone grants only the memory requested) and
``--gres=gpu:h100:4`` (NREL's own example).  Build on the GPU login nodes.

The procurement run behind the references (NREL Kestrel collective benchmark: 64 GPUs on 16 nodes)
used nccl-tests with NCCL over Slingshot through an OFI plugin the site
builds (NERSC/nccl-ofi-plugin); NREL does not document a module for it, so
its folder comes from $HPCVAL_NCCL_NET_PLUGIN_DIR.  The libfabric settings
are HPE's generic ones for Slingshot with the GPU node's two NICs.
"""
from hpcval import features as ft
from systems._site import (account_access, environ, nccl_net_env, processor,
                           slurm_partition)

NAME = 'kestrel'
_ACCOUNT = account_access(NAME, '--account={}')

_nccl_net = nccl_net_env(NAME, {
    'NCCL_CROSS_NIC': '1',
    'NCCL_SOCKET_IFNAME': 'hsn0,hsn1',
    'NCCL_NET_GDR_LEVEL': 'PHB',
    'FI_MR_CACHE_MONITOR': 'userfaultfd',
    'FI_CXI_DISABLE_HOST_REGISTER': '1',
    'FI_CXI_DEFAULT_CQ_SIZE': '131072',
    'FI_CXI_RDZV_THRESHOLD': '0',
    'FI_CXI_RDZV_GET_MIN': '0',
})

_scratch = {'scratch_dir': '/scratch/$USER'}

system = {
    'name': NAME,
    'descr': 'NREL Kestrel (HPE Cray EX): H100 GPU and SPR CPU nodes',
    'hostnames': [r'^kl\d+$', r'^kestrel-gpu', r'^x\d+c\d+s\d+b\d+n\d+$'],
    'modules_system': 'lmod',
    'partitions': [
        slurm_partition(
            'gpu-h100',
            'GPU nodes: 2x AMD Genoa (128 cores), 4x H100 SXM 80 GB, '
            '2x Slingshot 11 200 Gb/s',
            access=['--mem=0', '--gres=gpu:h100:4', *_ACCOUNT],
            environs=['PrgEnv-gnu', 'cuda'],
            features=[ft.CPU, ft.MPI, ft.MULTINODE, ft.GPU, ft.NVGPU,
                      ft.GPU_AWARE_MPI],
            cpu=processor('zen4', cores=128, threads_per_core=1, sockets=2),
            devices=[{'type': 'gpu', 'arch': 'sm_90', 'num_devices': 4}],
            extras={
                'gpu_layouts': {
                    'rank_per_gpu': {'cpus_per_task': 32,
                                     'env_vars': {'OMP_NUM_THREADS': '32'}},
                    'process_per_node': {'cpus_per_task': 128},
                },
                'multinode_collectives': {'env_vars': _nccl_net},
                'gpu_aware_mpi': {
                    'env_vars': {'MPICH_GPU_SUPPORT_ENABLED': '1',
                                 'MPICH_OFI_NIC_POLICY': 'GPU'}
                },
                **_scratch,
            },
        ),
        slurm_partition(
            'cpu',
            'CPU nodes: 2x Xeon Sapphire Rapids (104 cores), 256 GB DDR5',
            access=['--mem=0', *_ACCOUNT],
            environs=['PrgEnv-gnu'],
            features=[ft.CPU, ft.MPI, ft.MULTINODE],
            cpu=processor('sapphirerapids', cores=104, threads_per_core=1,
                          sockets=2),
            extras=dict(_scratch),
        ),
    ]
}

environments = [
    environ('PrgEnv-gnu', NAME, modules=['PrgEnv-gnu'],
            features=[ft.OPENMP]),
    # Cray MPICH needs the cuda module for its GTL even without CUDA code
    environ('cuda', NAME,
            modules=['PrgEnv-gnu', 'cuda', 'craype-accel-nvidia90'],
            features=[ft.OPENMP, ft.CUDA],
            env_vars={'MPI_HOME': '$MPICH_DIR'}),
]
