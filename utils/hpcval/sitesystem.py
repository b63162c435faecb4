"""Helpers for system modules, built-in and a site's: partitions,
programming environments, the site's account and paths.

A site's ``systems/<name>.py`` (docs/site.md) imports them from here::

    from hpcval.sitesystem import environ, slurm_partition, processor

This module is public: its functions keep their names and arguments
within a major version (CHANGELOG.md).  Values a site sets through environment variables end up in job scripts, so
they are checked when the configuration loads and a bad one stops ReFrame
with the variable named.
"""
import re

from reframe.utility.cpuinfo import cpuinfo

from hpcval.inputs import EnvironmentValueError, environment
from hpcval.layouts import SystemConfigError

__all__ = ['account', 'account_access', 'box_partition', 'detect_host_cpu',
           'environ', 'mpi', 'nccl_net_env', 'processor', 'site_path',
           'slurm_partition']

# srun --mpi plugin names (`srun --mpi=list` of Slurm 22.05 to 24.11)
PMI_TYPES = ('pmi2', 'pmix', 'pmix_v3', 'pmix_v4', 'pmix_v5', 'cray_shasta',
             'none')
_MODULE = re.compile(r'[A-Za-z0-9_][A-Za-z0-9_.+/@%:=-]*')


def _environment(system, var):
    try:
        return environment(var)
    except EnvironmentValueError as err:
        raise SystemConfigError(f'systems/{system}.py: {err}') from None


def account(system):
    """$HPCVAL_ACCOUNT (the project charged for jobs), or '' when unset."""
    return _environment(system, 'HPCVAL_ACCOUNT')


def account_access(system, fmt):
    """The partition ``access`` entry charging $HPCVAL_ACCOUNT, if set
    (unset: the scheduler's default account for the user)."""
    value = account(system)
    return [fmt.format(value)] if value else []


def site_path(system, var):
    """An absolute path from the environment variable ``var``, or ''."""
    return _environment(system, var)


def environ(name, system, modules=(), features=(), cc='cc', cxx='CC',
            ftn='ftn', env_vars=None, **extra):
    """A programming environment entry of one system."""
    return {
        'name': name, 'modules': list(modules), 'features': list(features),
        'cc': cc, 'cxx': cxx, 'ftn': ftn,
        'env_vars': [[k, v] for k, v in (env_vars or {}).items()],
        'target_systems': [system], **extra
    }


def processor(arch, cores, threads_per_core, sockets):
    """ReFrame's processor entry from the counts a job sees."""
    cpus = cores * threads_per_core
    return {'arch': arch, 'num_cpus': cpus,
            'num_cpus_per_core': threads_per_core, 'num_sockets': sockets,
            'num_cpus_per_socket': cpus // sockets}


def mpi(system, pmi=None, modules=()):
    """The partition keys (ReFrame's partition ``modules`` and
    ``env_vars``) that make every job of a partition use the site's MPI:
    ``modules`` loaded in each build and run job (the MPI, or an mpi4py
    built over it), and under ``srun`` the PMI its ranks need as
    ``SLURM_MPI_TYPE``, which srun reads as ``--mpi``.  The MPI ping-pong
    and the OSU checks then run on that MPI, not on the PyPI MPICH wheel."""
    out = {}
    if pmi is not None:
        if pmi not in PMI_TYPES:
            raise SystemConfigError(
                f'systems/{system}.py: mpi(pmi={pmi!r}): not an srun --mpi '
                f'type (known: {", ".join(PMI_TYPES)})')
        out['env_vars'] = [['SLURM_MPI_TYPE', pmi]]
    for name in modules:
        if not isinstance(name, str) or not _MODULE.fullmatch(name):
            raise SystemConfigError(
                f'systems/{system}.py: mpi(modules=...): {name!r} is not a '
                f'module name (letters, digits and _ . + / @ % : = -)')
    if modules:
        out['modules'] = list(modules)
    return out


def slurm_partition(name, descr, access, environs, features, cpu, **rest):
    """A Slurm partition launched with ``srun``: whole nodes counted with
    ``--nodes``, 30-minute jobs (inside every site's debug and short caps).
    ``rest`` may hold ``**mpi(...)``: the site's MPI and PMI."""
    return {'name': name, 'descr': descr, 'scheduler': 'slurm',
            'sched_options': {'use_nodes_option': True}, 'launcher': 'srun',
            'access': access, 'time_limit': '30m', 'environs': environs,
            'features': features, 'processor': cpu, 'max_jobs': 20, **rest}


def nccl_net_env(system, settings):
    """``settings`` plus the site-built NCCL OFI plugin's folder
    ($HPCVAL_NCCL_NET_PLUGIN_DIR) on the library path, when given."""
    plugin = site_path(system, 'HPCVAL_NCCL_NET_PLUGIN_DIR')
    if plugin:
        return {**settings, 'LD_LIBRARY_PATH': f'{plugin}:$LD_LIBRARY_PATH'}

    return dict(settings)


def box_partition(descr, environs, features, devices, extras):
    """The one partition of a standalone box: jobs run on the box itself
    (local scheduler), one at a time, ranks started by ``mpirun``; the host
    CPU varies between boxes of a kind, so ``detect_host_cpu`` fills it in
    when the box is the selected system."""
    return {'name': 'default', 'descr': descr, 'scheduler': 'local',
            'launcher': 'mpirun', 'environs': environs, 'features': features,
            'processor': {}, 'devices': devices, 'max_jobs': 1,
            'extras': extras}


def detect_host_cpu(system):
    """``detect`` of a box system: this host's processor, ReFrame's
    ``cpuinfo()``, into each partition."""
    for part in system['partitions']:
        part['processor'] = cpuinfo()
