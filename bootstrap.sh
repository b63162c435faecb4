#!/usr/bin/env bash
# Sets up hpcval on a fresh machine: a virtual environment in .venv with
# ReFrame, hpcval and an MPI from PyPI (mpich + mpi4py wheels, offline-safe),
# Debian's likwid when we may install it, and an activate script that points
# ReFrame at config/settings.py so that plain `reframe -c checks/ ...` works.
# Idempotent: running it again only fills in what is missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$root/.venv"
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi

if ! "$venv/bin/python" -c 'import hpcval, reframe, mpi4py' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        -e "$root[mpi,test]"
fi

# likwid-bench is optional (its check skips without it); install it only
# where we are root on Debian/Ubuntu and nobody has installed it already.
if ! command -v likwid-bench >/dev/null && [ "$(id -u)" = 0 ] \
        && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q likwid >/dev/null 2>&1 ||
        { apt-get update -q >/dev/null 2>&1 &&
          apt-get install -y -q likwid >/dev/null 2>&1; } ||
        echo "bootstrap: could not install likwid; its check will be skipped" >&2
fi

marker='# hpcval: ReFrame configuration'
if ! grep -qF "$marker" "$venv/bin/activate"; then
    cat >> "$venv/bin/activate" <<EOS

$marker
export RFM_CONFIG_FILES="$root/config/settings.py"
export HPCVAL_ROOT="$root"
EOS
fi

echo "bootstrap: ready; now run: . $venv/bin/activate"
