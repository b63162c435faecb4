"""hl_qual's host <-> device bandwidth criteria (Habana hl_qual manual).

The manual gives Gen3 x16 figures, each allowing 10% degradation;
other links scale by ``BandWidth = (width / 8.0) * speed`` (hpcval's
reading).  In parallel mode a path passes when its bottleneck's
bandwidth <= the sum of its devices' results."""
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
            raise ValueError(f'no criterion for {test} {direction}') from None
    expected = base * link_bandwidth(gen, width) / link_bandwidth('gen3', 16)
    return Criterion(test, direction, expected,
                     expected * (1 - DEGRADATION), gen, width)


def parallel_path_passes(bottleneck_gen, bottleneck_width, device_results):
    """Parallel mode: PASS if BandWidth(bottleneck) <= Sum(Test(D1) + ...)."""
    return link_bandwidth(bottleneck_gen, bottleneck_width) <= \
        sum(device_results)
