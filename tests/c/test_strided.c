/*
 * test_strided.c -- strided views (runtime/strided.c) from C.
 *
 * The overlap test is what decides, for a call with strided views, whether
 * a build may declare its arrays restrict and whether the race check of
 * tack_launch compares them: it must never say "apart" for views that share
 * a byte, and it should say "apart" for interleaved columns of one matrix,
 * which share none.  A view whose own elements share bytes (a zero stride)
 * may be read but not written.  The operations that assume C order refuse a
 * strided view instead of reading the wrong bytes; a copy to the host
 * gathers it.  Views of Tack's own storage (tack_array_as_strided) must lie
 * inside it.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "tack.h"

static tack_array *view(double *base, int ndim, const int64_t *shape, const int64_t *strides) {
    tack_array *a = NULL;
    CHECK(tack_array_wrap_strided(NULL, TACK_F64, ndim, shape, strides, base, 1, NULL, NULL, &a) == TACK_OK);
    return a;
}

/* Byte-exact answer by brute force, for comparison. */
static int shares_byte(const tack_array *a, const tack_array *b) {
    static unsigned char mark[64 * 8];
    memset(mark, 0, sizeof mark);
    const tack_array *ab[2] = {a, b};
    int hit = 0;
    for (int w = 0; w < 2; w++) {
        const tack_array *x = ab[w];
        const int64_t *sh = tack_array_shape(x), *st = tack_array_strides(x);
        int64_t n = tack_array_size(x);
        for (int64_t e = 0; e < n; e++) {
            int64_t rem = e, off = 0, c = 1;
            for (int k = tack_array_ndim(x) - 1; k >= 0; k--) {
                int64_t i = rem % sh[k];
                rem /= sh[k];
                off += i * (st ? st[k] : c);
                c *= sh[k];
            }
            for (int byte = 0; byte < 8; byte++) {
                size_t at = (size_t)((uintptr_t)tack_array_data(x) + (uintptr_t)(off * 8 + byte)) % sizeof mark;
                if (w == 0) mark[at] = 1;
                else hit |= mark[at];
            }
        }
    }
    return hit;
}

int main(void) {
    (void)failing_allocator_install; /* check.h's, unused here */
    static double m[64]; /* an 8 x 8 matrix */
    int64_t col_shape[1] = {8}, col_stride[1] = {8};
    tack_array *c0 = view(m, 1, col_shape, col_stride), *c1 = view(m + 1, 1, col_shape, col_stride);
    CHECK(tack_array_strides(c0) && tack_array_strides(c0)[0] == 8);
    CHECK(!tack_arrays_overlap(c0, c1) && !shares_byte(c0, c1)); /* interleaved columns: apart */
    int64_t sh[2] = {8, 8}, tr[2] = {1, 8};
    tack_array *t = view(m, 2, sh, tr); /* m.T */
    CHECK(tack_arrays_overlap(c0, t) && tack_arrays_overlap(c1, t));
    int64_t even_shape[1] = {32}, even[1] = {2};
    tack_array *e0 = view(m, 1, even_shape, even), *e1 = view(m + 1, 1, even_shape, even);
    tack_array *e2 = view(m + 2, 1, even_shape, even);
    CHECK(!tack_arrays_overlap(e0, e1) && tack_arrays_overlap(e0, e2) && shares_byte(e0, e2));
    /* never a false "apart": every pair of these views, against brute force */
    tack_array *all[] = {c0, c1, t, e0, e1, e2};
    for (int i = 0; i < 6; i++)
        for (int j = 0; j < 6; j++)
            if (shares_byte(all[i], all[j])) CHECK(tack_arrays_overlap(all[i], all[j]));
    /* C-order strides give an ordinary array; a reversed view is strided */
    int64_t row[1] = {1}, rev[1] = {-1};
    tack_array *r = view(m, 1, col_shape, row), *v = view(m + 7, 1, col_shape, rev);
    CHECK(!tack_array_strides(r) && tack_array_strides(v));
    CHECK(tack_arrays_overlap(r, v)); /* the same bytes, read backwards */
    /* elements that share bytes: a zero stride */
    int64_t zero[1] = {0};
    tack_array *z = view(m, 1, col_shape, zero);
    CHECK(tack_array_self_overlaps(z) && !tack_array_self_overlaps(c0) && !tack_array_self_overlaps(t));
    int64_t sh2[2] = {3, 3}, inter[2] = {2, 1}; /* rows two elements apart, three long */
    tack_array *w = view(m, 2, sh2, inter);
    CHECK(tack_array_self_overlaps(w));
    /* a strided view copied to the host is gathered in C order */
    for (int i = 0; i < 64; i++) m[i] = i;
    double host[8];
    CHECK(tack_array_copy_to_host(c0, host, sizeof host) == TACK_OK);
    for (int i = 0; i < 8; i++) CHECK(host[i] == 8.0 * i);
    CHECK(tack_array_copy_to_host(v, host, sizeof host) == TACK_OK); /* m[7::-1] */
    for (int i = 0; i < 8; i++) CHECK(host[i] == 7.0 - i);
    /* host values copied into a strided view are scattered to its elements, the others untouched
     * (it was refused); a view whose elements share bytes is refused, and nothing is written */
    for (int i = 0; i < 8; i++) host[i] = -1.0 - i;
    CHECK(tack_array_copy_from_host(v, host, sizeof host) == TACK_OK); /* m[7::-1] */
    for (int i = 0; i < 64; i++) CHECK(m[i] == (i < 8 ? -8.0 + i : (double)i));
    for (int i = 0; i < 8; i++) host[i] = 100.0 + i;
    CHECK(tack_array_copy_from_host(t, host, sizeof host) == TACK_ERR_VALUE); /* 64 elements, not 8 */
    CHECK(tack_array_copy_from_host(c1, host, sizeof host) == TACK_OK); /* column 1 */
    for (int i = 0; i < 64; i++) CHECK(m[i] == (i % 8 == 1 ? 100.0 + i / 8 : i < 8 ? -8.0 + i : (double)i));
    CHECK(tack_array_copy_from_host(z, host, sizeof host) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "share memory") != NULL);
    CHECK(m[0] == -8.0);
    for (int i = 0; i < 64; i++) m[i] = i;
    /* C-order operations refuse a strided view */
    double one = 1.0;
    CHECK(tack_array_fill(v, &one) == TACK_ERR_BUFFER);
    tack_array *cl = NULL; /* a clone gathers the elements into a C-order array (it was refused) */
    CHECK(tack_array_clone(t, NULL, &cl) == TACK_OK && !tack_array_strides(cl));
    for (int i = 0; i < 64; i++) CHECK(((double *)tack_array_data(cl))[i] == m[(i % 8) * 8 + i / 8]);
    tack_array_release(cl);
    /* a span that would wrap past either end of the address space is refused */
    int64_t four[1] = {4}, back[1] = {-1}, skip[1] = {2};
    tack_array *bad = NULL;
    CHECK(tack_array_wrap_strided(NULL, TACK_F64, 1, four, back, (void *)(uintptr_t)16, 0, NULL, NULL, &bad) ==
              TACK_ERR_VALUE && !bad); /* elements at 16, 8, 0, -8 */
    CHECK(strstr(tack_last_error(), "past the end of the address space") != NULL);
    CHECK(tack_array_wrap_strided(NULL, TACK_F64, 1, four, skip, (void *)(uintptr_t)(UINTPTR_MAX - 31), 0, NULL,
                                  NULL, &bad) == TACK_ERR_VALUE && !bad); /* the last one 48 bytes on */
    CHECK(tack_array_wrap(NULL, TACK_F64, 1, four, (void *)(uintptr_t)(UINTPTR_MAX - 15), 0, NULL, NULL, &bad) ==
              TACK_ERR_VALUE && !bad);
    CHECK(strstr(tack_last_error(), "with 32 bytes runs past the end") != NULL);
    CHECK(tack_array_wrap_strided(NULL, TACK_F64, 1, four, back, (void *)(uintptr_t)24, 0, NULL, NULL, &bad) ==
              TACK_OK); /* 24 down to 0: in range */
    tack_array_release(bad);
    /* views of a Tack array's own storage (tack_array_as_strided): in it, or refused */
    int64_t sq[2] = {4, 4};
    tack_array *own = NULL, *col = NULL, *back2 = NULL, *tr2 = NULL, *row2 = NULL, *out = NULL;
    CHECK(tack_array_zeros(NULL, TACK_F64, 2, sq, &own) == TACK_OK);
    double *od = tack_array_data(own);
    for (int i = 0; i < 16; i++) od[i] = i;
    int64_t four1[1] = {4}, s4[1] = {4}, sm1[1] = {-1}, s1[1] = {1}, t41[2] = {1, 4};
    CHECK(tack_array_as_strided(own, 2, 1, four1, s4, &col) == TACK_OK && tack_array_strides(col)); /* m[:, 2] */
    CHECK(tack_array_copy_to_host(col, host, 4 * sizeof(double)) == TACK_OK);
    CHECK(host[0] == 2 && host[1] == 6 && host[2] == 10 && host[3] == 14);
    CHECK(tack_array_as_strided(own, 15, 1, four1, sm1, &back2) == TACK_OK); /* the last four, reversed */
    CHECK(tack_array_copy_to_host(back2, host, 4 * sizeof(double)) == TACK_OK && host[0] == 15 && host[3] == 12);
    CHECK(tack_array_as_strided(own, 0, 2, sq, t41, &tr2) == TACK_OK && tack_array_strides(tr2)); /* m.T */
    CHECK(tack_arrays_overlap(own, tr2) && tack_arrays_overlap(col, tr2));
    CHECK(tack_array_as_strided(own, 4, 1, four1, s1, &row2) == TACK_OK && !tack_array_strides(row2)); /* m[1] */
    CHECK((double *)tack_array_data(row2) == od + 4);
    CHECK(tack_array_as_strided(col, 3, 1, four1, s4, &out) == TACK_ERR_VALUE && !out); /* m[:, 5]: past the end */
    CHECK(strstr(tack_last_error(), "does not fit") != NULL);
    CHECK(tack_array_as_strided(own, 2, 1, four1, sm1, &out) == TACK_ERR_VALUE && !out); /* before the start */
    tack_array *mine[] = {own, col, back2, tr2, row2};
    for (int i = 0; i < 5; i++) tack_array_release(mine[i]);
    tack_array *all2[] = {c0, c1, t, e0, e1, e2, r, v, z, w};
    for (int i = 0; i < 10; i++) tack_array_release(all2[i]);
    return CHECK_SUMMARY();
}
