"""CPU memory bandwidth (copy, STREAM triad) and peak flop rate with likwid-bench."""
import reframe as rfm

from hpcval import features as ft
from hpcval.benchmarks.likwid_bench import LikwidBench


@rfm.simple_test
class LikwidBenchCheck(LikwidBench):
    valid_systems = [f'+{ft.CPU}']
    valid_prog_environs = [ft.CPU_ENVIRONS]
