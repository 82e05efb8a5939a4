# The data of the CKY kernels (see _cky.pyx): a chart entry, the buffers of
# entries, the grammar, one sentence's scores, the gold tree of the loss, the
# chart of one pass.
from libc.stdint cimport int8_t, int16_t, int32_t, uint8_t


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


cdef struct Scratch:
    int32_t* grid       # best candidate per (tp, fp); malloc'ed, grown on demand
    double* best_ge     # per fp: best score over the rows done with fp' >= fp
    Py_ssize_t n_grid
    Py_ssize_t n_fp


cdef struct Rules:
    # the grammar as the kernels read it (validated by CKYGrammar)
    int S                             # number of symbols
    const int32_t* binary             # (R2, 3) rules (A, B, C), sorted by A
    const int32_t* bin_start          # (S + 1) the rules of every parent
    const int32_t* chain_bottom       # (Q) bottom symbol of every chain (sorted by top)
    const int32_t* chain_start        # (S + 1) the chains of every top symbol
    const int32_t* chain_nodes        # the symbols of every chain above its bottom
    const int32_t* chain_node_start   # (Q + 1) offsets into chain_nodes
    const int32_t* roots              # (n_roots) symbols allowed at the root
    Py_ssize_t n_roots


cdef struct Scores:
    # the scores of one sentence's parts
    const double* lex        # (n, S) preterminals
    const double* w_binary   # (R2) binary rules, in the grammar's parent-sorted order
    const double* w_chain    # (Q) unary chains
    const double* w_root     # (n_roots) root symbols
    const double* span       # ((n + 1) ** 2, S) anchored node scores, if has_span
    const double* split      # (n + 1, S) anchored split scores, if has_split
    bint has_span
    bint has_split


cdef struct Gold:
    # what the loss counts against (see "Loss augmentation" above)
    int fp_cap
    int n_keys
    const int32_t* key       # (S) keyed counting: bracket key of every symbol
    const uint8_t* table     # ((n + 1) ** 2, n_keys) gold brackets by span
    const int32_t* rule      # ((n + 1) ** 2) decision counting: the gold decisions
    const int32_t* split
    const int32_t* chain
    const int32_t* pos       # (n)


cdef struct Chart:
    # the table of one pass: its entries, every cell's slice of them, scratch
    Buffer pool              # every kept entry
    Buffer cand              # the candidates of the cell being filled
    Scratch sc
    int32_t* base_off        # (n_cells) base cell's entries: pool[off:off + cnt]
    int32_t* base_cnt
    int32_t* final_off       # (n_cells) the same for the final cells (chain on top)
    int32_t* final_cnt
    double* floor_base       # (n_cells) outside floors of the cells, or NULL (none)
    double* floor_final


cdef class CKYGrammar:
    cdef readonly int n_symbols
    cdef readonly object binary, bin_start, chain_top, chain_bottom, chain_start
    cdef readonly object chain_nodes, chain_node_start, roots
    cdef Rules rules
    cdef Py_ssize_t max_chain_len
    cdef int32_t dummy


cdef class LossTables:
    cdef readonly int loss_kind, n_gold, fp_cap
    cdef readonly object key, gold, gold_rule, gold_split, gold_chain, gold_pos
