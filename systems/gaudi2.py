"""gaudi2: one Intel HLS-Gaudi2 server, 8 Gaudi 2 cards in one box.

As Habana's documentation (v1.23) describes it (https://docs.habana.ai/): 8x Gaudi 2 HL-225H OAM (96 GB HBM each), 21 RoCE ports per card
linking the cards all-to-all, 3 for scale-out; SynapseAI installed under
/opt/habanalabs, hl_qual at /opt/habanalabs/qual/gaudi2/bin.  No batch
system: the local scheduler runs jobs on the box; ``mpirun`` where MPI is
used.  The host CPU varies (Intel's benchmark box: 2x Xeon 8380), so it is
detected when the configuration loads.

Select it with ``--system gaudi2``: no host name pattern is claimed.
"""
from hpcval import features as ft
from systems._site import box_partition, detect_host_cpu, environ

NAME = 'gaudi2'

detect = detect_host_cpu

system = {
    'name': NAME,
    'descr': 'Intel HLS-Gaudi2 server: 8x Gaudi 2 (HL-225H), one box',
    'hostnames': [],
    'modules_system': 'nomod',
    'partitions': [
        box_partition(
            'The box: local scheduler, mpirun',
            environs=['gnu', 'synapseai'],
            features=[ft.CPU, ft.MPI, ft.GAUDI],
            devices=[{'type': 'gaudi', 'arch': 'gaudi2', 'num_devices': 8}],
            extras={'scratch_dir': '/tmp'},
        )
    ]
}

environments = [
    environ('gnu', NAME, features=[ft.OPENMP], cc='gcc', cxx='g++',
            ftn='gfortran'),
    # SynapseAI's tools (the hl_qual check exports the $__python_cmd its
    # bandwidth plugins call)
    environ('synapseai', NAME, features=[ft.SYNAPSEAI], cc='gcc', cxx='g++',
            ftn='gfortran',
            env_vars={'PATH': '/opt/habanalabs/qual/gaudi2/bin:$PATH'}),
]
