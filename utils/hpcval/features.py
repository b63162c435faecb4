"""Partition and environment features that checks select on."""
# partition features
CPU = 'cpu'                    # run CPU benchmarks on this partition's nodes
MPI = 'mpi'                    # the launcher starts MPI ranks
MULTINODE = 'multinode'        # jobs may span several nodes
GPU = 'gpu'
NVGPU = 'nvgpu'
AMDGPU = 'amdgpu'
GAUDI = 'gaudi'
GPU_AWARE_MPI = 'gpu-aware-mpi'
# the partition features that mean GPUs are expected on its nodes
GPU_FEATURES = (GPU, NVGPU, AMDGPU, GAUDI)
# partition extras {environment: why it cannot be used here}: the GPU checks
# of those environments are listed on the partition and skipped, naming why
# (systems/local.py on a host without GPUs or without their compiler)
UNUSABLE = 'unusable_environs'

# environment features
CUDA = 'cuda'                  # nvcc and the CUDA runtime
ROCM = 'rocm'                  # hipcc and ROCm
OPENMP = 'openmp'
SYNAPSEAI = 'synapseai'         # Habana SynapseAI software (hl_qual)

# environments for CPU-only benchmarks: one run per partition, not one per
# GPU toolchain that also happens to compile CPU code
CPU_ENVIRONS = f'-{CUDA} -{ROCM} -{SYNAPSEAI}'
