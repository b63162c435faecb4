"""What a comparison row measures: benchmark and mode, not the class."""
import functools
import re

_VENDOR = re.compile(r'Cuda|Hip|Rocm|Nccl|Rccl')
_HIDDEN = re.compile(r'repeat_no|build\..*')
#: test variables (report fields) that change what is measured
LAYOUT_FIELDS = ('mode', 'num_nodes', 'array')
#: readable names of vendor-neutral classes whose parameters say nothing
_NAMES = {'BabelStreamCheck': 'GPU, every GPU of a node (the slowest)',
          'BabelStreamCpuCheck': 'CPU, one node'}


def kind(check):
    """The vendor-neutral class: TransferBenchCudaCheck -> TransferBenchCheck."""
    return _VENDOR.sub('', check)


@functools.cache
def _key_and_label(check, params, fields):
    """(hashable key, readable label) of what a test case measured."""
    params = tuple((k, v) for k, v in params if not _HIDDEN.fullmatch(k))
    fields = dict(fields)
    words = [v for _, v in params]
    mode = fields.get('mode')
    if mode:
        words.append(str(mode).replace('_', ' '))
        nodes = fields.get('num_nodes')
        if mode == 'rank_per_gpu' and nodes:
            words.append(f'{nodes} node{"s" if nodes != 1 else ""}')
    if fields.get('array'):
        words.append(f'{fields["array"]} arrays')
    name = kind(check)
    label = ', '.join(str(w) for w in words) or _NAMES.get(name, name)
    return (name, params, tuple(sorted(fields.items()))), label


def labels(cases):
    """{case: label}; same-reading labels get their neutral class added."""
    keyed = {c: _key_and_label(c.check, c.params, c.fields) for c in cases}
    seen = {}
    for c, (key, label) in keyed.items():
        seen.setdefault((c.benchmark, label), set()).add(key)
    return {c: label if len(seen[(c.benchmark, label)]) == 1
            else f'{label} ({_NAMES.get(key[0], key[0])})'
            for c, (key, label) in keyed.items()}
