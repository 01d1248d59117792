/*
 * reteco_measures.io._runparse: the tokenizer behind rm.read_run's native path.
 *
 * One function, parse_chunk(), reads the lines of a byte range of a TREC run written the
 * common way -- six fields separated by single spaces, "\n" line ends -- into caller-owned
 * buffers: the three id columns as arrow large_string (int64 offsets + bytes), rank as
 * int64 and score as float64. It holds no Python object while it works and releases the
 * GIL, so that Python threads parse ranges of one file in parallel.
 *
 * It accepts a strict subset of what the library's other readers accept and reads every
 * accepted line to the same values; anything else (another separator, a comment or blank
 * line, a missing or extra field, a control byte, a number written in a way not listed
 * below) makes it stop and return REJECT, and the caller reads the file with the general
 * readers, which report bad lines with their numbers.
 *
 *   query_id, doc_id, run_id   bytes 0x21-0x7E or >= 0x80 (UTF-8 is checked by the caller
 *                              when a byte >= 0x80 was seen); query_id not starting with '#'
 *   Q0                         bytes 0x21-0x7E, not stored
 *   rank                       [+-]?[0-9]{1,18}
 *   score                      [+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?
 *
 * Scores are converted here only when the result is certain to be the correctly rounded double
 * (the value any correctly rounding parser returns): by Clinger's fast path when at most 19
 * significant digits form an integer m <= 2^53 and the decimal exponent e has |e| <= 22 (m and
 * 10^|e| are exact doubles, so one IEEE multiplication or division is correctly rounded), else
 * by the Eisel-Lemire algorithm for m of at most 19 digits and -348 <= e <= 347 when it can
 * decide. Every other score (more than 19 significant digits, a subnormal or out-of-range
 * result, an undecidable halfway case) is copied as text to a side column, with its row
 * number, for the caller to convert with the same parser the other readers use.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define ST_OK 0
#define ST_REJECT 1
#define ST_FULL 2

static const double POW10[23] = {
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

/* Eisel-Lemire: the correctly rounded double nearest m * 10^e10 (m > 0, at most 19 digits),
   from a 128-bit truncated approximation of 10^e10, or 0 when the approximation cannot decide
   (then the caller converts the text with arrow's parser). The table of approximations is
   computed exactly in Python (big integers) and handed over once by set_powers(): entry
   e10 - POW_MIN holds floor(10^e10 * 2^k) for the k that puts its top bit at bit 127, as
   (low 64 bits, high 64 bits). Described in D. Lemire, "Number parsing at a gigabyte per
   second", Software: Practice and Experience 51(8), 2021. */
#define POW_MIN (-348)
#define POW_MAX 347
static uint64_t POW_TABLE[2 * (POW_MAX - POW_MIN + 1)];
static int have_powers = 0;

static inline int64_t floor_div_65536(int64_t x) { return x >= 0 ? x / 65536 : -((-x + 65535) / 65536); }

static int eisel_lemire(uint64_t man, int64_t e10, int neg, double *out) {
#ifdef __SIZEOF_INT128__
    if (!have_powers || man == 0 || e10 < POW_MIN || e10 > POW_MAX) return 0;
    int clz = __builtin_clzll(man);
    man <<= clz;
    uint64_t exp2 = (uint64_t)(floor_div_65536(217706 * e10) + 64 + 1023) - (uint64_t)clz;
    const uint64_t lo_t = POW_TABLE[2 * (e10 - POW_MIN)], hi_t = POW_TABLE[2 * (e10 - POW_MIN) + 1];
    unsigned __int128 x = (unsigned __int128)man * hi_t;
    uint64_t x_hi = (uint64_t)(x >> 64), x_lo = (uint64_t)x;
    if ((x_hi & 0x1FF) == 0x1FF && x_lo + man < man) {
        unsigned __int128 y = (unsigned __int128)man * lo_t;
        uint64_t y_hi = (uint64_t)(y >> 64), y_lo = (uint64_t)y;
        uint64_t m_hi = x_hi, m_lo = x_lo + y_hi;
        if (m_lo < x_lo) m_hi++;
        if ((m_hi & 0x1FF) == 0x1FF && m_lo + 1 == 0 && y_lo + man < man) return 0;
        x_hi = m_hi;
        x_lo = m_lo;
    }
    uint64_t msb = x_hi >> 63;
    uint64_t mant = x_hi >> (msb + 9);
    exp2 -= 1 ^ msb;
    if (x_lo == 0 && (x_hi & 0x1FF) == 0 && (mant & 3) == 1) return 0; /* halfway: undecided */
    mant += mant & 1;
    mant >>= 1;
    if (mant >> 53 > 0) {
        mant >>= 1;
        exp2 += 1;
    }
    if (exp2 - 1 >= 0x7FF - 1) return 0; /* subnormal or beyond the range: the slow path */
    uint64_t bits = exp2 << 52 | (mant & UINT64_C(0x000FFFFFFFFFFFFF));
    if (neg) bits |= UINT64_C(0x8000000000000000);
    memcpy(out, &bits, 8);
    return 1;
#else
    (void)man; (void)e10; (void)neg; (void)out;
    return 0;
#endif
}

typedef struct {
    int64_t *off;      /* rows + 1 offsets */
    uint8_t *dat;      /* bytes */
    int64_t cap;       /* capacity of dat */
    int64_t len;       /* bytes used */
} strcol;

typedef struct {
    const uint8_t *base; /* start of the whole buffer (for offsets in messages) */
    strcol q, d, r, s;   /* query_id, doc_id, run_id, slow score texts */
    int64_t *rank;
    double *score;
    int64_t *slow_rows;
    int64_t cap_rows;
    int64_t rows;
    int64_t slow;
    uint64_t high;       /* OR of the id bytes: a bit 7 set when a byte >= 0x80 was seen */
    int64_t bad_at;      /* byte offset of the line that was refused */
} state;

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define RP_SWAR 1
#endif

static inline int put(strcol *c, int64_t row, const uint8_t *s, const uint8_t *e) {
    int64_t n = e - s;
    if (c->len + n > c->cap) return 0;
    memcpy(c->dat + c->len, s, (size_t)n);
    c->len += n;
    c->off[row + 1] = c->len;
    return 1;
}

/* An id field (bytes > 0x20 other than 0x7F) starting at p, copied to column c as the value of
   row `row`; returns the end of the field, or NULL when the column is full. With RP_SWAR the
   field is scanned and copied eight bytes at a time: a word's first byte below 0x21 or equal
   to 0x7F is found with the usual borrow trick, whose lowest flagged byte is always a true
   match. Bytes past `e` are never part of a field. */
static inline const uint8_t *take_id(const uint8_t *p, const uint8_t *e, strcol *c, int64_t row, uint64_t *high) {
    uint8_t *out = c->dat + c->len;
    uint8_t *const out_end = c->dat + c->cap;
    uint64_t h = 0;
#ifdef RP_SWAR
    while (p + 8 <= e && out + 8 <= out_end) {
        uint64_t x, y, stop;
        memcpy(&x, p, 8);
        memcpy(out, &x, 8);
        y = x ^ UINT64_C(0x7F7F7F7F7F7F7F7F);
        stop = ((x - UINT64_C(0x2121212121212121)) & ~x & UINT64_C(0x8080808080808080))
             | ((y - UINT64_C(0x0101010101010101)) & ~y & UINT64_C(0x8080808080808080));
        if (stop) {
            int k = __builtin_ctzll(stop) >> 3;
            if (k) h |= x & (~UINT64_C(0) >> (64 - 8 * k));
            p += k;
            out += k;
            goto done;
        }
        h |= x;
        p += 8;
        out += 8;
    }
#endif
    while (p < e) {
        uint8_t ch = *p;
        if (ch <= 0x20 || ch == 0x7F) break;
        if (out >= out_end) return NULL;
        *out++ = ch;
        h |= ch;
        p++;
    }
#ifdef RP_SWAR
done:
#endif
    *high |= h;
    c->len = out - c->dat;
    c->off[row + 1] = c->len;
    return p;
}

/* returns 1 when the line starting at p was read, 0 when it is refused; *next is the start
   of the following line */
static inline int parse_line(state *st, const uint8_t *p, const uint8_t *e, const uint8_t **next) {
    const int64_t row = st->rows;
    const uint8_t *s;

    /* query_id */
    if (p >= e || *p == '#') return 0;
    s = p;
    p = take_id(p, e, &st->q, row, &st->high);
    if (p == NULL || p == s || p >= e || *p != ' ') return 0;
    p++;

    /* Q0 (any printable ASCII, not kept) */
    s = p;
    while (p < e && *p > 0x20 && *p < 0x7F) p++;
    if (p == s || p >= e || *p != ' ') return 0;
    p++;

    /* doc_id */
    s = p;
    p = take_id(p, e, &st->d, row, &st->high);
    if (p == NULL || p == s || p >= e || *p != ' ') return 0;
    p++;

    /* rank: [+-]?[0-9]{1,18} */
    {
        int neg = 0;
        if (p < e && (*p == '+' || *p == '-')) { neg = (*p == '-'); p++; }
        s = p;
        int64_t v = 0;
        while (p < e && (unsigned)(*p - '0') < 10u) {
            if (p - s >= 18) return 0; /* a 19th digit: refused before it could overflow */
            v = v * 10 + (*p - '0');
            p++;
        }
        if (p == s || p >= e || *p != ' ') return 0;
        st->rank[row] = neg ? -v : v;
        p++;
    }

    /* score */
    {
        const uint8_t *text = p;
        int neg = 0;
        if (p < e && (*p == '+' || *p == '-')) { neg = (*p == '-'); p++; }
        uint64_t m = 0;
        int nd = 0;          /* significant digits kept in m (leading zeros skipped) */
        int lost = 0;        /* more than 19 significant digits */
        int64_t frac = 0;    /* digits after the point */
        int any = 0;
        while (p < e && (unsigned)(*p - '0') < 10u) {
            unsigned dg = *p - '0';
            any = 1;
            if (nd || dg) { if (nd < 19) { m = m * 10 + dg; nd++; } else lost = 1; }
            p++;
        }
        if (p < e && *p == '.') {
            p++;
            while (p < e && (unsigned)(*p - '0') < 10u) {
                unsigned dg = *p - '0';
                any = 1;
                if (nd || dg) { if (nd < 19) { m = m * 10 + dg; nd++; frac++; } else lost = 1; }
                else frac++;
                p++;
            }
        }
        if (!any) return 0;
        int64_t ex = 0;
        int big_exp = 0;
        if (p < e && (*p == 'e' || *p == 'E')) {
            p++;
            int eneg = 0;
            if (p < e && (*p == '+' || *p == '-')) { eneg = (*p == '-'); p++; }
            s = p;
            while (p < e && (unsigned)(*p - '0') < 10u) {
                if (ex < 100000) ex = ex * 10 + (*p - '0'); else big_exp = 1;
                p++;
            }
            if (p == s) return 0;
            if (eneg) ex = -ex;
        }
        if (p >= e || *p != ' ') return 0;
        int64_t e10 = ex - frac;
        if (!lost && !big_exp && m == 0) {
            st->score[row] = neg ? -0.0 : 0.0;
        } else if (!lost && !big_exp && m <= (UINT64_C(1) << 53) && e10 >= -22 && e10 <= 22) {
            double v = (double)m;
            v = e10 < 0 ? v / POW10[-e10] : v * POW10[e10];
            st->score[row] = neg ? -v : v;
        } else if (!lost && !big_exp && eisel_lemire(m, e10, neg, &st->score[row])) {
            /* done: correctly rounded */
        } else {
            st->score[row] = 0.0;
            if (!put(&st->s, st->slow, text, p)) return 0;
            st->slow_rows[st->slow] = row;
            st->slow++;
        }
        p++;
    }

    /* run_id, then the end of the line */
    s = p;
    p = take_id(p, e, &st->r, row, &st->high);
    if (p == NULL || p == s) return 0;
    if (p < e) {
        if (*p != '\n') return 0;
        p++;
    }
    *next = p;
    return 1;
}

static int parse_range(state *st, const uint8_t *p, const uint8_t *e) {
    st->q.off[0] = st->d.off[0] = st->r.off[0] = st->s.off[0] = 0;
    while (p < e) {
        const uint8_t *next;
        if (st->rows >= st->cap_rows) return ST_FULL;
        if (!parse_line(st, p, e, &next)) {
            st->bad_at = p - st->base;
            return ST_REJECT;
        }
        st->rows++;
        p = next;
    }
    return ST_OK;
}

typedef struct {
    Py_buffer b;
    int held;
} view;

static int get_view(PyObject *obj, view *v, int writable, Py_ssize_t itemsize, const char *what) {
    if (PyObject_GetBuffer(obj, &v->b, (writable ? PyBUF_WRITABLE : 0) | PyBUF_C_CONTIGUOUS) < 0) return 0;
    v->held = 1;
    if (itemsize > 1 && (v->b.len % itemsize) != 0) {
        PyErr_Format(PyExc_ValueError, "%s: buffer length is not a multiple of %zd", what, itemsize);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(parse_chunk_doc,
"parse_chunk(data, start, end, q_off, q_dat, d_off, d_dat, r_off, r_dat, rank, score,\n"
"            slow_rows, s_off, s_dat) -> (status, rows, q_len, d_len, r_len, slow, s_len, high, bad_at)\n\n"
"Read the lines of data[start:end] (whole lines) into the given writable buffers.\n"
"status: 0 read, 1 a line was refused (bad_at: its byte offset), 2 a buffer was too small.");

static PyObject *parse_chunk(PyObject *self, PyObject *args) {
    PyObject *objs[12];
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "OnnOOOOOOOOOOO", &objs[0], &start, &end, &objs[1], &objs[2], &objs[3],
                          &objs[4], &objs[5], &objs[6], &objs[7], &objs[8], &objs[9], &objs[10],
                          &objs[11]))
        return NULL;
    view v[12];
    memset(v, 0, sizeof(v));
    PyObject *result = NULL;
    static const Py_ssize_t sizes[12] = {1, 8, 1, 8, 1, 8, 1, 8, 8, 8, 8, 1};
    static const char *names[12] = {"data", "q_off", "q_dat", "d_off", "d_dat", "r_off", "r_dat",
                                    "rank", "score", "slow_rows", "s_off", "s_dat"};
    for (int i = 0; i < 12; i++) {
        if (!get_view(objs[i], &v[i], i > 0, sizes[i], names[i])) goto done;
    }
    if (start < 0 || end < start || end > v[0].b.len) {
        PyErr_SetString(PyExc_ValueError, "start/end outside the data");
        goto done;
    }
    if (v[1].b.len < 8 || v[3].b.len < 8 || v[5].b.len < 8 || v[10].b.len < 8) {
        PyErr_SetString(PyExc_ValueError, "an offsets buffer must hold at least one int64");
        goto done;
    }
    state st;
    memset(&st, 0, sizeof(st));
    st.base = (const uint8_t *)v[0].b.buf;
    int64_t rows_cap = v[1].b.len / 8 - 1;
    if (v[3].b.len / 8 - 1 < rows_cap) rows_cap = v[3].b.len / 8 - 1;
    if (v[5].b.len / 8 - 1 < rows_cap) rows_cap = v[5].b.len / 8 - 1;
    if (v[7].b.len / 8 < rows_cap) rows_cap = v[7].b.len / 8;
    if (v[8].b.len / 8 < rows_cap) rows_cap = v[8].b.len / 8;
    if (rows_cap < 0) rows_cap = 0;
    st.cap_rows = rows_cap;
    st.q = (strcol){(int64_t *)v[1].b.buf, (uint8_t *)v[2].b.buf, v[2].b.len, 0};
    st.d = (strcol){(int64_t *)v[3].b.buf, (uint8_t *)v[4].b.buf, v[4].b.len, 0};
    st.r = (strcol){(int64_t *)v[5].b.buf, (uint8_t *)v[6].b.buf, v[6].b.len, 0};
    st.rank = (int64_t *)v[7].b.buf;
    st.score = (double *)v[8].b.buf;
    st.slow_rows = (int64_t *)v[9].b.buf;
    st.s = (strcol){(int64_t *)v[10].b.buf, (uint8_t *)v[11].b.buf, v[11].b.len, 0};
    int64_t slow_cap = v[9].b.len / 8;
    if (v[10].b.len / 8 - 1 < slow_cap) slow_cap = v[10].b.len / 8 - 1;
    if (slow_cap < st.cap_rows) st.cap_rows = slow_cap < 0 ? 0 : slow_cap; /* a slow row per row at most */
    if (st.cap_rows < 0) st.cap_rows = 0;
    int status;
    if (rows_cap == 0 && end > start) {
        status = ST_FULL;
    } else {
        Py_BEGIN_ALLOW_THREADS
        status = parse_range(&st, st.base + start, st.base + end);
        Py_END_ALLOW_THREADS
    }
    result = Py_BuildValue("(iLLLLLLiL)", status, (long long)st.rows, (long long)st.q.len, (long long)st.d.len,
                           (long long)st.r.len, (long long)st.slow, (long long)st.s.len, (int)((st.high & UINT64_C(0x8080808080808080)) != 0),
                           (long long)st.bad_at);
done:
    for (int i = 0; i < 12; i++)
        if (v[i].held) PyBuffer_Release(&v[i].b);
    return result;
}

PyDoc_STRVAR(count_lines_doc,
"count_lines(data, start, end) -> int\n\n"
"The number of lines in data[start:end]: its newlines, plus one when end is the end of the\n"
"data and the last byte is not a newline.");

static PyObject *count_lines(PyObject *self, PyObject *args) {
    PyObject *obj;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "Onn", &obj, &start, &end)) return NULL;
    Py_buffer b;
    if (PyObject_GetBuffer(obj, &b, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (start < 0 || end < start || end > b.len) {
        PyBuffer_Release(&b);
        PyErr_SetString(PyExc_ValueError, "start/end outside the data");
        return NULL;
    }
    long long n = 0;
    const uint8_t *base = (const uint8_t *)b.buf;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *p = base + start;
    Py_ssize_t len = end - start;
    Py_ssize_t i = 0;
#ifdef __SSE2__
    /* sixteen bytes at a time: compare, count in byte lanes (at most 255 rounds), sum */
    const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (len - i >= 16) {
        __m128i lanes = zero;
        for (int r = 0; r < 255 && len - i >= 16; r++, i += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            lanes = _mm_sub_epi8(lanes, _mm_cmpeq_epi8(v, nl));
        }
        __m128i sums = _mm_sad_epu8(lanes, zero);
        n += (long long)(_mm_cvtsi128_si64(sums) + _mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
    }
#else
    /* eight bytes at a time: a byte of x ^ 0x0A.. is zero exactly where x holds a newline;
       (y & 0x7F..) + 0x7F.. sets bit 7 of every nonzero byte without carries between bytes.
       The per-byte counts are summed in lanes of one byte (at most 255 words at a time). */
    while (len - i >= 8) {
        uint64_t lanes = 0;
        int words = 0;
        for (; words < 255 && len - i >= 8; words++, i += 8) {
            uint64_t x, y, t;
            memcpy(&x, p + i, 8);
            y = x ^ UINT64_C(0x0A0A0A0A0A0A0A0A);
            t = (y & UINT64_C(0x7F7F7F7F7F7F7F7F)) + UINT64_C(0x7F7F7F7F7F7F7F7F);
            t = ~(t | y | UINT64_C(0x7F7F7F7F7F7F7F7F));
            lanes += t >> 7;
        }
        lanes = (lanes & UINT64_C(0x00FF00FF00FF00FF)) + ((lanes >> 8) & UINT64_C(0x00FF00FF00FF00FF));
        n += (long long)((lanes * UINT64_C(0x0001000100010001)) >> 48);
    }
#endif
    for (; i < len; i++) n += (p[i] == '\n');
    if (end > start && end == b.len && base[end - 1] != '\n') n++;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&b);
    return PyLong_FromLongLong(n);
}

PyDoc_STRVAR(set_powers_doc,
"set_powers(table)\n\n"
"Hand over the 128-bit approximations of 10^-348 .. 10^347 (a buffer of 1392 uint64:\n"
"low, high for each power, truncated, top bit at 127) used to convert scores exactly.");

static PyObject *set_powers(PyObject *self, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    if (b.len != (Py_ssize_t)sizeof(POW_TABLE)) {
        PyBuffer_Release(&b);
        PyErr_Format(PyExc_ValueError, "the table must hold %zd bytes", (Py_ssize_t)sizeof(POW_TABLE));
        return NULL;
    }
    memcpy(POW_TABLE, b.buf, sizeof(POW_TABLE));
    have_powers = 1;
    PyBuffer_Release(&b);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"set_powers", set_powers, METH_O, set_powers_doc},
    {"parse_chunk", parse_chunk, METH_VARARGS, parse_chunk_doc},
    {"count_lines", count_lines, METH_VARARGS, count_lines_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_runparse",
    "Native tokenizer for TREC runs written with single spaces (see reteco_measures.io.readers).", -1, methods,
};

PyMODINIT_FUNC PyInit__runparse(void) { return PyModule_Create(&module); }
