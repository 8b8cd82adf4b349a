// Pages a spare child writes ahead of its job.
//
// The fork server forks each job's child ahead of the job (a "spare", docs/sandbox.md):
// the spare isolates itself and then waits. Every page a child writes that it shares with
// the warm server costs a copy-on-write page fault, ~13-20 us on a VM with expensive
// faults, and a typical job's child writes a few hundred such pages (the interpreter's
// state, its allocator's pools, the stack) before it does anything of its own. Those
// pages are largely the same for every job. The server program's warm-up may learn them
// once (ProbeWrittenPages: a trusted fork of the warm server runs sample work and lists
// the pages it wrote) and register them (SetSparePrefault); each spare then makes its own
// copies of them (MADV_POPULATE_WRITE: contents unchanged) before its job arrives, off the
// caller's critical path. A page in the list that a job does not write only costs the
// spare's time; nothing the list holds can change what a job computes.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

namespace egca::sandbox {

// [start, end) byte ranges, page-aligned.
using PageRanges = std::vector<std::pair<uintptr_t, uintptr_t>>;

// At most this many pages are registered (the rest of a longer list is dropped).
constexpr size_t kMaxSparePrefaultPages = 4096;

// In a fork of the calling process: runs `exercise`, then lists the pages of the calling
// process's private writable mappings that the fork wrote or touched first (mapped by it
// alone: /proc/self/pagemap's "exclusively mapped" bit). Empty on any failure (no fork,
// no pagemap) or when `exercise` returns false. Call only in a single-threaded process.
PageRanges ProbeWrittenPages(const std::function<bool()>& exercise);

// Registers the ranges every later spare child of this (server) process populates
// writable before its job. Call in the server before it forks children (its warm-up).
void SetSparePrefault(PageRanges ranges);

}  // namespace egca::sandbox
