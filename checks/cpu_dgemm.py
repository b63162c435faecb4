"""DGEMM GFLOP/s of every core of a node (numpy, one thread per rank): the
node screen's CPU figure."""
import reframe as rfm

from hpcval import features as ft
from hpcval.benchmarks.cpu_dgemm import CpuDgemm


@rfm.simple_test
class CpuDgemmCheck(CpuDgemm):
    valid_systems = [f'+{ft.CPU}']
    valid_prog_environs = [ft.CPU_ENVIRONS]
