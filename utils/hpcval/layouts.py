"""How a system runs GPU jobs and where it keeps scratch: partition extras,
checked when the configuration loads (docs/site.md, "Partition extras")."""
from dataclasses import dataclass, field

GPU_LAYOUTS = ('rank_per_gpu', 'process_per_node')

# node-local rank as the common launchers export it; the first one set wins
LOCAL_RANK_VARS = ('SLURM_LOCALID', 'OMPI_COMM_WORLD_LOCAL_RANK',
                   'MPI_LOCALRANKID', 'PMI_LOCAL_RANK', 'PALS_LOCAL_RANKID',
                   'MV2_COMM_WORLD_LOCAL_RANK', 'JSM_NAMESPACE_LOCAL_RANK')


def local_rank_shell():
    """Shell setting ``$r`` to the node-local rank ('' when unknown)."""
    ranks = ' '.join(f'${{{v}}}' for v in LOCAL_RANK_VARS)
    return f'r=; for r in {ranks}; do break; done'

_LAYOUT_KEYS = {'launcher_options', 'cpus_per_task', 'env_vars',
                'one_visible_gpu'}
_SETTINGS_KEYS = {'modules', 'launcher_options', 'env_vars'}
_EXTRAS_KEYS = {'gpu_layouts', 'multinode_collectives', 'gpu_aware_mpi',
                'scratch_dir', 'container_images', 'container_options',
                'unusable_environs'}


class SystemConfigError(ValueError):
    """A system module's partition extras are malformed; names where."""


@dataclass(frozen=True)
class Layout:
    launcher_options: tuple = ()
    cpus_per_task: object = None
    env_vars: dict = field(default_factory=dict)
    one_visible_gpu: bool = False
    modules: tuple = ()


def _fail(where, msg):
    raise SystemConfigError(f'{where}: {msg}')


def _keys(where, data, allowed):
    if not isinstance(data, dict):
        _fail(where, 'must be a mapping')
    extra = sorted(set(data) - allowed)
    if extra:
        _fail(where, f'unknown key(s) {", ".join(extra)} '
                     f'(allowed: {", ".join(sorted(allowed))})')


def _settings(where, data, allowed):
    _keys(where, data, allowed)
    for key in ('launcher_options', 'modules'):
        value = data.get(key, ())
        if not isinstance(value, (list, tuple)) or \
                not all(isinstance(v, str) and v for v in value):
            _fail(f'{where}.{key}', f'must be a list of non-empty strings, '
                                    f'got {value!r}')
    env = data.get('env_vars', {})
    if not isinstance(env, dict) or not all(
            isinstance(k, str) and k.isidentifier() and isinstance(v, str)
            for k, v in env.items()):
        _fail(f'{where}.env_vars', f'must map variable names to strings, '
                                   f'got {env!r}')
    cpus = data.get('cpus_per_task')
    if cpus is not None and (isinstance(cpus, bool) or
                             not isinstance(cpus, int) or cpus < 1):
        _fail(f'{where}.cpus_per_task', f'must be a positive integer, '
                                        f'got {cpus!r}')
    if not isinstance(data.get('one_visible_gpu', False), bool):
        _fail(f'{where}.one_visible_gpu', 'must be true or false')


def validate_system(system, origin, *rules):
    """Check every partition's extras of one system entry, and by ``rules``."""
    for part in system.get('partitions', []):
        where = f'{origin}: partition {part.get("name")!r}: extras'
        extras = part.get('extras', {})
        _keys(where, extras, _EXTRAS_KEYS)

        layouts = extras.get('gpu_layouts', {})
        if not isinstance(layouts, dict):
            _fail(f'{where}.gpu_layouts', 'must be a mapping')

        for name, data in layouts.items():
            if name not in GPU_LAYOUTS:
                _fail(f'{where}.gpu_layouts', f'unknown layout {name!r} '
                                              f'(known: {", ".join(GPU_LAYOUTS)})')
            _settings(f'{where}.gpu_layouts.{name}', data, _LAYOUT_KEYS)

        for key in ('multinode_collectives', 'gpu_aware_mpi'):
            if key in extras:
                _settings(f'{where}.{key}', extras[key], _SETTINGS_KEYS)

        unusable = extras.get('unusable_environs', {})
        if not isinstance(unusable, dict) or not all(
                isinstance(v, str) for v in (*unusable, *unusable.values())):
            _fail(f'{where}.unusable_environs',
                  'must map environment names to the reason each is '
                  'unusable here')

        for rule in rules:
            rule(where, extras, SystemConfigError)

        scratch = extras.get('scratch_dir', '/')
        if not isinstance(scratch, str) or not scratch.startswith(('/', '$')):
            _fail(f'{where}.scratch_dir', f'must be an absolute path, '
                                          f'got {scratch!r}')


def validate_general(general, origin):
    """A system module's ``general``: ReFrame's general options for it."""
    import json
    import os
    import reframe
    path = os.path.join(os.path.dirname(reframe.__file__), 'schemas',
                        'config.json')
    with open(path) as schema:      # the option names ReFrame's schema gives
        items = json.load(schema)['properties']['general']['items']
    _keys(f'{origin}: general', general,
          set(items['properties']) - {'target_systems'})


def gpu_layout(partition, name):
    """The partition's ``gpu_layouts[name]`` (validated); by default unbound."""
    return Layout(**partition.extras.get('gpu_layouts', {}).get(name, {}))


def settings(partition, key):
    """``multinode_collectives`` or ``gpu_aware_mpi`` of the partition."""
    return Layout(**partition.extras.get(key, {}))


def apply(test, layout, gpus=1):
    """Put a layout on a test's job: launcher options, cores, environment."""
    test.job.launcher.options += [opt.format(gpus=gpus)
                                  for opt in layout.launcher_options]
    if layout.cpus_per_task:
        test.num_cpus_per_task = layout.cpus_per_task
    test.env_vars.update(layout.env_vars)
    test.modules += [m for m in layout.modules if m not in test.modules]


# GPUs of a partition, as its configuration declares them
def gpu_arch(partition):
    return next((dev.arch for dev in partition.devices
                 if dev.type == 'gpu' and dev.arch), '')


def gpu_count(partition):
    return sum(dev.num_devices for dev in partition.devices
               if dev.type == 'gpu')
