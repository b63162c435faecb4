"""The minicluster's node shape: what systems/minicluster.py declares to
ReFrame and what hpcval.testing.minicluster starts Slurm with, in one
place so the two cannot disagree."""

#: topology each slurmd declares: 1 socket x 2 cores x 1 thread, so that two
#: ranks fit on one node (ping-pong on_node)
SOCKETS, CORES_PER_SOCKET, THREADS_PER_CORE = 1, 2, 1
CPUS_PER_NODE = SOCKETS * CORES_PER_SOCKET * THREADS_PER_CORE
REAL_MEMORY_MB = 1000
PARTITION = 'debug'
