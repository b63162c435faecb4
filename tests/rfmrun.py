"""Run the real ReFrame on this repository's checks from a test."""
import functools
import json
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
VENV_BIN = pathlib.Path(sys.executable).parent
#: stand-ins for the host's kernel log readers, first on every run's PATH
HOST_FREE = ROOT / 'tests' / 'hostfree'
GPU_TOOLS = ('nvidia-smi', 'amd-smi', 'rocm-smi', 'hl-smi', 'rocminfo')


@functools.lru_cache(maxsize=None)
def _without_gpu_tools(folder):
    """``folder``, or where it is the host's and holds a GPU tool, a
    folder of links to everything else in it: no test reads the host's
    GPUs (a test's own stand-ins, in its temporary folder, stay)."""
    if folder.startswith(tempfile.gettempdir()) or \
            not any(os.path.exists(os.path.join(folder, t))
                    for t in GPU_TOOLS):
        return folder
    links = tempfile.mkdtemp(prefix='hpcval-no-gpu-tools-')
    for name in os.listdir(folder):
        if name not in GPU_TOOLS:
            os.symlink(os.path.join(folder, name), os.path.join(links, name))
    return links


def committed_pingpongs(folder):
    """A copy in ``folder`` of a committed report of three real ping-pongs
    on local: calibrating a live run on a busy host can refuse every bound
    for its spread, so tests of what calibrate writes read this one."""
    path = pathlib.Path(folder) / 'pingpongs.json'
    path.write_bytes((ROOT / 'tests' / 'fixtures' / 'reports' /
                      'local_pingpong' / 'report.json').read_bytes())
    return path


def host_free_path(path):
    """``path`` (a PATH value) that reaches neither the host's kernel log
    nor its GPU tools: tests/hostfree first, GPU tools of the host left
    out (a test's own stand-ins stay)."""
    return os.pathsep.join([str(HOST_FREE), *map(_without_gpu_tools,
                                                 path.split(os.pathsep))])


def reframe(*args, tmp_path, env=None, timeout=900, checks=('checks/',)):
    """``reframe -c checks/ ARGS`` from the repository root (``checks``
    narrows the check files loaded).

    Outputs, stage, perflogs and the results database go under
    ``tmp_path``; the JSON report is returned (None if none was written).
    Warnings are errors, so a check file that fails to import fails the
    test instead of silently vanishing from the run.  The run reads
    neither the host's kernel log nor its GPU tools (``host_free_path``).
    """
    report = tmp_path / 'report.json'
    proc = subprocess.run(
        reframe_command(*args, tmp_path=tmp_path, checks=checks),
        cwd=ROOT, env=reframe_env(tmp_path, env), capture_output=True,
        text=True, timeout=timeout
    )
    data = json.loads(report.read_text()) if report.exists() else None
    return proc, data


def reframe_command(*args, tmp_path, checks=('checks/',)):
    """The command line ``reframe`` runs (its report in ``tmp_path``)."""
    return [str(VENV_BIN / 'reframe'),
            *[a for c in checks for a in ('-c', c)],
            '--prefix', str(tmp_path / 'rfm'), '--report-file',
            str(tmp_path / 'report.json'), *args]


def reframe_env(tmp_path, env=None):
    """The environment ``reframe`` runs in."""
    full_env = dict(os.environ,
                    PATH=f'{VENV_BIN}{os.pathsep}{os.environ["PATH"]}',
                    RFM_CONFIG_FILES=str(ROOT / 'config' / 'settings.py'),
                    HPCVAL_ROOT=str(ROOT),
                    RFM_SQLITE_DB_FILE=str(tmp_path / 'results.db'),
                    RFM_WARN_AS_ERROR='y')
    full_env.update(env or {})
    full_env['PATH'] = host_free_path(full_env['PATH'])
    return full_env


def cases(report):
    return [tc for run in report['runs'] for tc in run['testcases']]


def by_name(report, prefix):
    """Test cases whose display name starts with ``prefix``."""
    return [tc for tc in cases(report)
            if tc['display_name'].startswith(prefix)]


def one_case(report, name):
    """The one test case whose display name starts with ``name``."""
    [tc] = by_name(report, name)
    return tc


def perf(tc):
    """{variable: [value, ref, lower, upper, unit, result]} of a test case."""
    return {key.rsplit(':', 1)[-1]: vals
            for key, vals in (tc['perfvalues'] or {}).items()}


def check_modules(prefix):
    """[(file stem, module)] of every checks/*.py, imported under
    ``prefix_<stem>`` (a name of their own, so that ReFrame finds their
    source)."""
    import importlib.util
    found = []
    for path in sorted((ROOT / 'checks').glob('*.py')):
        spec = importlib.util.spec_from_file_location(f'{prefix}_{path.stem}',
                                                      path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        found.append((path.stem, module))
    return found
