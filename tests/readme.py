"""README.md's fenced ``sh`` blocks, read from the README itself (an edit
of the README is what the tests run), and a shell to run them as written.
"""
import os
import re
import subprocess

from rfmrun import ROOT, VENV_BIN, host_free_path

README = ROOT / 'README.md'

# a closed local port for every host: git and urllib (the benchmarks'
# sources) fail at once, the README's "without network"
OFFLINE = {**{name: 'http://127.0.0.1:9' for name in
              ('http_proxy', 'https_proxy', 'HTTP_PROXY', 'HTTPS_PROXY')},
           'no_proxy': '', 'NO_PROXY': ''}


def blocks(text=None):
    """The text of every fenced ``sh`` block, in order."""
    text = README.read_text() if text is None else text
    return re.findall(r'^```sh\n(.*?)^```$', text, re.M | re.S)


def commands(block):
    """The block's commands: a line that is neither a comment nor indented
    starts one, indented lines continue it (trailing comments are kept:
    the shell ignores them)."""
    found = []
    for line in block.splitlines():
        if not line.strip() or line.lstrip().startswith('#'):
            continue
        if line[:1].isspace() and found:
            found[-1] += '\n' + line
        else:
            found.append(line)
    return found


def command(start):
    """The one README command that starts with ``start``."""
    [found] = [c for b in blocks() for c in commands(b) if c.startswith(start)]
    return found


def bare_env(**more):
    """This process's environment without ReFrame's, hpcval's or Lmod's
    variables (a fresh shell's), the virtual environment's bin folder on
    PATH, neither the host's kernel log nor its GPU tools reachable
    (rfmrun.host_free_path): ``more`` on top."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('RFM_', 'HPCVAL_', 'LMOD', 'PYTEST_'))}
    env['PATH'] = host_free_path(f'{VENV_BIN}{os.pathsep}{env["PATH"]}')
    env.update(more)
    return env


def link_checkout(folder):
    """``folder`` made a stand-in for the checkout: what README command 1
    reads, linked (bootstrap.sh, .venv, checks/), so that what the run
    writes (stage, output, perflogs, its report) stays in ``folder``."""
    for name in ('bootstrap.sh', '.venv', 'checks'):
        (folder / name).symlink_to(ROOT / name)
    return folder


def shell(script, cwd, env, timeout=900):
    """``bash -c script``: its process (stdout, stderr and exit status)."""
    return subprocess.run(['bash', '-c', script], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def shell_reframe(script, cwd, env, timeout=900):
    """``shell`` for a command that runs ReFrame (tests/conftest.py marks
    the tests that reach this one ``reframe``)."""
    return shell(script, cwd, env, timeout)
