"""What a result was measured with: ``command()`` and ``node_probe()`` write
``key=value`` lines to FILE on the job's nodes, ``read()`` makes the record.

The MPI is the library the executable loads (``ldd``), named by its
version tool, else the launcher's, else the first ``mpiexec``."""
import base64
import binascii
import re
import shlex

from hpcval.health import amd, nvidia
from hpcval.records import NODES

FILE = 'hpcval_provenance.txt'
KEYS = ('gpu', 'driver', 'cuda', 'rocm', 'nccl', 'rccl', 'mpi', 'kernel',
        'cpu', 'mpi_library', 'launcher', 'spack')
# raw banner lines the record is made from, not kept themselves
_RAW = ('mpi_banner', 'launcher_banner', 'path_mpi_banner')
_VALUE = re.compile(r'[\x20-\x7e]{1,200}')

# one line each; a tool that is missing or fails leaves its key out
_PROBES = (
    'echo "kernel=$(uname -r)"',
    'echo "cpu=$(sed -n "s/^model name[[:space:]]*: //p" /proc/cpuinfo '
    '| sort | uniq -c | sed "s/^ *\\([0-9]*\\) \\(.*\\)/\\2 x\\1/" '
    '| head -n 1)"',
    # a tool that fails prints its message where the names would be, and
    # one that hangs (a GPU off the bus) must not hang the job: kept only
    # when it answers, within 30 s, with exit 0
    'command -v nvidia-smi >/dev/null && g=$(timeout -k 5 30 nvidia-smi '
    '--query-gpu=name,driver_version --format=csv,noheader) && '
    'echo "gpu=$(echo "$g" | sed "s/, [^,]*$//" | sort | uniq -c '
    '| sed "s/^ *\\([0-9]*\\) \\(.*\\)/\\2 x\\1/" | paste -sd, -)" '
    '&& echo "driver=$(echo "$g" | sed "s/.*, //" | sort -u '
    '| paste -sd, -)"',
    'command -v nvcc >/dev/null && echo "cuda=$(nvcc --version '
    '| sed -n "s/.*release \\([0-9.]*\\).*/\\1/p")"',
    '[ -r /opt/rocm/.info/version ] && echo "rocm=$(cat '
    '/opt/rocm/.info/version)"',
    'command -v rocm-smi >/dev/null && echo "gpu=$(timeout -k 5 30 rocm-smi '
    '--showproductname 2>/dev/null | sed -n "s/.*Card [Ss]eries:[[:space:]]*'
    '//p" | sort | uniq -c | sed "s/^ *\\([0-9]*\\) \\(.*\\)/\\2 x\\1/" '
    '| paste -sd, -)"',
    'command -v mpiexec >/dev/null && echo "path_mpi_banner=$(mpiexec '
    '--version 2>&1 | grep -v "^[[:space:]]*$" | head -n 2 | paste -sd"|" -)"',
)
# each MPI's version tool, beside its library: bin/ of the library's prefix
_MPI_TOOLS = {'ompi_info': '--version', 'mpichversion': '', 'impi_info': '-v'}


def _library_probe(executable):
    exe = shlex.quote(executable)
    tools = ' '.join(map(shlex.quote, _MPI_TOOLS))
    cases = ' '.join(f'{shlex.quote(t)}) a={shlex.quote(a)};;'
                     for t, a in _MPI_TOOLS.items())
    return (f'l=$(ldd "$(command -v {exe})" 2>/dev/null | sed -n '
            f'"s/^[[:space:]]*libmpi[^ ]* => \\(\\/[^ ]*\\).*/\\1/p" '
            f'| head -n 1); [ -n "$l" ] && echo "mpi_library=$l" && '
            f'p=$(dirname "$(dirname "$(readlink -f "$l")")") && '
            f'for t in {tools}; do [ -x "$p/bin/$t" ] || continue; '
            f'case $t in {cases} esac; '
            f'echo "mpi_banner=$("$p/bin/$t" $a 2>&1 | grep -v "^[[:space:]]*$" '
            f'| head -n 2 | paste -sd"|" -)"; break; done')


def _launcher_probe(launcher):
    exe = shlex.quote(launcher)
    return (f'command -v {exe} >/dev/null && echo "launcher=$(command -v '
            f'{exe})" && echo "launcher_banner=$({exe} --version 2>&1 '
            f'| grep -v "^[[:space:]]*$" | head -n 2 | paste -sd"|" -)"')


#: per-node probes: the tool's whole output, base64 on one line, a hung
#: tool stopped
_IDENTITY = (
    'command -v nvidia-smi >/dev/null && echo "nvidia_smi=$(timeout -k 5 30 '
    'nvidia-smi --query-gpu=index,name,uuid,serial,vbios_version,'
    'driver_version --format=csv 2>&1 | base64 -w0)"',
    'command -v amd-smi >/dev/null && echo "amd_smi=$(timeout -k 5 30 '
    'amd-smi static --json 2>&1 | base64 -w0)"',
    '! command -v amd-smi >/dev/null && command -v rocm-smi >/dev/null && '
    'echo "rocm_smi=$(timeout -k 5 30 rocm-smi --showproductname '
    '--showserial --showuniqueid --showvbios --showdriverversion --json '
    '2>&1 | base64 -w0)"',
)
# the first node's probes that every node answers for itself
_NODE_PROBES = tuple(p for p in _PROBES if 'mpiexec' not in p)
_HOST = re.compile(r'[A-Za-z0-9][A-Za-z0-9._-]{0,62}')
_NODE_KEYS = ('kernel', 'cpu', 'gpu', 'driver', 'cuda', 'rocm')


def node_probe(launcher=''):
    """One shell line appending every node's ``@<host> key=value`` to FILE."""
    inner = '; '.join(f'{{ {p}; }}' for p in (*_NODE_PROBES, *_IDENTITY))
    # a node by the name Slurm gives it (the job's node list), else host
    script = (f'h=${{SLURMD_NODENAME:-$(hostname -s 2>/dev/null || '
              f'hostname)}}; '
              f'{{ {inner}; }} 2>/dev/null | sed "s/^/@$h /"')
    run = 'sh -c "$hpcval_node"'
    if launcher == 'srun':
        run = (f'if [ -n "${{SLURM_JOB_NUM_NODES:-}}" ]; then srun '
               f'--nodes="$SLURM_JOB_NUM_NODES" '
               f'--ntasks="$SLURM_JOB_NUM_NODES" --ntasks-per-node=1 '
               f'--kill-on-bad-exit=0 {run}; else {run}; fi')
    run = f'hpcval_node={shlex.quote(script)}; {run}'
    return f'{{ {run}; }} >> {FILE} 2>/dev/null || true'


def command(executable='', launcher='', extra=()):
    """One shell line for the job script: writes FILE, never fails."""
    probes = [*_PROBES, *extra]
    if executable and re.fullmatch(r'[\w./+-]+', executable):
        probes.insert(0, _library_probe(executable))
    if launcher and re.fullmatch(r'[\w.+-]+', launcher):
        probes.append(_launcher_probe(launcher))
    probes = '; '.join(f'{{ {p}; }}' for p in probes)
    return (f'{{ {probes}; }} > {FILE} 2>/dev/null || true; '
            f'{node_probe(launcher)}')


def read(text):
    """{key: value} of a FILE's text, unknown keys and unprintables dropped."""
    out, raw, nodes = {}, {}, {}
    for line in text.splitlines():
        if line.startswith('@'):
            host, _, rest = line[1:].partition(' ')
            if _HOST.fullmatch(host):
                nodes.setdefault(host, []).append(rest)
            continue
        key, sep, value = line.partition('=')
        value = value.strip()
        if not (sep and value and _VALUE.fullmatch(value)):
            continue
        if key in KEYS and key not in out:
            out[key] = value
        elif key in _RAW and key not in raw:
            raw[key] = value
    for key in _RAW:        # in order: the library, the launcher, PATH
        found = mpi_version(raw.get(key, ''))
        if found:
            out['mpi'] = found
            break
    if 'launcher' in out and raw.get('launcher_banner'):
        out['launcher'] = (f'{out["launcher"]} '
                           f'({launcher_version(raw["launcher_banner"])})')
    if nodes:
        out[NODES] = {host: _node(lines) for host, lines in
                      sorted(nodes.items())}
    return out


def _node(lines):
    """{key: value} of one node's tagged lines, its GPUs' identity included."""
    got, tools = {}, {}
    for line in lines:
        key, sep, value = line.partition('=')
        value = value.strip()
        if not sep or not value:
            continue
        if key in ('nvidia_smi', 'amd_smi', 'rocm_smi'):
            tools.setdefault(key, value)
        elif key in _NODE_KEYS and key not in got \
                and _VALUE.fullmatch(value):
            got[key] = value
    for key, encoded in tools.items():
        got.update(identity(key, encoded))
    return got


def identity(tool, encoded):
    """GPU uuids, serials, vbios, driver and count of a node's tool output."""
    try:
        text = base64.b64decode(encoded, validate=True).decode(
            'utf-8', 'replace')
    except (binascii.Error, ValueError):
        return {'identity': f'{tool}: output not readable'}
    try:
        gpus = nvidia.gpus(text) if tool == 'nvidia_smi' else amd.gpus(
            text, tool='amd-smi' if tool == 'amd_smi' else 'rocm-smi')
    except ValueError as err:
        why = str(err).splitlines()[0][:120] if str(err) else 'no GPU'
        return {'identity': _printable(f'{tool.replace("_", "-")}: {why}')}
    gpus = sorted(gpus, key=lambda g: g.get('index', 0))
    out = {'gpus': str(len(gpus))}
    for key, field in (('gpu_uuid', 'uuid'), ('gpu_serial', 'serial'),
                       ('vbios', 'vbios'), ('driver', 'driver')):
        values = [_printable(str(g.get(field) or 'none')) for g in gpus]
        if any(v != 'none' for v in values):
            # one value where every GPU has it (a driver, a VBIOS)
            out[key] = ','.join(values) if len(set(values)) > 1 \
                or key in ('gpu_uuid', 'gpu_serial') else values[0]
    return out


def _printable(text):
    return ''.join(ch if ' ' <= ch <= '~' else '?' for ch in text)[:2000]


_MPI_BANNERS = (
    # ompi_info --version: 'Open MPI v4.1.4'; mpirun --version: 'mpirun
    # (Open MPI) 5.0.3'; Open MPI 4: 'mpiexec (OpenRTE) 4.1.4'
    (re.compile(r'Open MPI v?(\d[\w.]*)|\((?:Open MPI|OpenRTE)\) '
                r'(\d[\w.]*)'), 'Open MPI'),
    # mpichversion: 'MPICH Version:      4.3.2'; Cray: 'MPICH Version: 8.1.28'
    (re.compile(r'MPICH Version:\s*(\d[\w.]*)'), 'MPICH'),
    # 'Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619'
    (re.compile(r'Intel\(R\) MPI Library.*?Version (\d[\w.]*)'),
     'Intel MPI'),
    # mpiexec.hydra --version: 'HYDRA build details:|    Version: 4.3.2'
    (re.compile(r'HYDRA build details:\|\s*Version:\s*(\d[\w.]*)'),
     'MPICH (Hydra)'),
)


def mpi_version(banner):
    """'Open MPI 4.1.4', 'MPICH 4.3.2', ... from a version tool, or ''."""
    for pattern, name in _MPI_BANNERS:
        m = pattern.search(banner)
        if m:
            return f'{name} {next(g for g in m.groups() if g)}'
    return ''


def launcher_version(banner):
    """'slurm 23.02.7' (srun), 'Open MPI 5.0.3' (mpirun), else line 1."""
    m = re.match(r'slurm(?:-wlm)? (\S+)', banner)
    if m:
        return f'slurm {m.group(1)}'
    found = mpi_version(banner)
    if found or re.search(r'\berror\b', banner, re.IGNORECASE):
        return found or 'version unknown'
    return banner.split('|')[0][:80]


def nccl_version(code):
    """'22809' (nccl-tests' nccl-library=) -> '2.28.9'."""
    code = int(code)
    return f'{code // 10000}.{code % 10000 // 100}.{code % 100}'
