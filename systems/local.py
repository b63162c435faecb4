"""local: the machine you are on, when no other system claims its host name.

One partition, ``default``: local scheduler (jobs run on this host), the
``mpiexec`` of the MPI that bootstrap.sh installs from PyPI, processor
topology detected with ReFrame's own ``cpuinfo()`` at configuration load
(ReFrame skips its auto-detection for partitions whose launcher is not
``local``, and a cached file would be wrong on the next host sharing the
home directory; it costs about 4 ms), and GPUs detected here at configuration
load (ReFrame auto-detects processors only), both in ``detect()``, which
runs only when ``local`` is the system ReFrame uses (hpcval.selection): NVIDIA ones through
``nvidia-smi``, AMD ones through ``rocminfo``.  With GPUs found, the
partition gains the GPU features and their environment (``cuda``, ``rocm``),
so the same ``--system local`` validates a single GPU node.  Without GPUs,
or without their compiler, the GPU checks are listed and skipped, each
naming what is missing (``features.UNUSABLE``).
Images (``-S image=REF``) run through Podman, with the OCI runtime and
limits this host allows (``host_podman_options``), or Apptainer.
"""
import collections
import glob
import os
import shutil
import subprocess

from reframe.utility.cpuinfo import cpuinfo

from hpcval import features as ft
from hpcval.benchmarks.container import host_podman_options


def _query(cmd):
    if not shutil.which(cmd[0]):
        return ''

    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return ''


def _pci_display_devices(vendor):
    """How many PCI display controllers (class 0x03xxxx) of ``vendor``
    ('0x10de': NVIDIA) the kernel lists: GPUs whose driver may be broken."""
    count = 0
    for dev in glob.glob('/sys/bus/pci/devices/*'):
        try:
            with open(os.path.join(dev, 'vendor')) as fp:
                ven = fp.read().strip()
            with open(os.path.join(dev, 'class')) as fp:
                cls = fp.read().strip()
        except OSError:
            continue
        count += ven == vendor and cls.startswith('0x03')
    return count


def nvidia_gpus():
    """[(name, 'sm_XY')] of the NVIDIA GPUs nvidia-smi lists.  When
    nvidia-smi is installed but fails (a driver that did not load), the
    NVIDIA GPUs on the PCI bus, with no architecture: the GPU checks then
    run and fail, and the health probe names the failure, rather than the
    node passing as one without GPUs."""
    if not shutil.which('nvidia-smi'):
        return []
    try:
        run = subprocess.run(['nvidia-smi', '--query-gpu=name,compute_cap',
                              '--format=csv,noheader'], capture_output=True,
                             text=True, timeout=30)
        out, failed = run.stdout, (run.returncode != 0 and
                                   'No devices were found' not in run.stdout)
    except (OSError, subprocess.SubprocessError):
        out, failed = '', True
    if failed:
        return [('NVIDIA GPU (nvidia-smi failed)', '')] * \
            _pci_display_devices('0x10de')
    gpus = []
    for line in out.splitlines():
        name, _, cap = line.rpartition(',')
        if name and cap.strip().replace('.', '').isdigit():
            gpus.append((name.strip(), 'sm_' + cap.strip().replace('.', '')))

    return gpus


def amd_gpus():
    """[(marketing name, 'gfxNNN')] of the GPU agents rocminfo lists.

    rocminfo prints an agent's ``Name: gfxNNN`` before its ``Marketing
    Name``, so a GPU is complete at the latter.
    """
    gpus, arch = [], ''
    for line in _query(['rocminfo']).splitlines():
        key, _, value = line.strip().partition(':')
        if key == 'Name':
            arch = value.strip() if value.strip().startswith('gfx') else ''
        elif key == 'Marketing Name' and arch:
            gpus.append((value.strip(), arch))
            arch = ''

    return gpus


def _found_none(tool):
    return f'{tool} found none' if shutil.which(tool) else \
        f'{tool} not on PATH'


def _gpu_partition_extras():
    """(features, devices, environments, {environment: why unusable}): the
    GPU checks of an unusable environment are listed and skip, naming why."""
    nv, amd = nvidia_gpus(), amd_gpus()
    gpus, vendor = (nv, ft.NVGPU) if nv else (amd, ft.AMDGPU)
    if not gpus:
        return [], [], ['cuda', 'rocm', 'synapseai'], {
            'cuda': 'no NVIDIA GPU on local:default '
                    f'({_found_none("nvidia-smi")})',
            'rocm': f'no AMD GPU on local:default ({_found_none("rocminfo")})',
            'synapseai': 'no Gaudi on local:default (local detects NVIDIA '
                         'and AMD GPUs only: --system gaudi2)'}

    by_arch = collections.Counter(arch for _, arch in gpus)
    devices = [{'type': 'gpu', 'num_devices': n, **({'arch': arch} if arch
                                                   else {})}
               for arch, n in by_arch.items()]
    env, compiler = ('cuda', 'nvcc') if vendor == ft.NVGPU else \
        ('rocm', 'hipcc')
    unusable = {} if shutil.which(compiler) else \
        {env: f'{compiler} not on PATH on local:default'}
    return [ft.GPU, vendor], devices, [env], unusable


system = {
    'name': 'local',
    'descr': 'This host (any host name no other system claims)',
    'hostnames': ['.*'],
    'modules_system': 'nomod',
    'partitions': [
        {
            'name': 'default',
            'descr': 'This host: local scheduler, mpiexec from PATH',
            'scheduler': 'local',
            'launcher': 'mpiexec',
            'environs': ['gnu'],
            'features': [ft.CPU, ft.MPI],
            # filled in by detect()
            'processor': {},
            'devices': [],
            # benchmarks must not share the machine with each other
            'max_jobs': 1,
            # -S image=REF runs the benchmark from an image (docs/containers.md)
            'container_platforms': [{'type': 'Podman', 'default': True},
                                    {'type': 'Apptainer'}],
            # filled in by detect(): this host's runtime and limits
            'extras': {'container_options': {}},
        }
    ]
}


def detect(system):
    """This host's processor and GPUs into the partition (the GPU features
    and, with their compiler on PATH, the GPU environment)."""
    part = system['partitions'][0]
    features, devices, envs, unusable = _gpu_partition_extras()
    part['processor'] = cpuinfo()
    part['devices'] = devices
    part['features'] = [*part['features'], *features]
    part['environs'] = [*part['environs'], *envs]
    part['extras'] = {'container_options': {'Podman': host_podman_options()},
                      **({ft.UNUSABLE: unusable} if unusable else {})}


environments = [
    {
        'name': 'gnu',
        'cc': 'gcc', 'cxx': 'g++', 'ftn': 'gfortran',
        'features': [ft.OPENMP],
        'target_systems': ['local'],
    },
    {
        'name': 'cuda',
        'cc': 'gcc', 'cxx': 'g++', 'ftn': 'gfortran', 'nvcc': 'nvcc',
        'features': [ft.OPENMP, ft.CUDA],
        'target_systems': ['local'],
    },
    {
        'name': 'rocm',
        'cc': 'hipcc', 'cxx': 'hipcc', 'ftn': 'gfortran',
        'features': [ft.OPENMP, ft.ROCM],
        'target_systems': ['local'],
    },
    {
        'name': 'synapseai',
        'cc': 'gcc', 'cxx': 'g++', 'ftn': 'gfortran',
        'features': [ft.SYNAPSEAI],
        'target_systems': ['local'],
    },
]
