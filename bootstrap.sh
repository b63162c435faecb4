#!/usr/bin/env bash
# Sets up hpcval on a fresh machine: a virtual environment in .venv with
# ReFrame, hpcval and an MPI from PyPI (mpich + mpi4py wheels, offline-safe),
# Debian packages by group (below, and `./bootstrap.sh --help`) when we may
# install them, and an activate script that points ReFrame at
# config/settings.py so that plain `reframe -c checks/ ...` works.  The
# test extra brings `wheel`: tests/test_wheel.py builds hpcval's.
# Idempotent: running it again only fills in what is missing.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
venv="$root/.venv"
python=${PYTHON:-python3}
log="$venv/bootstrap.log"

# Debian package groups: name, packages, why.  The first always; the
# others with --tests, which the test suite drives for real.
groups=(
    "benchmarks|likwid|likwid-bench for the CPU bandwidth check (LikwidBenchCheck; skipped without it)"
    "modules|lmod|Lmod: job scripts of the module-based systems, a site's module stack"
    "slurm|slurm-wlm munge slurmdbd mariadb-server|Slurm with munge and accounting (slurmdbd on MariaDB): the minicluster, a real Slurm cluster on this host"
    "report|chromium texlive-latex-base poppler-utils|the report's HTML page rendered headless, its LaTeX compiled, its PDF read page by page"
    "monitoring|victoria-metrics|a time-series database the perflogs are sent to"
    "containers|podman runc debootstrap|a check run from an image: a minimal Debian bookworm root with likwid, built below as root (minutes, once)"
)

usage() {
    cat <<EOU
usage: ./bootstrap.sh [--tests]

Makes .venv (ReFrame >=4.10,<5, hpcval from utils/, mpich and mpi4py
wheels from PyPI) and makes .venv/bin/activate export RFM_CONFIG_FILES
and HPCVAL_ROOT.  As root on Debian/Ubuntu it installs these groups of
Debian packages with apt-get, saying each before (apt's output goes to
.venv/bootstrap.log); with --tests, as root with podman and debootstrap,
it also builds the image localhost/hpcval-bench:bookworm:

EOU
    local g name pkgs why
    for g in "${groups[@]}"; do
        IFS='|' read -r name pkgs why <<< "$g"
        if [ "$name" = benchmarks ]; then when=always; else when=--tests; fi
        printf '  %s (%s): %s\n      %s\n' "$name" "$when" "$pkgs" "$why"
    done
    cat <<EOU

pip installs hpcval with its mpi and test extras (pytest, pytest-xdist,
wheel) either way.  Not root, or no apt-get: no Debian package is
installed; what needs one is skipped, and this says which.
EOU
}

case "${1:-}" in
-h|--help) usage; exit 0 ;;
''|--tests) ;;
*) echo "bootstrap: unknown option ${1}; see ./bootstrap.sh --help" >&2
   exit 2 ;;
esac

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi

if ! "$venv/bin/python" -c 'import hpcval, reframe, mpi4py, matplotlib, wheel, msgspec, pandas, tqdm' 2>/dev/null; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check \
        -e "$root[mpi,test]"
fi

# Debian packages, by group, installed only where we are root on
# Debian/Ubuntu; each group says what it is for before it is installed.
for g in "${groups[@]}"; do
    IFS='|' read -r name pkgs why <<< "$g"
    [ "$name" = benchmarks ] || [ "${1:-}" = --tests ] || continue
    missing=()
    for pkg in $pkgs; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' ||
            missing+=("$pkg")
    done
    [ "${#missing[@]}" -gt 0 ] || continue
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "bootstrap: installing $name (${missing[*]}): $why"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q "${missing[@]}" >>"$log" 2>&1 ||
            { apt-get update -q >>"$log" 2>&1 &&
              apt-get install -y -q "${missing[@]}" >>"$log" 2>&1; } ||
            echo "bootstrap: could not install ${missing[*]} (see $log); what needs them will be skipped" >&2
    else
        echo "bootstrap: not root or no apt-get: $name (${missing[*]}) not installed; what needs them will be skipped" >&2
    fi
done

# With --tests: the image tests/test_containers.py runs likwid-bench from,
# a minimal Debian bookworm root with Debian's likwid and the OpenMP
# runtime of the suite's own CPU builds (libgomp1), imported into Podman's
# store; built once, kept while it exists.
image=localhost/hpcval-bench:bookworm
if [ "${1:-}" = --tests ] && [ "$(id -u)" = 0 ] &&
        command -v podman >/dev/null && command -v debootstrap >/dev/null &&
        ! podman image exists "$image" 2>/dev/null; then
    rootfs=$(mktemp -d "${TMPDIR:-/tmp}/hpcval-image.XXXXXX")
    echo "bootstrap: building $image with debootstrap as root (minutes; output in $log)"
    if debootstrap --variant=minbase --include=likwid,libgomp1 bookworm "$rootfs" \
            http://deb.debian.org/debian >>"$log" 2>&1 &&
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
