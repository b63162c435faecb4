"""summit: OLCF's IBM AC922 (POWER9, 6x V100), decommissioned 2024-11-15.

Kept because its references are published and historical (Sandia's Cluster
2023 poster).  As OLCF's archived Summit guide documents it
(https://docs.olcf.ornl.gov/systems/summit_user_guide.html): IBM LSF (``bsub``) and ``jsrun``, the
project as ``-P`` (from $HPCVAL_ACCOUNT), ``-nnodes`` with one hyphen,
queue ``batch``, a wall time on every job.  jsrun sees 42 cores (one per
socket is reserved) with SMT4: 168 hardware threads.

One rank per GPU is a resource set of one task, one GPU and seven cores
(``jsrun -n <ranks> -r 6 -a 1 -g 1 -c 7``); jsrun then shows each rank only
its GPU.  GPU buffers in MPI need ``--smpiargs="-gpu"``, and CUDA newer than
11.0.3 breaks Spectrum MPI's GPU support, so the ``cuda`` environment pins
it.
"""
from hpcval import features as ft
from systems._site import account, account_access, environ

NAME = 'summit'

_extras = {
    'gpu_layouts': {
        'rank_per_gpu': {
            'launcher_options': ['-g', '1', '-c', '7'],
            'env_vars': {'OMP_NUM_THREADS': '7'},
            'one_visible_gpu': True,
        },
        'process_per_node': {'launcher_options': ['-g', '{gpus}', '-c', '42']},
    },
    'gpu_aware_mpi': {'launcher_options': ['--smpiargs="-gpu"']},
}
if account(NAME):
    _extras['scratch_dir'] = f'/gpfs/alpine2/{account(NAME)}/scratch/$USER'

system = {
    'name': NAME,
    'descr': 'OLCF Summit (IBM AC922): 2x POWER9 + 6x V100, retired',
    'hostnames': [r'^login\d+\.summit\.olcf\.ornl\.gov$'],
    'modules_system': 'lmod',
    'partitions': [
        {
            'name': 'batch',
            'descr': 'Compute nodes: 2x POWER9 (42 usable cores, SMT4), '
                     '6x V100 16 GB (NVLink 2), dual-rail EDR InfiniBand',
            'scheduler': 'lsf',
            'launcher': 'jsrun',
            'access': ['-q batch', *account_access(NAME, '-P {}')],
            'time_limit': '30m',
            'environs': ['xl', 'cuda'],
            'features': [ft.CPU, ft.MPI, ft.MULTINODE, ft.GPU, ft.NVGPU,
                         ft.GPU_AWARE_MPI],
            'processor': {'arch': 'power9', 'num_cpus': 168,
                          'num_cpus_per_core': 4, 'num_sockets': 2,
                          'num_cpus_per_socket': 84},
            'devices': [{'type': 'gpu', 'arch': 'sm_70', 'num_devices': 6}],
            'max_jobs': 20,
            'extras': _extras,
        }
    ]
}

environments = [
    # the poster's CPU compiler: IBM XL with Spectrum MPI (loaded at login)
    environ('xl', NAME, modules=['xl', 'spectrum-mpi'],
            features=[ft.OPENMP], cc='xlc_r', cxx='xlc++_r', ftn='xlf_r'),
    environ('cuda', NAME, modules=['gcc', 'spectrum-mpi', 'cuda/11.0.3'],
            features=[ft.OPENMP, ft.CUDA], cc='gcc', cxx='g++',
            ftn='gfortran', env_vars={'MPI_HOME': '$MPI_ROOT'}),
]
