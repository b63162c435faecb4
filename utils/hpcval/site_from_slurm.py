"""``hpcval site init DIR --from-slurm``: a site system module and its
reference file's inventory skeleton (marked "from Slurm" until ``hpcval
calibrate`` replaces it), written from what Slurm says
(hpcval.slurm_describe; docs/site.md, "A system described by Slurm")."""
import datetime
import os
import re
import textwrap

import yaml

from hpcval import site, slurm_describe, trust
from hpcval.sitesystem import PMI_TYPES
from hpcval.health.inventory import INVENTORY_MARKER

# ReFrame's partition names: [A-Za-z_][A-Za-z0-9_]*
_NOT_IN_PARTITION_NAME = re.compile(r'[^A-Za-z0-9_]')
# ReFrame's system names, less a leading _ (the site layer refuses those)
SYSTEM_NAME = re.compile(r'[A-Za-z][A-Za-z0-9_-]{0,62}')
#: jobs ReFrame keeps in flight per partition, at most
MAX_JOBS = 20
_GPU_FEATURE = {'nvidia': 'ft.NVGPU', 'amd': 'ft.AMDGPU', 'habana': 'ft.GAUDI'}
_GPU_ENVIRON = {'nvidia': ('cuda', 'ft.CUDA'), 'amd': ('rocm', 'ft.ROCM'),
                'habana': ('synapseai', 'ft.SYNAPSEAI')}
# srun --mpi types by preference: PMI-2 first, as the PyPI MPICH wheel the
# MPI checks use by default speaks it; then PMIx (Open MPI), newest first
_PMI_ORDER = ('pmi2', 'pmix', 'pmix_v5', 'pmix_v4', 'pmix_v3', 'cray_shasta')


def pmi(cluster):
    """(srun --mpi type or '', one line saying where it came from)."""
    listed = [t for t in cluster.mpi_types if t in PMI_TYPES]
    seen = (f'MpiDefault={cluster.mpi_default or "(not given)"}, srun '
            f'--mpi=list: {", ".join(cluster.mpi_types) or "(nothing)"}')
    default = cluster.mpi_default
    if default in PMI_TYPES and default != 'none':
        return default, f'Slurm\'s MpiDefault ({seen})'
    for kind in _PMI_ORDER:
        if kind in listed:
            others = [t for t in listed if t not in (kind, 'none')]
            also = (f'; an MPI that needs another takes one of '
                    f'{", ".join(others)}' if others else '')
            return kind, f'the PyPI MPICH wheel\'s PMI ({seen}){also}'
    return '', seen


def reframe_name(slurm_name, taken):
    """A ReFrame partition name for the Slurm partition ``slurm_name``."""
    name = _NOT_IN_PARTITION_NAME.sub('_', slurm_name)
    if not re.match(r'[A-Za-z_]', name):
        name = f'p_{name}'
    base, i = name, 2
    while name in taken:
        name, i = f'{base}_{i}', i + 1
    return name


def reframe_names(cluster):
    """(ReFrame partition name, Slurm partition) of each partition."""
    taken = []
    for part in cluster.partitions:
        taken.append(reframe_name(part.name, taken))
    return zip(taken, cluster.partitions)


def _minutes(max_time):
    """Slurm's MaxTime in minutes, or None when unlimited (its form and
    digits checked by slurm_describe.partitions)."""
    if max_time.isdigit():
        return int(max_time)
    m = re.fullmatch(r'(?:(\d+)-)?(\d+):(\d+):(\d+)', max_time)
    if not m:
        m2 = re.fullmatch(r'(\d+):(\d+)', max_time)
        return int(m2.group(1)) if m2 else None
    days, hours, mins, secs = (int(g or 0) for g in m.groups())
    return days * 1440 + hours * 60 + mins + (secs > 0)


def _time_limit(part):
    limit = _minutes(part.max_time)
    return '30m' if limit is None or limit >= 30 else f'{max(limit, 1)}m'


def _differing(part):
    return [f'{len(names)} node(s) of another shape: {s.text()}: '
            f'{", ".join(names)}' for s, names in part.others]


def _partition_code(part, rfm_name, system, pmi_type):
    shape = part.shape
    kind = slurm_describe.vendor(shape.gpu_type) if shape.gpus else ''
    features = ['ft.CPU', 'ft.MPI']
    if len(part.nodes) > 1 and part.max_nodes != '1':
        features.append('ft.MULTINODE')
    environs = ["'gnu'"]
    if shape.gpus and kind:
        features += ['ft.GPU', _GPU_FEATURE[kind]]
        environs.append(f"'{_GPU_ENVIRON[kind][0]}'")
    descr = (f'Slurm partition {part.name}: {len(part.nodes)} node(s) of '
             f'{shape.text()}')
    notes = [f'# from Slurm: partition {part.name}, '
             f'{len(part.nodes)} node(s), MaxTime {part.max_time}, '
             f'State {part.state}']
    notes += [f'# DIFFERS: {line}' for line in _differing(part)]
    notes += [f'# UNAVAILABLE now: {node} ({why})'
              for node, why in part.unavailable]
    if shape.gpus and not kind:
        notes.append(f'# GPUs: {shape.gpus} per node, but GRES '
                     f'{shape.gpu_type or "gpu:<n>"} names no vendor: add '
                     f"ft.GPU, the vendor's feature and its environment")
    devices = (f"\n            devices=[{{'type': 'gpu', 'num_devices': "
               f"{shape.gpus}}}]," if shape.gpus else '')
    cores = shape.sockets * shape.cores_per_socket
    cpu = (f'processor({shape.arch!r}, cores={cores},\n'
           f'                          threads_per_core='
           f'{shape.threads_per_core}, sockets={shape.sockets})')
    # SLURM_MPI_TYPE, which srun reads as --mpi
    launch = (f"\n            **mpi(NAME, pmi={pmi_type!r})," if pmi_type
              else '')
    body = f"""\
        slurm_partition(
            {rfm_name!r}, {descr!r},
            access=['--partition={part.name}', *_ACCOUNT],
            environs=[{', '.join(environs)}],
            features=[{', '.join(features)}],
            cpu={cpu},{devices}
            time_limit={_time_limit(part)!r},
            max_jobs={min(len(part.nodes), MAX_JOBS)},{launch}
        ),
"""
    return ''.join(f'        {n}\n' for n in notes) + body


def _comment(text):
    return ''.join(f'# {line}\n' for line in textwrap.wrap(
        text, 76, break_on_hyphens=False, break_long_words=False))


def system_module(cluster, system, when, host):
    """The text of ``systems/<system>.py``."""
    pmi_type, pmi_why = pmi(cluster)
    if pmi_type:
        mpi_note = _comment(f'MPI: srun --mpi={pmi_type}, from {pmi_why}')
    else:
        mpi_note = _comment(f'NO PMI: {pmi_why}; srun would start each '
                            f'rank as a job of its own.') + \
            "# Add to each partition: **mpi(NAME, pmi='TYPE'), TYPE from " \
            "`srun --mpi=list`\n"
    parts = [_partition_code(part, rfm, system, pmi_type)
             for rfm, part in reframe_names(cluster)]
    kinds = {slurm_describe.vendor(p.shape.gpu_type)
             for p in cluster.partitions if p.shape.gpus} - {''}
    environs = ["    environ('gnu', NAME, cc='gcc', cxx='g++', "
                "ftn='gfortran',\n            features=[ft.OPENMP]),\n"]
    for kind in sorted(kinds):
        env, feat = _GPU_ENVIRON[kind]
        environs.append(f"    environ({env!r}, NAME, cc='gcc', cxx='g++', "
                        f"ftn='gfortran',\n            features=[ft.OPENMP, "
                        f"{feat}]),\n")
    left = ''.join(f'# left out: {n}\n' for n in cluster.notes)
    return f'''\
"""{system}: described from Slurm by `hpcval site init --from-slurm`
({when} UTC on {host}: scontrol show partition -o, scontrol show node -o,
sinfo, scontrol show config, srun --mpi=list).

Every line is Slurm's view, to be checked before it is trusted: the
processor's ``arch`` is Slurm's Arch (ReFrame's own detection gives the
micro-architecture), the environments load no modules (add the site's
compilers, MPI, CUDA/ROCm), and ``hostnames`` is empty, so the system is
used with ``--system {system}`` only.  A partition's shape is the one most
of its nodes have; nodes of another shape are listed as DIFFERS below,
never averaged.  The expected GPUs are in references/{system}.yaml,
marked "from Slurm" until `hpcval calibrate` confirms them.
"""
from hpcval import features as ft
from hpcval.sitesystem import (account_access, environ, mpi, processor,
                               slurm_partition)

NAME = {system!r}
_ACCOUNT = account_access(NAME, '--account={{}}')
{mpi_note}{left}
system = {{
    'name': NAME,
    'descr': {f'Slurm cluster {cluster.name}, as Slurm describes it'!r},
    'hostnames': [],
    'modules_system': 'nomod',
    'partitions': [
{''.join(parts)}    ],
}}

environments = [
{''.join(environs)}]
'''


def reference_file(cluster, system, when):
    """The text of ``references/<system>.yaml``: no figures yet, and the
    inventory skeleton of the partitions with GPUs."""
    inventory = []
    for rfm, part in reframe_names(cluster):
        shape = part.shape
        alike = len(part.nodes) - sum(len(n) for _, n in part.others)
        source = (f'from Slurm, unconfirmed: scontrol show node on {when} '
                  f'UTC gave {alike}'
                  f' of the {len(part.nodes)} node(s) of Slurm partition '
                  f'{part.name} Gres={_gres(part)}')
        differ = '; '.join(_differing(part))
        entry = {'partition': rfm, 'gpus': shape.gpus}
        kind = slurm_describe.vendor(shape.gpu_type)
        if shape.gpus and (not kind or '+' in shape.gpu_type):
            # no model to expect: the entry would fail every node
            continue
        if shape.gpus:
            entry.update(vendor=kind, model=shape.gpu_type)
        entry['source'] = source + (f'; {differ}' if differ else '')
        inventory.append(entry)
    head = (f'system: {system}\n'
            f'description: >\n'
            f'  {system}, described from Slurm by hpcval site init '
            f'--from-slurm ({when} UTC);\n'
            f'  no figures yet: calibrate them from healthy runs '
            f'(docs/calibrate.md).\n')
    text = head
    if inventory:
        dumped = yaml.safe_dump(inventory, sort_keys=False, width=72)
        text += (f'{INVENTORY_MARKER} from Slurm (GRES), unconfirmed: the '
                 f'next calibration\n# replaces it with what the GPU tool '
                 f'lists on the baseline runs\' nodes\n'
                 f'inventory:\n' + textwrap.indent(dumped, '  '))
    return text + 'entries: []\n'


def _gres(part):
    return ', '.join(sorted({node.gres for node in part.nodes
                             if node.shape == part.shape})) or '(null)'


def render(cluster, system, when=None, host=None, replace=False):
    """{relative path: text} of the files ``init --from-slurm`` writes;
    ``replace``: the system may take a built-in system's name."""
    if not SYSTEM_NAME.fullmatch(system or ''):
        raise slurm_describe.SlurmOutputError(
            f'system name {system!r}: a ReFrame system name is letters, '
            f'digits, _ and - (give one with --name)')
    if system in site.builtin_systems() and not replace:
        # the site's module would take the built-in one's place unseen
        raise slurm_describe.SlurmOutputError(
            f'system name {system!r} is hpcval\'s built-in system '
            f'{system}: give the site\'s another with --name NAME, or '
            f'--replace to replace the built-in one')
    when = when or datetime.datetime.now(datetime.timezone.utc).strftime(
        '%Y-%m-%d %H:%M')
    host = host or os.uname().nodename
    files = {f'systems/{system}.py': system_module(cluster, system, when,
                                                   host)}
    refs = reference_file(cluster, system, when)
    if replace and system in site.builtin_systems():
        if 'inventory:' not in refs:
            raise slurm_describe.SlurmOutputError(
                f'--replace {system}: no partition with an expected GPU '
                f'count to write, so the built-in references/{system}.yaml '
                f'would judge this cluster; give another name with --name')
        # the built-in figures are another cluster's: none is layered
        refs = refs.replace('entries: []\n', 'replace: true\nentries: []\n')
    # a file without figures holds the expected GPUs, or is not written
    if 'inventory:' in refs:
        files[f'references/{system}.yaml'] = refs
    return files


def summary(cluster):
    """Lines that say what Slurm gave, for the terminal."""
    lines = []
    for part in cluster.partitions:
        lines.append(f'partition {part.name}: {len(part.nodes)} node(s), '
                     f'{part.shape.text()}')
        lines += [f'  DIFFERS: {line}' for line in _differing(part)]
        lines += [f'  unavailable: {node} ({why})'
                  for node, why in part.unavailable]
    lines += [f'left out: {note}' for note in cluster.notes]
    lines += [f'warning: {note}' for note in cluster.warnings]
    kind, why = pmi(cluster)
    lines.append(f'MPI: srun --mpi={kind}, from {why}' if kind else
                 f'warning: no PMI: {why}; the system says what to add')
    return lines


def init(folder, name=None, dry_run=False, env=None, replace=False):
    """Describe the cluster, then make the site folder (hpcval.site.init)
    with the system module and reference file; ``dry_run``: only return
    them.  Returns (cluster, {path: text}, [paths written])."""
    cluster = slurm_describe.from_slurm(name, env)
    files = render(cluster, name or cluster.name, replace=replace)
    if dry_run:
        return cluster, files, []
    written = site.init(folder)
    for rel, text in files.items():
        path = os.path.join(os.path.abspath(folder), rel)
        trust.write_new(path, text)
        written.append(path)
    return cluster, files, written
