"""The minicluster's node shape, for systems/ and the Slurm it starts."""

#: topology each slurmd declares: 1 socket x 2 cores x 1 thread, so that two
#: ranks fit on one node (ping-pong on_node)
SOCKETS, CORES_PER_SOCKET, THREADS_PER_CORE = 1, 2, 1
CPUS_PER_NODE = SOCKETS * CORES_PER_SOCKET * THREADS_PER_CORE
REAL_MEMORY_MB = 1000
PARTITION = 'debug'

#: the shape of the optional GPU partition (MiniCluster(gpu_partition=True)):
#: its one node, the cluster's last, declares twice the sockets and memory
#: and GPUS_PER_GPU_NODE GPUs of type GPU_TYPE as Slurm GRES without device
#: files (no GPU here), so that the nodes of PARTITION differ in shape
GPU_PARTITION, GPU_TYPE, GPUS_PER_GPU_NODE = 'gpu', 'h100', 2
GPU_NODE_SOCKETS, GPU_NODE_MEMORY_MB = 2 * SOCKETS, 2 * REAL_MEMORY_MB
