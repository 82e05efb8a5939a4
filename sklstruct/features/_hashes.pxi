# The hashes of the compiled featurizer, included by _featurize.pyx (a .pxi,
# not a module: they are inlined into its loop).  Kept apart so that
# _featurize.pyx stays one idea of a readable length.


cdef inline uint32_t _rotl32(uint32_t x, int r) noexcept nogil:
    return (x << r) | (x >> (32 - r))


cdef int32_t murmurhash3_32(const char* data, Py_ssize_t length) noexcept nogil:
    """MurmurHash3 x86 32-bit, seed 0, as a signed int: scikit-learn's
    ``murmurhash3_32(bytes, positive=False)``."""
    cdef const uint8_t* d = <const uint8_t*>data
    cdef Py_ssize_t nblocks = length // 4, i
    cdef uint32_t h1 = 0, k1
    cdef uint32_t c1 = 0xcc9e2d51U, c2 = 0x1b873593U
    for i in range(nblocks):
        memcpy(&k1, d + 4 * i, 4)
        k1 *= c1
        k1 = _rotl32(k1, 15)
        k1 *= c2
        h1 ^= k1
        h1 = _rotl32(h1, 13)
        h1 = h1 * 5 + 0xe6546b64U
    d += nblocks * 4
    k1 = 0
    i = length & 3
    if i >= 3:
        k1 ^= (<uint32_t>d[2]) << 16
    if i >= 2:
        k1 ^= (<uint32_t>d[1]) << 8
    if i >= 1:
        k1 ^= d[0]
        k1 *= c1
        k1 = _rotl32(k1, 15)
        k1 *= c2
        h1 ^= k1
    h1 ^= <uint32_t>length
    h1 ^= h1 >> 16
    h1 *= 0x85ebca6bU
    h1 ^= h1 >> 13
    h1 *= 0xc2b2ae35U
    h1 ^= h1 >> 16
    return <int32_t>h1


def murmurhash3_bytes(bytes data):
    """:func:`murmurhash3_32` of ``data`` (for the tests)."""
    return murmurhash3_32(data, len(data))


cdef inline int32_t _hashed_column(const char* name, Py_ssize_t length,
                                   int64_t n_features) noexcept nogil:
    """FeatureHasher's column of a name (alternate_sign=False)."""
    cdef int32_t h = murmurhash3_32(name, length)
    if h == -2147483648:
        # abs(-2**31) % n_features, as scikit-learn defines it
        return <int32_t>((2147483647 - (n_features - 1)) % n_features)
    return <int32_t>((h if h >= 0 else -h) % n_features)


cdef inline uint64_t _mix64(uint64_t h) noexcept nogil:
    h ^= h >> 33
    h *= 0xff51afd7ed558ccdULL
    h ^= h >> 33
    h *= 0xc4ceb9fe1a85ec53ULL
    h ^= h >> 33
    return h


cdef uint64_t _hash_bytes(const char* s, Py_ssize_t n) noexcept nogil:
    """A 64-bit hash of a byte string, eight bytes at a step."""
    cdef uint64_t h = 0x9E3779B97F4A7C15ULL ^ <uint64_t>n, w
    while n >= 8:
        memcpy(&w, s, 8)
        h = (h ^ w) * 0x100000001b3ULL
        h ^= h >> 29
        s += 8
        n -= 8
    if n > 0:
        w = 0
        memcpy(&w, s, n)
        h = (h ^ w) * 0x100000001b3ULL
    return _mix64(h)

