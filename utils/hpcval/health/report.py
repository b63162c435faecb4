"""The health part of ``hpcval verdict``: a run report's health records
(``hpcval_health``) judged against the partitions' expected inventory.

One ``Judge`` per verdict: a node's failure is named once, however many of
its test cases recorded it.
"""
from hpcval.health import inventory, judge
from hpcval.health.common import clean


class Judge:
    def __init__(self, inventories=None):
        self._inventories = inventories
        self._named = set()

    def _expected(self, case):
        if self._inventories is None:
            from hpcval import paths, references
            try:
                self._inventories = inventory.load_layered(
                    paths.references_dirs())
            except (references.ReferenceFileError, OSError):
                # the references' own load names the file; judged without
                self._inventories = {}
        return inventory.for_partition(
            self._inventories.get(case.system, []), case.partition)

    @staticmethod
    def _record(case):
        rec = case.extras.get('health')
        return rec if isinstance(rec, dict) else {}

    def failures(self, case, node):
        """[(node, component, text)] of ``case``'s health record not named
        before; ``node`` is the verdict's name of the case's node."""
        rec = self._record(case)
        node = node or clean(rec.get('node', ''))
        try:
            found = judge.failures(rec, self._expected(case))
        except (AttributeError, KeyError, TypeError, ValueError) as err:
            # a report is data from anywhere: a record of the wrong shape
            # is not a healthy node
            found = [('', f'health record unreadable ({type(err).__name__})')]
        out = []
        for comp, text in found:
            key = (case.system, case.partition, node, comp, text)
            if key not in self._named:
                self._named.add(key)
                out.append((node, comp, text))
        return out

    def cause(self, case, component):
        """Why a figure of ``component`` of ``case`` may be low ('')."""
        try:
            return judge.cause(self._record(case), component)
        except (AttributeError, KeyError, TypeError, ValueError):
            return ''
