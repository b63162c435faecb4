"""The verdict's drain lines: ``scontrol update nodename=N state=drain``
only where pasting one can do nothing but drain that node.

A line is printed for a node only when all of these hold:

- its partition ran under Slurm (the report's ``scheduler`` of its test
  cases is ``slurm`` or ``squeue``, or Slurm's ``sinfo`` recorded the
  partition's nodes); elsewhere (``local``) the next step says what to do
  instead;
- the node is in the run's own node list (the jobs' nodes, or the
  partition's nodes recorded at run time);
- its name matches Slurm's host name grammar as a whole (letters,
  digits, ``-``, ``_`` and ``.``, starting and ending with a letter or
  digit, 64 characters at most) and is no Slurm keyword (``ALL``,
  ``DEFAULT``): no range, list or expression (``n[1-4]``, ``a,b``);
- at least one of its failures is charged to the node: a figure the
  verdict puts down to load ("the node was busy at job start") is not.

The name is quoted for the shell as well (shlex), and the reason keeps
no character a shell or scontrol reads (hpcval.screen.drain_reason).
"""
import re
import shlex

SLURM = ('slurm', 'squeue')
#: A host name as Slurm's node names are written, one name, no hostlist.
_HOSTNAME = re.compile(r'[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9])?')
#: Words ``scontrol update nodename=`` reads as more than one node.
KEYWORDS = ('ALL', 'DEFAULT')
#: What the verdict writes of a figure it puts down to load (verdict._busy).
LOAD = 'the node was busy at job start'


def drainable_name(name):
    """Whether ``name`` is one node name scontrol reads as that node."""
    return isinstance(name, str) and bool(_HOSTNAME.fullmatch(name)) and \
        name.upper() not in KEYWORDS


def charged(failure):
    """Whether ``failure`` (hpcval.verdict.Failure) is the node's, not
    its load's."""
    return LOAD not in (failure.cause or '')


def lines(verdict, alone, reason):
    """(drain lines, notes) for ``alone`` ({node: its first failure}, of
    failures of one node each); ``reason(failure)``: the drain reason."""
    groups = {(g.system, g.partition): g for g in verdict.groups}
    drain, notes, elsewhere = [], [], {}
    for node, first in alone.items():
        g = groups.get((first.system, first.partition))
        if g is None:
            continue
        mine = [f for f in g.failures if f.node == node]
        if getattr(g, 'scheduler', '') not in SLURM:
            elsewhere.setdefault(g.name, []).append(node)
            continue
        if not drainable_name(node) or node not in _run_nodes(g):
            notes.append(f'not a node of this run\'s node list as Slurm '
                         f'names one, no drain line: {node!r}')
            continue
        blamed = [f for f in mine if charged(f)]
        if not blamed:
            notes.append(f'{node}: every failure is put down to load ('
                         f'{LOAD}): no drain line; run it again on the '
                         f'idle node')
            continue
        drain.append(f'scontrol update nodename={shlex.quote(node)} '
                     f'state=drain reason="{reason(blamed[0])}"')
    for name, nodes in sorted(elsewhere.items()):
        notes.append(f'{name} is not a Slurm partition (scheduler '
                     f'{_scheduler_word(groups, name)}): nothing to drain; '
                     f'fix what failed on {", ".join(sorted(nodes))} (the '
                     f'FAIL lines), then run the same checks again and '
                     f'judge their report with hpcval verdict')
    return drain, notes


def _scheduler_word(groups, name):
    for g in groups.values():
        if g.name == name:
            return getattr(g, 'scheduler', '') or 'not recorded'
    return 'not recorded'


def _run_nodes(g):
    nodes = set(g.nodes)
    if g.coverage is not None:
        nodes.update(g.coverage.partition_nodes)
    return nodes


def scheduler_of(case):
    """The scheduler ``case`` ran under, as its report says: ReFrame's
    ``scheduler`` of the test case where the reader kept it, else
    ``slurm`` where sinfo recorded the partition's nodes, else ''."""
    sched = dict(getattr(case, 'attrs', ()) or ()).get('scheduler')
    if isinstance(sched, str) and sched:
        return sched
    nodes = case.extras.get('partition_nodes')
    if isinstance(nodes, dict) and isinstance(nodes.get('nodes'), str):
        return 'slurm'
    return ''
