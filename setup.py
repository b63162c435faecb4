"""hpcval: ReFrame regression tests for GPU and accelerator systems.

utils/ is the source folder of the package ``hpcval`` (parsers, benchmark
base classes, reference loader, publishing, the minicluster).  The checks,
configuration, systems and references stay at the repository's root, used
from there in a checkout (and an editable install); a built wheel carries
a copy of them inside the package, as ``hpcval/suite/``, so that an
installed hpcval runs from any folder (``hpcval run``, hpcval.paths).
"""
import os

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

SUITE = ('checks', 'config', 'references', 'systems')


class BuildWithSuite(build_py):
    """build_py that also copies the suite folders into hpcval/suite/."""

    def run(self):
        super().run()
        for folder in SUITE:
            for top, dirs, files in os.walk(folder):
                dirs[:] = sorted(d for d in dirs if d != '__pycache__')
                for name in sorted(files):
                    if name.endswith(('.py', '.yaml')):
                        source = os.path.join(top, name)
                        target = os.path.join(self.build_lib, 'hpcval',
                                              'suite', source)
                        self.mkpath(os.path.dirname(target))
                        self.copy_file(source, target)


setup(
    name='hpcval',
    version='0.1.0',
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
    ],
    extras_require={
        # MPI from PyPI wheels: works offline, no system MPI needed
        'mpi': ['mpich==4.3.2', 'mpi4py==4.1.2'],
        # hpcval report --plots
        'plots': ['matplotlib==3.11.2'],
        # wheel: tests/test_wheel.py builds hpcval's wheel without build isolation
        # pytest-xdist: .ci/run's two workers (--dist loadgroup)
        'test': ['pytest>=7', 'pytest-xdist>=3.8', 'matplotlib==3.11.2',
                 'wheel'],
    },
    entry_points={'console_scripts': ['hpcval=hpcval.cli:main']},
)
