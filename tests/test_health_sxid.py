"""NVSwitch SXids in the kernel log (hpcval.health.kernel_log, catalogue):
real lines of public threads (tests/fixtures/health/kernel/SOURCE.md).
A fatal SXid fails the node naming the switch, its PCI address and the
links; a non-fatal one is information; severity comes from the line's
own word and the SXid's number only."""
import pytest

from hpcval.health import catalogue, judge, kernel_log
from test_health import _report_with
from test_health_faults import H200X4, _h, _kernel, _record, _verdict
from test_health_faults import site     # noqa: F401 -- a fixture

FATAL = 'sxid20034_fatal_gpud.txt'
NONFATAL = 'sxid22013_nonfatal_nvtrust124.txt'


def _switch_lines(name):
    return '\n'.join(line for line in _kernel(name).splitlines()
                     if 'SXid' in line)


def test_fatal_sxids_fail_the_node_naming_switch_and_links():
    text = _switch_lines(FATAL)
    rec = _record()
    rec['kernel_events'] = kernel_log.events(text)
    lines = text.splitlines()
    assert judge.failures(_h(rec), H200X4) == [
        ('nvidia-nvswitch1 (PCI 0000:06:00.0)', 'NVSwitch SXid 20034 (LTSSM '
         f'Fault Up) on link 48 in the kernel log: {lines[0]}'),
        ('nvidia-nvswitch0 (PCI 0000:05:00.0)', 'NVSwitch SXid 20034 (LTSSM '
         f'Fault Up) on links 62, 63 in the kernel log (4 times): '
         f'{lines[1]}'),
        ('nvidia-nvswitch2 (PCI 0000:07:00.0)', 'NVSwitch SXid 20034 (LTSSM '
         f'Fault Up) on link 37 in the kernel log (3 times): {lines[2]}')]
    assert judge.notes(_h(rec)) == []


def test_the_whole_log_names_the_gpu_and_the_switches():
    """The Xid 79 of a GPU not on this node stays on its PCI address."""
    rec = _record()
    rec['kernel_events'] = kernel_log.events(_kernel(FATAL))
    comps = [c for c, _ in judge.failures(_h(rec), H200X4)]
    assert comps == ['PCI 0000:91:00', 'PCI 0000:91:00.0',
                     'nvidia-nvswitch1 (PCI 0000:06:00.0)',
                     'nvidia-nvswitch0 (PCI 0000:05:00.0)',
                     'nvidia-nvswitch2 (PCI 0000:07:00.0)']


def test_non_fatal_sxids_are_information():
    text = _kernel(NONFATAL)
    rec = _record()
    rec['kernel_events'] = kernel_log.events(text)
    assert len(rec['kernel_events']) == 5      # "using MSI", probing: none
    assert judge.failures(_h(rec), H200X4) == []
    first = text.splitlines()[4]
    assert judge.notes(_h(rec)) == [
        ('nvidia-nvswitch1 (PCI 0000:02:00.0)', 'NVSwitch SXid 22013 '
         '(Minion Link DLREQ interrupt) on links 0, 1 in the kernel log '
         f'(5 times): {first}')]


@pytest.mark.parametrize('said, code, fails', [
    ('Fatal', 22013, True),         # the line's word: fatal
    ('Non-fatal', 20034, True),     # D.5 lists 20034 fatal
    ('Non-fatal', 11012, False),    # single bit ECC, corrected
    ('Non-fatal', 99999, False),    # a number not in the guide
    ('Fatal', 99999, True),
    ('', 12020, True),              # D.6, always fatal
    ('', 22013, False)])
def test_severity_is_the_word_and_the_number(said, code, fails):
    assert (catalogue.sxid_severity(code, said) == catalogue.FAIL) is fails


@pytest.mark.parametrize('mutate', [
    # a user's process named like the driver: the kernel's segfault line
    lambda l: 'nvidia-nvswitch0[4242]: segfault at 0 ip 0 sp 0 error 4 ' +
    l.split('] ', 1)[1],
    # text after another producer's prefix
    lambda l: l.replace('] nvidia-nvswitch0: ', '] python3: nvidia-'
                        'nvswitch0: '),
    # no PCI address the driver prints
    lambda l: l.replace('PCI:0000:05:00.0', 'PCI:05:00')])
def test_only_the_drivers_own_line_counts(mutate):
    line = _switch_lines(FATAL).splitlines()[1]
    assert kernel_log.events(mutate(line)) == []


def test_the_verdict_fails_the_node_naming_the_switch(tmp_path, site,
                                                      capsys):
    rec = _record()
    rec['kernel_events'] = kernel_log.events(_switch_lines(FATAL))
    status, out = _verdict(capsys, _report_with(tmp_path, rec))
    assert status != 0, out
    assert ('FAIL node vm nvidia-nvswitch0 (PCI 0000:05:00.0): NVSwitch '
            'SXid 20034 (LTSSM Fault Up) on links 62, 63 in the kernel log '
            '(4 times): ') in out, out
