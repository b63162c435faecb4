"""hpcval: ReFrame regression tests for GPU and accelerator systems.

utils/ is the source folder of the package ``hpcval`` (parsers, benchmark
base classes, reference loader, publishing, the minicluster).  The checks,
configuration, systems, references and docs stay at the repository's root, used
from there in a checkout (and an editable install); a built wheel carries
a copy of them inside the package, as ``hpcval/suite/``, so that an
installed hpcval runs from any folder (``hpcval run``, hpcval.paths).
"""
import os
import re

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

SUITE = ('checks', 'config', 'references', 'systems', 'docs')
SUITE_FILES = ('.py', '.yaml', '.md', '.json')


def _version():
    """The one version: utils/hpcval/__init__.py's __version__."""
    with open(os.path.join('utils', 'hpcval', '__init__.py'),
              encoding='utf-8') as fp:
        return re.search(r"^__version__ = '([^']+)'", fp.read(),
                         re.M).group(1)


class BuildWithSuite(build_py):
    """build_py that also copies the suite folders into hpcval/suite/."""

    def run(self):
        super().run()
        for folder in SUITE:
            for top, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if d != '__pycache__')
                for name in sorted(files):
                    if name.endswith(SUITE_FILES):
                        source = os.path.join(top, name)
                        target = os.path.join(self.build_lib, 'hpcval',
                                              'suite', source)
                        self.mkpath(os.path.dirname(target))
                        self.copy_file(source, target)


setup(
    name='hpcval',
    version=_version(),
    description='ReFrame validation suite for GPU and accelerator systems',
    python_requires='>=3.9',
    package_dir={'': 'utils'},
    packages=find_packages('utils'),
    cmdclass={'build_py': BuildWithSuite},
    install_requires=[
        # the lowest and the newest 4.x allowed are tested (tests/test_wheel.py)
        'reframe-hpc>=4.10,<5',
        'PyYAML>=6.0',
        # hpcval report: the results database's JSON decoded straight into
        # typed records of only the fields read (hpcval.publish.typed_sessions)
        'msgspec>=0.18',
        # progress of the long commands, on a terminal only (hpcval.progress)
        'tqdm>=4.66,<5',
    ],
    # compatible ranges, not pins, so that a site's own Python stack can
    # satisfy them: the newest of each range is what bootstrap.sh installs,
    # the lowest is installed beside the wheel by tests/test_wheel.py
    extras_require={
        # MPI from PyPI wheels: works offline, no system MPI needed
        'mpi': ['mpich>=4.3,<5', 'mpi4py>=4.1,<5'],
        # hpcval report --plots
        'plots': ['matplotlib>=3.10,<4'],
        # wheel: tests/test_wheel.py builds hpcval's wheel without build isolation
        # pytest-xdist: .ci/run's two workers (--dist loadgroup)
        # pandas: the published CSV is read by both dataframe libraries
        'test': ['pytest>=7', 'pytest-xdist>=3.8', 'matplotlib>=3.10,<4',
                 'wheel', 'pandas>=2'],
    },
    entry_points={'console_scripts': ['hpcval=hpcval.cli:main']},
)
