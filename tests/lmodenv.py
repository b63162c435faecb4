"""Lmod with empty modulefiles, so ReFrame writes complete job scripts
(``module load`` lines included) for module-based systems on a machine that
has none of their modules.  The modulefiles are made from the systems'
own module lists, so they cannot drift from them."""
import os
import pathlib

import pytest

import systems

LMOD_ROOT = pathlib.Path('/usr/share/lmod/lmod')


def _module_names():
    names = set()
    for mod in systems.ALL:
        for env in mod.environments:
            names.update(env.get('modules', []))
        for part in mod.system['partitions']:
            for key in ('multinode_collectives', 'gpu_aware_mpi'):
                names.update(part.get('extras', {}).get(key, {})
                             .get('modules', []))
    return names


def lmod_env(folder):
    """Environment variables that make Lmod find the empty modulefiles.

    Without Lmod (bootstrap.sh --tests installs it) the test is skipped,
    except in CI, where that is a failure."""
    lmod_cmd = LMOD_ROOT / 'libexec' / 'lmod'
    if not lmod_cmd.exists():
        msg = f'Lmod not installed ({lmod_cmd}): run ./bootstrap.sh --tests'
        if os.environ.get('CI') == 'true':
            pytest.fail(msg)
        pytest.skip(msg)

    for name in _module_names():
        path = folder / f'{name}.lua'
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f'-- empty stand-in for {name}: job-script tests\n')

    return {'LMOD_CMD': str(lmod_cmd), 'LMOD_DIR': str(lmod_cmd.parent),
            'MODULESHOME': str(LMOD_ROOT), 'MODULEPATH': str(folder),
            'LMOD_PKG': str(LMOD_ROOT)}


ACCOUNT = 'abc123'


def system_env(folder):
    """What every job-script test runs ReFrame with: Lmod over empty
    modulefiles and a project account for the systems that charge one.

    ReFrame does not load each test's modules into its own process to look
    for conflicts: empty modulefiles have none, so the job scripts are the
    same byte for byte, and those Lmod runs were about half of a dry run's
    CPU on the module-based systems."""
    return {**lmod_env(folder), 'HPCVAL_ACCOUNT': ACCOUNT,
            'RFM_RESOLVE_MODULE_CONFLICTS': 'n'}
