"""Whether the devices an output names are the partition's (another vendor's
or architecture's are another node's or tool's); products match as whole
words (``H20`` never matches ``H200``)."""
import collections
import re

from hpcval.parsers.common import ParseError

#: GPU architecture -> the products that report it (NVIDIA's CUDA GPUs
#: page, https://developer.nvidia.com/cuda-gpus; AMD's GPU hardware
#: specifications, https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html)
MODELS = {
    'sm_70': ('V100', 'Titan V', 'Quadro GV100'),
    'sm_80': ('A100', 'A800', 'A30'),
    'sm_90': ('H100', 'H200', 'H800', 'H20', 'GH200'),
    'sm_100': ('B200', 'B100', 'GB200'),
    'gfx908': ('MI100',),
    'gfx90a': ('MI250X', 'MI250', 'MI210'),
    'gfx942': ('MI300X', 'MI300A', 'MI325X', 'MI308X'),
}

_VENDOR_OF_ARCH = (('sm_', 'NVIDIA'), ('gfx', 'AMD'))
_VENDOR_OF_NAME = (
    (re.compile(r'\b(NVIDIA|Tesla|Quadro|GeForce)\b'), 'NVIDIA'),
    (re.compile(r'\b(AMD|Instinct|Radeon)\b|^gfx\d'), 'AMD'),
)


def vendor_of_arch(arch):
    """'NVIDIA', 'AMD' or '' for a partition's GPU ``arch``."""
    return next((v for prefix, v in _VENDOR_OF_ARCH
                 if arch.startswith(prefix)), '')


def vendor_of_name(name):
    """'NVIDIA', 'AMD' or '' for a device name a benchmark printed."""
    return next((v for pattern, v in _VENDOR_OF_NAME
                 if pattern.search(name)), '')


def summary(names):
    """'NVIDIA H200 x2, NVIDIA H100 x1' (printed names, counted)."""
    counted = collections.Counter(names)
    return ', '.join(f'{name or "(no name)"} x{n}'
                     for name, n in sorted(counted.items()))


def expected(arch):
    """'NVIDIA sm_90 GPUs (H100, H200, ...)' for messages."""
    vendor = vendor_of_arch(arch) or 'unknown vendor'
    models = MODELS.get(arch)
    known = f' ({", ".join(models)})' if models else ''
    return f'{vendor} {arch} GPUs{known}'


def foreign(name, arch):
    """Why ``name`` is not a GPU of ``arch`` ('' when it may be)."""
    want, got = vendor_of_arch(arch), vendor_of_name(name)
    if want and got and want != got:
        return f'a device of {got}'
    if want and not got:
        return 'no known vendor in its name'
    models = MODELS.get(arch)
    if models and not any(re.search(rf'(?<![\w-]){re.escape(m)}(?![\w])',
                                     name) for m in models):
        return f'not an {arch} product'
    return ''


def check_names(names, arch, what='the output'):
    """ParseError unless every name in ``names`` is a GPU of ``arch``."""
    if not arch or not vendor_of_arch(arch):
        return
    wrong = sorted({n for n in names if foreign(n, arch)})
    if wrong:
        raise ParseError(f'{what} names {summary(names)}; this partition '
                         f'has {expected(arch)}: {foreign(wrong[0], arch)} '
                         f'({wrong[0]!r}), another node\'s or another '
                         f'vendor\'s output')
