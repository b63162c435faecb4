"""hpcval: ReFrame regression tests for GPU and accelerator systems.

utils/ is the source folder of the package ``hpcval`` (parsers, benchmark
base classes, reference loader, publishing, the minicluster).  The checks,
configuration, systems and references stay in the repository and are used
from its root.
"""
from setuptools import find_packages, setup

setup(
    name='hpcval',
    version='0.1.0',
    description='ReFrame validation suite for GPU and accelerator systems',
    python_requires='>=3.9',
    package_dir={'': 'utils'},
    packages=find_packages('utils'),
    install_requires=[
        'reframe-hpc==4.10.4',
        'PyYAML>=6.0',
        # hpcval report: the results database's JSON, several times faster
        'orjson>=3.10',
    ],
    extras_require={
        # MPI from PyPI wheels: works offline, no system MPI needed
        'mpi': ['mpich==4.3.2', 'mpi4py==4.1.2'],
        # hpcval report --plots
        'plots': ['matplotlib==3.11.2'],
        'test': ['pytest>=7', 'matplotlib==3.11.2'],
    },
    entry_points={'console_scripts': ['hpcval=hpcval.cli:main']},
)
