"""Fails, naming RFM_CONFIG_FILES and ``hpcval run``, when ReFrame runs
these checks without hpcval's configuration (where it would otherwise
report "PASSED, 0 of 0")."""
import reframe as rfm

from hpcval.benchmarks.configured import ConfigurationLoaded


@rfm.simple_test
class HpcvalConfigurationCheck(ConfigurationLoaded):
    pass
