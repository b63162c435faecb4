"""What a result was measured with: GPU model, driver, CUDA/ROCm, MPI,
kernel and CPU, asked on the node that ran the job.

A check's job script runs ``command()`` before the benchmark; it writes
``key=value`` lines into ``FILE`` in the stage directory (kept with the
output), asking each tool only where it is installed and never failing the
job.  ``read()`` turns the file into the check's ``hpcval_provenance``
record, which the run report carries to ``hpcval verdict`` and ``hpcval
calibrate``.  Versions the benchmark prints itself (NCCL/RCCL through
nccl-tests) are added by the check.
"""
import re

FILE = 'hpcval_provenance.txt'
KEYS = ('gpu', 'driver', 'cuda', 'rocm', 'nccl', 'rccl', 'mpi', 'kernel',
        'cpu')
_VALUE = re.compile(r'[\x20-\x7e]{1,200}')

# one line each; a tool that is missing or fails leaves its key out
_PROBES = (
    'echo "kernel=$(uname -r)"',
    'echo "cpu=$(sed -n "s/^model name[[:space:]]*: //p" /proc/cpuinfo '
    '| sort | uniq -c | sed "s/^ *\\([0-9]*\\) \\(.*\\)/\\2 x\\1/" '
    '| head -n 1)"',
    'command -v nvidia-smi >/dev/null && echo "gpu=$(nvidia-smi '
    '--query-gpu=name --format=csv,noheader | sort | uniq -c '
    '| sed "s/^ *\\([0-9]*\\) \\(.*\\)/\\2 x\\1/" | paste -sd, -)" '
    '&& echo "driver=$(nvidia-smi --query-gpu=driver_version '
    '--format=csv,noheader | sort -u | paste -sd, -)"',
    'command -v nvcc >/dev/null && echo "cuda=$(nvcc --version '
    '| sed -n "s/.*release \\([0-9.]*\\).*/\\1/p")"',
    '[ -r /opt/rocm/.info/version ] && echo "rocm=$(cat '
    '/opt/rocm/.info/version)"',
    'command -v rocm-smi >/dev/null && echo "gpu=$(rocm-smi '
    '--showproductname 2>/dev/null | sed -n "s/.*Card [Ss]eries:[[:space:]]*'
    '//p" | sort | uniq -c | sed "s/^ *\\([0-9]*\\) \\(.*\\)/\\2 x\\1/" '
    '| paste -sd, -)"',
    'command -v mpichversion >/dev/null && echo "mpi=MPICH $(mpichversion '
    '| sed -n "s/^MPICH Version:[[:space:]]*//p")"',
    'command -v mpiexec >/dev/null && echo "mpi=$(mpiexec --version 2>&1 '
    '| sed -n "/Open MPI\\|Intel(R) MPI\\|Version:/{s/^[[:space:]]*//;p;q}")"',
)


def command():
    """One shell line for the job script: writes FILE, never fails."""
    probes = '; '.join(f'{{ {p}; }}' for p in _PROBES)
    return f'{{ {probes}; }} > {FILE} 2>/dev/null || true'


def read(text):
    """{key: value} of a FILE's text; unknown keys, empty values and
    anything unprintable are dropped (the file comes from a job)."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition('=')
        value = value.strip()
        if sep and key in KEYS and value and _VALUE.fullmatch(value) \
                and key not in out:
            out[key] = value
    return out


def nccl_version(code):
    """'22809' (nccl-tests' nccl-library=) -> '2.28.9'."""
    code = int(code)
    return f'{code // 10000}.{code % 10000 // 100}.{code % 100}'
