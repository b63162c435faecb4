"""Habana hl_qual on Gaudi nodes: device memory bandwidth in parallel
mode, host link (PCI) bandwidth in serial mode with the memory bandwidth
plugin and with the PCI plugin, as the manual's examples run them."""
import reframe as rfm

from hpcval import features as ft
from hpcval.benchmarks.hl_qual import HlQual


class _GaudiNode(HlQual):
    valid_systems = [f'+{ft.GAUDI}']
    # the environment of Habana's software (SynapseAI), once per partition
    valid_prog_environs = [f'+{ft.SYNAPSEAI}']


@rfm.simple_test
class HlQualMemoryCheck(_GaudiNode):
    """./hl_qual -gaudi2 -c all -rmod parallel -mb -memOnly"""
    plugin = 'mb'
    mode = 'parallel'
    subsets = ['memOnly']
    bidirectional = False


@rfm.simple_test
class HlQualHostLinkCheck(_GaudiNode):
    """./hl_qual -gaudi2 -c all -rmod serial -mb -b -pciOnly -sramOnly"""
    plugin = 'mb'
    mode = 'serial'
    subsets = ['pciOnly', 'sramOnly']


@rfm.simple_test
class HlQualPciCheck(_GaudiNode):
    """./hl_qual -gaudi2 -c all -rmod serial -p -b -t 20"""
    plugin = 'p'
    mode = 'serial'
    duration = 20
