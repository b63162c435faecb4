"""Partition extras (GPU layouts, network settings) are rejected at load
when malformed, naming the system and the key."""
import copy

import pytest

from hpcval.benchmarks.container import validate_extras
from hpcval.layouts import SystemConfigError, validate_system
from systems import frontier

BREAKAGES = {
    'unknown extras key': (
        lambda x: x.update(gpu_layout={}),
        r"partition 'batch': extras: unknown key\(s\) gpu_layout"),
    'unknown layout': (
        lambda x: x['gpu_layouts'].update(rank_per_gcd={}),
        r"extras.gpu_layouts: unknown layout 'rank_per_gcd'"),
    'cores as text': (
        lambda x: x['gpu_layouts']['rank_per_gpu'].update(cpus_per_task='7'),
        r'gpu_layouts.rank_per_gpu.cpus_per_task: must be a positive'),
    'options as one string': (
        lambda x: x['gpu_layouts']['rank_per_gpu'].update(
            launcher_options='--gpus-per-task=1'),
        r'rank_per_gpu.launcher_options: must be a list'),
    'bad variable name': (
        lambda x: x['multinode_collectives']['env_vars'].update(
            {'NCCL NET': 'OFI'}),
        r'multinode_collectives.env_vars: must map variable names'),
    'relative scratch': (
        lambda x: x.update(scratch_dir='scratch'),
        r'extras.scratch_dir: must be an absolute path'),
}


def test_shipped_systems_are_valid():
    import systems
    for mod in systems.ALL:
        # with the container rules, as config/settings.py loads them
        validate_system(mod.system, mod.__name__, validate_extras)


@pytest.mark.parametrize('breakage', BREAKAGES)
def test_malformed_extras_are_rejected(breakage):
    change, message = BREAKAGES[breakage]
    system = copy.deepcopy(frontier.system)
    change(system['partitions'][0]['extras'])
    with pytest.raises(SystemConfigError, match=message) as err:
        validate_system(system, 'systems/frontier.py')
    assert str(err.value).startswith('systems/frontier.py: ')
