"""Every event the health judge knows, its severity and its public source
(docs/health.md): ``FAIL`` fails the node, ``INFO`` is only shown."""
from hpcval.health.sxid_catalog import SXIDS
from hpcval.health.xid_catalog import XIDS

FAIL, INFO = 'fail', 'information'

_INFO_RESOLUTIONS = {'RESTART_APP', 'CHECK_APP/CUDA', 'IGNORE',
                     'WORKFLOW_XID_45', 'CHECK_UVM'}
#: Xid: (severity, why hpcval departs from the catalogue's resolution)
OVERRIDES = {
    94: (FAIL, 'a contained uncorrectable memory error: the application '
               'restarts, but the GPU\'s memory failed during validation '
               '(DCGM\'s memory health watch fails on it)'),
    162: (INFO, 'power smoothing re-engaged: no resolution, a state change'),
    163: (INFO, 'power smoothing disengaged: no resolution, a state change'),
    164: (INFO, 'power smoothing circuitry lifetime low: no resolution yet'),
}

_GPUD = 'gpud (leptonai/gpud) components/accelerator/nvidia/'
_DCGM = 'DCGM health watches (dcgmHealthSystems_t, NVIDIA/DCGM dcgm_structs.h)'
_NVS = 'NVSentinel (NVIDIA/NVSentinel) '
_XID_DOC = ('NVIDIA, XID Catalog, https://docs.nvidia.com/deploy/xid-errors/'
            'analyzing-xid-catalog.html')

#: key: (severity, what, how it is seen, public sources)
EVENTS = {
    'xid': (None, 'Xid N (NVIDIA kernel driver)',
            '`NVRM: Xid (PCI:dddd:bb:dd): N, ...` in the kernel log',
            f'{_XID_DOC}; {_GPUD}xid; {_NVS}syslog-health-monitor; {_DCGM}'),
    'xid_chain': (None, 'Xid 45 caused by previous Xid N',
                  '`... caused by previous Xid N` ending an Xid 45 line',
                  'open-gpu-kernel-modules src/nvidia/src/kernel/gpu/rc/'
                  'kernel_rc.c (krcReportXid)'),
    'sxid': (None, 'NVSwitch SXid N (its switch, PCI address, link)',
             '`nvidia-nvswitchN: SXid (PCI:dddd:bb:dd.f): N, Fatal, Link L '
             '...` in the kernel log; `Non-fatal` is information',
             'NVIDIA, Fabric Manager User Guide (DU-09883-001), NVSwitch '
             f'SXid errors; {_GPUD}sxid'),
    'nvrm:fallen_off_bus': (FAIL, 'GPU fallen off the bus',
                            '`NVRM: The NVIDIA GPU dddd:bb:dd.f ... fallen '
                            'off the bus`, `NVRM: GPU at dddd:bb:dd.f has '
                            'fallen off the bus`',
                            f'NVIDIA/NVSentinel#155; leptonai/gpud#1209 '
                            f'({_GPUD}xid/kmsg.go)'),
    'nvrm:init_failed': (FAIL, 'GPU failed to initialize',
                         '`NVRM: GPU dddd:bb:dd.f: RmInitAdapter failed!`, '
                         '`rm_init_adapter failed`, `Cannot initialize GSP '
                         'firmware RM`',
                         'NVIDIA/open-gpu-kernel-modules#789, '
                         'NVIDIA/gpu-operator#1146'),
    'amdgpu': (FAIL, 'amdgpu driver error',
               '`amdgpu dddd:bb:dd.f: amdgpu: ...` error, timeout, reset, '
               'RAS, poison, failed; `[drm:... [amdgpu]] *ERROR*`',
               'ROCm/legacy-rocm-build#6273; ellyq/coreboot#4'),
    'habanalabs': (FAIL, 'habanalabs driver error',
                   '`habanalabs dddd:bb:dd.f:` / `habanalabs hlN:` error, '
                   'fault, fail, timeout, reset, ECC, critical',
                   'HabanaAI/Setup_and_Install#1'),
    'aer:Fatal': (FAIL, 'PCIe AER uncorrectable (fatal) error',
                  '`AER: Uncorrected (Fatal) error received`; sysfs '
                  '`aer_dev_fatal` grew',
                  f'Linux Documentation/PCI/pcieaer-howto.rst; {_DCGM} '
                  '(PCIE)'),
    'aer:Non-Fatal': (FAIL, 'PCIe AER uncorrectable (non-fatal) error',
                      '`AER: Uncorrected (Non-Fatal) error received`; sysfs '
                      '`aer_dev_nonfatal` grew',
                      'Linux Documentation/PCI/pcieaer-howto.rst'),
    'aer:Corrected': (INFO, 'PCIe AER corrected / correctable error',
                      '`AER: Corrected error received`, `Correctable error '
                      'message received`; sysfs `aer_dev_correctable` grew',
                      'Linux Documentation/PCI/pcieaer-howto.rst'),
    'tool_failed': (FAIL, 'GPU tool failed',
                    'the tool exits non-zero or prints no table / JSON',
                    f'{_GPUD}gpu-counts; {_NVS}gpu-health-monitor'),
    'tool_timeout': (FAIL, 'GPU tool timed out',
                     'a probe\'s tool call ran past its time limit (exit '
                     '124): what a GPU fallen off the bus does to nvidia-smi',
                     'hpcval (a hanging nvidia-smi hung a local run); '
                     'NVIDIA/NVSentinel#155'),
    'probe_unreadable': (FAIL, 'probe output unreadable',
                         'a probe file that cannot be read or parsed (the '
                         'sampler\'s included), or that holds a GPU twice',
                         'hpcval'),
    'gpu_state': (FAIL, 'GPU in an error state',
                  'nvidia-smi prints `[GPU requires reset]`, `[GPU is lost]`, '
                  '`[Unknown Error]` (any bracketed text but `[N/A]`, `[Not '
                  'Supported]`, `[Insufficient Permissions]`) in a field, or '
                  '`[N/A]` for name, UUID, bus id or memory, exit 0 or not',
                  'nvidia-smi(1); NVML\'s return codes '
                  'NVML_ERROR_GPU_IS_LOST, NVML_ERROR_RESET_REQUIRED, '
                  'NVML_ERROR_UNKNOWN (nvml.h)'),
    'gpu_count': (FAIL, 'GPU missing / lost during the run',
                  'fewer GPUs than the inventory, or fewer after the '
                  'benchmark than before it', f'{_GPUD}gpu-counts'),
    'infoROM': (FAIL, 'infoROM corrupted',
                '`WARNING: infoROM is corrupted at gpu dddd:bb:dd.f` '
                '(nvidia-smi exit 14, its table still printed)',
                f'NVIDIA/gpu-operator#20; NVIDIA/DCGM#2; {_DCGM} (INFOROM)'),
    'ecc_uncorrected': (FAIL, 'uncorrectable ECC errors',
                        '`ecc.errors.uncorrected.volatile.total` > 0; '
                        'amd-smi `total_uncorrectable_count`; hl-smi '
                        'Volatile Uncorr. ECC', f'{_GPUD}ecc; {_DCGM} (MEM)'),
    'ecc_corrected': (INFO, 'correctable ECC errors grew',
                      '`ecc.errors.corrected.volatile.total` after > before',
                      f'{_GPUD}ecc'),
    'remap_pending': (FAIL, 'row remapping pending (reset needed)',
                      '`remapped_rows.pending` Yes (A100 and later, R450+)',
                      f'{_GPUD}remapped-rows; {_DCGM} (MEM)'),
    'remap_failure': (FAIL, 'row remapping failed',
                      '`remapped_rows.failure` Yes', f'{_GPUD}remapped-rows'),
    'retired_pending': (FAIL, 'page retirement pending (reset needed)',
                        '`retired_pages.pending` Yes (before A100: page '
                        'retirement; A100 and later report N/A)',
                        f'{_GPUD}remapped-rows; {_DCGM} (MEM)'),
    'throttle': (FAIL, 'HW / thermal slowdown under the benchmark',
                 'clock-event reasons HW slowdown, SW/HW thermal, HW power '
                 'brake; amd-smi PROCHOT, socket/VR/HBM thermal violation',
                 f'{_GPUD}hw-slowdown; {_DCGM} (THERMAL, POWER)'),
    'clock_stuck': (FAIL, 'AMD GPU busy with its graphics clock stuck low',
                    'amd-smi `clock.gfx_N.clk` / `max_clk`, rocm-smi `sclk '
                    'clock speed:` / `Valid sclk range`: at >= 90% use, '
                    'below 10% of the maximum, or below 50% while a busy '
                    'sibling is not',
                    'ROCm/legacy-rocm-build#4414 (MI300X SCLK stuck around '
                    '60 MHz under full load)'),
    'power_cap': (INFO, 'power-capped (a cause, not a fault)',
                  'clock-event reason SW power cap; amd-smi PPT', 'hpcval'),
    'nvlink_inactive': (FAIL, 'NVLink / xGMI link inactive or missing',
                        '`nvidia-smi nvlink -s`: `Link N: <inactive>`, or '
                        'fewer active links / a lower speed than the '
                        'inventory\'s `nvlink`',
                        'Azure/azhpc-diagnostics#73; Azure/azurehpc-health-'
                        f'checks (NHC2016); {_GPUD}nvlink; {_DCGM} (NVLINK)'),
    'nvlink_errors': (FAIL, 'NVLink errors grew during the run',
                      '`nvidia-smi nvlink -e`: CRC or Recovery errors after > '
                      'before on a link', f'{_GPUD}nvlink; {_DCGM} (NVLINK)'),
    'nvlink_replays': (INFO, 'NVLink replays grew during the run',
                       '`nvidia-smi nvlink -e`: Replay errors after > before '
                       '(the link resent a flit; CRC errors count the cause)',
                       f'{_DCGM} (NVLINK)'),
    'pcie_replays': (FAIL, 'PCIe replays grew past DCGM\'s limit',
                     '`nvidia-smi -q`: Replays Since Reset grew by '
                     'more than 80 during the run (1 to 80: information); '
                     'the call failed or printed no counter: fail',
                     'NVIDIA/DCGM nvvs/plugin_src/pcie/Pcie.cpp '
                     '(max_pcie_replays 80; targeted stress 160)'),
    'pcie_link': (FAIL, 'PCIe link narrower / slower than expected',
                  'current width/generation below the inventory or the card',
                  f'{_DCGM} (PCIE)'),
    'other_process': (INFO, 'another process on a GPU',
                      '`--query-compute-apps` before the benchmark', 'hpcval'),
    'kernel_log_unreadable': (INFO, 'kernel log not readable',
                              '`dmesg` fails (kernel.dmesg_restrict=1, not '
                              'root)', 'hpcval'),
}


def xid_severity(code, caused_by=None):
    """FAIL or INFO of an Xid; an Xid 45 caused by Xid N takes N's."""
    if caused_by is not None and code == 45 and caused_by != 45:
        return xid_severity(caused_by)
    if code in OVERRIDES:
        return OVERRIDES[code][0]
    # a code newer than the catalogue has no resolution: not healthy
    return INFO if XIDS.get(code, ('', '', ''))[2] in _INFO_RESOLUTIONS \
        else FAIL


def xid_name(code):
    entry = XIDS.get(code)
    if entry is None:
        return 'not in the catalogue'
    return entry[0] if entry[1] == 'Unused' else entry[1].split(' -- ')[0]


def sxid_severity(code, said=''):
    """FAIL or INFO of an SXid: its line's ``Fatal``, else the catalogue."""
    return FAIL if said == 'Fatal' or SXIDS.get(code, ('', False))[1] \
        else INFO


def kernel_key(kind, code):
    """The EVENTS key of a kernel log event."""
    return kind if kind in ('xid', 'sxid') else \
        f'{kind}:{code}' if code else kind


def fails(key, code=None, caused_by=None, said=''):
    """Whether an event of ``key`` fails the node."""
    if key == 'xid':
        return xid_severity(code, caused_by) == FAIL
    if key == 'sxid':
        return sxid_severity(code, said) == FAIL
    return EVENTS[key][0] == FAIL


def kernel_what(kind, code, caused_by=None):
    """How a FAIL or INFO line names a kernel log event."""
    if kind == 'sxid':
        name = SXIDS.get(code, ('not in the catalogue',))[0]
        return f'NVSwitch SXid {code} ({name})'
    if kind == 'xid':
        what = f'Xid {code} ({xid_name(code)})'
        if caused_by is not None:
            what += f' caused by Xid {caused_by} ({xid_name(caused_by)})'
        return what
    return EVENTS[kernel_key(kind, code)][1]


def rows():
    """[(severity, event, how it is seen, sources)] for docs/health.md."""
    return [(sev or ('per SXid' if key == 'sxid' else 'per Xid'), what,
             seen, src) for key, (sev, what, seen, src) in EVENTS.items()]
