"""Benchmarks run from a container image through ReFrame's container_platform,
recording the image's digest (docs/containers.md)."""
import os
import re
import shlex

import reframe as rfm
from reframe.core.builtins import variable
from reframe.core.containers import ContainerPlatform
from reframe.core.exceptions import SanityError

from hpcval import features as ft
from hpcval import provenance, replay, stacks
from hpcval.benchmarks.jobscript import NOTHING, Lines
from hpcval.inputs import InputError, checked_pattern, checked_token

#: what the job wrote about the runtime and the image, in the stage folder
RECORD = 'hpcval_container.txt'
RECORD_ERR = 'hpcval_container.err'
#: the job's shell variable holding the image id Podman runs
IMAGE_ID_VAR = 'hpcval_image_id'
#: the stack inside the image, asked in the image itself: the MPI's
#: version tool's banner, CUDA, ROCm and the NCCL/RCCL library's version
STACK_PROBE = (
    'for t in mpichversion "ompi_info --version" "impi_info -v" '
    '"mpirun --version" "mpiexec --version"; do command -v ${t%% *} '
    '>/dev/null 2>&1 || continue; echo "image_mpi_banner=$($t 2>&1 '
    '| grep -v "^[[:space:]]*$" | head -n 2 | paste -sd"|" -)"; break; done; '
    'command -v nvcc >/dev/null 2>&1 && echo "image_cuda=$(nvcc --version '
    '| sed -n "s/.*release \\([0-9.]*\\).*/\\1/p")"; '
    '[ -r /opt/rocm/.info/version ] && echo "image_rocm=$(cat '
    '/opt/rocm/.info/version)"; '
    'for l in /usr/lib/*/libnccl.so.* /usr/lib*/libnccl.so.* '
    '/usr/local/lib/libnccl.so.* /opt/rocm/lib/librccl.so.*; do '
    # the last of libnccl.so.2, libnccl.so.2.21.5: the full version
    '[ -e "$l" ] && v=${l##*.so.}; done; '
    '[ -n "${v:-}" ] && echo "image_nccl=$v"; true')

# an OCI reference ([registry[:port]/]name[:tag][@sha256:hex]), with an
# optional transport (docker://, oras://, docker-archive:), or a path to a
# SIF file: never an option, never a shell metacharacter
IMAGE = re.compile(r'(?:[a-z][a-z0-9-]*:(?://)?)?'
                   r'(?:[A-Za-z0-9.-]+:[0-9]+/)?[A-Za-z0-9_./-]+'
                   r'(?::[A-Za-z0-9_.-]+)?(?:@sha256:[0-9a-f]{64})?')
_PINNED = re.compile(r'@(sha256:[0-9a-f]{64})$')
# an option of a container runtime: --name or --name=value of safe words
_OPTION = re.compile(r'--[a-z][a-z0-9-]*(?:=[A-Za-z0-9_.,:=+@%/-]+)?')
_ENV_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')
_VALUE = re.compile(r'[\x20-\x7e]{1,200}')

#: what a launcher gives each rank (its node-local rank, PMI, its GPUs),
#: handed into Podman and Docker containers by name or prefix
LAUNCHER_ENV = ('SLURM_*', 'PMI_*', 'PMIX_*', 'OMPI_*', 'MPI_LOCALRANKID',
                'PALS_*', 'MV2_*', 'JSM_*', 'CUDA_VISIBLE_DEVICES',
                'ROCR_VISIBLE_DEVICES', 'HIP_VISIBLE_DEVICES')

#: {platform: {GPU feature: the runtime's options}}: how each platform
#: shows the node's GPUs to the container
GPU_FLAGS = {
    # CDI: nvidia-ctk cdi generate writes the spec on each node
    'Podman': {ft.NVGPU: ['--device=nvidia.com/gpu=all'],
               ft.AMDGPU: ['--device=/dev/kfd', '--device=/dev/dri']},
    'Docker': {ft.NVGPU: ['--gpus=all'],
               ft.AMDGPU: ['--device=/dev/kfd', '--device=/dev/dri']},
    'Apptainer': {ft.NVGPU: ['--nv'], ft.AMDGPU: ['--rocm']},
    'Singularity': {ft.NVGPU: ['--nv'], ft.AMDGPU: ['--rocm']},
}


def checked_image(value, name='image'):
    """An image reference or SIF path, matched as a whole, or InputError."""
    checked_pattern(value, name, IMAGE, 'an image reference '
                    '([transport:][registry/]name[:tag][@sha256:digest]) '
                    'or the path of a SIF file')
    if value.startswith('-'):
        raise InputError(f'-S {name}={value!r}: an image, not first a -')
    return value


def checked_options(options, where):
    """A system's runtime options: ``--name[=value]`` of safe words."""
    for opt in options:
        if not isinstance(opt, str) or not _OPTION.fullmatch(opt):
            raise InputError(f'{where}: {opt!r} is not an option '
                             f'--name[=value] of letters, digits and '
                             f'_ . , : = + @ % / -')
    return list(options)


class Podman(ContainerPlatform):
    """``podman run`` of an image on the node (never pulled), with host
    network and IPC: ranks measure the node's links."""

    def emit_prepare_commands(self, stagedir):
        return []

    def launch_command(self, stagedir):
        opts = ['--rm', '--pull=never', '--network=host', '--ipc=host']
        mounts = list(self.mount_points)
        if self.mount_stagedir:
            mounts.append((stagedir, self.mount_stagedir))
        opts += [f'--volume={shlex.quote(f"{src}:{dst}")}'
                 for src, dst in mounts]
        if self.workdir:
            opts.append(f'--workdir={shlex.quote(self.workdir)}')
        opts += self.options
        # by the image id the job recorded (record_command), never by a
        # tag that may have moved since
        ref = f'"${IMAGE_ID_VAR}"' if getattr(self, 'by_id', False) \
            else shlex.quote(self.image)
        line = f'podman run {" ".join(opts)} {ref}'
        return f'{line} {self.command}' if self.command else line


#: platforms hpcval adds to ReFrame's, by the name a partition gives
PLATFORMS = {'Podman': Podman}


def platform_for(partition):
    """The partition's default container platform, or InputError."""
    name = partition.container_runtime
    if not name:
        raise InputError(f'{partition.fullname}: an image is set but the '
                         f'partition has no container_platforms entry')
    if name in PLATFORMS:
        return PLATFORMS[name]()
    try:
        return ContainerPlatform.create(name)
    except ValueError:
        raise InputError(f'{partition.fullname}: container platform {name!r}'
                         f' is neither ReFrame\'s nor one of '
                         f'{", ".join(PLATFORMS)}') from None


def image_of(test):
    """``test``'s image: ``-S image``, else the partition's; '': none."""
    if test.image:
        return checked_image(test.image)
    partition = getattr(test, 'current_partition', None)
    if partition is None:
        return ''
    # the container_images key: the class of the test's source, else its own
    build = getattr(test, 'build', None)
    source = getattr(build, 'source', None) or getattr(test, 'source', None)
    key = type(source if source is not None else test).__name__
    found = partition.extras.get('container_images', {}).get(key)
    return checked_image(found, f'{partition.fullname} container_images '
                                f'{key}') if found else ''


def record_command(platform, image):
    """A shell line recording runtime version and image digest; never fails."""
    ref = shlex.quote(image)
    runtime = f'echo "container_runtime=$({platform.name.lower()} --version)"'
    if platform.name == 'Podman':
        # the id is read once: the record and every run use the same one
        opts = ' '.join(['--rm', '--pull=never', '--network=none',
                         *platform.options])
        probes = [f'{IMAGE_ID_VAR}=$(podman image inspect '
                  f'--format "{{{{.Id}}}}" -- {ref})', runtime,
                  f'echo "image_id=sha256:${IMAGE_ID_VAR}"',
                  f'echo "image_digest=$(podman image inspect '
                  f'--format "{{{{.Digest}}}}" -- {ref})"',
                  f'[ -n "${IMAGE_ID_VAR}" ] && podman run {opts} '
                  f'--entrypoint /bin/sh "${IMAGE_ID_VAR}" -c '
                  f'{shlex.quote(STACK_PROBE)}']
    elif platform.name in ('Apptainer', 'Singularity') and \
            not _PINNED.search(image):
        probes = [runtime, f'echo "image_digest=sha256:$(sha256sum -- {ref} '
                           f'| cut -d" " -f1)"']
    elif platform.name == 'Docker':
        probes = [runtime, f'echo "image_digest=$(docker image inspect '
                           f'--format "{{{{index .RepoDigests 0}}}}" '
                           f'-- {ref})"']
    else:       # Sarus, Shifter, a pinned SIF: the digest the reference names
        probes = [runtime]
    body = '; '.join(probes)
    return f'{{ {body}; }} > {RECORD} 2> {RECORD_ERR} || true'


_DIGEST = re.compile(r'(?:[^@\s]+@)?(sha256:[0-9a-f]{64})')
_VERSION = re.compile(r'[0-9][\w.+-]{0,39}')
#: what the image holds stands for the host's in a run from it
_OWN_STACK = {'image_mpi': 'mpi', 'image_cuda': 'cuda', 'image_rocm': 'rocm',
              'image_nccl': 'nccl'}


def read_record(text, image):
    """{container_runtime, image, image_digest[, image_id]} of a RECORD."""
    out = {'image': image}
    pinned = _PINNED.search(image)
    if pinned:
        out['image_digest'] = pinned.group(1)
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        value = value.strip()
        if not (sep and _VALUE.fullmatch(value)):
            continue
        if key == 'container_runtime':
            out[key] = value
        elif key == 'image_mpi_banner' and 'image_mpi' not in out:
            out['image_mpi'] = provenance.mpi_version(value) or \
                'version unknown'
        elif key in ('image_cuda', 'image_rocm', 'image_nccl') \
                and key not in out and _VERSION.fullmatch(value):
            out[key] = value
        elif key in ('image_digest', 'image_id') and key not in out:
            m = _DIGEST.fullmatch(value)
            if m:
                out[key] = m.group(1)
    return out


class ContainerSettings(rfm.RegressionTestPlugin):
    """The ``image`` variable of checks and their source and build fixtures."""

    #: Image holding the benchmark (hpcval.benchmarks.container); '' =
    #: the partition's ``container_images`` entry, else none.
    image = variable(str, value='')
    input_policy = {'image': checked_image}


class ContainerRun(rfm.RegressionTestPlugin):
    """Runs the test's command in its image, when it has one."""

    def _stage_text(self, name, limit=-1, unreadable=''):
        """A stage file's text (``unreadable`` when absent or unreadable)."""
        try:
            with open(os.path.join(self.stagedir, name),
                      encoding='utf-8', errors='replace') as fp:
                return fp.read(limit)
        except OSError:
            return unreadable

    def container_record(self):
        """The runtime and image the run used; SanityError without a digest."""
        image = getattr(self, '_hpcval_image', '')
        if not image:
            return {}
        text = self._stage_text(RECORD, 65536, unreadable=None)
        # no record at all: not even a pinned reference's digest counts
        record = {'image': image} if text is None else \
            read_record(text, image)
        if 'image_digest' not in record and 'image_id' not in record:
            raise SanityError(f'image {image}: no digest recorded on the '
                              f'node ({self._record_error()}); a run from '
                              f'an unidentified image is not reproducible')
        # the benchmark ran on the image's stack, not the host's
        record.update({host: record[own] for own, host in _OWN_STACK.items()
                       if own in record and record[own] != 'version unknown'})
        return record

    def _record_error(self):
        lines = [ln.strip() for ln in
                 self._stage_text(RECORD_ERR, 8192).splitlines()
                 if ln.strip()]
        return lines[-1][:200] if lines else 'the runtime said nothing'

    def _container_image(self):
        if replay.active(self):
            return ''
        image = image_of(self)
        if image and stacks.for_run(self):
            raise InputError(f'-S image={image}: the image provides the '
                             f'benchmark; stack_modules and spack_spec '
                             f'cannot be given with it')
        return image

    def _check_identifiable(self, name, image):
        # a digest the node can read, or the one the reference pins
        if _PINNED.search(image):
            return
        given = f'-S image={image}' if self.image else \
            f'{self.current_partition.fullname} container_images {image}'
        if name in ('Apptainer', 'Singularity') and '://' in image:
            raise InputError(f'{given}: {name} runs a SIF file or a '
                             f'reference pinned by @sha256:... (its digest '
                             f'goes into provenance)')
        if name not in ('Podman', 'Docker', 'Apptainer', 'Singularity'):
            raise InputError(f'{given}: {name} runs a reference pinned by '
                             f'@sha256:... (its digest goes into '
                             f'provenance)')

    def run_in_container(self):
        """Job-script step: the command in the image, then the record line."""
        image = self._container_image()
        if not image:
            return NOTHING
        partition = self.current_partition
        platform = platform_for(partition)
        self._check_identifiable(platform.name, image)
        own = ' '.join([self.executable, *self.executable_opts]).strip()
        platform.image = image
        platform.by_id = platform.name == 'Podman'
        platform.command = own
        platform.options = [
            *checked_options(
                partition.extras.get('container_options', {}).get(
                    platform.name, []),
                f'{partition.fullname} container_options {platform.name}'),
            *self._gpu_flags(platform.name),
            *self._env_flags(platform.name)]
        self.container_platform = platform
        # a repeat of the command runs in the image too (on a copy of the
        # mounts: ReFrame adds the stage folder itself, and calls this again)
        mounts = list(platform.mount_points)
        contained = platform.launch_command(self.stagedir)
        platform.mount_points = mounts
        self.postrun_cmds = [contained if cmd.strip() == own else cmd
                             for cmd in self.postrun_cmds]
        self._hpcval_image = image
        return Lines(after=(record_command(platform, image),),
                     keep=(RECORD, RECORD_ERR))

    def _gpu_flags(self, name):
        if not self.uses_gpus():
            return []
        feats = set(self.current_partition.features)
        for feature, opts in GPU_FLAGS.get(name, {}).items():
            if feature in feats:
                return list(opts)
        raise InputError(f'{self.current_partition.fullname}: no GPU access '
                         f'flags known for {name} with GPUs of features '
                         f'{", ".join(sorted(feats))}; set them in the '
                         f'partition\'s extras container_options')

    def _env_flags(self, name):
        # Podman and Docker start from the image's environment: the test's
        # variables (OMP_NUM_THREADS, ...) and what the launcher gives each
        # rank are handed in by name; Apptainer and the others pass the
        # job's environment through
        if name not in ('Podman', 'Docker'):
            return []
        names = [checked_token(k, 'env_vars') for k in self.env_vars]
        for key in names:
            if not _ENV_NAME.fullmatch(key):
                raise InputError(f'env_vars: {key!r} is not a variable name')
        return [*(f'--env={key}' for key in names),
                *(shlex.quote(f'--env={key}') for key in LAUNCHER_ENV)]


# podman gives its own process no more than this many processes where it
# cannot raise the limit (seen as conmon's limit with podman 4.3 as root)
PODMAN_NPROC_CAP = 32768


def podman_options(runtime='', nofile=0, nproc=0):
    """A partition's Podman ``container_options``: OCI runtime and limits
    (as root, Podman asks for limits a host may withhold)."""
    opts = [f'--runtime={runtime}'] if runtime else []
    opts += [f'--ulimit={name}={int(n)}:{int(n)}'
             for name, n in (('nofile', nofile), ('nproc', nproc)) if n]
    return checked_options(opts, 'podman_options')


def host_podman_options():
    """podman_options for this host (runc on hybrid cgroups)."""
    import resource
    hybrid = os.path.isdir('/sys/fs/cgroup/unified') and \
        os.path.isdir('/sys/fs/cgroup/memory')
    nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    cap = 1 << 20
    nofile = cap if nofile == resource.RLIM_INFINITY else min(nofile, cap)
    nproc = PODMAN_NPROC_CAP if nproc == resource.RLIM_INFINITY else \
        min(nproc, PODMAN_NPROC_CAP)
    return podman_options('runc' if hybrid else '', nofile, nproc)


def validate_extras(where, extras, error):
    """Validate ``container_images`` and ``container_options``."""
    try:
        for key, check in (('container_images', checked_image),
                           ('container_options', checked_options)):
            value = extras.get(key, {})
            if not isinstance(value, dict):
                raise InputError(f'{key} must map names to values')
            for name, item in value.items():
                if not isinstance(name, str) or \
                        not _ENV_NAME.fullmatch(name):
                    raise InputError(f'{key}: {name!r} is not a name')
                if key == 'container_options' and \
                        not isinstance(item, (list, tuple)):
                    raise InputError(f'{key}.{name} must be a list')
                check(item, f'{key}.{name}')
    except InputError as err:
        raise error(f'{where}: {err}') from None
