"""The records a check leaves in its report beside its figures
(``hpcval_<name>``), declared once: the check fills them (``builtins``
of the declared type), every reader gets them decoded (``decode``, as
hpcval.publish.results loads a report).  A report comes from anywhere:
a record of another shape decodes to None, never to something half
trusted, and a health record of another shape is ``Unreadable``: the
node it speaks for is never judged healthy from it."""
from typing import Annotated

import msgspec

#: A GPU's or link's number as a JSON key
Key = Annotated[str, msgspec.Meta(pattern=r'^[0-9]{1,6}$')]
#: What a GPU tool printed for a field: a number, a flag, the tool's own
#: text; None where it printed N/A (hpcval.health.common.value)
Reading = int | float | bool | str | None


class _Record(msgspec.Struct, frozen=True, forbid_unknown_fields=True,
              omit_defaults=True):
    """A field a report may not carry is an unknown field."""


#: One GPU as its tool listed it (hpcval.health.nvidia, amd, habana):
#: its index, each field the tool printed (None: it did not), its active
#: slow-down reasons and their counters (microseconds)
Gpu = msgspec.defstruct('Gpu', [('index', int), *(
    (k, Reading, None) for k in (
    'model', 'uuid', 'serial', 'bus_id', 'vbios', 'driver',
    'memory_total_mib', 'memory_used_mib', 'pcie_gen', 'pcie_gen_max',
    'pcie_width', 'pcie_width_max', 'power_w', 'power_limit_w', 'temp_c',
    'temp_mem_c', 'util_pct', 'mem_util_pct', 'sm_mhz', 'sm_max_mhz',
    'ecc_corrected', 'ecc_uncorrected', 'retired_pending',
    'remapped_uncorrectable', 'remap_pending', 'remap_failure')),
    ('throttle', tuple[str, ...], ()),
    ('throttle_us', dict[str, int | float], {})],
    bases=(_Record,), module=__name__)


class App(_Record):
    """A process on a GPU: by uuid (nvidia-smi) or index (hl-smi)."""
    pid: int | None = None
    name: str = ''
    memory_mib: Reading = None
    uuid: str | None = None
    index: int | None = None


class NvLink(_Record):
    """``nvidia-smi nvlink -s``/``-e``: {gpu: {link: GB/s or None}},
    {gpu: {link: {counter: n}}}, or why the tool failed."""
    status: dict[Key, dict[Key, int | float | None]] | None = None
    errors: dict[Key, dict[Key, dict[str, int]]] | None = None
    status_error: str = ''
    errors_error: str = ''


class Snapshot(_Record):
    """One query of the GPU tool (before or after the benchmark): its
    exit code and first line, its GPUs, what it printed beside them."""
    rc: int | None
    message: str = ''
    gpus: tuple[Gpu, ...] = ()
    apps: tuple[App, ...] = ()
    #: (bus id, text) of nvidia-smi's warnings (the infoROM's)
    warnings: tuple[tuple[str, str], ...] = ()
    nvlink: NvLink = NvLink()
    error: str = ''
    apps_error: str = ''
    unparsed: str = ''


#: One GPU's ~1 Hz samples during the benchmark (hpcval.health.probe.
#: summarize): how many, how often each slow-down reason was active, peaks
Summary = msgspec.defstruct('Summary', [
    ('n', int), ('throttle', dict[str, int | float], {}),
    *((k, Reading, None) for k in (
        'temp_max', 'temp_mem_max', 'power_max', 'power_limit', 'util_mean',
        'memory_used_max', 'pcie_gen_max', 'pcie_width_min'))],
    bases=(_Record,), module=__name__)


class Event(_Record):
    """A GPU or PCIe fault of the kernel log (hpcval.health.kernel_log)."""
    kind: str
    line: str
    bus_id: str = ''
    code: int | str = ''
    fatal: bool = False
    what: str = ''
    caused_by: int | None = None


class Health(_Record):
    """``hpcval_health``: the node's GPUs before and after the benchmark,
    sampled during it, its kernel log and PCIe error counters
    (hpcval.health.probe.read; judged by hpcval.health.judge)."""
    node: str
    tool: str
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
    aer_grown: dict[str, dict[str, int]] = {}
    #: why the probe's files were not read
    unreadable: str = ''


class Unreadable(ValueError):
    """A health record of another shape than declared."""


class Process(msgspec.Struct, frozen=True):
    pid: int
    state: str
    cpu_percent: float
    command: str


class NodeLoad(msgspec.Struct, frozen=True):
    """The node's load at job start (hpcval.benchmarks.nodeuse): its
    CPUs, 1-minute load, the median runnable tasks besides the job's, the
    seconds it waited for builds, whether that is busy and why, and the
    busiest other processes."""
    cpus: int
    load1: float
    others_running: float
    waited_s: int = 0
    busy: bool = False
    why: str = ''
    processes: tuple[Process, ...] = ()


#: {metric: the component it measures where narrower than the job's
#: nodes ('GPU 1', 'link GPU 00 -> GPU 01')}
Components = dict[str, str]
#: {key: value} of what the node reported about itself (hpcval.provenance
#: KEYS, the container's runtime and image), and under ``nodes`` each
#: node's own {node: {key: value}} (hpcval.provenance.NODES)
Provenance = dict[str, str | dict[str, dict[str, str]]]

#: The GPUs (their runtime numbers) a check that measures GPU by GPU saw
#: in its output, recorded even where sanity failed; absent (None) for a
#: check that measures the node as a whole
MeasuredGpus = list[Annotated[int, msgspec.Meta(ge=0)]]

TYPES = {'components': Components, 'provenance': Provenance,
         'node_load': NodeLoad, 'health': Health,
         'measured_gpus': MeasuredGpus}


def decode(name, value):
    """The record ``name`` of a report's ``value``, or None; a health
    record: None where the check left none ({}), Unreadable where it is
    of another shape."""
    if name == 'health' and value == {}:
        return None
    try:
        return msgspec.convert(value, TYPES[name])
    except msgspec.ValidationError as err:
        if name == 'health':
            raise Unreadable(f'unreadable health record ({err})') from None
        return None


def builtins(record):
    """What a check stores of a declared record (a ReFrame variable
    holds a dict); {} for none."""
    return msgspec.to_builtins(record) if record is not None else {}
