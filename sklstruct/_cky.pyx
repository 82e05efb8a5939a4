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


cdef int run_cky(int n, const Rules* G, const Scores* w, const Gold* gd, int loss_kind,
                 Chart* ch) noexcept nogil:
    """Fill the base and final cells of every span bottom-up.  Returns -1 on
    memory exhaustion."""
    cdef int S = G.S
    cdef const double* lex = w.lex
    cdef const int32_t* binary = G.binary
    cdef const double* w_binary = w.w_binary
    cdef const int32_t* bin_start = G.bin_start
    cdef const int32_t* chain_bottom = G.chain_bottom
    cdef const double* w_chain = w.w_chain
    cdef const int32_t* chain_start = G.chain_start
    cdef const int32_t* chain_nodes = G.chain_nodes
    cdef const int32_t* chain_node_start = G.chain_node_start
    cdef const double* span = w.span
    cdef bint has_span = w.has_span
    cdef const double* split = w.split
    cdef bint has_split = w.has_split
    cdef const int32_t* key = gd.key
    cdef const uint8_t* gold = gd.table
    cdef int n_keys = gd.n_keys
    cdef const int32_t* gold_rule = gd.rule
    cdef const int32_t* gold_split = gd.split
    cdef const int32_t* gold_chain = gd.chain
    cdef const int32_t* gold_pos = gd.pos
    cdef int fp_cap = gd.fp_cap
    cdef const double* floor_base = ch.floor_base
    cdef const double* floor_final = ch.floor_final
    cdef Buffer* cand = &ch.cand
    cdef Buffer* pool = &ch.pool
    cdef Scratch* sc = &ch.sc
    cdef int32_t* base_off = ch.base_off
    cdef int32_t* base_cnt = ch.base_cnt
    cdef int32_t* final_off = ch.final_off
    cdef int32_t* final_cnt = ch.final_cnt
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


cdef Py_ssize_t chain_max_len(int32_t[::1] chain_node_start):
    cdef Py_ssize_t c, m = 0
    for c in range(chain_node_start.shape[0] - 1):
        if chain_node_start[c + 1] - chain_node_start[c] > m:
            m = chain_node_start[c + 1] - chain_node_start[c]
    return m


cdef class CKYGrammar:
    """A binarized grammar in the layout of :func:`cky`, validated once.

    Parameters
    ----------
    n_symbols : int
        Symbols are ``0 .. n_symbols - 1`` (``S``).
    binary : (R2, 3) int32
        Binary rules ``(A, B, C)`` sorted by ``A``.
    bin_start : (S + 1,) int32
        Each parent's rows of ``binary``.
    chain_top, chain_bottom : (Q,) int32
        Top and bottom symbol of each unary chain, sorted by top.
    chain_start : (S + 1,) int32
        Each top symbol's chains.
    chain_nodes, chain_node_start : int32
        The symbols of chain ``c`` above its bottom are
        ``chain_nodes[chain_node_start[c]:chain_node_start[c + 1]]``.
    roots : (R0,) int32
        Symbols allowed at the root.

    The arrays are kept (not copied) and must not be modified.
    """
    def __init__(self, int n_symbols, int32_t[:, ::1] binary, int32_t[::1] bin_start,
                 int32_t[::1] chain_top, int32_t[::1] chain_bottom, int32_t[::1] chain_start,
                 int32_t[::1] chain_nodes, int32_t[::1] chain_node_start,
                 int32_t[::1] roots):
        cdef int S = n_symbols
        cdef Py_ssize_t R2 = binary.shape[0], Q = chain_top.shape[0]
        if binary.shape[1] != 3 or bin_start.shape[0] != S + 1:
            raise ValueError("binary rules and bin_start have inconsistent shapes")
        if (chain_bottom.shape[0] != Q or chain_start.shape[0] != S + 1
                or chain_node_start.shape[0] != Q + 1):
            raise ValueError("chain arrays have inconsistent shapes")
        a_bin = np.asarray(binary)
        if R2 and (a_bin.min() < 0 or a_bin.max() >= S):
            raise ValueError("binary rule symbol out of range")
        if R2 and np.any(np.diff(a_bin[:, 0]) < 0):
            raise ValueError("binary rules must be sorted by parent")
        if not np.array_equal(np.asarray(bin_start),
                              np.searchsorted(a_bin[:, 0], np.arange(S + 1))):
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
        self.n_symbols = S
        # the arrays, held so that the pointers below stay valid
        self.binary = a_bin
        self.bin_start = np.asarray(bin_start)
        self.chain_top = a_top
        self.chain_bottom = np.asarray(chain_bottom)
        self.chain_start = np.asarray(chain_start)
        self.chain_nodes = np.asarray(chain_nodes)
        self.chain_node_start = a_cns
        self.roots = np.asarray(roots)
        self.max_chain_len = chain_max_len(chain_node_start)
        self.dummy = -1
        self.rules.S = S
        self.rules.binary = &binary[0, 0] if R2 else &self.dummy
        self.rules.bin_start = &bin_start[0]
        self.rules.chain_bottom = &chain_bottom[0] if Q else &self.dummy
        self.rules.chain_start = &chain_start[0]
        self.rules.chain_nodes = &chain_nodes[0] if chain_nodes.shape[0] else &self.dummy
        self.rules.chain_node_start = &chain_node_start[0]
        self.rules.roots = &roots[0] if roots.shape[0] else &self.dummy
        self.rules.n_roots = roots.shape[0]

    def __reduce__(self):
        return (CKYGrammar, (self.n_symbols, self.binary, self.bin_start, self.chain_top,
                             self.chain_bottom, self.chain_start, self.chain_nodes,
                             self.chain_node_start, self.roots))


cdef class LossTables:
    """The gold tree of one sentence as loss-augmented :func:`cky` counts
    against it.

    Parameters
    ----------
    loss_kind : {1, 2, 3}
        ``LOSS_F1`` (Delta = 1 - F1, eq. 4), ``LOSS_FP`` (Delta = #FP) or
        ``LOSS_ZERO_ONE``.
    key : (S,) int32, gold : ((n + 1) ** 2, n_keys) uint8, n_gold : int
        Keyed counting (``LOSS_F1``, ``LOSS_FP``): bracket keys per symbol
        (-1 = not counted), gold bracket table by span id, and ``|y*|``.
    gold_rule, gold_split, gold_chain : ((n + 1) ** 2,) int32, gold_pos : (n,) int32
        Decision counting (``LOSS_ZERO_ONE``): the gold tree's binary rule (in
        the kernel's parent-sorted numbering), split and chain per span (-1
        where the gold tree has no node), and its POS tags.
    fp_cap : int, default=32767
        ``fp`` saturates here (1 for ``LOSS_ZERO_ONE``).

    Their shapes are checked against the sentence by :func:`cky`.
    """
    def __init__(self, int loss_kind, int32_t[::1] key=None, uint8_t[:, ::1] gold=None,
                 int n_gold=0, int32_t[::1] gold_rule=None, int32_t[::1] gold_split=None,
                 int32_t[::1] gold_chain=None, int32_t[::1] gold_pos=None, int fp_cap=32767):
        if loss_kind not in (LOSS_F1, LOSS_FP, LOSS_ZERO_ONE):
            raise ValueError(f"unknown loss_kind {loss_kind}")
        if fp_cap < 1 or fp_cap > 32767:
            raise ValueError("fp_cap must be in [1, 32767]")
        if loss_kind == LOSS_ZERO_ONE:
            if gold_rule is None or gold_split is None or gold_chain is None or gold_pos is None:
                raise ValueError("gold_rule, gold_split, gold_chain and gold_pos are required "
                                 "for the 0/1 loss")
            fp_cap = 1
        else:
            if key is None or gold is None:
                raise ValueError("key and gold are required for keyed losses")
            if n_gold < 0:
                raise ValueError("n_gold must be >= 0")
        self.loss_kind = loss_kind
        self.n_gold = n_gold
        self.fp_cap = fp_cap
        self.key = None if key is None else np.asarray(key)
        self.gold = None if gold is None else np.asarray(gold)
        self.gold_rule = None if gold_rule is None else np.asarray(gold_rule)
        self.gold_split = None if gold_split is None else np.asarray(gold_split)
        self.gold_chain = None if gold_chain is None else np.asarray(gold_chain)
        self.gold_pos = None if gold_pos is None else np.asarray(gold_pos)


def cky(double[:, ::1] lex, CKYGrammar grammar, double[::1] w_binary, double[::1] w_chain,
        double[::1] w_root, LossTables loss=None, double const=0.0,
        double[:, ::1] span=None, double[:, ::1] split=None, bint prune=False):
    """Best (or most violating) tree of one sentence.

    Parameters
    ----------
    lex : (n, S) float64
        Preterminal scores of the ``n >= 1`` tokens; ``-inf`` for symbols
        that are not POS tags.
    grammar : CKYGrammar
    w_binary : (R2,) float64
        Scores of the rows of ``grammar.binary``.
    w_chain : (Q,) float64
        Scores of the unary chains.
    w_root : (R0,) float64
        Scores of ``grammar.roots``.
    loss : LossTables or None
        None: plain CKY (eq. 1); else loss-augmented CKY (eq. 3) against the
        gold tree it describes.
    const : float
        The constant ``1 - w . Psi(x, y*)`` of eq. 3.
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
    with ``value`` (score without a loss, else ``Delta * (const + score)``),
    ``score``, ``tp`` (0 for ``LOSS_FP``, which does not track it), ``fp``,
    ``delta``, ``root``, ``decisions`` (rows ``(kind, id, start, end,
    parent_row)`` in preorder: kind 1 a chain, 0 a binary node),
    ``binary_rules``, ``chains`` (ids used, with repetition) and ``pos``
    (the POS symbol of every token).
    """
    cdef int n = lex.shape[0]
    cdef int S = grammar.n_symbols
    cdef Py_ssize_t R2 = grammar.binary.shape[0]
    cdef Py_ssize_t Q = grammar.chain_top.shape[0]
    cdef Py_ssize_t R0 = grammar.roots.shape[0]
    cdef int W = n + 1
    cdef int loss_kind = LOSS_NONE if loss is None else loss.loss_kind
    if n < 1:
        raise ValueError(f"cannot parse an empty sentence (n={n})")
    if n > 32000:
        raise ValueError(f"sentence of {n} tokens is longer than the kernel's limit of 32000")
    if lex.shape[1] != S:
        raise ValueError(f"lex has {lex.shape[1]} columns; expected the grammar's {S} symbols")
    if w_binary.shape[0] != R2 or w_chain.shape[0] != Q or w_root.shape[0] != R0:
        raise ValueError("w_binary, w_chain or w_root does not match the grammar")
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

    cdef uint8_t dummy_gold = 0
    cdef int32_t dummy_int = -1
    cdef int32_t[::1] v_key, v_grule, v_gsplit, v_gchain, v_gpos
    cdef uint8_t[:, ::1] v_gold
    cdef Gold gd
    gd.fp_cap = 32767 if loss is None else loss.fp_cap
    gd.n_keys = 0
    gd.key = &dummy_int
    gd.table = &dummy_gold
    gd.rule = &dummy_int
    gd.split = &dummy_int
    gd.chain = &dummy_int
    gd.pos = &dummy_int
    if loss_kind == LOSS_F1 or loss_kind == LOSS_FP:
        v_key = loss.key
        v_gold = loss.gold
        gd.n_keys = v_gold.shape[1]
        if v_key.shape[0] != S or v_gold.shape[0] != W * W:
            raise ValueError("key or gold has the wrong shape")
        if loss.key.max(initial=-1) >= gd.n_keys or loss.key.min(initial=0) < -1:
            raise ValueError("key out of range")
        gd.key = &v_key[0]
        gd.table = &v_gold[0, 0] if gd.n_keys > 0 else &dummy_gold
    elif loss_kind == LOSS_ZERO_ONE:
        v_grule = loss.gold_rule
        v_gsplit = loss.gold_split
        v_gchain = loss.gold_chain
        v_gpos = loss.gold_pos
        if (v_grule.shape[0] != W * W or v_gsplit.shape[0] != W * W
                or v_gchain.shape[0] != W * W or v_gpos.shape[0] != n):
            raise ValueError("gold decision arrays have the wrong shape")
        gd.rule = &v_grule[0]
        gd.split = &v_gsplit[0]
        gd.chain = &v_gchain[0]
        gd.pos = &v_gpos[0]
    cdef Py_ssize_t n_cells = <Py_ssize_t> W * W * S
    base_off_a = np.zeros(n_cells, dtype=np.int32)
    base_cnt_a = np.zeros(n_cells, dtype=np.int32)
    final_off_a = np.zeros(n_cells, dtype=np.int32)
    final_cnt_a = np.zeros(n_cells, dtype=np.int32)
    cdef int32_t[::1] base_off = base_off_a
    cdef int32_t[::1] base_cnt = base_cnt_a
    cdef int32_t[::1] final_off = final_off_a
    cdef int32_t[::1] final_cnt = final_cnt_a
    cdef Chart ch
    ch.pool.data = NULL
    ch.pool.size = 0
    ch.pool.cap = 0
    ch.cand.data = NULL
    ch.cand.size = 0
    ch.cand.cap = 0
    ch.base_off = &base_off[0]
    ch.base_cnt = &base_cnt[0]
    ch.final_off = &final_off[0]
    ch.final_cnt = &final_cnt[0]
    ch.floor_base = NULL
    ch.floor_final = NULL
    # tp and fp never exceed the number of nodes of a tree
    cdef Py_ssize_t max_nodes = (2 * n - 1) * (grammar.max_chain_len + 1) + n + 1
    if loss_kind != K_NONE and max_nodes > 32767:
        raise ValueError(f"a sentence of {n} tokens can have {max_nodes} nodes; the (tp, fp) "
                         "counts of loss-augmented CKY are limited to 32767")
    ch.sc.n_fp = max_nodes + 1
    ch.sc.n_grid = 0
    ch.sc.grid = NULL
    best_a = np.empty(ch.sc.n_fp, dtype=np.float64)
    cdef double[::1] best_v = best_a
    ch.sc.best_ge = &best_v[0]
    cdef int status
    cdef double dummy_span = 0.0
    cdef Scores sw
    sw.lex = &lex[0, 0]
    sw.w_binary = &w_binary[0] if R2 else NULL
    sw.w_chain = &w_chain[0] if Q else NULL
    sw.w_root = &w_root[0] if R0 else NULL
    sw.has_span = span is not None
    sw.span = &span[0, 0] if sw.has_span else &dummy_span
    sw.has_split = split is not None
    sw.split = &split[0, 0] if sw.has_split else &dummy_span
    cdef bint outside = prune and loss_kind != LOSS_NONE
    floor_base_a = np.full(n_cells if outside else 1, -np.inf)
    floor_final_a = np.full(n_cells if outside else 1, -np.inf)
    cdef double[::1] floor_base = floor_base_a
    cdef double[::1] floor_final = floor_final_a
    cdef const Rules* G = &grammar.rules
    status = 0
    with nogil:
        if outside:
            # plain CKY, then the outside scores of every cell give floors
            status = run_cky(n, G, &sw, &gd, K_NONE, &ch)
            if status == 0:
                ch.floor_base = &floor_base[0]
                ch.floor_final = &floor_final[0]
                outside_floors(n, G, &sw, const, &ch)
                ch.pool.size = 0
        if status == 0:
            status = run_cky(n, G, &sw, &gd, loss_kind, &ch)
    try:
        if status < 0:
            raise MemoryError("loss-augmented CKY ran out of memory (or a count exceeded "
                              "the node bound)")
        return _best_root(n, G, &sw, &ch, loss_kind, const,
                          0 if loss is None else loss.n_gold)
    finally:
        free(ch.pool.data)
        free(ch.cand.data)
        free(ch.sc.grid)


cdef void outside_floors(int n, const Rules* G, const Scores* w, double const,
                         Chart* ch) noexcept nogil:
    """Viterbi outside scores of the cells of a plain CKY pass (one entry per
    cell in ``ch.pool``), turned into floors (``ch.floor_base``,
    ``ch.floor_final``): an entry of a cell scoring below ``-const - outside``
    cannot complete to a tree with ``const + score > 0``.  The floor arrays
    hold the outside scores while they are computed (spans from the longest
    down; in a span, final cells before base cells)."""
    cdef int S = G.S
    cdef Buffer pool = ch.pool
    cdef const int32_t* binary = G.binary
    cdef const double* w_binary = w.w_binary
    cdef const int32_t* bin_start = G.bin_start
    cdef const int32_t* chain_bottom = G.chain_bottom
    cdef const double* w_chain = w.w_chain
    cdef const int32_t* chain_start = G.chain_start
    cdef const int32_t* chain_nodes = G.chain_nodes
    cdef const int32_t* chain_node_start = G.chain_node_start
    cdef const double* span = w.span
    cdef bint has_span = w.has_span
    cdef const double* split = w.split
    cdef bint has_split = w.has_split
    cdef const int32_t* roots = G.roots
    cdef const double* w_root = w.w_root
    cdef Py_ssize_t n_roots = G.n_roots
    cdef const int32_t* base_off = ch.base_off
    cdef const int32_t* base_cnt = ch.base_cnt
    cdef const int32_t* final_off = ch.final_off
    cdef const int32_t* final_cnt = ch.final_cnt
    cdef double* floor_base = ch.floor_base
    cdef double* floor_final = ch.floor_final
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



cdef object _best_root(int n, const Rules* G, const Scores* w, const Chart* ch, int loss_kind,
                       double const, int n_gold):
    """Eq. 7: maximise over root entries, then backtrack."""
    cdef int S = G.S
    cdef Buffer pool = ch.pool
    cdef const int32_t* roots = G.roots
    cdef const double* w_root = w.w_root
    cdef const int32_t* final_off = ch.final_off
    cdef const int32_t* final_cnt = ch.final_cnt
    cdef Py_ssize_t sid = n  # span [0, n)
    cdef Py_ssize_t cell, a, best = -1
    cdef int k, best_root = -1
    cdef double v, best_v = -INFINITY, score
    cdef Entry* e
    for k in range(G.n_roots):
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
