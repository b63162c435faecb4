"""Source acquisition and builds, once per session and per partition and
environment (docs/sources-and-builds.md), and the skips every test records."""
import dataclasses
import os
import re
import shlex
import subprocess

import reframe as rfm
import reframe.core.runtime as rt
import reframe.utility.typecheck as typ
from reframe.core.builtins import (run_after, run_before, sanity_function,
                                   variable)
from reframe.core.exceptions import ReframeError, SanityError

from hpcval import features, inputs, replay, stacks
from hpcval.benchmarks import nodeuse
from hpcval.benchmarks.container import ContainerSettings, image_of
from hpcval.benchmarks.lean_logging import LeanLogging
from hpcval.layouts import gpu_arch
from hpcval.inputs import (InputError, ValidatedInputs, checked_path,
                           checked_token)
from hpcval.parsers.common import read_text

# the Spack environment ReFrame's Spack build system makes in the stage
SPACK_ENV = 'rfm_spack_env'
_TARBALLS = ('.tar.gz', '.tgz', '.tar.bz2', '.tar.xz', '.tar')
# how long the reachability probe of the upstream repository may take
_PROBE_TIMEOUT_S = 20


class NotValidated(ReframeError):
    """A check that would be skipped, under ``-S strict=yes``."""


class Validation(rfm.RegressionTestPlugin):
    """A skip's reason kept for the verdict; ``-S strict=yes`` fails it."""

    #: A check that cannot run (no source, no GPU, no tool) fails instead
    #: of being skipped ('no' / 'false' / '0' is False).
    strict = variable(typ.Bool, value=False)

    #: Why the test was skipped; in the run report for ``hpcval verdict``.
    hpcval_skip_reason = variable(str, value='')
    input_policy = {'strict': inputs.FLAG, 'hpcval_skip_reason': inputs.RECORD}

    def skip(self, msg=None):
        self.hpcval_skip_reason = msg or 'skipped (no reason given)'
        if self.strict:
            raise NotValidated(f'strict, and it would be skipped: '
                               f'{self.hpcval_skip_reason}')
        super().skip(msg)

    #: A fixture whose environment ReFrame may pick from any check sharing
    #: it (a source also used by CPU checks) does not skip for it.
    any_environ = False

    @run_after('setup')
    def skip_unusable_environ(self):
        why = self.current_partition.extras.get(features.UNUSABLE, {})
        self.skip_if(not self.any_environ and
                     self.current_environ.name in why,
                     why.get(self.current_environ.name))


class SourceSettings(ContainerSettings, ValidatedInputs, Validation,
                     LeanLogging):
    """The -S variables of sources, on checks and fixtures alike, so that
    ``-S src_mirror=...`` meets no test without it."""

    #: Local copy of the upstream source: a git repository, a folder at
    #: the pinned version, or a release tarball.
    src_mirror = variable(str, value='')
    #: Folder with the benchmark's executables under their upstream names.
    prebuilt_dir = variable(str, value='')
    #: Folder of recorded outputs to replay (docs/replay.md).
    replay_dir = variable(str, value='')
    #: Modules of the site's stack that provide the executables.
    stack_modules = variable(typ.List[str], value=[])
    #: Spack spec of an installed build of the benchmark.
    spack_spec = variable(str, value='')
    #: With spack_spec: install it in a Spack environment of the build's
    #: stage folder.
    spack_install = variable(bool, value=False)
    input_policy = {
        'src_mirror': inputs.PATH,
        'prebuilt_dir': inputs.PATH,
        'replay_dir': inputs.PATH,
        'stack_modules': inputs.MODULE_NAMES,
        'spack_spec': inputs.SPACK_SPEC_KIND,
        'spack_install': inputs.FLAG,
    }

    #: Variables a test fixes in its build fixture's declaration
    #: (``build_shared``): ReFrame would take -S on them and then ignore it.
    FIXED_BY_DECLARATION = ('model', 'accelerator')
    #: Variables a check shares with its ``build`` fixture (``model``): a
    #: leaf sets them once, in the fixture declaration.
    build_shared = ()

    @run_after('init')
    def take_build_variables(self):
        for name in self.build_shared:
            declared = type(self)._rfm_fixture_space['build'].variables
            if name in declared:
                setattr(self, name, declared[name])

    @run_after('init')
    def refuse_ignored_settings(self):
        options = inputs.reframe_options()
        for assignment in getattr(options, 'vars', None) or []:
            target, sep, text = assignment.partition('=')
            owner, _, name = target.rpartition('.')
            if not sep or name not in self.FIXED_BY_DECLARATION or \
                    (owner and owner != type(self).__name__):
                continue
            value = getattr(self, name, None)
            if isinstance(value, str) and value != text:
                with inputs.at_load(self):
                    raise InputError(
                        f'-S {target}={text!r}: {type(self).__name__} runs '
                        f'{name}={value}, fixed by the test that declares '
                        f'its build; -S cannot change it and would be '
                        f'ignored: select the test of the {name} you want '
                        f'instead (reframe -l lists them, e.g. -n '
                        f"'%build.{name}={text}')")


def _is_git_repo(path):
    return os.path.isdir(os.path.join(path, '.git')) or (
        os.path.isfile(os.path.join(path, 'HEAD')) and
        os.path.isdir(os.path.join(path, 'objects'))
    )


def is_commit(version):
    """Whether ``version`` pins a commit (40 hex digits)."""
    return bool(re.fullmatch(r'[0-9a-f]{40}', version))


def _upstream_reachable(url, version):
    # a commit is not a ref: ls-remote can only show the repository answers
    refs = ['HEAD'] if is_commit(version) else \
        [f'refs/tags/{version}', f'refs/heads/{version}']
    try:
        # '--': a URL is never read as an option (--upload-pack=...)
        subprocess.run(['git', 'ls-remote', '--exit-code', '--', url,
                        *refs],
                       check=True, capture_output=True,
                       timeout=_PROBE_TIMEOUT_S,
                       env=dict(os.environ, GIT_TERMINAL_PROMPT='0'))
        return True
    except (OSError, subprocess.SubprocessError):
        return False


class UpstreamSource(SourceSettings, rfm.RunOnlyRegressionTest):
    """The upstream source tree of one benchmark at a pinned version."""

    #: Upstream git repository.
    repo_url = variable(str)

    #: Pinned tag (or branch) of ``repo_url``.
    version = variable(str)

    #: Clone submodules too (Comm|Scope needs them).
    submodules = variable(bool, value=False)
    input_policy = {
        'repo_url': inputs.URL,
        'version': inputs.TOKEN,
        'submodules': inputs.FLAG,
    }

    local = True
    valid_systems = ['*']
    valid_prog_environs = ['*']
    executable = 'true'

    #: Where the tree lands, relative to the stage directory.
    tree = 'src'

    #: Untracked paths of a prepared checkout (elbencho's external/): a
    #: ``src_mirror`` holding the first is copied, as a clone drops them.
    prepared_inputs = ()

    @property
    def src_dir(self):
        return os.path.join(self.stagedir, self.tree)

    def _clone_cmd(self, origin):
        version = checked_token(self.version, 'version')
        if is_commit(version):
            # clone --branch takes no commit; a fetch of one commit does
            tree = shlex.quote(self.tree)
            return (f'git init -q {tree} && git -C {tree} fetch -q --depth 1 '
                    f'-- {shlex.quote(origin)} {version} && git -C {tree} -c '
                    f'advice.detachedHead=false checkout -q FETCH_HEAD')

        opts = ['--quiet', '--depth', '1', '--branch', version]
        if self.submodules:
            opts += ['--recurse-submodules', '--shallow-submodules']

        return shlex.join(['git', '-c', 'advice.detachedHead=false',
                           'clone', *opts, '--', origin, self.tree])

    def _mirror_cmds(self, mirror):
        copy = [f'cp -a -- {shlex.quote(mirror)}/. {self.tree}/']
        if self.prepared_inputs and os.path.isdir(
                os.path.join(mirror, self.prepared_inputs[0])):
            if not os.path.isdir(os.path.join(mirror, '.git')):
                return copy
            tag = checked_token(self.version, 'version')
            return copy + [
                f'at=$(git -C {self.tree} describe --tags --exact-match '
                f'2>/dev/null) || at="an untagged commit"',
                f'[ "$at" = {tag} ] || {{ echo "hpcval: -S src_mirror='
                f'{mirror} is a checkout of $at, not {tag}" >&2; exit 1; }}',
            ]

        if _is_git_repo(mirror):
            return [self._clone_cmd(f'file://{mirror}')]

        if os.path.isdir(mirror):
            return copy

        if mirror.endswith(_TARBALLS):
            return [f'tar -x -C {self.tree} --strip-components=1 '
                    f'-f {shlex.quote(mirror)}']

        raise SanityError(f'-S src_mirror={mirror}: neither a git repository, '
                          f'a folder nor a tarball ({", ".join(_TARBALLS)})')

    @run_before('run')
    def choose_origin(self):
        if replay.active(self):
            self.prerun_cmds = replay.skip_fixture(self, 'nothing fetched')
            return

        if self.prebuilt_dir:
            checked_path(self.prebuilt_dir, 'prebuilt_dir')
        given = self._given()
        if given:
            self.prerun_cmds = [f'echo "{given}: nothing to fetch"']
            return

        # a failed clone or copy must fail the job, not fall through
        self.prerun_cmds = ['set -e', f'mkdir -p {self.tree}']
        if self.src_mirror:
            mirror = checked_path(self.src_mirror, 'src_mirror')
            self.prerun_cmds += self._mirror_cmds(mirror)
            return

        self.skip_if(
            not self.is_dry_run() and
            not _upstream_reachable(self.repo_url, self.version),
            f'{self.repo_url} ({self.version}) unreachable and no '
            f'-S src_mirror=PATH or -S prebuilt_dir=DIR given'
        )
        self.prerun_cmds.append(self._clone_cmd(self.repo_url))

    def _given(self):
        """Why nothing is fetched, or ''."""
        return ('prebuilt_dir set' if self.prebuilt_dir else
                'the site\'s stack provides it' if stacks.of(self) else
                'the image provides it' if image_of(self) else '')

    @sanity_function
    def validate_tree(self):
        if self.job.exitcode != 0:
            raise SanityError(f'fetching the source failed (exit code '
                              f'{self.job.exitcode}); see rfm_job.err')

        if not replay.active(self) and not self._given() and \
                not os.listdir(self.src_dir):
            raise SanityError(f'{self.src_dir} is empty after the fetch')

        return True


class UpstreamBuild(SourceSettings, rfm.CompileOnlyRegressionTest):
    """Builds a benchmark from ``self.source`` with ``build_commands(src)``."""

    #: Upstream executable names the runs need, e.g. ``['omp-stream']``.
    executables = variable(typ.List[str])

    #: Folder, relative to the stage directory, the build leaves them in.
    build_bin = variable(str, value='build')

    #: CUDA architecture of a CUDA build, e.g. sm_90; default: the
    #: partition's GPU arch.
    cuda_arch = variable(str, value='')
    input_policy = {
        'executables': inputs.TOKENS,
        'build_bin': inputs.RELATIVE_PATH,
        'cuda_arch': inputs.TOKEN,
    }

    build_system = 'CustomBuild'
    sourcesdir = None
    valid_systems = ['*']
    valid_prog_environs = ['*']

    def build_commands(self, src):
        raise NotImplementedError

    @property
    def bin_dir(self):
        if self.source.prebuilt_dir:
            return checked_path(self.source.prebuilt_dir, 'prebuilt_dir')

        return os.path.join(self.stagedir, self.build_bin)

    @property
    def stack(self):
        """The site's stack giving the executables, or None."""
        stack = stacks.of(self.source) or stacks.of(self)
        if self._spack_install() and stack:
            return dataclasses.replace(stack, spack_env=os.path.join(
                self.stagedir, SPACK_ENV))
        return stack

    def _spack_install(self):
        wanted = self.source.spack_install or self.spack_install
        if wanted and not (self.source.spack_spec or self.spack_spec):
            raise InputError('-S spack_install=true needs -S spack_spec=SPEC')
        return wanted

    def in_image(self):
        """Whether the run takes the executables from an image."""
        return bool(image_of(self.source) or image_of(self))

    def executable_path(self, name):
        # found on PATH once the stack is loaded, or on the image's
        if self.stack or self.in_image():
            return name

        return os.path.join(self.bin_dir, name)

    def command(self, name):
        """``executable_path(name)`` quoted for a job script."""
        return shlex.quote(self.executable_path(name))

    def target_cuda_arch(self, default=''):
        """``-S cuda_arch``, else the partition's GPU arch, else default."""
        return checked_token(self.cuda_arch or gpu_arch(self.current_partition)
                             or default, 'cuda_arch')

    @property
    def build_jobs(self):
        return max(1, min(16, self.current_partition.processor.num_cpus or 4))

    def said(self, prefix=stacks.PREFIX):
        """The build's stderr lines starting with ``prefix``, stripped."""
        path = self.stderr.evaluate()
        return [line.strip() for line in read_text(path).splitlines()
                if line.startswith(prefix)] if os.path.exists(path) else []

    def _missing_executables(self):
        if self.stack:
            said = ' '.join(self.said())
            return [exe for exe in self.executables
                    if f' no {exe} on PATH' in said]

        return [exe for exe in self.executables
                if not os.access(self.executable_path(exe), os.X_OK)]

    @run_before('compile')
    def emit_build(self):
        if replay.active(self):
            self.build_system.commands = replay.skip_fixture(self,
                                                             'nothing built')
            return

        if self.in_image():
            self.build_system.commands = ['echo "the image provides '
                                          f'{" ".join(self.executables)}: '
                                          'nothing to build"']
            return

        stack = self.stack
        if stack and stack.spack_env:
            self._spack_build(stack)
            return

        if stack:
            self.build_system.commands = [
                *stack.load_commands(rt.runtime().modules_system),
                *stack.check_commands(self.executables)]
            return

        if self.source.prebuilt_dir:
            missing = self._missing_executables()
            if missing:
                raise InputError(f'prebuilt_dir: no executable '
                                 f'{", ".join(missing)} in {self.bin_dir}')

            self.build_system.commands = [
                f'echo "using prebuilt {exe}: {self.executable_path(exe)}"'
                for exe in self.executables
            ]
        else:
            self.build_system.commands = self.build_commands(
                shlex.quote(self.source.src_dir)
            )
            # no measurement on this host while it compiles
            self.prebuild_cmds = [*nodeuse.build_commands(self),
                                  *self.prebuild_cmds]

    def _spack_build(self, stack):
        """Spack build in a stage environment; prints the concrete spec."""
        self.build_system = 'Spack'
        self.build_system.environment = None     # ReFrame makes SPACK_ENV
        self.build_system.specs = [shlex.quote(stack.spack_spec)]
        self.build_system.emit_load_cmds = False
        self.prebuild_cmds = [stack.spack_check()]
        self.postbuild_cmds = [
            f'{stack.spack()} find --long --variants',
            *stack.load_commands(rt.runtime().modules_system),
            *stack.check_commands(self.executables)]

    @sanity_function
    def validate_build(self):
        if replay.active(self) or self.in_image():
            return True

        if self.stack:
            said = self.said()
            if said:
                raise SanityError('; '.join(said))
            return True

        missing = self._missing_executables()
        if missing:
            raise SanityError(f'no executable {", ".join(missing)} in '
                              f'{self.bin_dir} after the build; see '
                              f'rfm_build.err')

        return True
