"""A real TransferBench output as the same node prints it when its
runtime shows one GPU fewer (hidden by CUDA/HIP_VISIBLE_DEVICES): a
mutation of the real output, one defect."""
import re


def without_last_gpu(text, name):
    """``text`` (p2p) with the rows and the column of ``name`` ('GPU 03',
    the matrices' last GPU) cut; the averages left as printed (nothing
    that reads this view uses them)."""
    out = []
    for line in text.splitlines():
        if line.lstrip().startswith(name + ' '):
            continue
        if line.rstrip().endswith(name) or \
                re.match(r'\s*(CPU|GPU) \d+ ', line):
            line = line.rsplit(None, 1)[0]
        out.append(line)
    return '\n'.join(out) + '\n'
