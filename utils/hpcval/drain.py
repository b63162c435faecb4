"""The verdict's Slurm lines (drain, resume, re-screen), decided in
``lines`` alone (docs/verdict.md, "Next steps": which nodes they name)."""
import functools
import re
import shlex

from hpcval import slurm_describe
from hpcval.slurm_describe import SlurmOutputError, cluster_name

SLURM = ('slurm', 'squeue')
#: A host name as Slurm's node names are written, one name, no hostlist.
HOSTNAME = re.compile(r'[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9])?')
#: Words ``scontrol update nodename=`` reads as more than one node.
KEYWORDS = ('ALL', 'DEFAULT')
#: What the verdict writes of a figure of a busy node (verdict._busy).
LOAD = 'the node was busy at job start'


def drainable_name(name):
    """Whether ``name`` is one node name scontrol reads as that node."""
    return isinstance(name, str) and bool(HOSTNAME.fullmatch(name)) and \
        name.upper() not in KEYWORDS


def note_case(ran_there, label, job_nodes):
    """Keep in ``ran_there`` whether every case charged to ``label``'s nodes
    ran on them by its job's Slurm node list ``job_nodes``."""
    for node in label.split('+') if label else ():
        ran_there[node] = ran_there.get(node, True) and node in job_nodes


@functools.lru_cache(maxsize=1)
def local_cluster():
    """(the ClusterName of the Slurm here, '') or ('', why none)."""
    try:
        found = cluster_name(slurm_describe.run('config')[0])
    except SlurmOutputError as err:
        return '', str(err)
    return (found, '') if found else ('', 'scontrol show config names no '
                                          'ClusterName')


def lines(verdict, alone, reason, cluster=None):
    """{'drain', 'resume', 'admitted' (may be re-screened), 'notes'} for
    ``alone`` ({node: its first failure}); ``cluster``: local_cluster()'s."""
    groups = {(g.system, g.partition): g for g in verdict.groups}
    drain, drained, notes, elsewhere = [], [], [], {}
    admitted, foreign, here = {}, {}, None
    for node, first in alone.items():
        g = groups.get((first.system, first.partition))
        if g is None:
            continue
        if getattr(g, 'scheduler', '') not in SLURM:
            elsewhere.setdefault((g.name, getattr(g, 'scheduler', '') or
                                  'not recorded'), []).append(node)
            continue
        why = _not_a_node(g, node)
        if why:
            notes.append(f'not drained: {node!r}: {why}')
            continue
        if here is None:        # asked once, only where a node may drain
            here, no_slurm = cluster or local_cluster()
        if not here or here.lower() != first.system.lower():
            foreign.setdefault((first.system, here, no_slurm), []).append(
                node)
            continue
        admitted[node] = first
        mine = [f for f in g.failures if f.node == node] or [first]
        blamed = [f for f in mine if not f.clear]
        if not blamed:
            notes.append(f'{node}: slowed by processes outside the screen, '
                         f'of the screen\'s own user: end '
                         f'{"; ".join(dict.fromkeys(f.clear for f in mine))}'
                         f' on {node}, then re-screen it (not drained: '
                         f'docs/screening.md)')
            continue
        drained.append(node)
        drain.append(f'scontrol update nodename={shlex.quote(node)} '
                     f'state=drain reason="{reason(blamed[0])}"')
    # a drained node takes no job: the re-screen would wait for it
    resume = [f'scontrol update nodename={",".join(drained)} '
              f'state=resume'] if drained else []
    for (system, here, no_slurm), nodes in sorted(foreign.items()):
        where = f'this host\'s Slurm cluster is {here}' if here else \
            f'no Slurm cluster answers here ({no_slurm})'
        notes.append(f'not drained: {", ".join(nodes)}: the report is of '
                     f'system {system}, {where}; judge it where scontrol '
                     f'show config names ClusterName={system}')
    if drained:
        notes.insert(0, f'the scontrol lines are for Slurm cluster '
                        f'{here} (ClusterName of scontrol show config '
                        f'here, the report\'s system)')
    for (name, word), nodes in sorted(elsewhere.items()):
        notes.append(f'{name} is not a Slurm partition (scheduler '
                     f'{word}): nothing to drain; '
                     f'fix what failed on {", ".join(sorted(nodes))} (the '
                     f'FAIL lines), then run the same checks again and '
                     f'judge their report with hpcval verdict')
    return {'drain': drain, 'resume': resume, 'admitted': admitted,
            'notes': notes}


def _not_a_node(g, node):
    """Why ``node`` is not admitted as one node of ``g``'s run, or ''."""
    if not drainable_name(node):
        return 'not one node as Slurm names one (its host name grammar, ' \
               'no ALL, DEFAULT, range, list, quote or bracket)'
    if not getattr(g, 'ran_there', {}).get(node):
        return 'not in the Slurm node list of every job charged to it'
    return ''


def scheduler_of(case):
    """``case``'s recorded scheduler, else ``slurm`` where sinfo recorded
    the partition's nodes, else ''."""
    sched = dict(getattr(case, 'attrs', ()) or ()).get('scheduler')
    if isinstance(sched, str) and sched:
        return sched
    nodes = case.extras.get('partition_nodes')
    if isinstance(nodes, dict) and isinstance(nodes.get('nodes'), str):
        return 'slurm'
    return ''
