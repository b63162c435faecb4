"""The job-side health probe (docs/health.md), which never fails the job,
and ``read()`` of the ``hpcval_health`` record its files make."""
import collections
import datetime
import os
import re

from hpcval import records
from hpcval.health import amd, habana, kernel_log, nvidia
from hpcval.health.common import BUSY_PCT, clean, first_line

SCRIPT = 'hpcval_health_probe.sh'
PREFIX = 'hpcval_health_'
#: Tools in the order the probe looks for them.
TOOLS = ('nvidia-smi', 'amd-smi', 'rocm-smi', 'hl-smi')
_MAX_READ = 4 * 1024 * 1024
#: Seconds each GPU tool call may run (docs/health.md): a healthy nvidia-smi
#: answers in under one on 4 GPUs; a GPU fallen off the bus hangs it.
TOOL_TIMEOUT = 30

_TEMPLATE = r'''#!/bin/bash
# hpcval health probe (hpcval.health.probe): GPU inventory and health
# before and after the benchmark, a ~1 Hz sampler during it.  Writes
# hpcval_health_* here; never fails the job.
h=hpcval_health_
phase=${1:-}
limit=${HPCVAL_PROBE_TIMEOUT:-@TIMEOUT@}
case $limit in ''|*[!0-9]*|0*) limit=@TIMEOUT@ ;; esac
tool=
for t in nvidia-smi amd-smi rocm-smi hl-smi; do
    if command -v "$t" >/dev/null 2>&1; then tool=$t; break; fi
done
run() {         # a tool call under a time limit; after one timed out (a
                # GPU off the bus hangs its tool), none of the job's others
    if [ -e "${h}timed_out" ]; then
        echo "not run: $(cat "${h}timed_out") timed out before"; return 124
    fi
    timeout -k 5 "$limit" "$@"
    r=$?
    [ "$r" -eq 124 ] || [ "$r" -eq 137 ] && { echo "$1" > "${h}timed_out"
        echo "$1 timed out after $limit s"; r=124; }
    return $r
}
nv_query() {    # FILE FIELDS: a field the driver refuses is dropped (the
                # clock-event reasons asked by their older name), once each
    f=$2; n=0
    while :; do
        run nvidia-smi --query-gpu="$f" --format=csv > "$1" 2>&1
        rc=$?
        bad=$(sed -n 's/^Field "\([a-z_.]*\)" is not a valid field.*/\1/p' \
            "$1" | head -n 1)
        [ "$rc" -ne 0 ] && [ -n "$bad" ] && [ "$n" -lt 40 ] || break
        case $bad in
        clocks_event_reasons.active) new=clocks_throttle_reasons.active ;;
        *) new= ;;
        esac
        g=$(echo ",$f," | sed "s/,$bad,/,${new:+$new,}/; s/^,//; s/,$//")
        [ "$g" = "$f" ] && break
        f=$g; n=$((n + 1))
    done
    echo "$rc" > "$1.rc"
    echo "$f" > "${1%.txt}_fields.txt"
}
nvlink() {      # PHASE: each GPU's NVLinks and their error counters
    run nvidia-smi nvlink -s > "${h}$1_nvlink_s.txt" 2>&1
    echo $? > "${h}$1_nvlink_s.txt.rc"
    run nvidia-smi nvlink -e > "${h}$1_nvlink_e.txt" 2>&1
    echo $? > "${h}$1_nvlink_e.txt.rc"
    # PCIe replays: no --query-gpu field carries them
    run nvidia-smi -q > "${h}$1_pcie.txt" 2>&1
    echo $? > "${h}$1_pcie.txt.rc"
}
gpus() {        # FILE PHASE: every GPU's inventory and health
    case $tool in
    nvidia-smi) nv_query "$1" '@NV_FIELDS@'
        run nvidia-smi --query-compute-apps='@NV_APPS@' --format=csv \
            > "${1%.txt}_apps.txt" 2>&1
        nvlink "$2" ;;
    amd-smi) { run amd-smi static --json; r1=$?; run amd-smi metric --json
        r2=$?; } > "$1" 2>&1
        echo $(( r1 ? r1 : r2 )) > "$1.rc"
        run amd-smi process --json > "${1%.txt}_apps.txt" 2>&1 ;;
    rocm-smi) run rocm-smi --showallinfo --showpids --json > "$1" 2>&1
        echo $? > "$1.rc" ;;
    hl-smi) run hl-smi > "$1" 2>&1
        echo $? > "$1.rc" ;;
    *) echo 'no GPU tool on PATH (nvidia-smi, amd-smi, rocm-smi, hl-smi)' \
        > "$1"; echo 127 > "$1.rc" ;;
    esac
}
sampler() {
    [ -e "${h}timed_out" ] && return
    case $tool in
    nvidia-smi)
        if grep -q clocks_event_reasons "${h}before_fields.txt" 2>/dev/null
        then f='@NV_SAMPLE@'; else f='@NV_BASIC_SAMPLE@'; fi
        nvidia-smi --query-gpu="$f" --format=csv,nounits -lms 1000 \
            > "${h}samples.txt" 2>&1 & ;;
    amd-smi) while :; do run amd-smi metric -p -t -u -c -P --json || break
        sleep 1; done > "${h}samples.txt" 2>&1 & ;;
    rocm-smi) while :; do run rocm-smi --showuse --showpower --showtemp \
        --showclocks --json || break; sleep 1
        done > "${h}samples.txt" 2>&1 & ;;
    hl-smi) while :; do run hl-smi || break; sleep 1
        done > "${h}samples.txt" 2>&1 & ;;
    *) return ;;
    esac
    echo $! > "${h}sampler.pid"
}
kmsg_last() {   # the time stamp of the kernel log's last line
    timeout -k 5 "$limit" dmesg 2>"${h}kmsg.err" |
        sed -n '$s/^\[ *\([0-9.]*\)\].*/\1/p'
}
aer() {         # FILE: the PCIe AER counters the kernel exposes
    grep -H TOTAL_ /sys/bus/pci/devices/*/aer_dev_* > "$1" 2>/dev/null
}
case $phase in
before)
    rm -f "${h}timed_out"
    { echo "host=$(hostname)"; echo "tool=${tool:-none}"
      echo "start=$(date +%s)"; echo "kmsg=$(kmsg_last)"
      echo "kernel=$(uname -r)"; echo "timeout=$limit"; } > "${h}node.txt"
    aer "${h}aer_before.txt"
    gpus "${h}before.txt" before
    [ "${2:-}" = sample ] && sampler ;;
after)
    if [ -s "${h}sampler.pid" ]; then
        pid=$(cat "${h}sampler.pid")
        case $pid in
        *[!0-9]*) ;;
        *) pkill -P "$pid" 2>/dev/null; kill "$pid" 2>/dev/null ;;
        esac
    fi
    gpus "${h}after.txt" after
    aer "${h}aer_after.txt"
    t0=$(sed -n 's/^kmsg=//p' "${h}node.txt" 2>/dev/null)
    # a record's indented continuation lines are kept with it; which
    # lines are a driver's own is hpcval.health.kernel_log's to decide
    timeout -k 5 "$limit" dmesg 2>>"${h}kmsg.err" | awk -v t0="${t0:-0}" '
        match($0, /^\[ *[0-9]+\.[0-9]+\]/) {
            ts = substr($0, RSTART + 1, RLENGTH - 2) + 0
            keep = (ts > t0 + 0 &&
                /NVRM|nvidia|amdgpu|habanalabs|AER|pcieport/)
            if (keep) print
            next
        }
        keep && /^[ \t]/ { print }' | head -n 2000 > "${h}kmsg.txt"
    echo "kmsg_rc=${PIPESTATUS[0]}" >> "${h}node.txt"
    echo "end=$(date +%s)" >> "${h}node.txt" ;;
esac
exit 0
'''

def script():
    """The probe script's text (fixed: nothing of the test's goes in)."""
    out = _TEMPLATE.replace('@TIMEOUT@', str(TOOL_TIMEOUT))
    for key, fields in (('NV_FIELDS', nvidia.FIELDS),
                        ('NV_APPS', nvidia.APPS_FIELDS),
                        ('NV_SAMPLE', nvidia.SAMPLE_FIELDS),
                        ('NV_BASIC_SAMPLE', nvidia.BASIC_SAMPLE_FIELDS)):
        out = out.replace(f'@{key}@', ','.join(fields))
    return out


def write(stagedir):
    """Write the script into ``stagedir`` (never through a link)."""
    path = os.path.join(stagedir, SCRIPT)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                 0o644)
    with os.fdopen(fd, 'w') as fp:
        fp.write(script())
    return path


_EXIT_TRAP = re.compile(r"trap '([^']*(?:'\\''[^']*)*)' EXIT")


def commands(sample, prerun=()):
    """The probe before the benchmark and an EXIT trap that runs it after."""
    earlier = [m.group(1) for line in prerun
               for m in [_EXIT_TRAP.fullmatch(line.strip())] if m]
    body = f'bash ./{SCRIPT} after' + (f'; {earlier[-1]}' if earlier else '')
    return [f'bash ./{SCRIPT} before{" sample" if sample else ""}',
            f"trap '{body}' EXIT"]


def _read(stagedir, name):
    path = os.path.join(stagedir, PREFIX + name)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd, encoding='utf-8', errors='replace') as fp:
        return fp.read(_MAX_READ)


def _keys(text):
    out = {}
    for line in (text or '').splitlines():
        key, sep, val = line.partition('=')
        if sep and key not in out:
            out[key] = clean(val)
    return out


def _rc(stagedir, name):
    text = (_read(stagedir, name + '.rc') or '').strip()
    return int(text) if text.isdigit() else None


def _snapshot(stagedir, phase, tool):
    """{rc, message, gpus, apps, warnings, nvlink} of one query."""
    text = _read(stagedir, f'{phase}.txt')
    if text is None:
        return {'rc': None, 'message': f'{PREFIX}{phase}.txt missing '
                '(the probe did not run)', 'gpus': []}
    rc = _rc(stagedir, f'{phase}.txt')
    failed = rc != 0
    snap = {'rc': rc, 'message': (first_line(text) or 'no output') if failed
            else '', 'gpus': []}
    if tool == 'nvidia-smi':
        snap['warnings'] = nvidia.warnings(text)
    try:
        snap['gpus'] = parse_gpus(tool, text)
    except ValueError as err:
        if not failed:
            snap['error'] = f'unreadable output: {clean(err)}'
        return snap
    # amd-smi process --json: no real output to read it from yet
    read_apps = {'nvidia-smi': nvidia.apps, habana.TOOL: habana.apps}.get(
        tool, lambda text: [])
    apps_text = text if tool == habana.TOOL else \
        _read(stagedir, f'{phase}_apps.txt') or ''
    try:
        snap['apps'] = read_apps(apps_text)
    except ValueError as err:
        snap['apps_error'] = f'unreadable process list: {clean(err)}'
    if tool == 'nvidia-smi':
        snap['nvlink'] = _nvlink(stagedir, phase)
        snap.update(_pcie_replays(stagedir, phase, snap['gpus']))
    return snap


def _pcie_replays(stagedir, phase, gpus):
    """{'pcie_replays': ...} of ``nvidia-smi -q`` but N/A, or why not."""
    name = f'{phase}_pcie.txt'
    text, rc = _read(stagedir, name), _rc(stagedir, name)
    if text is None or rc not in (0, None):     # None: an older probe
        return {} if text is None else {'pcie_error': (
            f'nvidia-smi -q failed (exit {rc}): {first_line(text)}')}
    read = nvidia.pcie_replays(text)
    missing = [f'GPU {g.get("index")} ({g["bus_id"]})' for g in gpus
               if g.get('bus_id') and not any(kernel_log.same_device(
                   str(g['bus_id']), bus) for bus in read)]
    replays = {bus: n for bus, n in read.items() if n is not None}
    return {'pcie_replays': replays, 'pcie_error': (
        'nvidia-smi -q printed no "Replays Since Reset" line of '
        + ', '.join(missing)) if missing else ''}


def _nvlink(stagedir, phase):
    """{'status': ..., 'errors': ...} of the phase's ``nvlink`` files."""
    out = {}
    for key, name, parse in (('status', 's', nvidia.nvlink_status),
                             ('errors', 'e', nvidia.nvlink_errors)):
        text = _read(stagedir, f'{phase}_nvlink_{name}.txt')
        if text is None:
            continue
        rc = _rc(stagedir, f'{phase}_nvlink_{name}.txt')
        if rc not in (0, None):
            out[f'{key}_error'] = f'nvidia-smi nvlink -{name} failed ' \
                f'(exit {rc}): {first_line(text)}'
            continue
        out[key] = {str(g): {str(link): v for link, v in links.items()}
                    for g, links in parse(text).items()}
    return out


def sampled(stagedir, tool):
    """The sampler's GPU records in ``stagedir`` (rows cut short left out)."""
    text = _read(stagedir, 'samples.txt')
    try:
        return parse_gpus(tool, text, lenient=True) if text else []
    except ValueError:
        return []


def parse_gpus(tool, text, lenient=False):
    """GPU records of ``tool``'s output."""
    if tool == 'nvidia-smi':
        return nvidia.gpus(text, lenient)
    if tool in amd.TOOLS:
        return amd.gpus(text, tool, lenient)
    if tool == habana.TOOL:
        return habana.gpus(text, lenient)
    raise nvidia.ToolError(f'hpcval reads no {tool} output')


#: The counters of sysfs ``aer_dev_*`` (Linux's aer.c)
_AER_KINDS = ('ERR_COR', 'ERR_FATAL', 'ERR_NONFATAL')


def _aer(text):
    out = {}
    for line in (text or '').splitlines():
        path, sep, rest = line.partition(':TOTAL_')
        parts = rest.split()
        if sep and len(parts) == 2 and parts[1].isdigit() and \
                parts[0] in _AER_KINDS:
            dev = path.split('/')[-2] if path.count('/') >= 2 else path
            kind = parts[0].replace('ERR_', '').lower()
            out.setdefault(clean(dev), {})[kind] = int(parts[1])
    return out


def _aer_growth(before, after):
    # Counter's subtraction keeps the counts that grew
    grown = {dev: collections.Counter(counts) -
             collections.Counter(before.get(dev, {}))
             for dev, counts in after.items()}
    return {dev: dict(kinds) for dev, kinds in grown.items() if kinds}


def _seconds(rows):
    """Each row's seconds after the first row's, None where none reads."""
    out = []
    for r in rows:
        try:
            out.append(datetime.datetime.strptime(
                str(r.get('time')), '%Y/%m/%d %H:%M:%S.%f').timestamp())
        except ValueError:
            out.append(None)
    first = next((t for t in out if t is not None), None)
    # a clock stepped back (NTP) reads as 0, never as a negative time
    return [None if t is None else round(max(t - first, 0), 1) for t in out]


def summarize(samples):
    """{gpu index: summary} of samples: slow-down shares, peaks, mean use."""
    by_gpu = {}
    for s in samples:
        by_gpu.setdefault(str(s['index']), []).append(s)
    out = {}
    for idx, rows in by_gpu.items():
        n, reasons, span = len(rows), collections.Counter(), {}
        for r, t in zip(rows, _seconds(rows)):
            for why in r.get('throttle', []):
                reasons[why] += 1
                if t is not None:
                    span[why] = (span.get(why, (t,))[0], t)

        def values(key, rows=rows):
            return [r[key] for r in rows if isinstance(r.get(key), (int, float))
                    and not isinstance(r.get(key), bool)]

        def peak(key, rows=rows):
            return max(values(key, rows), default=None)

        utils = values('util_pct')
        busy = [r for r in rows if isinstance(r.get('util_pct'), (int, float))
                and r['util_pct'] >= BUSY_PCT]
        out[idx] = {
            'n': n,
            'throttle': {k: round(v / n, 3) for k, v in reasons.items()},
            'throttle_span': span,
            'temp_max': peak('temp_c'), 'temp_mem_max': peak('temp_mem_c'),
            'power_max': peak('power_w'), 'power_limit': peak('power_limit_w'),
            'util_mean': round(sum(utils) / len(utils), 1) if utils else None,
            'memory_used_max': peak('memory_used_mib'),
            'pcie_gen_max': peak('pcie_gen'),
            'pcie_width_min': min(values('pcie_width'), default=None),
            'busy_n': len(busy), 'busy_mhz': peak('sm_mhz', busy),
            'max_mhz': peak('sm_max_mhz'),
        }
    return out


def read(stagedir):
    """The Health record of the probe's files in ``stagedir``, or unreadable."""
    try:
        return kernel_log.check(records.decode('health', _record(stagedir)))
    except Exception as err:    # noqa: BLE001 -- files of a job, any shape
        return records.Health('', 'unknown', unreadable=(
            f'probe output unreadable ({type(err).__name__}: '
            f'{clean(err, 200)})'))


def _record(stagedir):
    node = _keys(_read(stagedir, 'node.txt'))
    if not node:
        return {}
    tool = node.get('tool', 'none')
    rec = {'node': node.get('host', ''), 'tool': tool}
    for phase in ('before', 'after'):
        try:
            rec[phase] = _snapshot(stagedir, phase, tool)
        except Exception as err:    # noqa: BLE001
            rec[phase] = {'rc': None, 'gpus': [], 'error':
                          f'probe output unreadable ({type(err).__name__})'}
    rec.update({k: int(node[k]) for k in ('start', 'end', 'timeout')
                if node.get(k, '').isdigit()}, kernel=node.get('kernel', ''))
    samples = _read(stagedir, 'samples.txt')
    # an empty file: the benchmark ended before the sampler's first line
    if samples and samples.strip() and tool in TOOLS:
        try:
            rec['samples'] = summarize(parse_gpus(tool, samples, lenient=True))
        except Exception as err:    # noqa: BLE001
            rec['samples_error'] = f'{tool} sampler: {clean(err)}'
    kmsg = _read(stagedir, 'kmsg.txt')
    rc = node.get('kmsg_rc', '')
    err = first_line(_read(stagedir, 'kmsg.err') or '')
    if rc.isdigit() and rc != '0':
        rec['kernel_log'] = f'not readable (dmesg exit {rc}: {err})'
    elif kmsg is not None:
        rec['kernel_events'] = kernel_log.events(kmsg)
    rec['aer_grown'] = _aer_growth(_aer(_read(stagedir, 'aer_before.txt')),
                                   _aer(_read(stagedir, 'aer_after.txt')))
    return rec
