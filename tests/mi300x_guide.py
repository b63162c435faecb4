"""The AMD MI300X validation guide's example outputs, served by stand-in
executables from a prebuilt_dir: the checks run unmodified on them."""
import pathlib
import stat

import seedtext

MI300X = (pathlib.Path(__file__).resolve().parent / 'fixtures' / 'documents' /
          'amd-mi300x-validation-guide.txt')
# the six test lines of upstream examples/example.cfg, as the guide lists them
EXAMPLE_CFG = """\
1 4 (G0->G0->G1)
1 1 (G0->D0->G1)
-2 (G0->G0->G1 4 1M) (G1->G1->G0 8 2M)
1 32 (N0->G0->G0)
1 4 (C0->C0->N0)
1 16 (G0->G0->G0G1)
"""


def guide_outputs():
    a2a = seedtext.rst_output(MI300X, ':mark:`Summary:`',
                              'Aggregate bandwidth (CPU Timed)')
    p2p = seedtext.rst_output(MI300X, 'Bytes Per Direction',
                              'Averages (During BiDir)')
    cfg = seedtext.rst_output(MI300X, '## Single GPU-executed',
                              'Overhead: 0.140 ms')
    gemm = {}
    for name, start, end in (('gemm', 'rocblas-bench -f gemm -r s',
                              '97190.6, 1317'),
                             ('h', '--a_type h --lda', '159783, 67.2'),
                             ('i8_r', '--a_type i8_r', '177478, 60.5')):
        text = seedtext.rst_output(MI300X, start, end)
        gemm[name] = text[text.index('rocBLAS info'):]
    return {'a2a': a2a, 'p2p': p2p, 'cfg': cfg, **gemm}


def replayer(folder, outputs):
    """prebuilt_dir whose TransferBench and rocblas-bench print ``outputs``
    (the guide's text) for the arguments they get."""
    folder.mkdir()
    for key, text in outputs.items():
        (folder / f'{key}.txt').write_text(text)
    (folder / 'example.cfg').write_text(EXAMPLE_CFG)
    scripts = {
        'TransferBench': 'case "$1" in *.cfg) cat "$D/cfg.txt";; '
                         '*) cat "$D/$1.txt";; esac',
        'rocblas-bench': 'case "$*" in *"-f gemm -r s"*) cat "$D/gemm.txt";; '
                         '*"--a_type i8_r"*) cat "$D/i8_r.txt";; '
                         '*"--a_type h"*) cat "$D/h.txt";; *) exit 1;; esac',
    }
    for name, body in scripts.items():
        exe = folder / name
        exe.write_text(f'#!/bin/bash\nD={folder}\n{body}\n')
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    return folder
