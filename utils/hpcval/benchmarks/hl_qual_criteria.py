"""hl_qual pass criteria for host <-> device bandwidth (Habana manual,
"Bandwidth Test Plugins Design, Switches and Parameters", Habana hl_qual manual).

The manual gives the figures for a PCIe Gen3 x16 path, each with a 10%
allowed degradation:

- memory bandwidth plugin (``-mb``): host -> device 11.9, device -> host
  12.9, bidirectional 19.5 GB/s;
- SynapseAI PCI test (``-p``): 11.6, 12.9 and 19.9 GB/s;
- PCI load in serial mode: 11.04 GB/s.

Other generations and lane counts scale with the manual's link formula
``BandWidth = (width / 8.0) * speed`` (speed in GT/s): hpcval's reading,
since the manual says the plugin changes its criteria when ``-gen`` is
given but prints figures only for Gen3 x16.  In parallel mode a path
passes when ``BandWidth(bottleneck) <= Sum(Test(D1) + Test(D2) + ...)``
over the devices behind that bottleneck, as the manual writes it.
"""
from dataclasses import dataclass

from hpcval.units import link_bandwidth

#: "the PCI test has a 10% allowable degradation"
DEGRADATION = 0.10

HOST_TO_DEVICE, DEVICE_TO_HOST, BIDIRECTIONAL = ('host_to_device',
                                                 'device_to_host',
                                                 'bidirectional')

#: GB/s on PCIe Gen3 x16, before the allowed degradation.
GEN3_X16 = {
    'memory_plugin': {HOST_TO_DEVICE: 11.9, DEVICE_TO_HOST: 12.9,
                      BIDIRECTIONAL: 19.5},
    'pci_plugin': {HOST_TO_DEVICE: 11.6, DEVICE_TO_HOST: 12.9,
                   BIDIRECTIONAL: 19.9},
}

#: "The load PCI plugin pass/fail criteria for this mode is 11.04GB/s"
PCI_LOAD_GEN3_X16 = 11.04


@dataclass(frozen=True)
class Criterion:
    test: str          # memory_plugin, pci_plugin or pci_load
    direction: str
    expected: float    # GB/s on this link
    floor: float       # GB/s: expected less the allowed degradation
    gen: str
    width: int

    def describe(self):
        return (f'{self.expected:.4g} GB/s {self.gen.capitalize()} '
                f'x{self.width} criterion less {DEGRADATION:.0%} = '
                f'{self.floor:.4g} GB/s')


def criterion(test, direction, gen='gen3', width=16):
    """The expected bandwidth and its floor for ``test`` on a link."""
    if test == 'pci_load':
        base = PCI_LOAD_GEN3_X16
    else:
        try:
            base = GEN3_X16[test][direction]
        except KeyError:
            raise ValueError(f'no criterion for {test} {direction}') \
                from None
    expected = base * link_bandwidth(gen, width) / link_bandwidth('gen3', 16)
    return Criterion(test, direction, expected,
                     expected * (1 - DEGRADATION), gen, width)


def parallel_path_passes(bottleneck_gen, bottleneck_width, device_results):
    """Parallel mode, one path: the bottleneck's link bandwidth against the
    sum of the results (GB/s) of the devices behind it, as the manual's
    rule reads: PASS if BandWidth(B) <= Sum(Test(D1) + ...)."""
    return link_bandwidth(bottleneck_gen, bottleneck_width) <= \
        sum(device_results)
