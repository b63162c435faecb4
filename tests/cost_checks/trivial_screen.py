"""A screen test that does nothing but print one figure: what a node
screen costs beside its benchmark (submission, polling, accounting and
hpcval's own hooks), measured by tests/bench_screen.py cost."""
import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import performance_function, sanity_function

from hpcval.benchmarks.screening import ScreenRecord


@rfm.simple_test
class TrivialScreenCheck(rfm.RunOnlyRegressionTest, ScreenRecord):
    valid_systems = ['minicluster:cpu']
    valid_prog_environs = ['gnu']
    executable = 'echo'
    executable_opts = ['rate: 1']
    num_tasks = 1
    time_limit = '1m'

    @sanity_function
    def printed(self):
        return sn.assert_found(r'^rate: 1$', self.stdout)

    @performance_function('op/s')
    def rate(self):
        return sn.extractsingle(r'^rate: (\S+)', self.stdout, 1, float)
