"""The records a check leaves in its report beside its figures
(``hpcval_<name>``), declared once: the check fills them (``builtins``
of the declared type), every reader gets them decoded (``decode``, as
hpcval.publish.results loads a report).  A report comes from anywhere:
a record of another shape decodes to None, never to something half
trusted.  ``hpcval_health`` is hpcval.health.probe.read's."""
import msgspec


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

TYPES = {'components': Components, 'provenance': Provenance,
         'node_load': NodeLoad}


def decode(name, value):
    """The record ``name`` of a report's ``value``, or None."""
    try:
        return msgspec.convert(value, TYPES[name])
    except msgspec.ValidationError:
        return None


def builtins(record):
    """What a check stores of a declared record (a ReFrame variable
    holds a dict); {} for none."""
    return msgspec.to_builtins(record) if record is not None else {}
