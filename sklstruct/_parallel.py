"""Threads over sentences: the process's thread pool, the ranges of sentences
each thread takes, and how many threads ``n_jobs`` means.

The chain kernels release the GIL, so the taggers run blocks of sentences in
threads of one pool kept for the process (:func:`run`), each thread taking
the next range not yet taken.  :func:`guided_ranges` cuts prediction's ranges
(shrinking, as OpenMP's "guided" schedule), :func:`block_ranges` the fixed
ranges of whole blocks that the CRF's gradient uses.  Results never depend on
the cuts or the number of threads.
"""
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np
from joblib import cpu_count, effective_n_jobs

#: Tokens per range of prediction's threads, at least (the smallest ranges,
#: at the end, take a tenth of a millisecond to decode), and per thread.
MIN_RANGE_TOKENS = 2048

_POOL = {"executor": None, "lock": threading.Lock()}
_POOL_PREFIX = "sklstruct-blocks"


@functools.cache
def _cpus():
    """joblib's count of the CPUs this process may use, read once: it reads
    the cgroup quota files at each call, which costs a noticeable share of
    the time a thread takes to tag a small test set."""
    return cpu_count()


def n_threads(n_jobs, n_tasks):
    """Threads to run ``n_tasks`` with: joblib's reading of ``n_jobs``, at
    most the CPUs and the tasks, at least 1."""
    return max(1, min(effective_n_jobs(n_jobs), _cpus(), n_tasks))


def _submit(worker, n):
    """Futures of ``n`` calls of ``worker()`` run by the process's thread
    pool for the taggers' blocks, which has at least ``n`` threads.  The pool
    is kept from call to call: joblib's threading backend starts one at every
    call, which can take longer than decoding a test set.  Submitting under
    the lock: a pool replaced by a larger one is shut down only after its
    callers have submitted (its queued work still runs)."""
    with _POOL["lock"]:
        executor = _POOL["executor"]
        if executor is None or executor._max_workers < n:
            if executor is not None:
                executor.shutdown(wait=False)
            executor = _POOL["executor"] = ThreadPoolExecutor(
                n, thread_name_prefix=_POOL_PREFIX)
        return [executor.submit(worker) for _ in range(n)]


def _forget_pool():
    # a forked child has the pool object but not its threads
    _POOL["executor"] = None
    _POOL["lock"] = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def block_ranges(n_jobs, block, n_sentences, per_thread=1):
    """(start, stop) sentence ranges of whole blocks of ``block`` sentences,
    ``per_thread`` ranges per thread of ``n_jobs`` (one range for one
    thread): :func:`run`'s threads take the next range as they finish one,
    so with several per thread one that its CPU gives less time (a machine
    shared with other work) takes fewer, instead of the others waiting for
    it."""
    n_blocks = -(-n_sentences // block)
    k = n_threads(n_jobs, n_blocks)
    k = min(k * per_thread, n_blocks) if k > 1 else k
    cuts = np.linspace(0, n_blocks, k + 1).round().astype(int) * block
    return [(int(a), int(min(b, n_sentences))) for a, b in zip(cuts[:-1], cuts[1:])
            if a < min(b, n_sentences)]


def guided_ranges(n_jobs, offsets):
    """(start, stop) sentence ranges for prediction's threads, of the
    sentences whose rows start at ``offsets`` (n_sentences + 1).

    One range when one thread does the work (``n_jobs``, at most one thread
    per :data:`MIN_RANGE_TOKENS` tokens).  For k threads, ranges of
    decreasing size, as OpenMP's "guided" schedule: each takes 1 / (2k) of
    the tokens not yet in a range, at least ``MIN_RANGE_TOKENS``, each cut
    at the next sentence.  The threads take the next range as they finish
    one (:func:`run`), so a thread on a slower CPU (a virtual CPU whose host
    is busy) takes fewer and the threads finish together, where equal shares
    would leave one waiting for the other."""
    n, total = len(offsets) - 1, int(offsets[-1])
    k = n_threads(n_jobs, -(-total // MIN_RANGE_TOKENS))
    if k <= 1:
        return [(0, n)] if n else []
    cuts, done = [], 0
    while done < total:
        done += max((total - done) // (2 * k), MIN_RANGE_TOKENS)
        cuts.append(done)
    bounds = np.unique(np.r_[0, np.searchsorted(offsets, cuts[:-1]), n]).tolist()
    return list(zip(bounds[:-1], bounds[1:]))


def run(n_jobs, fn, ranges):
    """[fn(start, stop) for each range], in threads when there are several
    (the kernels release the GIL): the calling thread and ``n_jobs`` - 1 of
    the pool kept for the process (see :func:`_submit`) each take the next
    range not yet taken until none is left.  After an error no range is
    started and the error is raised once the ranges running have finished."""
    k = n_threads(n_jobs, len(ranges))
    if k <= 1 or threading.current_thread().name.startswith(_POOL_PREFIX):
        # (inside a pool thread, waiting for the pool could deadlock)
        return [fn(a, b) for a, b in ranges]
    results = [None] * len(ranges)
    todo = iter(enumerate(ranges))      # next() on it is atomic under the GIL
    failed = []

    def worker():
        for i, (a, b) in todo:
            if failed:
                return
            try:
                results[i] = fn(a, b)
            except BaseException:
                failed.append(True)
                raise

    futures = _submit(worker, k - 1)
    try:
        worker()
    finally:
        wait(futures)            # no range left running on an error
    for f in futures:
        f.result()
    return results
