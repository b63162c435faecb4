"""Helpers for system modules, built-in and a site's (docs/site.md); public:
names and arguments kept within a major version (CHANGELOG.md)."""
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


def site_path(system, var):
    """An absolute path from the environment variable ``var``, or ''."""
    try:
        return environment(var)
    except EnvironmentValueError as err:
        raise SystemConfigError(f'systems/{system}.py: {err}') from None


def account(system):
    """$HPCVAL_ACCOUNT (the project charged for jobs), or '' when unset."""
    return site_path(system, 'HPCVAL_ACCOUNT')


def account_access(system, fmt):
    """The partition ``access`` entry charging $HPCVAL_ACCOUNT, if set."""
    value = account(system)
    return [fmt.format(value)] if value else []


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
    """Partition keys making its jobs use the site's MPI modules and PMI."""
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
    """A Slurm partition launched with ``srun``, whole nodes, 30-min jobs."""
    return {'name': name, 'descr': descr, 'scheduler': 'slurm',
            'sched_options': {'use_nodes_option': True}, 'launcher': 'srun',
            'access': access, 'time_limit': '30m', 'environs': environs,
            'features': features, 'processor': cpu, 'max_jobs': 20, **rest}


def nccl_net_env(system, settings):
    """``settings`` plus $HPCVAL_NCCL_NET_PLUGIN_DIR on the library path."""
    plugin = site_path(system, 'HPCVAL_NCCL_NET_PLUGIN_DIR')
    if plugin:
        return {**settings, 'LD_LIBRARY_PATH': f'{plugin}:$LD_LIBRARY_PATH'}
    return dict(settings)


def box_partition(descr, environs, features, devices, extras):
    """The one partition of a standalone box (local scheduler, ``mpirun``)."""
    return {'name': 'default', 'descr': descr, 'scheduler': 'local',
            'launcher': 'mpirun', 'environs': environs, 'features': features,
            'processor': {}, 'devices': devices, 'max_jobs': 1,
            'extras': extras}


def detect_host_cpu(system):
    """``detect`` of a box system: this host's processor, each partition."""
    for part in system['partitions']:
        part['processor'] = cpuinfo()
