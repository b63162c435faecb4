"""MPI ping-pong latency and bandwidth with mpi4py.bench: on one node, and
across two nodes where the partition allows multi-node jobs."""
import reframe as rfm

from hpcval import features as ft
from hpcval.benchmarks.mpi4py_pingpong import Mpi4pyPingPong


@rfm.simple_test
class Mpi4pyPingPongCheck(Mpi4pyPingPong):
    # the base adds +multinode for placement=across_nodes
    valid_systems = [f'+{ft.MPI}']
    # host buffers (numpy): one run per partition, in a CPU environment
    valid_prog_environs = [ft.CPU_ENVIRONS]
