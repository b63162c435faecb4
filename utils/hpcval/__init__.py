"""hpcval: helpers for the ReFrame checks in checks/."""
__version__ = '0.1.0'
