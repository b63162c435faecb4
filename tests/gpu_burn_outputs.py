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
