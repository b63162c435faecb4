"""The records a check leaves in its report beside its figures, declared once:
one of another shape decodes to None, a health record to ``Unreadable``."""
import re
import reprlib
from typing import Annotated, Literal

import msgspec


#: A GPU's or link's number as a JSON key
Key = Annotated[str, msgspec.Meta(pattern=r'^[0-9]{1,6}$')]
# The health record's values as its probe writes them, and nothing else: a
# value outside them (NaN and the infinities too) is no reading of a GPU,
# and the record is Unreadable (docs/health.md).
_BIG = 10 ** 15
#: errors, rows, samples: a whole number >= 0
Count = Annotated[int, msgspec.Meta(ge=0)]
#: a measurement (W, C, MHz, MiB, us): a finite number
Number = Annotated[int, msgspec.Meta(ge=-_BIG, le=_BIG)] | \
    Annotated[float, msgspec.Meta(ge=-float(_BIG), le=float(_BIG))]
#: memory, power, clocks, counters: a finite number >= 0
Amount = Annotated[int, msgspec.Meta(ge=0, le=_BIG)] | \
    Annotated[float, msgspec.Meta(ge=0.0, le=float(_BIG))]
#: a utilization, %
Percent = Annotated[int, msgspec.Meta(ge=0, le=100)] | \
    Annotated[float, msgspec.Meta(ge=0.0, le=100.0)]
#: a share of the samples
Share = Annotated[int, msgspec.Meta(ge=0, le=1)] | \
    Annotated[float, msgspec.Meta(ge=0.0, le=1.0)]
#: a PCIe generation
Gen = Annotated[int, msgspec.Meta(ge=1, le=7)]
#: a PCIe link width: the widths PCIe defines
Width = Literal[1, 2, 4, 8, 16, 32]
#: what a tool printed as an identity or version (hpcval.health.common.clean)
Text = Annotated[str, msgspec.Meta(max_length=200)]
#: a tool's field name (nvidia-smi's ``remapped_rows.pending``)
Field = Annotated[str, msgspec.Meta(pattern=r'^[a-z][a-z0-9_.]{0,79}$')]
#: a state a tool printed instead of a value (``[GPU requires reset]``)
State = Annotated[str, msgspec.Meta(pattern=r'^\[[ -~]{1,60}\]$')]
#: a slow-down reason or counter name
Reason = Annotated[str, msgspec.Meta(pattern=r'^[a-z][a-z0-9_]{0,63}$')]
#: the kinds of PCIe AER counters (sysfs ``aer_dev_*``'s TOTAL_ERR_*)
AerKind = Literal['cor', 'fatal', 'nonfatal']
#: the kernel log events hpcval.health.kernel_log reads
EventKind = Literal['xid', 'sxid', 'nvrm', 'amdgpu', 'habanalabs', 'aer']


class _Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True,
              omit_defaults=True):
    """A field a report may not carry is an unknown field."""


#: One GPU as its tool listed it (None: not printed), its slow-down reasons
#: and counters (us), and states printed instead of values (a fault)
_GPU_FIELDS = {
    **dict.fromkeys(('model', 'uuid', 'serial', 'bus_id', 'vbios',
                     'driver'), Text),
    **dict.fromkeys(('memory_total_mib', 'memory_used_mib', 'power_w',
                     'power_limit_w', 'sm_mhz', 'sm_max_mhz'), Amount),
    **dict.fromkeys(('pcie_gen', 'pcie_gen_max'), Gen),
    **dict.fromkeys(('pcie_width', 'pcie_width_max'), Width),
    **dict.fromkeys(('temp_c', 'temp_mem_c'), Number),
    **dict.fromkeys(('util_pct', 'mem_util_pct'), Percent),
    **dict.fromkeys(('ecc_corrected', 'ecc_uncorrected',
                     'remapped_uncorrectable'), Count),
    **dict.fromkeys(('retired_pending', 'remap_pending', 'remap_failure'),
                    bool),
}
Gpu = msgspec.defstruct('Gpu', [
    ('index', Annotated[int, msgspec.Meta(ge=0, le=999999)]),
    *((k, typ | None, None) for k, typ in _GPU_FIELDS.items()),
    ('throttle', tuple[Reason, ...], ()),
    ('throttle_us', dict[Reason, Amount], {}),
    ('states', dict[Field, State], {})],
    bases=(_Record,), module=__name__)


class App(_Record):
    """A process on a GPU: by uuid (nvidia-smi) or index (hl-smi)."""
    pid: Count | None = None
    name: str = ''
    memory_mib: Amount | None = None
    uuid: Text | None = None
    index: Count | None = None


class NvLink(_Record):
    """``nvidia-smi nvlink -s``/``-e``: links' GB/s, counters, or why not."""
    status: dict[Key, dict[Key, Amount | None]] | None = None
    errors: dict[Key, dict[Key, dict[Reason, Count]]] | None = None
    status_error: str = ''
    errors_error: str = ''


class Snapshot(_Record):
    """One query of the GPU tool: exit code, first line, GPUs, what else."""
    rc: Annotated[int, msgspec.Meta(ge=0, le=255)] | None
    message: str = ''
    gpus: tuple[Gpu, ...] = ()
    apps: tuple[App, ...] = ()
    #: (bus id, text) of nvidia-smi's warnings (the infoROM's)
    warnings: tuple[tuple[str, str], ...] = ()
    nvlink: NvLink = NvLink()
    #: {bus id: PCIe replays since reset} (``nvidia-smi -q``)
    pcie_replays: dict[Text, Count] = {}
    pcie_error: str = ''
    error: str = ''
    apps_error: str = ''


#: One GPU's ~1 Hz samples during the benchmark (hpcval.health.probe.
#: summarize): how many, how often each slow-down reason was active, peaks
Summary = msgspec.defstruct('Summary', [
    ('n', Count), ('throttle', dict[Reason, Share], {}),
    # seconds after the GPU's first sample each was first and last seen
    ('throttle_span', dict[Reason, tuple[Amount, Amount]], {}),
    *((k, Number | None, None) for k in ('temp_max', 'temp_mem_max')),
    *((k, Amount | None, None) for k in (
        'power_max', 'power_limit', 'memory_used_max')),
    ('util_mean', Percent | None, None), ('pcie_gen_max', Gen | None, None),
    ('pcie_width_min', Width | None, None),
    # samples at busy use, their fastest graphics clock, the clock's top
    ('busy_n', Count, 0), ('busy_mhz', Amount | None, None),
    ('max_mhz', Amount | None, None)],
    bases=(_Record,), module=__name__)


class Event(_Record):
    """A kernel log fault; its line counts, never the fields beside it."""
    kind: EventKind
    line: str
    bus_id: str = ''
    code: int | str = ''
    fatal: bool = False
    what: str = ''
    caused_by: int | None = None


class Health(_Record):
    """``hpcval_health``: GPUs, samples, kernel log, PCIe error counters."""
    node: Text
    tool: Text
    #: a query the probe left no file of: a tool that failed (rc None)
    before: Snapshot = Snapshot(None)
    after: Snapshot = Snapshot(None)
    start: int | None = None
    end: int | None = None
    kernel: str = ''
    timeout: int | None = None
    #: {gpu index: its samples}
    samples: dict[Key, Summary] = {}
    samples_error: str = ''
    #: why the kernel log was not read
    kernel_log: str = ''
    kernel_events: tuple[Event, ...] = ()
    #: {PCI device: {severity: errors more after than before}}
    aer_grown: dict[Text, dict[AerKind, Count]] = {}
    #: why the probe's files were not read
    unreadable: str = ''


class Unreadable(ValueError):
    """A health record of another shape than declared."""


class Process(msgspec.Struct, frozen=True):
    pid: int
    state: str
    cpu_percent: float
    command: str
    uid: int | None = None      # None: not recorded
    screen: bool = False        # the screen's own ReFrame or its child


class NodeLoad(msgspec.Struct, frozen=True):
    """The node's load at job start (hpcval.benchmarks.nodeuse)."""
    cpus: int
    load1: float
    others_running: float
    waited_s: int = 0
    busy: bool = False
    why: str = ''
    processes: tuple[Process, ...] = ()
    uid: int | None = None


#: a listed process took CPU at job start where it was running when ps
#: looked, or has used this share of one CPU (%) since it started
TAKES_CPU = 10.0


def takes_cpu(p):
    return p.state[:1] == 'R' or p.cpu_percent >= TAKES_CPU


def listed(procs):
    """The processes by name and uid, busiest first: pids, uid, CPU share."""
    groups = {}
    for p in procs:
        groups.setdefault((p.command, p.uid), []).append(p)
    ranked = sorted(groups.items(),
                    key=lambda g: -sum(p.cpu_percent for p in g[1]))
    return ', '.join(
        f'{name} (pid{"s" if len(ps) > 1 else ""} '
        f'{" ".join(str(p.pid) for p in ps)}, uid '
        f'{"?" if uid is None else uid}, '
        f'{round(sum(p.cpu_percent for p in ps), 1):g}% CPU)'
        for (name, uid), ps in ranked[:3])


def outside(load):
    """The processes that took CPU at job start, not the job's or screen's."""
    return [p for p in load.processes if not p.screen and takes_cpu(p)]


def clears(load):
    """Whether a slow node is re-screened, not drained: busy by its user's."""
    found = load is not None and load.busy and outside(load)
    return bool(found) and load.uid is not None and \
        all(p.uid == load.uid for p in found)


#: {metric: the component it measures ('GPU 1', 'link GPU 00 -> GPU 01')}
Components = dict[str, str]
#: {key: value} of hpcval.provenance, each node's own under NODES
Provenance = dict[str, str | dict[str, dict[str, str]]]

#: The GPUs a per-GPU check saw in its output, kept where sanity failed
MeasuredGpus = list[Annotated[int, msgspec.Meta(ge=0)]]

TYPES = {'components': Components, 'provenance': Provenance,
         'node_load': NodeLoad, 'health': Health,
         'measured_gpus': MeasuredGpus}


def decode(name, value):
    """The record ``name`` of a report's ``value``, None or Unreadable."""
    if name == 'health' and value == {}:
        return None
    try:
        record = msgspec.convert(value, TYPES[name])
    except msgspec.ValidationError as err:
        if name == 'health':
            raise Unreadable(_why(str(err), value)) from None
        return None
    if name == 'health':
        _check_health(record)
    return record


_SHOWN = reprlib.Repr()
_SHOWN.maxstring, _SHOWN.maxother, _SHOWN.maxlevel = 80, 80, 1
_AT = re.compile(r' - at `\$((?:\.[A-Za-z_]\w*|\[\d+\]|\[\.\.\.\])*)`$')
_STEP = re.compile(r'\.([A-Za-z_]\w*)|\[(\d+)\]|\[\.\.\.\]')


def _why(message, value):
    """'unreadable health record (msgspec's message; value V)'."""
    m = _AT.search(message)
    at = value if m else {}         # a mapping or list: no value shown
    for key, index in _STEP.findall(m.group(1) if m else ''):
        if key and isinstance(at, dict) and key in at:
            at = at[key]
        elif index and isinstance(at, list) and int(index) < len(at):
            at = at[int(index)]
        else:
            at = {}
            break
    shown = '' if isinstance(at, (dict, list)) else \
        f'; value {_SHOWN.repr(at)}'
    return f'unreadable health record ({message}{shown})'


def unreadable(why, path, val):
    return Unreadable(f'unreadable health record ({why} - at `{path}`; '
                      f'value {_SHOWN.repr(val)})')


def _check_health(record):
    """What types cannot say: each GPU listed once per query."""
    for phase in ('before', 'after'):
        seen = {}
        for i, gpu in enumerate(getattr(record, phase).gpus):
            for key in ('index', 'uuid', 'bus_id'):
                val = getattr(gpu, key)
                if val is None:
                    continue
                ident = (key, val.lower() if isinstance(val, str) else val)
                if ident in seen:
                    raise unreadable(
                        f'GPU listed twice (as {phase}.gpus[{seen[ident]}])',
                        f'$.{phase}.gpus[{i}].{key}', val)
                seen[ident] = i


def builtins(record):
    """What a check stores of a declared record; {} for none."""
    return msgspec.to_builtins(record) if record is not None else {}


#: a provenance record's {node: {key: value}} of every node probed
NODES = 'nodes'


def of_node(record, node):
    """{key: value} of ``node`` in a provenance record, else the job's."""
    nodes = record.get(NODES)
    if isinstance(nodes, dict) and isinstance(nodes.get(node), dict):
        return {k: v for k, v in nodes[node].items() if isinstance(v, str)}
    return {k: v for k, v in record.items() if isinstance(v, str)}
