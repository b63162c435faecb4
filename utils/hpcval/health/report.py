"""The health part of ``hpcval verdict``: a run report's health records
(``hpcval_health``) judged against the partitions' expected inventory.

One ``Judge`` per verdict: a node's failure is named once, however many of
its test cases recorded it.  What changed (driver, VBIOS, kernel, GPU
serial) is information: against the partition's baseline
(``changes``) and between the nodes of one verdict (``between_nodes``).
"""
import types

from hpcval import references
from hpcval.health import judge
from hpcval.health.common import clean
from hpcval.judgement import Failure


class Judge:
    def __init__(self, refs=None):
        """``refs``: the hpcval.references.ReferenceSet whose inventory
        judges (default: the installed and the site's)."""
        self._refs = refs
        self._named = set()
        self.failed = set()     # id() of the cases whose record failed
        # (system, partition): ({node: identity}, a case of the group)
        self._identities = {}

    def expected(self, case):
        """The inventory entry that judges ``case``'s partition (None:
        none); ValueError or OSError where the references do not load."""
        if self._refs is None:
            # an unreadable inventory is an error, never judged without
            self._refs = references.ReferenceSet.given()
        return self._refs.expected(case.system, case.partition)

    @staticmethod
    def _record(case):
        # hpcval.records.Health, decoded as the report loaded
        return case.extras.get('health')

    @staticmethod
    def _node(rec, node):
        return node or (clean(rec.node) if rec is not None else '')

    def failures(self, case, node):
        """[(node, component, text)] of ``case``'s health record not named
        before; ``node`` is the verdict's name of the case's node."""
        rec = self._record(case)
        node = self._node(rec, node)
        try:
            found = judge.failures(rec, self.expected(case))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            # a record the judge cannot read is not a healthy node
            found = [('', f'health record unreadable ({type(err).__name__})')]
        if found:
            self.failed.add(id(case))
        return self._unnamed(case, node, found)

    def notes(self, case, node):
        """[(node, component, text)] of ``case``'s information items
        (hpcval.health.judge.notes) not named before for the node."""
        rec = self._record(case)
        node = self._node(rec, node)
        return self._unnamed(case, node, judge.notes(rec), 'info')

    def _unnamed(self, case, node, items, *kind):
        """[(node, component, text)] of ``items`` not named before for the
        node (``kind`` tells notes from failures)."""
        out = []
        for comp, text in items:
            key = (case.system, case.partition, node, comp, *kind, text)
            if key not in self._named:
                self._named.add(key)
                out.append((node, comp, text))
        return out

    def gpus(self, case):
        """[{index, model, uuid, serial, vbios, bus_id}] of the GPUs
        ``case``'s health record lists (hpcval.health.judge.gpu_identity)."""
        return judge.gpu_identity(self._record(case))

    def changes(self, case, node):
        """[(node, component, text)] of ``case``'s record that differs from
        its partition's baseline and is not pinned (pinned: a failure),
        not named before."""
        rec = self._record(case)
        node = self._node(rec, node)
        try:
            expected = self.expected(case)
            found = judge.changes(rec, expected)
            ident = judge.identity(rec)
        except (AttributeError, KeyError, TypeError, ValueError):
            return []       # failures() names the unreadable record
        if ident and node:
            nodes, _ = self._identities.setdefault(
                (case.system, case.partition), ({}, case))
            nodes.setdefault(node, {}).update(ident)
        pins = (expected or {}).get('pin') or ()
        out = []
        for comp, text, key in found:
            item = (case.system, case.partition, node, comp, 'base', key)
            if item not in self._named:
                self._named.add(item)
                if key not in pins:
                    out.append((node, comp, text))
        return out

    def between_nodes(self):
        """[(case, node, component, text)]: per group of two or more
        nodes, each node whose kernel, driver or GPU VBIOS is not the one
        most nodes have (``case``: one of the group's, to place the line);
        a node already shown CHANGED against its baseline for the same
        thing is not shown again."""
        out = []
        for (system, partition), (nodes, case) in \
                sorted(self._identities.items()):
            if len(nodes) < 2:
                continue
            counts = {}
            for ident in nodes.values():
                for (comp, key), val in ident.items():
                    counts.setdefault(key, {}).setdefault(val, 0)
                    counts[key][val] += 1
            for node in sorted(nodes):
                for (comp, key), val in sorted(nodes[node].items()):
                    common = max(sorted(counts[key]),
                                 key=lambda v, k=key: counts[k][v])
                    if val == common or (system, partition, node, comp,
                                         'base', key) in self._named:
                        continue
                    word = judge.firmware_word(self._record(case)) \
                        if key == 'vbios' else key
                    out.append((case, node, comp,
                                f'{word} {val}, other nodes {common}'))
        return out

    def cause(self, case, component, figure=None):
        """Why a figure of ``component`` of ``case`` (``figure``: its
        metric, value and unit) may be low ('')."""
        try:
            return judge.cause(self._record(case), component, figure)
        except (AttributeError, KeyError, TypeError, ValueError):
            return ''


def failure_lines(record, system, partition, node=''):
    """The verdict's FAIL lines of ``record`` (hpcval.records.Health) on
    ``system:partition``: [] for a healthy node; ``node``: the verdict's
    name of it (its job's nodes), else the record's."""
    case = types.SimpleNamespace(extras={'health': record}, system=system,
                                 partition=partition)
    return [Failure(system, partition, n, comp, '', '', reason=text).line()
            for n, comp, text in Judge().failures(case, node)]
