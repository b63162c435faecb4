"""The health part of ``hpcval verdict``: one ``Judge`` per verdict names a
node's failure once, however many of its test cases recorded it."""
import collections
import types

from hpcval import references
from hpcval.health import judge
from hpcval.health.common import clean
from hpcval.judgement import Failure


class Judge:
    def __init__(self, refs=None):
        """``refs``: the ReferenceSet whose inventory judges (default ones)."""
        self._refs = refs
        self._named = set()
        self.failed = set()     # id() of the cases whose record failed
        # (system, partition): ({node: identity}, a case of the group)
        self._identities = {}

    def expected(self, case):
        """The inventory entry of ``case``'s partition (None: none)."""
        if self._refs is None:
            # an unreadable inventory is an error, never judged without
            self._refs = references.ReferenceSet.given()
        return self._refs.expected(case.system, case.partition)

    @staticmethod
    def _record(case, node=''):
        """(hpcval.records.Health or None, ``node`` or the record's)."""
        rec = case.extras.get('health')
        return rec, node or (clean(rec.node) if rec is not None else '')

    def failures(self, case, node):
        """[(node, component, text)] of ``case``'s record not named before."""
        rec, node = self._record(case, node)
        try:
            found = judge.failures(rec, self.expected(case))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            # a record the judge cannot read is not a healthy node
            found = [('', f'health record unreadable ({type(err).__name__})')]
        if found:
            self.failed.add(id(case))
        return self._unnamed(case, node, found)

    def notes(self, case, node):
        """[(node, component, text)] of ``case``'s notes not named before."""
        rec, node = self._record(case, node)
        return self._unnamed(case, node, judge.notes(rec), 'info')

    def _unnamed(self, case, node, items, *kind):
        """[(node, component, text)] of ``items`` new for the node."""
        out = []
        for comp, text in items:
            key = (case.system, case.partition, node, comp, *kind, text)
            if key not in self._named:
                self._named.add(key)
                out.append((node, comp, text))
        return out

    def gpus(self, case):
        """The GPUs ``case``'s health record lists (judge.gpu_identity)."""
        return judge.gpu_identity(self._record(case)[0])

    def changes(self, case, node):
        """[(node, component, text)] of unpinned changes from the baseline."""
        rec, node = self._record(case, node)
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
        texts = {}      # the first text of each (component, key)
        for comp, text, key in found:
            texts.setdefault((comp, key), text)
        new = self._unnamed(case, node, list(texts), 'base')
        return [(node, comp, texts[comp, key]) for node, comp, key in new
                if key not in pins]

    def between_nodes(self):
        """[(case, node, component, text)] of nodes unlike most of theirs."""
        out = []
        for (system, partition), (nodes, case) in \
                sorted(self._identities.items()):
            if len(nodes) < 2:
                continue
            counts = collections.defaultdict(collections.Counter)
            for ident in nodes.values():
                for (comp, key), val in ident.items():
                    counts[key][val] += 1
            for node in sorted(nodes):
                for (comp, key), val in sorted(nodes[node].items()):
                    common = max(sorted(counts[key]), key=counts[key].get)
                    if val == common or (system, partition, node, comp,
                                         'base', key) in self._named:
                        continue
                    word = judge.firmware_word(self._record(case)[0]) \
                        if key == 'vbios' else key
                    out.append((case, node, comp,
                                f'{word} {val}, other nodes {common}'))
        return out

    def cause(self, case, component, figure=None):
        """Why a figure of ``component`` of ``case`` may be low ('')."""
        try:
            return judge.cause(self._record(case)[0], component, figure)
        except (AttributeError, KeyError, TypeError, ValueError):
            return ''


def failure_lines(record, system, partition, node=''):
    """The verdict's FAIL lines of ``record`` on ``system:partition``."""
    case = types.SimpleNamespace(extras={'health': record}, system=system,
                                 partition=partition)
    return [Failure(system, partition, n, comp, '', '', reason=text).line()
            for n, comp, text in Judge().failures(case, node)]
