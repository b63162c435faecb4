"""minicluster: the two-node Slurm cluster of hpcval.testing.minicluster on this host.

Used only with ``--system minicluster`` (its host name pattern matches no
host) after ``python -m hpcval.testing.minicluster start --dir DIR`` has printed
``export SLURM_CONF=...``: ReFrame's Slurm commands need that variable.
See docs/systems/minicluster.md.

Partition ``cpu``: nodes n1 and n2 of Slurm partition ``debug``, each
declaring ``CPUS_PER_NODE`` CPUs; jobs go through ``sbatch`` and ranks
through ``srun --mpi=pmi2`` (set as ``SLURM_MPI_TYPE``, which srun reads),
the PMI the PyPI MPICH wheel talks to.  The scheduler is ReFrame's
``slurm`` backend, which polls ``sacct``: the minicluster runs slurmdbd on
its own MariaDB, so a finished job's state (TIMEOUT, CANCELLED, ...) and
nodes reach ReFrame as on a site with accounting.

With ``HPCVAL_MINICLUSTER_LAUNCH_GPUS=N`` (for launch-path tests only) a
second partition, ``gpu-launch``, declares N NVIDIA GPUs per node that do
not exist, so that the multi-node GPU checks write and submit their real
job scripts (ranks per node, srun line) on a machine without GPUs; what
they launch there cannot be the benchmark, and they fail sanity.

With ``HPCVAL_MINICLUSTER_MAX_JOBS=N`` ReFrame runs N jobs at once (default
one: the nodes share this host's cores, so only then is a figure a node's
own); more measures what a screen's orchestration costs where the jobs
run concurrently, as on a real cluster.
"""

from hpcval import features as ft
from hpcval.benchmarks.container import host_podman_options
from hpcval.inputs import environment
from hpcval import minicluster_shape as minicluster
from hpcval.sitesystem import mpi
from systems import local

# (?!) matches no string: this system is chosen by --system only
_NEVER = '(?!)'
LAUNCH_GPUS_VAR = 'HPCVAL_MINICLUSTER_LAUNCH_GPUS'
MAX_JOBS_VAR = 'HPCVAL_MINICLUSTER_MAX_JOBS'


def _launch_gpus():
    return int(environment(LAUNCH_GPUS_VAR, '0'))


def _max_jobs():
    return max(1, int(environment(MAX_JOBS_VAR, '1')))


def _partition(name, descr, features, environs, devices=()):
    return {
        'name': name,
        'descr': descr,
        # sacct, as sites with accounting: the minicluster runs slurmdbd
        'scheduler': 'slurm',
        'launcher': 'srun',
        'access': [f'--partition={minicluster.PARTITION}'],
        'sched_options': {
            # --nodes in every job script, as sites expect to read it
            'use_nodes_option': True,
            # Slurm 22.05 gives a job waiting on a DOWN or DRAINED node this
            # reason, not ReqNodeNotAvail (ReFrame's default): cancel it and
            # fail the test instead of waiting for the node to come back
            'slurm_job_cancel_reasons': [
                'ReqNodeNotAvail', 'Nodes required for job are DOWN'
            ],
        },
        # srun reads SLURM_MPI_TYPE as --mpi: PMI-2 for the MPICH wheel
        **mpi('minicluster', pmi='pmi2'),
        'environs': environs,
        'features': features,
        # what each slurmd declares (Sockets, CoresPerSocket, ThreadsPerCore)
        'processor': {
            'num_cpus': minicluster.CPUS_PER_NODE,
            'num_cpus_per_core': minicluster.THREADS_PER_CORE,
            'num_sockets': minicluster.SOCKETS,
            'num_cpus_per_socket': (minicluster.CPUS_PER_NODE //
                                    minicluster.SOCKETS),
        },
        'devices': list(devices),
        # -S image=REF: Podman on the nodes, which are this host, with its
        # runtime and limits (detect(); docs/containers.md)
        'container_platforms': [{'type': 'Podman', 'default': True}],
        'extras': {'container_options': {}},
        # a stuck job must not hold the suite: Slurm ends it
        'time_limit': '10m',
        # the nodes share this host's cores: one benchmark at a time;
        # HPCVAL_MINICLUSTER_MAX_JOBS=N runs N at once, as a real cluster
        # runs a screen's jobs on distinct nodes (for orchestration cost
        # with a trivial check: tests/bench_screen.py cost)
        'max_jobs': _max_jobs(),
    }


_partitions = [
    _partition('cpu', f'nodes n1 ... nN (Slurm partition '
               f'{minicluster.PARTITION}), srun --mpi=pmi2',
               [ft.CPU, ft.MPI, ft.MULTINODE], ['gnu']),
]
if _launch_gpus():
    _partitions.append(_partition(
        'gpu-launch', f'launch-path tests only: the same nodes declaring '
        f'{_launch_gpus()} GPUs each that do not exist',
        [ft.MPI, ft.MULTINODE, ft.GPU, ft.NVGPU], ['cuda'],
        [{'type': 'gpu', 'arch': 'sm_90', 'num_devices': _launch_gpus()}]
    ))

system = {
    'name': 'minicluster',
    'descr': 'Slurm cluster of N nodes on this host (python -m '
             'hpcval.testing.minicluster start)',
    'hostnames': [_NEVER],
    'modules_system': 'nomod',
    'partitions': _partitions,
}


def detect(system):
    """This host's Podman runtime and limits, for the nodes it runs."""
    for part in system['partitions']:
        part['extras'] = {'container_options':
                          {'Podman': host_podman_options()}}


# ReFrame's general options on this system: a screen runs one short job
# per node after another, and ReFrame's default poll rate decays to one
# sacct call per 10 s; the nodes' own slurmdbd answers four a second
# cheaply, so a finished job is seen within 0.25 s (docs/screening.md)
general = {'poll_rate_min': 4}

# local's toolchains (this host's), for this system's partitions
_TARGETS = {'gnu': ['minicluster'], 'cuda': ['minicluster:gpu-launch']}
environments = [dict(env, target_systems=_TARGETS[env['name']])
                for env in local.environments if env['name'] in _TARGETS]
