"""Node inventory and GPU health: what the vendor tools say about each GPU
before, during and after a benchmark, and what of it fails the node.

- ``nvidia``, ``amd``, ``gaudi``: parsers of nvidia-smi CSV, amd-smi /
  rocm-smi JSON and hl-smi CSV into one GPU record (hpcval.records.Gpu);
- ``kernel_log``: NVIDIA Xid, amdgpu, habanalabs and PCIe AER lines;
- ``probe``: the job-side script (probe before/after, ~1 Hz sampler) and
  ``read()``, which turns its files into the check's ``hpcval_health``
  (hpcval.records.Health);
- ``inventory``: the expected inventory of a partition (references/*.yaml);
- ``judge``: failure lines of a health record against the inventory, and
  the cause of a low figure from the same GPU's samples.
"""
