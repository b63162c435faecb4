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
# partition extras {environment: why it cannot be used here}: its GPU
# checks are listed and skipped, naming why (systems/local.py)
UNUSABLE = 'unusable_environs'

# environment features
CUDA = 'cuda'                  # nvcc and the CUDA runtime
ROCM = 'rocm'                  # hipcc and ROCm
OPENMP = 'openmp'
SYNAPSEAI = 'synapseai'         # Habana SynapseAI software (hl_qual)

# environments for CPU-only benchmarks: one run per partition, not one per
# GPU toolchain that also happens to compile CPU code
CPU_ENVIRONS = f'-{CUDA} -{ROCM} -{SYNAPSEAI}'
