"""ReFrame configuration for replays: every system of config/settings.py,
with nothing run.

``reframe -C config/replay.py --system mi300x -S replay_dir=DIR ...`` judges
the recorded outputs in DIR with the real checks, as on that system: the
systems keep their names, partitions, features, devices, environments and
references; only what would run something changes.  Every partition gets
the local scheduler and launcher (nothing is submitted or launched), no
access options and no preparation commands, and the extra ``replay`` that
the checks and fixtures act on (hpcval.replay); environments and systems
load no modules (nothing is built).  See docs/replay.md.
"""
import copy
import importlib.util
import os

from hpcval import replay

_HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location(
    'hpcval_settings', os.path.join(_HERE, 'settings.py'))
_settings = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_settings)

_REPLAY = 'REPLAY (recorded outputs, nothing is run)'


def _partition(part):
    part = dict(part, scheduler='local', launcher='local', access=[],
                prepare_cmds=[], modules=[], max_jobs=1,
                descr=f'{_REPLAY}: {part.get("descr", part["name"])}',
                extras={**part.get('extras', {}), replay.FLAG: True})
    part.pop('sched_options', None)
    return part


def _system(system):
    return dict(system, modules_system='nomod', modules=[],
                descr=f'{_REPLAY}: {system.get("descr", system["name"])}',
                partitions=[_partition(p) for p in system['partitions']])


site_configuration = copy.deepcopy(_settings.site_configuration)
site_configuration['systems'] = [_system(s)
                                 for s in site_configuration['systems']]
for _env in site_configuration['environments']:
    _env['modules'] = []
