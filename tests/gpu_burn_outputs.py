"""gpu-burn outputs for the tests: the real ones captured on an H100
(tests/fixtures/captured/gpu_burn/README.md) and variants made from them
one change at a time: more GPUs, errors or a death on one GPU."""
import pathlib
import re

CAPTURED = (pathlib.Path(__file__).resolve().parent / 'fixtures' /
            'captured' / 'gpu_burn')
_GPU = re.compile(r"(proc'd: )(\d+ \(\d+ Gflop/s\) )(  errors: )(\d+ )"
                  r"(  temps: )(\d+ C )")


def real(name):
    """A captured output, e.g. real('h100_float_20s'), its progress lines
    ended by \\r as gpu-burn wrote them (read_text would make them \\n)."""
    return (CAPTURED / f'{name}.out').read_bytes().decode()


def more_gpus(text, count, errors=None, died=None):
    """``text`` (one GPU) as gpu-burn prints ``count`` GPUs that report
    alike.  ``errors``: {(gpu, window): count} shown by that GPU in every
    progress line of that window (windows end at "Summary at:", -1 the
    last); ``died``: a GPU whose process died in the last window."""
    errors = errors or {}
    windows = text.split('Summary at:')
    last = len(windows) - 1

    def line(window, m):
        done, errs, temps = [], [], []
        for gpu in range(count):
            n = errors.get((gpu, window), errors.get((gpu, -1), 0)
                           if window == last else 0)
            done.append(m.group(2))
            if gpu == died and window == last:
                done[-1] = re.sub(r'^\d+', '-1', m.group(2))
                errs.append('-1  (DIED!) ')
            else:
                errs.append(f'{n}  (WARNING!) ' if n else m.group(4))
            temps.append(m.group(6))
        return (m.group(1) + '- '.join(done) + m.group(3) + '- '.join(errs) +
                m.group(5) + '- '.join(temps))

    out = [_GPU.sub(lambda m, w=w: line(w, m), part)
           for w, part in enumerate(windows)]
    text = 'Summary at:'.join(out)
    faulty = {gpu for gpu, _ in errors}
    verdicts = ''.join(f'\tGPU {gpu}: {"FAULTY" if gpu in faulty else "OK"}\n'
                       for gpu in range(count))
    return re.sub(r'Tested 1 GPUs:\n\tGPU 0: OK\n',
                  f'Tested {count} GPUs:\n{verdicts}', text)


def slowed(text, gpu, factor, from_pct):
    """``text`` (several GPUs) with ``gpu``'s rates times ``factor`` in
    the progress lines from ``from_pct`` % of the run on: a GPU that
    slows as it heats."""
    def line(m):
        if float(m.group(1)) < from_pct:
            return m.group(0)
        parts = m.group(2).split(' - ')
        rate = re.search(r'\((\d+) Gflop/s\)', parts[gpu])
        slow = round(int(rate.group(1)) * factor)
        parts[gpu] = parts[gpu].replace(rate.group(0), f'({slow} Gflop/s)')
        return f"{m.group(1)}%  proc'd: {' - '.join(parts)}  errors: "
    return re.sub(r"(\d+\.\d)%  proc'd: (.*?)  errors: ", line, text)


#: a real health probe's files of one H100 (h100_health/README.md)
H100_STAGE = CAPTURED.parent / 'h100_health' / 'stage' / 'healthy'
#: a real health probe's files of a 4 x H100 node (tests/fixtures/
#: captured/h100x4/README.md), where BabelStream ran on GPU 3 while a
#: PyTorch process copied buffers on it
H100X4_STAGE = (CAPTURED.parent / 'h100x4' / 'loaded_stage' /
                'BabelStreamCudaCheck_e700626f')
IDLE_APPS = (CAPTURED.parent / 'h100_health' / 'nvidia-smi' /
             'apps_idle.csv')
FAKE_SMI = CAPTURED.parent / 'burnin' / 'fake' / 'nvidia-smi'


def busy_samples(count, hotter=None):
    """The 1 Hz sampler's file of ``count`` GPUs under the same load: the
    real rows of the loaded GPU 3 of H100X4_STAGE, each as every GPU's;
    ``hotter``: {gpu: C} added to that GPU's temperature."""
    lines = (H100X4_STAGE / 'hpcval_health_samples.txt').read_text() \
        .splitlines()
    out = [lines[0]]
    for row in lines[1:]:
        cells = row.split(', ')
        if cells[1] != '3':
            continue
        for gpu in range(count):
            cells[1] = str(gpu)
            mine = list(cells)
            mine[7] = str(int(mine[7]) + (hotter or {}).get(gpu, 0))
            out.append(', '.join(mine))
    return '\n'.join(out) + '\n'


def throttled(text, gpu, tmp_path):
    """``text`` (an nvidia-smi CSV table) as burnin/fake/nvidia-smi
    reports it with HPCVAL_FAULT=thermal on ``gpu``: run with a stand-in
    for the real tool that prints ``text``."""
    import os
    import subprocess
    table = tmp_path / f'table{gpu}.csv'
    table.write_text(text)
    real = tmp_path / 'real-smi'
    real.write_text(f'#!/bin/sh\nexec cat {table}\n')
    real.chmod(0o755)
    env = {**os.environ, 'HPCVAL_REAL_SMI': str(real),
           'HPCVAL_FAULT': 'thermal', 'HPCVAL_FAULT_GPU': str(gpu)}
    return subprocess.run([str(FAKE_SMI), '--query-gpu=x', '-lms', '1000'],
                          env=env, check=True, capture_output=True,
                          text=True).stdout


def burnin_health(samples, apps=False, gpu=None, tmp_path=None,
                  stage=H100X4_STAGE):
    """{file: text} of a health probe around a burn-in: ``stage``'s
    before/after queries, kernel log and AER files, ``samples`` as its
    sampler's file, no process on a GPU unless ``apps`` (then the real
    PyTorch process on GPU 3 before and after); ``gpu``: that GPU
    reported throttled in the before/after queries too (throttled())."""
    out = {}
    for path in stage.glob('hpcval_health_*'):
        if path.name.endswith(('probe.sh', 'samples.txt')):
            continue
        out[path.name] = path.read_text()
        if gpu is not None and path.name in ('hpcval_health_before.txt',
                                             'hpcval_health_after.txt'):
            out[path.name] = throttled(out[path.name], gpu, tmp_path)
    if not apps:
        for phase in ('before', 'after'):
            out[f'hpcval_health_{phase}_apps.txt'] = IDLE_APPS.read_text()
    out['hpcval_health_samples.txt'] = samples
    return out
