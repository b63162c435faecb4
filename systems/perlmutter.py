"""perlmutter: NERSC's HPE Cray EX; A100 GPU nodes and CPU nodes.

As NERSC documents it (https://docs.nersc.gov/): Slurm and
``srun``; the node type is a constraint (``-C gpu`` / ``-C cpu``, which
differ: one EPYC 7763 and 4x A100 vs two EPYC 7763); no ``--qos`` means
``debug``, so jobs ask for ``regular``; ``--account`` from $HPCVAL_ACCOUNT
(whether GPU projects still need the ``_g`` suffix is unverified: set the
variable to what NERSC gave you).

GPU binding follows NERSC's 2025 recipe (``--cpus-per-task 32
--gpus-per-task 1 --gpu-bind none`` with ``CUDA_VISIBLE_DEVICES=3,2,1,0``):
per-task GPU isolation breaks Cray MPICH's CUDA IPC, so every rank sees all
four GPUs and picks its own by node-local rank.  NCCL across nodes: NERSC's
2022 libfabric settings; the bare-metal plugin module's name is unverified,
so the site names the plugin's folder in $HPCVAL_NCCL_NET_PLUGIN_DIR.
"""
from hpcval import features as ft
from systems._site import (account_access, environ, nccl_net_env, processor,
                           slurm_partition)

NAME = 'perlmutter'
_ACCOUNT = account_access(NAME, '--account={}')

_nccl_net = nccl_net_env(NAME, {
    'NCCL_CROSS_NIC': '1',
    'NCCL_SOCKET_IFNAME': 'hsn',
    'FI_CXI_RDZV_THRESHOLD': '0',
    'FI_CXI_RDZV_GET_MIN': '0',
    'FI_CXI_OFLOW_BUF_SIZE': '1073741824',
    'FI_CXI_OFLOW_BUF_COUNT': '1',
    'FI_CXI_SAFE_DEVMEM_COPY_THRESHOLD': '16777216',
    'FI_MR_CACHE_MONITOR': 'userfaultfd',
})

_scratch = {'scratch_dir': '$PSCRATCH'}

system = {
    'name': NAME,
    'descr': 'NERSC Perlmutter (HPE Cray EX): A100 GPU and EPYC CPU nodes',
    'hostnames': [r'^login\d+\.perlmutter\.nersc\.gov$', r'^nid\d{6}$'],
    'modules_system': 'lmod',
    'partitions': [
        slurm_partition(
            'gpu',
            'GPU nodes: 1x EPYC 7763 (64 cores), 4x A100 (NVLink), '
            '4x Slingshot 11',
            access=['--constraint=gpu', '--qos=regular', '--gpus-per-node=4',
                    *_ACCOUNT],
            environs=['PrgEnv-gnu', 'cuda'],
            features=[ft.CPU, ft.MPI, ft.MULTINODE, ft.GPU, ft.NVGPU,
                      ft.GPU_AWARE_MPI],
            cpu=processor('zen3', cores=64, threads_per_core=2, sockets=1),
            devices=[{'type': 'gpu', 'arch': 'sm_80', 'num_devices': 4}],
            extras={
                'gpu_layouts': {
                    'rank_per_gpu': {
                        'launcher_options': ['--gpus-per-task=1',
                                             '--gpu-bind=none'],
                        'cpus_per_task': 32,
                        'env_vars': {'CUDA_VISIBLE_DEVICES': '3,2,1,0',
                                     'MPICH_OFI_NIC_POLICY': 'GPU'},
                    },
                    'process_per_node': {
                        'launcher_options': ['--gpus-per-task={gpus}'],
                        'cpus_per_task': 128,
                    },
                },
                'multinode_collectives': {'env_vars': _nccl_net},
                'gpu_aware_mpi': {
                    'env_vars': {'MPICH_GPU_SUPPORT_ENABLED': '1'}
                },
                **_scratch,
            },
        ),
        slurm_partition(
            'cpu', 'CPU nodes: 2x EPYC 7763 (128 cores), 512 GB',
            access=['--constraint=cpu', '--qos=regular', *_ACCOUNT],
            environs=['PrgEnv-gnu'],
            features=[ft.CPU, ft.MPI, ft.MULTINODE],
            cpu=processor('zen3', cores=128, threads_per_core=2, sockets=2),
            extras=dict(_scratch),
        ),
    ]
}

environments = [
    environ('PrgEnv-gnu', NAME, modules=['PrgEnv-gnu'],
            features=[ft.OPENMP]),
    # nvcc from cudatoolkit; craype-accel-nvidia80 links cray-mpich's GTL.
    # No NCCL module is documented in what we read: nccl-tests builds need
    # NCCL_HOME from the site (or -S NcclTestsBuild.nccl_home=DIR)
    environ('cuda', NAME,
            modules=['PrgEnv-gnu', 'cudatoolkit', 'craype-accel-nvidia80'],
            features=[ft.OPENMP, ft.CUDA],
            env_vars={'MPI_HOME': '$MPICH_DIR'}),
]
