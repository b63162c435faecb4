"""hl_qual: the manual's pass criteria, its switch rules, and the report
parser's refusal of anything it does not recognise.

The criteria and switch rules are checked against the manual's own
numbers and example command lines, read from Habana hl_qual manual.  No real report is
public: the report lines below are built from the manual's sub-test names
only, to show what the parser accepts and, above all, what it refuses.
Job scripts are written with ``--dry-run`` on every system whose partitions
carry the ``gaudi`` feature and read as a sysadmin would.
"""
import pathlib
import re

import pytest

from hpcval.benchmarks import hl_qual as crit
from hpcval.benchmarks.hl_qual import (SwitchError, expected_subtests,
                                       hl_qual_args)
from hpcval.parsers.common import ParseError
from hpcval.parsers.hl_qual import parse_hl_qual_report
import systems
from rfmrun import by_name, reframe

GAUDI_SYSTEMS = [mod.system['name'] for mod in systems.ALL
                 if any('gaudi' in p.get('features', [])
                        for p in mod.system['partitions'])]
SEED = pathlib.Path(__file__).resolve().parent / 'fixtures' / 'documents' / \
    'habana-hl-qual-bandwidth-plugins.txt'


def _manual_commands(after, before):
    text = SEED.read_text()
    section = text[text.index(after):text.index(before)]
    return [line.strip() for line in section.splitlines()
            if line.strip().startswith('./hl_qual')]


def _kwargs(command):
    """hl_qual_args keyword arguments for a command line of the manual."""
    tokens = command.split()[1:]
    kw = {'subsets': []}
    it = iter(tokens)
    for tok in it:
        if tok in ('-gaudi', '-gaudi2'):
            kw['generation'] = tok[1:]
        elif tok in ('-mb', '-p'):
            kw['plugin'] = tok[1:]
        elif tok == '-b':
            kw['bidirectional'] = True
        elif tok in ('-memOnly', '-pciOnly', '-sramOnly'):
            kw['subsets'].append(tok[1:])
        elif tok == '-rmod':
            kw['mode'] = next(it)
        elif tok == '-c':
            kw['cards'] = next(it)
        elif tok == '-t':
            kw['duration'] = int(next(it))
        elif tok == '-size':
            kw['size'] = int(next(it))
        elif tok == '-gen':
            kw['pci_gen'] = next(it)
        elif tok == '-pl_cfg':
            next(it)            # a config file: not an hpcval variable
        elif tok not in ('-dis_mon', '-n'):
            raise AssertionError(f'unknown switch {tok} in {command}')
    kw.setdefault('generation', 'gaudi2')   # the manual omits it at times
    return kw


VALID = _manual_commands('Valid examples:', 'None valid examples:')
INVALID = _manual_commands('None valid examples:',
                           'PCI Bandwidth Test Design')
PCI_EXAMPLES = _manual_commands('-size <buffer size in bytes>',
                                'If this switch is omitted, it is assumed')


# -- criteria ---------------------------------------------------------------

def test_link_bandwidth_formula():
    # BandWidth = (width / 8.0) * speed
    assert crit.link_bandwidth('gen3', 16) == 16.0
    assert crit.link_bandwidth('gen4', 16) == 32.0
    assert crit.link_bandwidth('gen3', 8) == 8.0
    assert crit.link_bandwidth('gen5', 4) == 16.0
    with pytest.raises(ValueError, match='unknown PCIe generation'):
        crit.link_bandwidth('gen7', 16)
    with pytest.raises(ValueError, match='x3 does not exist'):
        crit.link_bandwidth('gen3', 3)


@pytest.mark.parametrize('test, direction, expected', [
    ('memory_plugin', crit.HOST_TO_DEVICE, 11.9),
    ('memory_plugin', crit.DEVICE_TO_HOST, 12.9),
    ('memory_plugin', crit.BIDIRECTIONAL, 19.5),
    ('pci_plugin', crit.HOST_TO_DEVICE, 11.6),
    ('pci_plugin', crit.DEVICE_TO_HOST, 12.9),
    ('pci_plugin', crit.BIDIRECTIONAL, 19.9),
    ('pci_load', '', 11.04),
])
def test_gen3_x16_criteria_are_the_manuals(test, direction, expected):
    c = crit.criterion(test, direction)
    assert c.expected == pytest.approx(expected)
    # "the PCI test has a 10% allowable degradation"
    assert c.floor == pytest.approx(expected * 0.9)


def test_floors_in_gb_s():
    assert crit.criterion('memory_plugin', crit.HOST_TO_DEVICE).floor == \
        pytest.approx(10.71)
    assert crit.criterion('pci_plugin', crit.BIDIRECTIONAL).floor == \
        pytest.approx(17.91)
    assert crit.criterion('pci_load', '').floor == pytest.approx(9.936)


def test_other_links_scale_with_bandwidth():
    gen4 = crit.criterion('memory_plugin', crit.DEVICE_TO_HOST, 'gen4', 16)
    assert gen4.expected == pytest.approx(25.8)
    x8 = crit.criterion('pci_plugin', crit.HOST_TO_DEVICE, 'gen3', 8)
    assert x8.expected == pytest.approx(5.8)
    assert 'Gen4 x16' in gen4.describe() and '23.22 GB/s' in gen4.describe()


def test_parallel_mode_bottleneck_rule():
    """Path A of the manual's figure: two devices behind a Gen3 x16 bridge
    pass when their sum reaches the bridge's 16 GB/s."""
    assert crit.parallel_path_passes('gen3', 16, [8.1, 8.0])
    assert not crit.parallel_path_passes('gen3', 16, [7.9, 8.0])
    # Path D: four devices behind a Gen4 x16 switch (32 GB/s)
    assert crit.parallel_path_passes('gen4', 16, [8.0] * 4)
    assert not crit.parallel_path_passes('gen4', 16, [7.9] * 4)


# -- switch rules -----------------------------------------------------------

def test_the_manual_lists_its_examples():
    assert len(VALID) == 3 and len(INVALID) == 3 and len(PCI_EXAMPLES) == 4


@pytest.mark.parametrize('command', VALID)
def test_valid_examples_are_accepted(command):
    args = hl_qual_args(**_kwargs(command))
    assert set(args) - {'-gaudi2'} <= set(command.split())


@pytest.mark.parametrize('command', PCI_EXAMPLES)
def test_pci_plugin_examples_are_accepted(command):
    args = hl_qual_args(**_kwargs(command))
    assert set(args) <= set(command.split())


@pytest.mark.parametrize('command, reason', list(zip(INVALID, [
    'When a full mode run is executed, the test must run in serial mode',
    '-sramOnly and -pciOnly must be run using serial mode',
    '-sramOnly and -pciOnly must be run using serial mode',
])))
def test_invalid_examples_are_refused_with_the_manuals_reason(command,
                                                              reason):
    with pytest.raises(SwitchError, match=re.escape(reason)):
        hl_qual_args(**_kwargs(command))


def test_mem_only_mixed_with_pci_tests_needs_serial_mode():
    with pytest.raises(SwitchError, match='any combination of -memOnly'):
        hl_qual_args('gaudi2', 'mb', 'parallel', ['memOnly', 'pciOnly'])
    assert '-memOnly' in hl_qual_args('gaudi2', 'mb', 'serial',
                                      ['memOnly', 'pciOnly'])


@pytest.mark.parametrize('kwargs, message', [
    ({'plugin': 'mb', 'mode': 'serial', 'duration': 20},
     '-t, -size and -gen are switches of the PCI plugin'),
    ({'plugin': 'p', 'mode': 'serial', 'subsets': ['memOnly']},
     'select tests of the memory bandwidth plugin'),
    ({'plugin': 'p', 'mode': 'serial', 'pci_gen': 'gen5'},
     "pci_gen='gen5': must be one of gen3, gen4"),
    ({'plugin': 'p', 'mode': 'serial', 'cards': 'all;reboot'},
     'cards=.*"all" or one PCI bus id'),
    ({'plugin': 'x', 'mode': 'serial'}, "plugin='x': must be one of mb, p"),
])
def test_other_refusals(kwargs, message):
    with pytest.raises(Exception, match=message):
        hl_qual_args('gaudi2', **kwargs)


def test_expected_subtests():
    assert expected_subtests('mb', ['memOnly'], False) == \
        ['sram_to_hbm', 'hbm_to_sram', 'hbm_to_hbm']
    assert expected_subtests('mb', ['pciOnly'], True) == \
        ['host_to_hbm', 'hbm_to_host', 'hbm_host_bidir']
    assert expected_subtests('p', [], False) == ['pci_download', 'pci_upload']
    assert len(expected_subtests('mb', [], True)) == 9


# -- report parser (format unverified: built from the manual's names) -------

PCI_ONLY = ['host_to_hbm', 'hbm_to_host', 'hbm_host_bidir']
REPORT = '''\
[0000:19:00.0] HOST ==> HBM      : 24.61 GB/s  PASS
[0000:19:00.0] HBM ==> HOST      : 25.02 GB/s  PASS
[0000:19:00.0] HBM <==> HOST     : 40.10 GB/s  PASS
[0000:b3:00.0] HOST ==> HBM      : 24.20 GB/s  PASS
[0000:b3:00.0] HBM ==> HOST      : 24.97 GB/s  PASS
[0000:b3:00.0] HOST <==> HBM     : 39.80 GB/s  PASS
'''


def test_report_with_every_subtest():
    r = parse_hl_qual_report(REPORT, PCI_ONLY)
    assert r.figures['host_to_hbm'] == (('0000:19:00.0', 24.61),
                                        ('0000:b3:00.0', 24.2))
    assert r.worst('hbm_host_bidir') == 39.8     # either arrow order


def test_html_arrows_and_dram_name():
    text = 'HOST ⇒ DRAM 11.0 GB/s\nDRAM ⇒ HOST 12.0 GB/s\nTest PASSED\n'
    r = parse_hl_qual_report(text, ['host_to_hbm', 'hbm_to_host'])
    assert r.worst('host_to_hbm') == 11.0


def test_any_fail_fails():
    text = REPORT.replace('25.02 GB/s  PASS', '9.02 GB/s  FAIL')
    with pytest.raises(ParseError, match=r"hl_qual reports a failure: "
                                         r"'\[0000:19:00.0\] HBM ==> HOST"):
        parse_hl_qual_report(text, PCI_ONLY)


def test_unrecognised_report_never_passes():
    with pytest.raises(ParseError, match='unrecognised hl_qual report: no '
                                         '"<sub-test> ... <N> GB/s" line for '
                                         'host_to_hbm, hbm_to_host, '
                                         'hbm_host_bidir'):
        parse_hl_qual_report('hl_qual finished\nResult: PASSED\n', PCI_ONLY)


def test_missing_subtest():
    text = ''.join(line for line in REPORT.splitlines(keepends=True)
                   if '<==>' not in line and '<==> HBM' not in line
                   and 'HOST <==>' not in line)
    with pytest.raises(ParseError, match='for hbm_host_bidir;'):
        parse_hl_qual_report(text, PCI_ONLY)


def test_no_verdict():
    with pytest.raises(ParseError, match='no PASS verdict'):
        parse_hl_qual_report(REPORT.replace('PASS', ''), PCI_ONLY)


def test_nan_figure():
    text = REPORT.replace('24.61 GB/s', 'nan GB/s')
    with pytest.raises(ParseError, match="host_to_hbm bandwidth.*'nan' is "
                                         "not a finite number"):
        parse_hl_qual_report(text, PCI_ONLY)


def test_two_figures_on_a_line_are_ambiguous():
    text = REPORT.replace('24.61 GB/s', '24.61 GB/s (expected 11.9 GB/s)')
    with pytest.raises(ParseError, match='2 GB/s figures on one line'):
        parse_hl_qual_report(text, PCI_ONLY)


def test_pci_plugin_lines():
    text = ('download bandwidth: 11.9 GB/s\nupload bandwidth: 13.0 GB/s\n'
            'bidirectional bandwidth: 20.5 GB/s\nPCI test PASSED\n')
    r = parse_hl_qual_report(text, expected_subtests('p', [], True))
    assert (r.worst('pci_download'), r.worst('pci_bidirectional')) == \
        (11.9, 20.5)


# -- the check's own floors (serial mode) -----------------------------------

def _floors(report_text, plugin='mb', pci_gen='', lanes=16,
            subsets=('pciOnly',)):
    from types import SimpleNamespace

    from hpcval.benchmarks.hl_qual import HlQual
    test = SimpleNamespace(plugin=plugin, pci_gen=pci_gen, pci_lanes=lanes)
    report = parse_hl_qual_report(
        report_text, expected_subtests(plugin, list(subsets), True))
    HlQual._check_floors(test, report)


def test_floors_pass_above_and_fail_below():
    _floors(REPORT)
    slow = REPORT.replace('25.02 GB/s', '11.5 GB/s')
    with pytest.raises(ParseError, match=r'hbm_to_host on 0000:19:00.0: '
                                         r'11.5 GB/s is below the 12.9 GB/s '
                                         r'Gen3 x16 criterion less 10% = '
                                         r'11.61 GB/s'):
        _floors(slow)
    _floors(REPORT.replace('25.02 GB/s', '11.7 GB/s'))


def test_pci_plugin_floors_follow_gen():
    text = ('download 24.0 GB/s\nupload 26.0 GB/s\n'
            'bidirectional 40.0 GB/s\nPASSED\n')
    _floors(text, plugin='p', pci_gen='gen4', subsets=())
    with pytest.raises(ParseError, match=r'pci_download: 20.0 GB/s is below '
                                         r'the 23.2 GB/s Gen4 x16'):
        _floors(text.replace('24.0', '20.0'), plugin='p', pci_gen='gen4',
                subsets=())


# -- job scripts ---------------------------------------------------------

def _scripts(tmp_path, pattern):
    return sorted((tmp_path / 'rfm' / 'stage').rglob(pattern))


@pytest.mark.skipif(not GAUDI_SYSTEMS, reason='no system with the gaudi '
                                              'feature is configured')
@pytest.mark.parametrize('system', GAUDI_SYSTEMS)
def test_hl_qual_job_scripts(tmp_path, system):
    proc, report = reframe('--dry-run', '--system', system, '-t', 'hl_qual',
                           tmp_path=tmp_path, checks=('checks/hl_qual.py',))
    assert proc.returncode == 0, proc.stdout[-3000:]
    lines = {}
    for script in _scripts(tmp_path, 'HlQual*/rfm_job.sh'):
        text = script.read_text()
        assert 'export __python_cmd=python3' in text
        assert 'export HABANA_LOGS="$PWD/habana_logs"' in text
        assert 'cd /opt/habanalabs/qual/gaudi2/bin' in text
        lines[script.parent.name.split('_')[0]] = text.splitlines()[-1]
    exe = '/opt/habanalabs/qual/gaudi2/bin/hl_qual'
    assert lines == {
        'HlQualMemoryCheck': f'{exe} -gaudi2 -c all -rmod parallel -mb '
                             f'-memOnly',
        'HlQualHostLinkCheck': f'{exe} -gaudi2 -c all -rmod serial -mb -b '
                               f'-pciOnly -sramOnly',
        'HlQualPciCheck': f'{exe} -gaudi2 -c all -rmod serial -p -b -t 20',
    }


@pytest.mark.skipif(not GAUDI_SYSTEMS, reason='no system with the gaudi '
                                              'feature is configured')
def test_hl_qual_switch_rule_is_enforced_before_submission(tmp_path):
    proc, report = reframe('--dry-run', '--system', GAUDI_SYSTEMS[0], '-n',
                           'HlQualHostLinkCheck', '-S',
                           'HlQualHostLinkCheck.mode=parallel',
                           tmp_path=tmp_path, checks=('checks/hl_qual.py',))
    [tc] = by_name(report, 'HlQualHostLinkCheck')
    assert tc['result'] == 'fail'
    assert '-sramOnly and -pciOnly must be run using serial mode' in \
        tc['fail_reason']
    assert not _scripts(tmp_path, 'HlQual*/rfm_job.sh')
