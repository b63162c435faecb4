#!/usr/bin/env bash
# Sets up hpcval on a fresh machine: a virtual environment in .venv with
# ReFrame, hpcval and an MPI from PyPI (mpich + mpi4py wheels, offline-safe),
# Debian's likwid (and with --tests Lmod, Slurm, munge, Chromium, pdflatex
# and victoria-metrics) when we may install them, and an activate script
# that points ReFrame at config/settings.py so that plain
# `reframe -c checks/ ...` works.  The test extra brings `wheel`:
# tests/test_wheel.py builds hpcval's.
# Idempotent: running it again only fills in what is missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$root/.venv"
python=${PYTHON:-python3}

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi

if ! "$venv/bin/python" -c 'import hpcval, reframe, mpi4py, matplotlib, wheel, msgspec' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        -e "$root[mpi,test]"
fi

# Debian packages, installed only where we are root on Debian/Ubuntu:
# likwid for its CPU bandwidth check (skipped without it); with --tests also
# what the test suite drives for real: Lmod (job scripts of the module-based
# systems, a site's module stack), Slurm with munge, slurmdbd and MariaDB
# (the minicluster and its accounting), Chromium (the report's HTML page rendered headless to an
# image), texlive-latex-base (pdflatex compiles the report's LaTeX),
# poppler-utils (its PDF looked at page by page: pdftoppm, pdfimages,
# pdftotext), victoria-metrics (perflogs sent to a time-series database),
# and podman, runc and debootstrap (a check run from an image built below).
packages=(likwid)
if [ "${1:-}" = --tests ]; then
    packages+=(lmod slurm-wlm munge slurmdbd mariadb-server chromium
               texlive-latex-base poppler-utils victoria-metrics
               podman runc debootstrap)
fi
missing=()
for pkg in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' ||
        missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q "${missing[@]}" >/dev/null 2>&1 ||
            { apt-get update -q >/dev/null 2>&1 &&
              apt-get install -y -q "${missing[@]}" >/dev/null 2>&1; } ||
            echo "bootstrap: could not install ${missing[*]}; checks and tests that need them will be skipped" >&2
    else
        echo "bootstrap: not root or no apt-get: ${missing[*]} not installed; checks and tests that need them will be skipped" >&2
    fi
fi

# With --tests: the image tests/test_containers.py runs likwid-bench from,
# a minimal Debian bookworm root with Debian's likwid and the OpenMP
# runtime of the suite's own CPU builds (libgomp1), imported into Podman's
# store; built once, kept while it exists.
image=localhost/hpcval-bench:bookworm
if [ "${1:-}" = --tests ] && [ "$(id -u)" = 0 ] &&
        command -v podman >/dev/null && command -v debootstrap >/dev/null &&
        ! podman image exists "$image" 2>/dev/null; then
    rootfs=$(mktemp -d "${TMPDIR:-/tmp}/hpcval-image.XXXXXX")
    if debootstrap --variant=minbase --include=likwid,libgomp1 bookworm "$rootfs" \
            http://deb.debian.org/debian >/dev/null 2>&1 &&
        tar -C "$rootfs" -c . | podman import --quiet \
            --change 'LABEL org.opencontainers.image.title=hpcval-bench' \
            - "$image" >/dev/null; then
        echo "bootstrap: built $image"
    else
        echo "bootstrap: could not build $image; tests/test_containers.py's runs will be skipped" >&2
    fi
    rm -rf --one-file-system -- "$rootfs"
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
