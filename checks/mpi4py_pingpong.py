"""MPI ping-pong latency and bandwidth with mpi4py.bench: on one node, and
across two nodes where the partition allows multi-node jobs."""
import reframe as rfm
from reframe.core.builtins import run_after

from hpcval import features as ft
from hpcval.benchmarks.mpi4py_pingpong import Mpi4pyPingPong


@rfm.simple_test
class Mpi4pyPingPongCheck(Mpi4pyPingPong):
    # host buffers (numpy): one run per partition, in a CPU environment
    valid_prog_environs = [ft.CPU_ENVIRONS]

    @run_after('init')
    def select_partitions(self):
        self.valid_systems = [f'+{ft.MPI}' if self.placement == 'on_node'
                              else f'+{ft.MPI} +{ft.MULTINODE}']
