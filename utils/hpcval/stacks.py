"""Benchmarks from a site's software stack (``-S stack_modules`` or
``spack_spec``) instead of an hpcval build (docs/site.md)."""
import shlex
from dataclasses import dataclass

from hpcval.inputs import MODULE_NAME, SPACK_SPEC, InputError

# where the lines a failed check prints start
PREFIX = 'hpcval stack:'


@dataclass(frozen=True)
class Stack:
    modules: tuple = ()
    spack_spec: str = ''
    spack_env: str = ''     # the Spack environment a build installed it in

    def describe(self):
        parts = [f'modules {" ".join(self.modules)}'] if self.modules else []
        if self.spack_spec:
            parts.append(f'Spack spec {self.spack_spec}')
        return ' and '.join(parts)

    def load_commands(self, modules_system):
        """Shell lines that put the stack on PATH in a job script."""
        cmds = []
        if self.modules:
            if modules_system.name == 'nomod':
                raise InputError(f'-S stack_modules={",".join(self.modules)}'
                                 f': this system has no modules system '
                                 f'(modules_system nomod)')
            cmds += [c for m in self.modules
                     for c in modules_system.emit_load_commands(m)]
        if self.spack_spec:
            cmds += [self.spack_check(),
                     f'eval "$({self.spack()} load --sh '
                     f'{shlex.quote(self.spack_spec)})"']
        return cmds

    #: the concretised spec as ``spack find`` prints it: name, version,
    #: compiler, variants, target and the hash that names the install
    SPACK_FORMAT = ('{name}{@version}{%compiler}{variants}'
                    '{arch=architecture}{/hash:7}')

    def provenance_probes(self):
        """Shell lines for hpcval.provenance: ``spack=<concretised spec>``."""
        if not self.spack_spec:
            return []
        return [f'command -v spack >/dev/null && echo "spack=$('
                f'{self.spack()} find --format '
                f'{shlex.quote(self.SPACK_FORMAT)} '
                f'{shlex.quote(self.spack_spec)} 2>/dev/null | head -n 1)"']

    def spack(self):
        """``spack``, in the environment the build installed into."""
        return f'spack -e {shlex.quote(self.spack_env)}' if self.spack_env \
            else 'spack'

    def spack_check(self):
        """A shell line saying on stderr why the spec cannot load."""
        spec = shlex.quote(self.spack_spec)
        missing = (f'echo "{PREFIX} no spack command on PATH: the system\'s '
                   f'environment must set up the site\'s Spack (its '
                   f'setup-env.sh or module)" >&2')
        if self.spack_env:
            return f'command -v spack >/dev/null || {missing}'
        return (f'if ! command -v spack >/dev/null; then {missing}; '
                f'elif ! spack location -i {spec}; then echo "{PREFIX} '
                f'Spack spec {self.spack_spec} is not installed (-S '
                f'spack_install=true installs it)" >&2; fi')

    def check_commands(self, executables):
        """Shell lines naming each executable found on PATH, or missing."""
        return [f'command -v {shlex.quote(exe)} || echo "{PREFIX} no {exe} '
                f'on PATH after loading {self.describe()}" >&2'
                for exe in executables]


def of(test):
    """The stack ``test``'s -S variables name (validated), or None."""
    modules = tuple(test.stack_modules)
    for name in modules:
        if not MODULE_NAME.fullmatch(name):
            raise InputError(f'-S stack_modules: {name!r} is not a module '
                             f'name (letters, digits, _ . + @ % / -)')
    spec = test.spack_spec.strip()
    if spec and not SPACK_SPEC.fullmatch(spec):
        raise InputError(f'-S spack_spec={spec!r}: only letters, digits, '
                         f'spaces and _ . , : = + @ % / ^ ~ - in a spec')
    return Stack(modules, spec) if modules or spec else None


def for_run(test):
    """The stack a test's job loads: its build fixture's, else its own."""
    build = getattr(test, 'build', None)
    return build.stack if hasattr(build, 'stack') else of(test)
