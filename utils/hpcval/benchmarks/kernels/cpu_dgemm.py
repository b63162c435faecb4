"""DGEMM throughput of one process on one core, for node screening.

Multiplies two n x n float64 matrices with numpy (its BLAS, one thread)
again and again for at least --seconds and prints one line:

    cpu_dgemm rank=0 node=n3 n=256 iterations=599 seconds=0.500412 gflops=40.1712 best_slice_gflops=41.0321

``gflops`` is the mean over the whole time, ``best_slice_gflops`` the best
of its slices of about 20 ms.

Each rank of a job runs this on its own core; a slow or throttled core,
or a node held to a CPU quota, shows as fewer GFLOP/s than its peers.
Needs only Python and numpy on the node.
"""
import argparse
import os
import socket
import time

import numpy

SLICE_SECONDS = 0.02


def rank():
    for name in ('SLURM_PROCID', 'PMI_RANK', 'OMPI_COMM_WORLD_RANK'):
        if os.environ.get(name, '').isdigit():
            return int(os.environ[name])
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('-n', type=int, default=256, help='matrix order')
    parser.add_argument('--seconds', type=float, default=0.5,
                        help='shortest time measured')
    args = parser.parse_args()
    rng = numpy.random.default_rng(rank())
    a, b = rng.random((args.n, args.n)), rng.random((args.n, args.n))
    a @ b           # warm-up: first call pays for the BLAS set-up
    flop = 2 * args.n ** 3
    iterations, best, start = 0, 0.0, time.perf_counter()
    while True:
        # slices of about SLICE_SECONDS: the best one is what the core
        # delivers when it runs; a quota or a slow clock caps every slice,
        # while a neighbour's burst on a shared host only hits some
        slice_start, done = time.perf_counter(), 0
        while time.perf_counter() - slice_start < SLICE_SECONDS:
            a @ b
            done += 1
        now = time.perf_counter()
        best = max(best, flop * done / (now - slice_start) / 1e9)
        iterations += done
        elapsed = now - start
        if elapsed >= args.seconds:
            break

    gflops = flop * iterations / elapsed / 1e9
    node = os.environ.get('SLURMD_NODENAME') or socket.gethostname()
    print(f'cpu_dgemm rank={rank()} node={node} n={args.n} '
          f'iterations={iterations} seconds={elapsed:.6f} '
          f'gflops={gflops:.4f} best_slice_gflops={best:.4f}', flush=True)


if __name__ == '__main__':
    main()
