// The CPU runtime of model work: host memory and compute threads.
//
// Host memory. A training step on CPU allocates and frees the same large tensors every
// micro-batch (logits of T x vocab floats, activations, gradients). glibc serves every block
// above its mmap threshold (at most 32 MiB) with a fresh mmap and returns it with munmap on
// free, so each step faults every page of those tensors in again. Where a page fault is
// expensive (virtual machines with nested paging: ~15 us per fault, docs/PERFORMANCE.md)
// that is most of a step. RetainFreedHostMemory() makes glibc serve large blocks from the
// heap (no mmap) and never trim it, so a freed tensor's pages are reused without faults; the
// process keeps its peak heap until it exits (what a training process holds anyway). Call it
// first thing in main(), before LibTorch allocates: egca-train, egca-eval and learns_pretrain
// do. It changes process-wide allocator settings, so the library never calls it on its own;
// EGCA_KEEP_FREED_MEMORY=0 in the environment turns it off. Returns whether it applied them.
//
// Threads. at::set_num_threads governs ATen's OpenMP pool but not OpenBLAS's own pool (Debian's
// LibTorch calls OpenBLAS for GEMM), which otherwise sizes itself from OMP_NUM_THREADS or the
// core count. A GEMM split over a different number of threads can round differently, so the
// same run launched by torchrun (which exports OMP_NUM_THREADS=1) and by hand gave different
// weights. SetComputeThreads(n) sets both, so `run.threads` alone decides the arithmetic.
#pragma once

namespace egca::trainer {

bool RetainFreedHostMemory();

// n > 0: ATen's intra-op threads and, when OpenBLAS is the BLAS in use, its threads.
// Returns whether OpenBLAS was found and set.
bool SetComputeThreads(int n);

}  // namespace egca::trainer
