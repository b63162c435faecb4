"""A cluster as Slurm describes it (``hpcval site init --from-slurm``).

Slurm's output is data: every name reaching the system module, reference
file or ``--partition`` must fully match a plain name, and an unparsable
record stops everything, named.  Nodes of one partition that differ in
shape are listed, never averaged.  Admin text (a drain reason) may hold
any byte: output is bounded (MAX_OUTPUT), decoded leniently and split on
newlines only, and the bytes replaced are reported."""
import collections
import dataclasses
import os
import re
import selectors
import subprocess
import time

#: Slurm partition and node names taken as they are: they reach a job's
#: command line (``--partition=NAME``) and the files written
NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,62}')
#: a GRES type (``gpu:h100:4``) and a CPU architecture (``Arch=x86_64``)
WORD = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.+-]{0,62}')
# where a key=value field starts: a key after the start or a blank (values
# such as OS=Linux 6.1 #1 SMP hold blanks; TRES=cpu=2,mem=4G holds '=')
_FIELD = re.compile(r'(?:^|(?<=\s))([A-Za-z][A-Za-z0-9_]*)=')
#: GPU models by the vendor whose tool lists them (hpcval.health.inventory)
_VENDORS = (('nvidia', re.compile(r'(?i)^(nvidia|tesla|[ahbvlpt]\d|gh\d|'
                                  r'gb\d|rtx|a\d{2,}|h\d{2,}|l\d{1,2}s?|'
                                  r'titan|quadro|geforce)')),
            ('amd', re.compile(r'(?i)^(amd|mi\d|instinct|radeon)')),
            ('habana', re.compile(r'(?i)^(gaudi|hl-?\d)')))
#: fields whose value is free text to the end of the line (last in
#: ``scontrol show node -o``, on a line of their own in the long form)
FREE_TEXT = ('Reason',)
COMMANDS = {'partitions': ('scontrol', 'show', 'partition', '-o'),
            'nodes': ('scontrol', 'show', 'node', '-o'),
            'states': ('sinfo', '-h', '-N', '-o', '%N|%R|%T|%E'),
            'config': ('scontrol', 'show', 'config'),
            'mpi': ('srun', '--mpi=list')}
TIMEOUT = 30
#: bytes read of one command's output: about 25 times the ``scontrol show
#: node -o`` of a 10,000-node cluster, and what parsing it holds in memory
#: stays a few hundred MB
MAX_OUTPUT = 32 * 1024 * 1024
# Slurm's MaxTime: UNLIMITED, [D-]HH:MM:SS, MM:SS or minutes; 7 digits of
# days is 27,000 years, so longer numbers are no time Slurm printed
_MAX_TIME = re.compile(r'UNLIMITED|INFINITE|(?:\d{1,7}-)?\d{1,2}:\d{1,2}:'
                       r'\d{1,2}|\d{1,9}:\d{1,2}|\d{1,9}')
# what partitions() bounds, and how Slurm prints it
_BOUNDED = (('MaxTime', _MAX_TIME, 'UNLIMITED or [D-]HH:MM:SS'),
            ('TotalNodes', re.compile(r'\d{1,9}'), 'a count'))


class SlurmOutputError(ValueError):
    """Slurm's output cannot be used; the message names what and where."""


@dataclasses.dataclass(frozen=True)
class Shape:
    """What a node offers a job, as ``scontrol show node`` gives it."""
    arch: str
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    cpus: int
    memory_mb: int
    gpus: int
    gpu_type: str        # GRES type (gpu:<type>:<n>), '' when untyped

    def text(self):
        gpus = (f', {self.gpus} x GPU {self.gpu_type or "(untyped GRES)"}'
                if self.gpus else ', no GPU')
        return (f'{self.cpus} CPUs ({self.sockets} x {self.cores_per_socket}'
                f' cores x {self.threads_per_core} threads, {self.arch}), '
                f'{self.memory_mb} MB{gpus}')


@dataclasses.dataclass(frozen=True)
class Node:
    name: str
    partitions: tuple
    shape: Shape
    features: tuple
    gres: str
    state: str = ''      # scontrol's State=, e.g. IDLE+DRAIN
    reason: str = ''     # scontrol's Reason=, printable


@dataclasses.dataclass(frozen=True)
class Partition:
    name: str
    default: bool
    max_time: str        # Slurm's MaxTime, e.g. 1-00:00:00 or UNLIMITED
    max_nodes: str
    state: str
    nodes: tuple         # Node, in scontrol's order
    shape: Shape         # the shape most of its nodes have
    others: tuple        # (Shape, (node names)) of the other shapes
    unavailable: tuple   # (node, state: reason) from sinfo


@dataclasses.dataclass(frozen=True)
class Cluster:
    name: str
    partitions: tuple
    notes: tuple         # what was left out and why
    warnings: tuple = ()     # what was read but is doubtful
    mpi_default: str = ''    # scontrol show config's MpiDefault
    mpi_types: tuple = ()    # srun --mpi=list's plugins


def lines(text):
    """(number, line) of Slurm's output, split on newlines only."""
    for number, line in enumerate(text.split('\n'), 1):
        yield number, line.rstrip('\r')


def records(text, first_key, source):
    """[{key: value}] of ``scontrol show ... -o`` or its multi-line form."""
    out, current = [], None
    for number, line in lines(text):
        if not line.strip():
            continue
        fields = _fields(line)
        if fields and next(iter(fields)) == first_key:
            current = dict(fields)
            out.append(current)
        elif current is not None and fields and line[:1].isspace():
            twice = sorted(set(fields) & set(current))
            if twice:
                raise SlurmOutputError(f'{source}: line {number}: '
                                       f'{", ".join(twice)} given twice in '
                                       f'one record')
            current.update(fields)
        else:
            raise SlurmOutputError(
                f'{source}: line {number} is not a {first_key}= record: '
                f'{_short(line)!r}')
    if not out:
        raise SlurmOutputError(f'{source}: no {first_key}= record in it')
    return out


def _fields(line):
    starts = list(_FIELD.finditer(line))
    if not starts or line[:starts[0].start()].strip():
        return {}
    found = {}
    for this, nxt in zip(starts, starts[1:] + [None]):
        key = this.group(1)
        if key in found:
            # free text holding KEY=, or two records run together
            raise SlurmOutputError(f'field {key}= given twice in: '
                                   f'{_short(line)!r}')
        if key in FREE_TEXT:
            # an admin's text to the end of the line: never fields
            found[key] = line[this.end():].strip()
            break
        end = nxt.start() if nxt else len(line)
        found[key] = line[this.end():end].strip()
    return found


def _short(text, most=80):
    text = text.strip()
    return text if len(text) <= most else text[:most] + '...'


def _int(rec, key, source, name):
    val = rec.get(key)
    if val is None or not re.fullmatch(r'\d{1,9}', val):
        raise SlurmOutputError(f'{source}: node {name}: {key}={val!r} is not '
                               f'a count (truncated or not scontrol show '
                               f'node output?)')
    return int(val)


def gpus_of(gres, source, node):
    """(count, type) of a node's ``Gres=`` GPUs; types joined by '+'."""
    if gres in ('', '(null)'):
        return 0, ''
    count, types = 0, []
    for item in re.sub(r'\([^)]*\)', '', gres).split(','):
        parts = item.split(':')
        if parts[0] != 'gpu':
            continue
        if len(parts) not in (2, 3) or not re.fullmatch(r'\d{1,4}', parts[-1]):
            raise SlurmOutputError(f'{source}: node {node}: Gres={gres!r}: '
                                   f'{item!r} is not gpu[:TYPE]:COUNT')
        kind = parts[1] if len(parts) == 3 else ''
        if kind and not WORD.fullmatch(kind):
            raise SlurmOutputError(f'{source}: node {node}: GPU type '
                                   f'{kind!r} is not a plain name')
        count += int(parts[-1])
        if kind not in types:
            types.append(kind)
    return count, '+'.join(t for t in types if t) if all(types) else ''


def _named(text, key, what, source):
    """(name, record) of each record, its name a plain name given once."""
    recs = records(text, key, source)
    for rec in recs:
        if not NAME.fullmatch(rec[key]):
            raise SlurmOutputError(f'{source}: {what} name {rec[key]!r} is '
                                   f'not a plain name')
    # a record given twice could stand in for a lost one in every count
    twice = [n for n, c in collections.Counter(r[key] for r in recs).items()
             if c > 1]
    if twice:
        raise SlurmOutputError(f'{source}: {what}(s) {", ".join(twice[:10])}'
                               f'{" ..." if len(twice) > 10 else ""} listed '
                               f'more than once (a repeated or spliced '
                               f'output?)')
    return [(rec[key], rec) for rec in recs]


def nodes(text, source='scontrol show node -o'):
    out = []
    for name, rec in _named(text, 'NodeName', 'node', source):
        arch = rec.get('Arch') or 'unknown'
        if not WORD.fullmatch(arch):
            raise SlurmOutputError(f'{source}: node {name}: Arch={arch!r}')
        gpus, kind = gpus_of(rec.get('Gres', ''), source, name)
        sockets = _int(rec, 'Sockets', source, name)
        cores = _int(rec, 'CoresPerSocket', source, name)
        threads = _int(rec, 'ThreadsPerCore', source, name)
        shape = Shape(arch=arch, sockets=sockets, cores_per_socket=cores,
                      threads_per_core=threads,
                      cpus=_int(rec, 'CPUTot', source, name),
                      memory_mb=_int(rec, 'RealMemory', source, name),
                      gpus=gpus, gpu_type=kind)
        parts = tuple(p for p in rec.get('Partitions', '').split(',') if p)
        feats = tuple(f for f in rec.get('AvailableFeatures', '').split(',')
                      if f and f != '(null)')
        out.append(Node(name, parts, shape, feats, rec.get('Gres', ''),
                        rec.get('State', '').lower(),
                        _printable(rec.get('Reason', ''))))
    return out


def partitions(text, source='scontrol show partition -o'):
    out = []
    for name, rec in _named(text, 'PartitionName', 'partition', source):
        if 'Nodes' not in rec or 'State' not in rec:
            raise SlurmOutputError(f'{source}: partition {name}: no Nodes= '
                                   f'or State= (truncated?)')
        for key, pattern, form in _BOUNDED:
            if key in rec and not pattern.fullmatch(rec[key]):
                raise SlurmOutputError(
                    f'{source}: partition {name}: {key}='
                    f'{_short(rec[key], 20)!r} is not a value Slurm prints '
                    f'({form}, numbers of at most 9 digits)')
        out.append(rec)
    return out


def _printable(text):
    # an admin's free text: printable, short, never a second line
    return re.sub(r'[^\x20-\x7e]', '?', text)[:80]


def states(text, source='sinfo'):
    """{node: (state, reason)} of ``sinfo -h -N -o '%N|%R|%T|%E'``."""
    out = {}
    for number, line in lines(text):
        if not line.strip():
            continue
        # the reason is last: it may hold '|'
        parts = line.split('|', 3)
        if len(parts) != 4 or not NAME.fullmatch(parts[0]):
            raise SlurmOutputError(f'{source}: line {number} is not '
                                   f'NODE|PARTITION|STATE|REASON: '
                                   f'{_short(line)!r}')
        out[parts[0]] = (parts[2], _printable(parts[3]))
    return out


def describe(cluster_name, partition_text, node_text, state_text=''):
    """The Cluster those outputs describe."""
    if not NAME.fullmatch(cluster_name or ''):
        raise SlurmOutputError(f'cluster name {cluster_name!r} is not a '
                               f'plain name')
    all_nodes = nodes(node_text)
    node_states = states(state_text) if state_text.strip() else {}
    notes, out = [], []
    for rec in partitions(partition_text):
        name = rec['PartitionName']
        members = tuple(n for n in all_nodes if name in n.partitions)
        total = rec.get('TotalNodes', '')
        if total and int(total) != len(members):
            # a node record lost (a cut output) must not shrink a partition
            raise SlurmOutputError(
                f'partition {name}: Slurm counts {total} node(s) '
                f'(TotalNodes), scontrol show node gave {len(members)} '
                f'naming it (a truncated or filtered output?)')
        if not members:
            notes.append(f'partition {name}: no node of scontrol show node '
                         f'names it; left out')
            continue
        counts = collections.Counter(n.shape for n in members)
        # most nodes; of a tie, the one met first (most_common is stable)
        shape = counts.most_common(1)[0][0]
        others = tuple((s, tuple(n.name for n in members if n.shape == s))
                       for s in counts if s != shape)
        # sinfo's state where it lists the node, else scontrol's
        now = {n.name: node_states.get(n.name, (n.state, n.reason))
               for n in members}
        down = tuple((name, f'{state}: {reason}' if reason else state)
                     for name, (state, reason) in now.items()
                     if not _usable(state))
        out.append(Partition(
            name=name, default=rec.get('Default') == 'YES',
            max_time=rec.get('MaxTime', 'UNLIMITED'),
            max_nodes=rec.get('MaxNodes', 'UNLIMITED'),
            state=rec['State'], nodes=members, shape=shape, others=others,
            unavailable=down))
    if not out:
        raise SlurmOutputError('no partition with nodes: nothing to describe')
    return Cluster(cluster_name, tuple(out), tuple(notes))


def _usable(state):
    """Whether a node in this Slurm state takes jobs: idle, mixed or
    allocated, without DRAIN, DOWN, FAIL, MAINT, NOT_RESPONDING or ``*``."""
    if state.endswith('*'):
        return False        # not responding
    words = re.split(r'[+]', state.lower().rstrip('~#!%$@^-'))
    return words[0].startswith(('idle', 'mix', 'alloc', 'comp')) and \
        not any(w.startswith(('drain', 'down', 'fail', 'maint', 'not_resp',
                              'reboot')) for w in words[1:])


def vendor(gpu_type):
    """nvidia, amd or habana from a GRES type ('' when it does not say)."""
    for name, pattern in _VENDORS:
        if gpu_type and pattern.match(gpu_type):
            return name
    return ''


def cluster_name(config_text, key='ClusterName'):
    """``key`` (ClusterName) of ``scontrol show config``, or ''."""
    found = re.search(rf'^{key}\s*=\s*(\S+)\s*$', config_text, re.M)
    return found.group(1) if found else ''


def run(command, env=None, stderr=False):
    """(text, replaced) of a COMMANDS' bounded, leniently decoded output."""
    cmd = COMMANDS[command]
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
    except FileNotFoundError:
        raise SlurmOutputError(f'{cmd[0]}: not on PATH (not a host with '
                               f'Slurm\'s commands)') from None
    with proc:
        try:
            out, err = _bounded(proc, cmd)
        finally:
            if proc.poll() is None:
                proc.kill()
    if proc.returncode != 0:
        raise SlurmOutputError(f'{" ".join(cmd)} failed ({proc.returncode}): '
                               f'{_short(_decode(err)[0])}')
    return _decode(out + err if stderr else out)


def _decode(data):
    # U+FFFD in the text: a replaced byte or, rarely, Slurm's own
    text = data.decode('utf-8', errors='replace')
    return text, text.count('\ufffd')


def _bounded(proc, cmd):
    """(stdout, stderr) bytes, each cut at MAX_OUTPUT + 1, within TIMEOUT s."""
    deadline = time.monotonic() + TIMEOUT
    got = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    with selectors.DefaultSelector() as sel:
        for stream in got:
            sel.register(stream, selectors.EVENT_READ)
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                raise SlurmOutputError(f'{" ".join(cmd)}: no answer in '
                                       f'{TIMEOUT} s (is slurmctld up?)')
            for key, _ in sel.select(left):
                chunk = os.read(key.fd, 1 << 20)
                if not chunk:
                    sel.unregister(key.fileobj)
                    continue
                buf = got[key.fileobj]
                if len(buf) < MAX_OUTPUT + 1:
                    buf += chunk[:MAX_OUTPUT + 1 - len(buf)]
                if len(got[proc.stdout]) > MAX_OUTPUT:
                    raise SlurmOutputError(
                        f'{" ".join(cmd)}: more than {MAX_OUTPUT} bytes of '
                        f'output, the most read (a cluster of 10,000 nodes '
                        f'prints about 1/25 of that)')
    try:
        proc.wait(max(deadline - time.monotonic(), 0.1))
    except subprocess.TimeoutExpired:
        raise SlurmOutputError(f'{" ".join(cmd)}: no answer in {TIMEOUT} s '
                               f'(is slurmctld up?)') from None
    return bytes(got[proc.stdout]), bytes(got[proc.stderr])


def mpi_default(config_text):
    """MpiDefault of ``scontrol show config``, lower case, or ''."""
    return _printable(cluster_name(config_text, 'MpiDefault').lower())[:30]


def mpi_types(list_text):
    """The plugin names ``srun --mpi=list`` printed (any Slurm version)."""
    names = []
    for _, line in lines(list_text):
        line = re.sub(r'^srun:\s*', '', line.strip())
        if ':' in line:
            line = line.rsplit(':', 1)[1]
        for word in re.split(r'[\s,]+', line.strip()):
            if re.fullmatch(r'[a-z][a-z0-9_]{0,30}', word) and \
                    word not in names and \
                    word not in ('mpi', 'plugin', 'types', 'are', 'specific',
                                 'versions', 'available'):
                names.append(word)
    return tuple(names)


def from_slurm(name=None, env=None):
    """The Cluster the Slurm commands on PATH describe."""
    warnings, texts = [], {}
    for key in ('config', 'partitions', 'nodes', 'states'):
        texts[key], replaced = run(key, env)
        if replaced:
            warnings.append(f'{" ".join(COMMANDS[key])}: {replaced} '
                            f'place(s) whose bytes were no UTF-8, read as ?')
    try:
        # before Slurm 21.08 the list went to stderr
        listed = mpi_types(run('mpi', env, stderr=True)[0])
    except SlurmOutputError as err:
        # an older srun prints the list and fails; its PMI is then unknown
        listed = ()
        warnings.append(f'MPI plugins not listed: {err}')
    cluster = describe(name or cluster_name(texts['config']),
                       texts['partitions'], texts['nodes'], texts['states'])
    return dataclasses.replace(cluster, warnings=tuple(warnings),
                               mpi_default=mpi_default(texts['config']),
                               mpi_types=listed)
