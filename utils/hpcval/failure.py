"""One thing that failed, on one line: what the verdict prints and what
a check whose sanity is the verdict's own judgement fails with."""
from dataclasses import dataclass

# the group of what the inputs held but could not be trusted
INPUT = ('(input)', '?')


def num(value):
    return f'{value:.6g}' if isinstance(value, (int, float)) else str(value)


@dataclass
class Failure:
    """One thing that failed, on one line."""
    system: str
    partition: str
    node: str             # node(s) of the job: 'n1', 'n1+n2'; '' unknown
    component: str        # what it names: 'GPU 1', 'link GPU 00 -> GPU 01'
    test: str
    metric: str           # '' for a sanity, build or abort failure
    value: object = None
    unit: str = ''
    bound: str = ''       # '>= 3166830 MB/s (ref 3518700, -10%)'
    reason: str = ''      # the failure's message, for non-figures
    session: str = ''
    shown: str = ''       # the value as printed: digits apart from the bound
    deviation: str = ''   # '+717% vs ref 0.706'
    cause: str = ''       # what the node's health record shows (hpcval.health)
    # the first run's value as printed, where this is its re-measure
    # (hpcval.retries): both are shown
    first: str = ''

    def where(self):
        if (self.system, self.partition) == INPUT:
            return 'input'
        node = f'node {self.node}' if self.node and '+' not in self.node \
            else f'nodes {self.node}' if self.node else 'node not recorded'
        return f'{node} {self.component}'.strip()

    def line(self):
        why = f': {self.cause}' if self.cause else ''
        if self.metric:
            dev = f'{self.deviation}, ' if self.deviation else ''
            value = f'{self.shown or num(self.value)} {self.unit}'
            if self.first:
                value = (f'{self.first} {self.unit} on first run, {value} '
                         f'on re-measure')
            return (f'{self.where()}: {self.test}: {self.metric} = '
                    f'{value}, {dev}bound {self.bound}{why}')
        test = f'{self.test}: ' if self.test else ''
        return f'{self.where()}: {test}{self.reason}'
