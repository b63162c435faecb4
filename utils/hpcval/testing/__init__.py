"""Test infrastructure that ships to users: the Slurm minicluster."""
