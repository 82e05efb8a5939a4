# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""CKY and loss-augmented CKY over a binarized grammar with bounded unary chains.

The hypothesis space
--------------------
A tree over ``n`` tokens is built from

* a *preterminal* (POS tag) ``t`` over every token ``i``, scored ``lex[i, t]``
  (every POS tag is allowed at every position: unknown words are scored from
  their spelling features by the caller);
* a *binary* node ``A -> B C`` over span ``[i, j)`` split at ``s``, scored
  ``w_binary[r]``;
* above the base node of every span (the preterminal or the binary node) one
  *unary chain* ``c`` of at most ``K`` unary rules, scored ``w_chain[c]`` (the
  sum of its rules' weights).  Chains are enumerated by the caller, once per
  grammar; the identity chain (no unary rule) of every symbol is one of them.
  Which chains exist (their maximal length, no repeated symbol, no repeated
  base label) is the caller's decision, so CKY, loss-augmented CKY and any
  brute-force enumeration share one hypothesis space by construction;
* the root symbol ``rho`` (the top of the chain over ``[0, n)``), one of
  ``roots``, scored ``w_root[k]`` for ``rho = roots[k]``;
* optionally, every node with symbol ``A`` over span ``[i, j)`` (preterminal,
  binary or chain node) adds an *anchored* score ``span[span(i, j), A]``:
  features of the span's words conjoined with its label (Hall, Durrett and
  Klein 2014), which decompose over the same nodes as the rules; and every
  binary node with parent ``A`` split at ``s`` adds ``split[s, A]`` (the
  words around the split point conjoined with the parent).

The score of a tree is the sum of its parts: ``w . Psi(x, y)`` of Bauer et al. 2017,
section 2.1 (grammar-rule counts plus lexical features).

Loss augmentation (Bauer et al. 2017, eqs. 3, 5-7)
------------------------------------------
Every decision adds integer counts ``(tp, fp)``:

* keyed counting (losses ``f1``, ``f1_binarized``, ``fp``): a node with
  symbol ``A`` over span ``[i, j)`` adds one true positive if ``key[A] >= 0``
  and ``gold[span(i, j), key[A]] > 0``, and one false positive if
  ``key[A] >= 0`` and the gold table has no such bracket.  With ``key`` the
  base label of non-artificial, non-preterminal symbols this is the
  indicator of eqs. 8-9 (counts on the unbinarized tree); with ``key`` the
  symbol itself it counts on the binarized tree.
* decision counting (loss ``zero_one``): a decision that differs from the
  gold tree's decision at the same span (another POS tag, another binary
  rule or split, another chain) adds one to ``fp``; the tree equals the gold
  tree iff ``fp == 0``.  ``fp`` is capped at ``fp_cap``.

The table ``Pi[i, j, A]`` of eq. 5 is kept as a list of entries
``(tp, fp, score)`` per cell, combined as in eq. 6 (split points, rules, and
all distributions of ``(tp, fp)`` between the children).  An entry is dropped
when another entry of the same cell has ``tp' <= tp``, ``fp' >= fp`` and
``score' >= score``.  ``Delta`` (1 - F1 of eq. 4, #FP, or 0/1) is
non-increasing in ``tp`` and non-decreasing in ``fp``, and counts and scores
add up over subtrees, so every dropped entry has a kept entry whose every
completion is at least as good whenever ``const + score > 0``: the pruned
recursion returns the exact optimum of eq. 7 whenever that optimum is
positive (and a value ``<= 0`` otherwise, which means that no constraint is
violated).  The optimum is then taken over root entries as in eq. 7.

Indexing: span ``[i, j)`` (``0 <= i < j <= n``) has id ``i * (n + 1) + j``.
"""
import numpy as np

cimport numpy as cnp
from libc.math cimport INFINITY
from libc.stdint cimport int8_t, int16_t, int32_t, uint8_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset

cnp.import_array()

cdef enum:
    K_NONE = 0
    K_F1 = 1
    K_FP = 2
    K_ZERO_ONE = 3

#: Loss kinds understood by :func:`cky`.
LOSS_NONE = K_NONE
LOSS_F1 = K_F1
LOSS_FP = K_FP
LOSS_ZERO_ONE = K_ZERO_ONE


cdef struct Entry:
    double score
    int32_t left      # binary: entry of the left child's final cell; chain: base entry
    int32_t right     # binary: entry of the right child's final cell
    int32_t rule      # binary rule id / chain id / POS symbol id
    int16_t tp
    int16_t fp
    int16_t split     # binary: split point; -1 otherwise
    int8_t kind       # 0 preterminal, 1 binary, 2 chain


cdef struct Buffer:
    Entry* data
    Py_ssize_t size
    Py_ssize_t cap


cdef int buf_push(Buffer* b, Entry* e) noexcept nogil:
    cdef Entry* grown
    cdef Py_ssize_t cap
    if b.size == b.cap:
        cap = b.cap * 2 if b.cap > 0 else 1024
        grown = <Entry*> realloc(b.data, cap * sizeof(Entry))
        if grown == NULL:
            return -1
        b.data = grown
        b.cap = cap
    b.data[b.size] = e[0]
    b.size += 1
    return 0


cdef inline int add_candidate(Buffer* cand, double score, Py_ssize_t left, Py_ssize_t right,
                              int rule, int split, int kind, int tp, int fp, int fp_cap,
                              bint single) noexcept nogil:
    """Offer one candidate entry; plain CKY (``single``) keeps only the best."""
    cdef Entry e
    if single and cand.size == 1:
        if score <= cand.data[0].score:
            return 0
        cand.size = 0
    e.score = score
    e.left = <int32_t> left
    e.right = <int32_t> right
    e.rule = rule
    e.split = <int16_t> split
    e.kind = <int8_t> kind
    e.tp = <int16_t> tp
    e.fp = <int16_t> (fp if fp < fp_cap else fp_cap)
    return buf_push(cand, &e)


cdef struct Scratch:
    int32_t* grid       # best candidate per (tp, fp); malloc'ed, grown on demand
    double* best_ge     # per fp: best score over the rows done with fp' >= fp
    Py_ssize_t n_grid
    Py_ssize_t n_fp


cdef int flush_cell(Buffer* cand, Buffer* pool, int32_t* off, int32_t* cnt,
                    bint single, Scratch* sc, double floor) noexcept nogil:
    """Move the non-dominated candidates into the pool as one cell.

    Keeps the best candidate per (tp, fp), then those whose score is above
    every other candidate with tp' <= tp and fp' >= fp (a sweep over tp
    ascending and fp descending with suffix maxima): O(#candidates + T * F).
    Candidates scoring below ``floor`` are dropped first (the outside bound
    of :func:`cky`; ``-INFINITY``: none).
    """
    cdef Py_ssize_t a, k, t, f, tmax = 0, fmax = 0, stride, best
    cdef double run, v
    cdef int32_t* grown
    off[0] = <int32_t> pool.size
    cnt[0] = 0
    if cand.size == 0:
        return 0
    if single:
        best = 0
        for a in range(1, cand.size):
            if cand.data[a].score > cand.data[best].score:
                best = a
        if buf_push(pool, &cand.data[best]) < 0:
            return -1
        cnt[0] = 1
        cand.size = 0
        return 0
    for a in range(cand.size):
        if cand.data[a].score < floor:
            continue
        if cand.data[a].tp > tmax:
            tmax = cand.data[a].tp
        if cand.data[a].fp > fmax:
            fmax = cand.data[a].fp
    stride = fmax + 1
    if stride > sc.n_fp:
        return -1
    if (tmax + 1) * stride > sc.n_grid:
        grown = <int32_t*> realloc(sc.grid, (tmax + 1) * stride * sizeof(int32_t))
        if grown == NULL:
            return -1
        sc.grid = grown
        sc.n_grid = (tmax + 1) * stride
    for k in range((tmax + 1) * stride):
        sc.grid[k] = -1
    for a in range(cand.size):
        if cand.data[a].score < floor:
            continue
        k = cand.data[a].tp * stride + cand.data[a].fp
        if sc.grid[k] < 0 or cand.data[a].score > cand.data[sc.grid[k]].score:
            sc.grid[k] = <int32_t> a
    for f in range(stride):
        sc.best_ge[f] = -INFINITY
    for t in range(tmax + 1):
        run = -INFINITY
        for f in range(fmax, -1, -1):
            k = sc.grid[t * stride + f]
            if k >= 0:
                v = cand.data[k].score
                if v > run and v > sc.best_ge[f]:
                    if buf_push(pool, &cand.data[k]) < 0:
                        return -1
                if v > run:
                    run = v
            if run > sc.best_ge[f]:
                sc.best_ge[f] = run
    cnt[0] = <int32_t> (pool.size - off[0])
    cand.size = 0
    return 0


cdef inline double delta_of(int kind, int tp, int fp, int n_gold) noexcept nogil:
    cdef double denom
    if kind == K_F1:
        denom = n_gold + tp + fp
        if denom <= 0:
            return 0.0
        return 1.0 - 2.0 * tp / denom
    if kind == K_FP:
        return <double> fp
    if kind == K_ZERO_ONE:
        return 1.0 if fp > 0 else 0.0
    return 1.0


cdef int run_cky(int n, int S, const double* lex, const int32_t* pos_ids, int P,
                 const int32_t* binary, const double* w_binary, const int32_t* bin_start,
                 const int32_t* chain_bottom, const double* w_chain, const int32_t* chain_start,
                 const int32_t* chain_nodes, const int32_t* chain_node_start,
                 const double* span, bint has_span, const double* split, bint has_split,
                 const int32_t* key, const uint8_t* gold, int n_keys,
                 const int32_t* gold_rule, const int32_t* gold_split,
                 const int32_t* gold_chain, const int32_t* gold_pos,
                 int loss_kind, int fp_cap, const double* floor_base,
                 const double* floor_final,
                 Buffer* cand, Buffer* pool, Scratch* sc, int32_t* base_off, int32_t* base_cnt,
                 int32_t* final_off, int32_t* final_cnt) noexcept nogil:
    """Fill the base and final cells of every span bottom-up.  Returns -1 on
    memory exhaustion."""
    cdef Entry* eb
    cdef Entry* ec
    cdef int length, i, j, s, A, B, C, r, c, k, m, nt, nf, dtp, dfp, mode_keys, mode_dec
    cdef Py_ssize_t sid, lsid, rsid, cell, lcell, rcell, a, b
    cdef double anchor, at_split
    cdef bint single = loss_kind == K_NONE
    # #FP does not depend on tp: not tracking it keeps one entry per fp
    # count instead of one per (tp, fp) pair
    cdef bint count_tp = loss_kind == K_F1
    cdef int W = n + 1
    mode_keys = loss_kind == K_F1 or loss_kind == K_FP
    mode_dec = loss_kind == K_ZERO_ONE

    for length in range(1, n + 1):
        for i in range(0, n - length + 1):
            j = i + length
            sid = i * W + j
            # ---- base cells -------------------------------------------------
            for A in range(S):
                cell = sid * S + A
                # keyed counting of the node A over [i, j) (eqs. 8-9)
                nt = 0
                nf = 0
                anchor = span[cell] if has_span else 0.0
                if mode_keys and key[A] >= 0:
                    if gold[sid * n_keys + key[A]]:
                        nt = count_tp
                    else:
                        nf = 1
                if length == 1:
                    if lex[i * S + A] == -INFINITY:
                        base_off[cell] = <int32_t> pool.size
                        base_cnt[cell] = 0
                        continue
                    if mode_dec and A != gold_pos[i]:
                        nf = 1
                    if add_candidate(cand, lex[i * S + A] + anchor, -1, -1, A, -1, 0, nt, nf,
                                     fp_cap, single) < 0:
                        return -1
                else:
                    for r in range(bin_start[A], bin_start[A + 1]):
                        B = binary[3 * r + 1]
                        C = binary[3 * r + 2]
                        for s in range(i + 1, j):
                            at_split = split[s * S + A] if has_split else 0.0
                            lcell = (i * W + s) * S + B
                            rcell = (s * W + j) * S + C
                            if final_cnt[lcell] == 0 or final_cnt[rcell] == 0:
                                continue
                            dfp = nf
                            if mode_dec and (gold_rule[sid] != r or gold_split[sid] != s):
                                dfp = 1
                            for a in range(final_off[lcell], final_off[lcell] + final_cnt[lcell]):
                                eb = &pool.data[a]
                                for b in range(final_off[rcell], final_off[rcell] + final_cnt[rcell]):
                                    ec = &pool.data[b]
                                    if add_candidate(cand,
                                                     w_binary[r] + anchor + at_split
                                                     + eb.score + ec.score,
                                                     a, b, r, s, 1, nt + eb.tp + ec.tp,
                                                     dfp + eb.fp + ec.fp, fp_cap, single) < 0:
                                        return -1
                if flush_cell(cand, pool, &base_off[cell], &base_cnt[cell], single, sc,
                              floor_base[cell] if floor_base != NULL else -INFINITY) < 0:
                    return -1
            # ---- final cells: one chain (possibly the identity) on top -------
            for A in range(S):
                cell = sid * S + A
                for c in range(chain_start[A], chain_start[A + 1]):
                    B = chain_bottom[c]
                    lcell = sid * S + B
                    if base_cnt[lcell] == 0:
                        continue
                    dtp = 0
                    dfp = 0
                    anchor = 0.0
                    if has_span:
                        for k in range(chain_node_start[c], chain_node_start[c + 1]):
                            anchor += span[sid * S + chain_nodes[k]]
                    if mode_keys:
                        for k in range(chain_node_start[c], chain_node_start[c + 1]):
                            m = key[chain_nodes[k]]
                            if m >= 0:
                                if gold[sid * n_keys + m]:
                                    dtp += count_tp
                                else:
                                    dfp += 1
                    elif mode_dec and gold_chain[sid] != c:
                        dfp = 1
                    for a in range(base_off[lcell], base_off[lcell] + base_cnt[lcell]):
                        eb = &pool.data[a]
                        if add_candidate(cand, w_chain[c] + anchor + eb.score, a, -1, c, -1, 2,
                                         eb.tp + dtp, eb.fp + dfp, fp_cap, single) < 0:
                            return -1
                if flush_cell(cand, pool, &final_off[cell], &final_cnt[cell], single, sc,
                              floor_final[cell] if floor_final != NULL else -INFINITY) < 0:
                    return -1
    return 0


def cky(int n, double[:, ::1] lex, int32_t[::1] pos_ids,
        int32_t[:, ::1] binary, double[::1] w_binary, int32_t[::1] bin_start,
        int32_t[::1] chain_top, int32_t[::1] chain_bottom, double[::1] w_chain,
        int32_t[::1] chain_start, int32_t[::1] chain_nodes, int32_t[::1] chain_node_start,
        int32_t[::1] roots, double[::1] w_root,
        int loss_kind=LOSS_NONE, double const=0.0,
        int32_t[::1] key=None, uint8_t[:, ::1] gold=None, int n_gold=0,
        int32_t[::1] gold_rule=None, int32_t[::1] gold_split=None,
        int32_t[::1] gold_chain=None, int32_t[::1] gold_pos=None, int fp_cap=32767,
        double[:, ::1] span=None, double[:, ::1] split=None, bint prune=False):
    """Best (or most violating) tree of one sentence.

    Parameters
    ----------
    n : int
        Number of tokens, ``>= 1``.
    lex : (n, S) float64
        Preterminal scores; ``-inf`` for symbols that are not POS tags.
    pos_ids : (P,) int32
        Symbol ids of the POS tags (for validation only).
    binary : (R2, 3) int32
        Binary rules ``(A, B, C)`` sorted by ``A``; ``bin_start`` (S + 1,) gives
        each parent's rows.
    w_binary : (R2,) float64
    chain_top, chain_bottom : (Q,) int32
        Top and bottom symbol of each unary chain, sorted by top;
        ``chain_start`` (S + 1,) gives each top's chains.
    w_chain : (Q,) float64
    chain_nodes, chain_node_start : int32
        The symbols of chain ``c`` above its bottom are
        ``chain_nodes[chain_node_start[c]:chain_node_start[c + 1]]``.
    roots : (R0,) int32, w_root : (R0,) float64
        Allowed root symbols and their scores.
    loss_kind : {0, 1, 2, 3}
        ``LOSS_NONE`` (plain CKY, eq. 1), ``LOSS_F1`` (Delta = 1 - F1, eq. 4),
        ``LOSS_FP`` (Delta = #FP), ``LOSS_ZERO_ONE``.
    const : float
        The constant ``1 - w . Psi(x, y*)`` of eq. 3.
    key : (S,) int32, gold : ((n + 1) ** 2, n_keys) uint8, n_gold : int
        Keyed counting (``LOSS_F1``, ``LOSS_FP``): bracket keys per symbol
        (-1 = not counted), gold bracket table by span id, and ``|y*|``.
    gold_rule, gold_split, gold_chain : ((n + 1) ** 2,) int32, gold_pos : (n,) int32
        Decision counting (``LOSS_ZERO_ONE``): the gold tree's binary rule,
        split and chain per span (-1 where the gold tree has no node), and its
        POS tags.
    fp_cap : int
        ``fp`` saturates here (1 for ``LOSS_ZERO_ONE``).
    span : ((n + 1) ** 2, S) float64 or None
        Anchored scores: ``span[i * (n + 1) + j, A]`` is added for every node
        with symbol ``A`` over ``[i, j)`` (None: no anchored scores).
    split : (n + 1, S) float64 or None
        ``split[s, A]`` is added for every binary node with parent ``A``
        split at ``s`` (None: none).
    prune : bool
        With a loss: parse without it first, compute every cell's Viterbi
        outside score (the best score of the rest of a tree around it), and
        drop every entry ``e`` of a cell whose ``const + e.score + outside``
        is negative: every tree through it has ``const + score <= 0`` and so
        a value ``Delta * (const + score) <= 0``, which violates no
        constraint.  The best entry of every cell is kept, so a tree is
        returned whenever one exists.  The result is unchanged whenever the
        optimum of eq. 7 is positive (otherwise its value stays ``<= 0``).

    Returns
    -------
    None if no tree of length ``n`` is derived from a root symbol, else a dict
    with ``value`` (score for ``LOSS_NONE``, else ``Delta * (const + score)``),
    ``score``, ``tp`` (0 for ``LOSS_FP``, which does not track it), ``fp``,
    ``delta``, ``root``, ``nodes`` (int32 (M, 4) rows
    ``(symbol, start, end, parent_row)`` in preorder, parent -1 at the root),
    ``binary_rules``, ``chains`` (ids used, with repetition) and ``pos``
    (the POS symbol of every token).
    """
    cdef int S = lex.shape[1]
    cdef int P = pos_ids.shape[0]
    cdef int R2 = binary.shape[0]
    cdef int Q = chain_top.shape[0]
    cdef int W = n + 1
    cdef int n_keys = 0
    cdef int k, q, r
    if n < 1:
        raise ValueError(f"cannot parse an empty sentence (n={n})")
    if n > 32000:
        raise ValueError(f"sentence of {n} tokens is longer than the kernel's limit of 32000")
    if lex.shape[0] != n:
        raise ValueError(f"lex has {lex.shape[0]} rows; expected n={n}")
    if binary.shape[1] != 3 or w_binary.shape[0] != R2 or bin_start.shape[0] != S + 1:
        raise ValueError("binary rules, their weights and bin_start have inconsistent shapes")
    if (chain_bottom.shape[0] != Q or w_chain.shape[0] != Q or chain_start.shape[0] != S + 1
            or chain_node_start.shape[0] != Q + 1):
        raise ValueError("chain arrays have inconsistent shapes")
    if roots.shape[0] != w_root.shape[0]:
        raise ValueError("roots and w_root differ in length")
    a_bin = np.asarray(binary)
    if R2 and (a_bin.min() < 0 or a_bin.max() >= S):
        raise ValueError("binary rule symbol out of range")
    if R2 and np.any(np.diff(a_bin[:, 0]) < 0):
        raise ValueError("binary rules must be sorted by parent")
    if not np.array_equal(np.asarray(bin_start), np.searchsorted(a_bin[:, 0], np.arange(S + 1))):
        raise ValueError("bin_start does not index the binary rules by parent")
    a_top = np.asarray(chain_top)
    if Q and (a_top.min() < 0 or a_top.max() >= S or np.asarray(chain_bottom).min() < 0
              or np.asarray(chain_bottom).max() >= S):
        raise ValueError("chain symbol out of range")
    if Q and np.any(np.diff(a_top) < 0):
        raise ValueError("chains must be sorted by top symbol")
    if not np.array_equal(np.asarray(chain_start), np.searchsorted(a_top, np.arange(S + 1))):
        raise ValueError("chain_start does not index the chains by top symbol")
    a_cns = np.asarray(chain_node_start)
    if a_cns[0] != 0 or np.any(np.diff(a_cns) < 0) or a_cns[Q] != chain_nodes.shape[0]:
        raise ValueError("chain_node_start is not a valid offset array")
    if chain_nodes.shape[0] and (np.asarray(chain_nodes).min() < 0
                                 or np.asarray(chain_nodes).max() >= S):
        raise ValueError("chain node symbol out of range")
    if roots.shape[0] and (np.asarray(roots).min() < 0 or np.asarray(roots).max() >= S):
        raise ValueError("root symbol out of range")
    if span is not None and (span.shape[0] != W * W or span.shape[1] != S):
        raise ValueError(f"span has shape {(span.shape[0], span.shape[1])}; expected "
                         f"{(W * W, S)}")
    if span is not None and not np.isfinite(np.asarray(span)).all():
        raise ValueError("span scores must be finite")
    if split is not None and (split.shape[0] != W or split.shape[1] != S):
        raise ValueError(f"split has shape {(split.shape[0], split.shape[1])}; expected "
                         f"{(W, S)}")
    if split is not None and not np.isfinite(np.asarray(split)).all():
        raise ValueError("split scores must be finite")
    if loss_kind not in (LOSS_NONE, LOSS_F1, LOSS_FP, LOSS_ZERO_ONE):
        raise ValueError(f"unknown loss_kind {loss_kind}")
    if fp_cap < 1 or fp_cap > 32767:
        raise ValueError("fp_cap must be in [1, 32767]")
    if loss_kind == LOSS_ZERO_ONE:
        fp_cap = 1

    cdef uint8_t dummy_gold = 0
    cdef int32_t dummy_int = -1
    cdef const int32_t* p_key = &dummy_int
    cdef const uint8_t* p_gold = &dummy_gold
    cdef const int32_t* p_grule = &dummy_int
    cdef const int32_t* p_gsplit = &dummy_int
    cdef const int32_t* p_gchain = &dummy_int
    cdef const int32_t* p_gpos = &dummy_int
    if loss_kind == LOSS_F1 or loss_kind == LOSS_FP:
        if key is None or gold is None:
            raise ValueError("key and gold are required for keyed losses")
        n_keys = gold.shape[1]
        if key.shape[0] != S or gold.shape[0] != W * W:
            raise ValueError("key or gold has the wrong shape")
        if np.asarray(key).max(initial=-1) >= n_keys or np.asarray(key).min(initial=0) < -1:
            raise ValueError("key out of range")
        if n_gold < 0:
            raise ValueError("n_gold must be >= 0")
        p_key = &key[0]
        p_gold = &gold[0, 0] if n_keys > 0 else &dummy_gold
        if n_keys == 0:
            # no key can match: keep the pointers valid, every key is -1
            if np.any(np.asarray(key) >= 0):
                raise ValueError("key out of range")
    elif loss_kind == LOSS_ZERO_ONE:
        if gold_rule is None or gold_split is None or gold_chain is None or gold_pos is None:
            raise ValueError("gold_rule, gold_split, gold_chain and gold_pos are required "
                             "for the 0/1 loss")
        if (gold_rule.shape[0] != W * W or gold_split.shape[0] != W * W
                or gold_chain.shape[0] != W * W or gold_pos.shape[0] != n):
            raise ValueError("gold decision arrays have the wrong shape")
        p_grule = &gold_rule[0]
        p_gsplit = &gold_split[0]
        p_gchain = &gold_chain[0]
        p_gpos = &gold_pos[0]
    cdef Py_ssize_t n_cells = <Py_ssize_t> W * W * S
    base_off_a = np.zeros(n_cells, dtype=np.int32)
    base_cnt_a = np.zeros(n_cells, dtype=np.int32)
    final_off_a = np.zeros(n_cells, dtype=np.int32)
    final_cnt_a = np.zeros(n_cells, dtype=np.int32)
    cdef int32_t[::1] base_off = base_off_a
    cdef int32_t[::1] base_cnt = base_cnt_a
    cdef int32_t[::1] final_off = final_off_a
    cdef int32_t[::1] final_cnt = final_cnt_a
    cdef Buffer pool, cand
    pool.data = NULL
    pool.size = 0
    pool.cap = 0
    cand.data = NULL
    cand.size = 0
    cand.cap = 0
    # tp and fp never exceed the number of nodes of a tree
    cdef Py_ssize_t max_nodes = (2 * n - 1) * (chain_max_len(chain_node_start) + 1) + n + 1
    if loss_kind != K_NONE and max_nodes > 32767:
        raise ValueError(f"a sentence of {n} tokens can have {max_nodes} nodes; the (tp, fp) "
                         "counts of loss-augmented CKY are limited to 32767")
    cdef Scratch scratch
    scratch.n_fp = max_nodes + 1
    scratch.n_grid = 0
    scratch.grid = NULL
    best_a = np.empty(scratch.n_fp, dtype=np.float64)
    cdef double[::1] best_v = best_a
    scratch.best_ge = &best_v[0]
    cdef int status
    cdef const int32_t* p_binary = &binary[0, 0] if R2 else &dummy_int
    cdef const double* p_wb = &w_binary[0] if R2 else NULL
    cdef const int32_t* p_cb = &chain_bottom[0] if Q else &dummy_int
    cdef const double* p_wc = &w_chain[0] if Q else NULL
    cdef const int32_t* p_cn = &chain_nodes[0] if chain_nodes.shape[0] else &dummy_int
    cdef const int32_t* p_pos = &pos_ids[0] if P else &dummy_int
    cdef double dummy_span = 0.0
    cdef bint has_span = span is not None
    cdef const double* p_span = &span[0, 0] if has_span else &dummy_span
    cdef bint has_split = split is not None
    cdef const double* p_split = &split[0, 0] if has_split else &dummy_span
    cdef bint outside = prune and loss_kind != LOSS_NONE
    floor_base_a = np.full(n_cells if outside else 1, -np.inf)
    floor_final_a = np.full(n_cells if outside else 1, -np.inf)
    cdef double[::1] floor_base = floor_base_a
    cdef double[::1] floor_final = floor_final_a
    status = 0
    with nogil:
        if outside:
            # plain CKY, then the outside scores of every cell give floors
            status = run_cky(n, S, &lex[0, 0], p_pos, P, p_binary, p_wb, &bin_start[0],
                             p_cb, p_wc, &chain_start[0], p_cn, &chain_node_start[0],
                             p_span, has_span, p_split, has_split, p_key, p_gold, n_keys,
                             p_grule, p_gsplit, p_gchain, p_gpos, K_NONE, fp_cap, NULL, NULL,
                             &cand, &pool, &scratch, &base_off[0], &base_cnt[0],
                             &final_off[0], &final_cnt[0])
            if status == 0:
                outside_floors(n, S, pool, p_binary, p_wb, &bin_start[0], p_cb, p_wc,
                               &chain_start[0], p_cn, &chain_node_start[0], p_span, has_span,
                               p_split, has_split, &roots[0] if roots.shape[0] else &dummy_int,
                               &w_root[0] if roots.shape[0] else NULL, roots.shape[0], const,
                               &base_off[0], &base_cnt[0], &final_off[0], &final_cnt[0],
                               &floor_base[0], &floor_final[0])
                pool.size = 0
        if status == 0:
            status = run_cky(n, S, &lex[0, 0], p_pos, P, p_binary, p_wb, &bin_start[0],
                             p_cb, p_wc, &chain_start[0], p_cn, &chain_node_start[0],
                             p_span, has_span, p_split, has_split, p_key, p_gold, n_keys,
                             p_grule, p_gsplit, p_gchain, p_gpos, loss_kind, fp_cap,
                             &floor_base[0] if outside else NULL,
                             &floor_final[0] if outside else NULL,
                             &cand, &pool, &scratch, &base_off[0], &base_cnt[0],
                             &final_off[0], &final_cnt[0])
    try:
        if status < 0:
            raise MemoryError("loss-augmented CKY ran out of memory (or a count exceeded "
                              "the node bound)")
        return _best_root(n, S, pool, roots, w_root, final_off, final_cnt, loss_kind, const,
                          n_gold, binary, chain_top, chain_bottom)
    finally:
        free(pool.data)
        free(cand.data)
        free(scratch.grid)


cdef void outside_floors(int n, int S, Buffer pool, const int32_t* binary,
                         const double* w_binary, const int32_t* bin_start,
                         const int32_t* chain_bottom, const double* w_chain,
                         const int32_t* chain_start, const int32_t* chain_nodes,
                         const int32_t* chain_node_start, const double* span, bint has_span,
                         const double* split, bint has_split, const int32_t* roots,
                         const double* w_root, Py_ssize_t n_roots, double const,
                         const int32_t* base_off, const int32_t* base_cnt,
                         const int32_t* final_off, const int32_t* final_cnt,
                         double* floor_base, double* floor_final) noexcept nogil:
    """Viterbi outside scores of the cells of a plain CKY pass (one entry per
    cell in ``pool``), turned into floors: an entry of a cell scoring below
    ``-const - outside`` cannot complete to a tree with ``const + score > 0``.
    The floor arrays hold the outside scores while they are computed (spans
    from the longest down; in a span, final cells before base cells)."""
    cdef int W = n + 1, length, i, j, s, A, B, C, r, c, k
    cdef Py_ssize_t sid, cell, lcell, rcell, n_cells = <Py_ssize_t> W * W * S
    cdef double o, v, anchor, li, ri, tol
    for cell in range(n_cells):
        floor_base[cell] = -INFINITY
        floor_final[cell] = -INFINITY
    for k in range(n_roots):
        cell = (<Py_ssize_t> n) * S + roots[k]          # span [0, n)
        if w_root[k] > floor_final[cell]:
            floor_final[cell] = w_root[k]
    for length in range(n, 0, -1):
        for i in range(0, n - length + 1):
            j = i + length
            sid = i * W + j
            # final cells -> the base under each chain
            for A in range(S):
                o = floor_final[sid * S + A]
                if o == -INFINITY or final_cnt[sid * S + A] == 0:
                    continue
                for c in range(chain_start[A], chain_start[A + 1]):
                    B = chain_bottom[c]
                    if base_cnt[sid * S + B] == 0:
                        continue
                    anchor = 0.0
                    if has_span:
                        for k in range(chain_node_start[c], chain_node_start[c + 1]):
                            anchor += span[sid * S + chain_nodes[k]]
                    v = o + w_chain[c] + anchor
                    if v > floor_base[sid * S + B]:
                        floor_base[sid * S + B] = v
            if length == 1:
                continue
            # base cells -> the final cells of their children
            for A in range(S):
                cell = sid * S + A
                o = floor_base[cell]
                if o == -INFINITY or base_cnt[cell] == 0:
                    continue
                if has_span:
                    o += span[cell]
                for r in range(bin_start[A], bin_start[A + 1]):
                    B = binary[3 * r + 1]
                    C = binary[3 * r + 2]
                    for s in range(i + 1, j):
                        lcell = (i * W + s) * S + B
                        rcell = (s * W + j) * S + C
                        if final_cnt[lcell] == 0 or final_cnt[rcell] == 0:
                            continue
                        li = pool.data[final_off[lcell]].score
                        ri = pool.data[final_off[rcell]].score
                        v = o + w_binary[r] + (split[s * S + A] if has_split else 0.0)
                        if v + ri > floor_final[lcell]:
                            floor_final[lcell] = v + ri
                        if v + li > floor_final[rcell]:
                            floor_final[rcell] = v + li
    # outside -> floor, with a margin for rounding; a cell's best entry is
    # always kept, so that the Viterbi tree (and a result) survives
    for cell in range(n_cells):
        for k in range(2):
            v = floor_base[cell] if k == 0 else floor_final[cell]
            if v == -INFINITY or (base_cnt[cell] if k == 0 else final_cnt[cell]) == 0:
                v = INFINITY      # empty, or on no complete tree: drop every entry
            else:
                tol = 1e-9 * (1.0 + (v if v > 0 else -v) + (const if const > 0 else -const))
                v = -const - v - tol
                li = pool.data[base_off[cell] if k == 0 else final_off[cell]].score
                li -= 1e-9 * (1.0 + (li if li > 0 else -li))
                if li < v:
                    v = li
            if k == 0:
                floor_base[cell] = v
            else:
                floor_final[cell] = v


cdef Py_ssize_t chain_max_len(int32_t[::1] chain_node_start):
    cdef Py_ssize_t c, m = 0
    for c in range(chain_node_start.shape[0] - 1):
        if chain_node_start[c + 1] - chain_node_start[c] > m:
            m = chain_node_start[c + 1] - chain_node_start[c]
    return m


cdef object _best_root(int n, int S, Buffer pool, int32_t[::1] roots, double[::1] w_root,
                       int32_t[::1] final_off, int32_t[::1] final_cnt, int loss_kind,
                       double const, int n_gold, int32_t[:, ::1] binary,
                       int32_t[::1] chain_top, int32_t[::1] chain_bottom):
    """Eq. 7: maximise over root entries, then backtrack."""
    cdef Py_ssize_t sid = n  # span [0, n)
    cdef Py_ssize_t cell, a, best = -1
    cdef int k, best_root = -1
    cdef double v, best_v = -INFINITY, score
    cdef Entry* e
    for k in range(roots.shape[0]):
        cell = sid * S + roots[k]
        for a in range(final_off[cell], final_off[cell] + final_cnt[cell]):
            e = &pool.data[a]
            score = e.score + w_root[k]
            if loss_kind == K_NONE:
                v = score
            else:
                v = delta_of(loss_kind, e.tp, e.fp, n_gold) * (const + score)
            if best < 0 or v > best_v:
                best_v = v
                best = a
                best_root = k
    if best < 0:
        return None
    e = &pool.data[best]
    out = {"value": best_v, "score": e.score + w_root[best_root], "tp": int(e.tp),
           "fp": int(e.fp), "delta": delta_of(loss_kind, e.tp, e.fp, n_gold),
           "root": int(roots[best_root]), "n_entries": int(pool.size)}
    # backtrack: rows (kind, id, start, end, parent row) in preorder, kind 1 for
    # a chain (id = chain id), kind 0 for a binary node (id = rule id); the
    # preterminal under a chain whose base is a POS tag is ``pos[start]``.
    decisions = []
    bin_used = []
    chains_used = []
    pos = np.full(n, -1, dtype=np.int32)
    stack = [(best, 0, n, -1)]
    cdef Entry* base
    while stack:
        a, i, j, parent = stack.pop()
        e = &pool.data[a]
        chains_used.append(e.rule)
        decisions.append((1, int(e.rule), i, j, parent))
        row = len(decisions) - 1
        base = &pool.data[e.left]
        if base.kind == 0:
            pos[i] = base.rule
        else:
            bin_used.append(base.rule)
            decisions.append((0, int(base.rule), i, j, row))
            brow = len(decisions) - 1
            # right first so that the left subtree is popped first (preorder)
            stack.append((base.right, int(base.split), j, brow))
            stack.append((base.left, i, int(base.split), brow))
    out["decisions"] = decisions
    out["binary_rules"] = np.asarray(bin_used, dtype=np.int64)
    out["chains"] = np.asarray(chains_used, dtype=np.int64)
    out["pos"] = pos
    return out
