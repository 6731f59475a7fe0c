/* test_runtime.c -- dtypes, devices, arrays, owners and out-of-memory paths. */
#include <string.h>

#include "check.h"
#include "tack.h"

static void test_version(void)
{
    CHECK(tack_check_version(TACK_ABI_VERSION) == TACK_OK);
    CHECK(tack_check_version(TACK_ABI_VERSION + 1) == TACK_ERR_RUNTIME);
    CHECK(strstr(tack_last_error(), "ABI version") != NULL);
    CHECK(strcmp(tack_version_string(), TACK_VERSION_STRING) == 0);
}

static void test_dtypes(void)
{
    tack_dtype d;
    CHECK(tack_dtype_from_name("f32", &d) == TACK_OK && d == TACK_F32);
    CHECK(tack_dtype_from_name("float64", &d) == TACK_OK && d == TACK_F64);
    CHECK(tack_dtype_from_name("vec3", &d) == TACK_OK && d == TACK_VEC3);
    CHECK(tack_dtype_from_name("f33", &d) == TACK_ERR_TYPE);
    CHECK(strstr(tack_last_error(), "'f33'") != NULL);
    CHECK(tack_dtype_get(TACK_VEC3)->itemsize == 12);
    CHECK(tack_dtype_get(TACK_VEC3)->alignment == 4);
    CHECK(tack_dtype_get(TACK_MAT44D)->itemsize == 128);
    /* complex: NumPy's layout (re, im), aligned like one part; a scalar kind of its own */
    CHECK(tack_dtype_from_name("complex64", &d) == TACK_OK && d == TACK_C64);
    CHECK(tack_dtype_from_name("c128", &d) == TACK_OK && d == TACK_C128);
    CHECK(tack_dtype_get(TACK_C64)->itemsize == 8 && tack_dtype_get(TACK_C64)->alignment == 4);
    CHECK(tack_dtype_get(TACK_C128)->itemsize == 16 && tack_dtype_get(TACK_C128)->alignment == 8);
    CHECK(tack_dtype_get(TACK_C128)->kind == TACK_KIND_COMPLEX && tack_dtype_get(TACK_C128)->bits == 128);
    CHECK(tack_dtype_get(TACK_BOOL)->itemsize == 1);
    CHECK(tack_dtype_get(TACK_F16)->itemsize == 2);
    CHECK(tack_dtype_get(TACK_DTYPE_COUNT) == NULL);
    CHECK(tack_dtype_compose(TACK_F64, 3, 1, &d) == TACK_OK && d == TACK_VEC3D);
    CHECK(tack_dtype_compose(TACK_I32, 3, 3, &d) == TACK_ERR_TYPE);
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        const tack_dtype_info *info = tack_dtype_get((tack_dtype)i);
        CHECK(info->id == (tack_dtype)i);
        CHECK(tack_dtype_from_name(info->name, &d) == TACK_OK && d == (tack_dtype)i);
        CHECK(info->itemsize == (size_t)info->rows * info->cols * tack_dtype_get(info->scalar)->itemsize);
    }
}

static void test_devices(void)
{
    tack_device *cpu, *list[8];
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK);
    CHECK(strcmp(tack_device_name(cpu), "cpu") == 0);
    CHECK(tack_device_kind(cpu) == TACK_DEVICE_CPU);
    CHECK(strcmp(tack_device_dialect(cpu), "c") == 0); /* the backend names its dialect */
    CHECK(tack_device_threads(cpu) >= 1);
    CHECK(tack_device_on_host_cores(cpu) == 1);
    /* launches alone: the calling thread's setting, given back; the device's count outside a launch unchanged */
    int threads = tack_device_threads(cpu);
    CHECK(tack_cpu_launch_alone(1) == 0);
    CHECK(tack_device_threads(cpu) == threads);
    CHECK(tack_cpu_launch_alone(0) == 1);
    CHECK(tack_cpu_launch_alone(0) == 0);
    CHECK(tack_devices(list, 8) >= 1 && list[0] == cpu);
    CHECK(tack_device_get("tpu", &cpu) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "'tpu'") != NULL);
    CHECK(tack_device_get("cuda:x", &cpu) == TACK_ERR_VALUE);
    CHECK(tack_device_get("cpu:1", &cpu) == TACK_ERR_VALUE);
    CHECK(tack_device_synchronize(list[0]) == TACK_OK);
    CHECK(tack_synchronize_all() == TACK_OK);
}

static void test_arrays(void)
{
    tack_device *cpu;
    tack_device_get("cpu", &cpu);
    tack_array *a = NULL, *b = NULL;
    int64_t shape[2] = {3, 4};
    CHECK(tack_array_zeros(cpu, TACK_F32, 2, shape, &a) == TACK_OK);
    CHECK(tack_array_size(a) == 12 && tack_array_nbytes(a) == 48 && tack_array_ndim(a) == 2);
    CHECK(((uintptr_t)tack_array_data(a) % 64) == 0);
    float *f = tack_array_data(a);
    CHECK(f[0] == 0.0f && f[11] == 0.0f);
    float v = 2.5f;
    CHECK(tack_array_fill(a, &v) == TACK_OK);
    CHECK(f[0] == 2.5f && f[11] == 2.5f);
    float host[12];
    for (int i = 0; i < 12; i++)
        host[i] = (float)i;
    CHECK(tack_array_copy_from_host(a, host, sizeof host) == TACK_OK);
    CHECK(tack_array_copy_from_host(a, host, 4) == TACK_ERR_VALUE);
    CHECK(tack_array_clone(a, NULL, &b) == TACK_OK);
    float back[12] = {0};
    CHECK(tack_array_copy_to_host(b, back, sizeof back) == TACK_OK && back[7] == 7.0f);
    tack_array *ro = NULL;
    CHECK(tack_array_view(b, 0, &ro) == TACK_OK && !tack_array_writable(ro));
    CHECK(tack_array_fill(ro, &v) == TACK_ERR_READONLY);
    CHECK(strstr(tack_last_error(), "read-only") != NULL);
    tack_array_release(b); /* storage stays alive through the view */
    CHECK(((float *)tack_array_data(ro))[5] == 5.0f);
    tack_array *r = NULL;
    int64_t flat[1] = {12};
    CHECK(tack_array_reshape(ro, TACK_F32, 1, flat, &r) == TACK_OK && tack_array_size(r) == 12);
    int64_t bad[1] = {13};
    tack_array *r2 = NULL;
    CHECK(tack_array_reshape(ro, TACK_F32, 1, bad, &r2) == TACK_ERR_VALUE && r2 == NULL);
    tack_array_release(r);
    tack_array_release(ro);
    /* copy checks dtype and size */
    tack_array *c = NULL;
    CHECK(tack_array_empty(cpu, TACK_F64, 2, shape, &c) == TACK_OK);
    CHECK(tack_array_copy(c, a) == TACK_ERR_VALUE);
    tack_array_release(c);
    tack_array_release(a);

    /* bad shapes */
    int64_t neg[2] = {3, -1};
    CHECK(tack_array_empty(cpu, TACK_F32, 2, neg, &a) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "-1") != NULL);
    int64_t huge[2] = {INT64_MAX, 4};
    CHECK(tack_array_empty(cpu, TACK_F32, 2, huge, &a) == TACK_ERR_VALUE);
    int64_t big[1] = {(int64_t)1 << 60};
    CHECK(tack_array_empty(cpu, TACK_F64, 1, big, &a) == TACK_ERR_VALUE);
    int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK(tack_array_empty(cpu, TACK_F32, 9, nine, &a) == TACK_ERR_VALUE);
    CHECK(tack_array_empty(cpu, (tack_dtype)99, 1, shape, &a) == TACK_ERR_TYPE);
    /* 0-d and size-0 arrays */
    CHECK(tack_array_empty(cpu, TACK_I32, 0, NULL, &a) == TACK_OK && tack_array_size(a) == 1);
    tack_array_release(a);
    int64_t zero[1] = {0};
    CHECK(tack_array_empty(cpu, TACK_I32, 1, zero, &a) == TACK_OK && tack_array_nbytes(a) == 0);
    tack_array_release(a);
    /* out of memory is an error, not a crash */
    int64_t toobig[1] = {(int64_t)1 << 58};
    CHECK(tack_array_empty(cpu, TACK_U8, 1, toobig, &a) == TACK_ERR_NOMEM);
}

static int released;
static void count_release(void *ctx) { released += *(int *)ctx; }

/* The "When a call returns" flag is the storage's: a view made before an
 * export waits too (it was per handle, so such a view did not). */
static void test_shared_flag_is_the_storages(void) {
    tack_device *cpu = NULL;
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK);
    int64_t shape[1] = {8}, two[2] = {2, 4};
    tack_array *a = NULL, *view = NULL, *shaped = NULL;
    CHECK(tack_array_zeros(cpu, TACK_F32, 1, shape, &a) == TACK_OK);
    CHECK(tack_array_view(a, 1, &view) == TACK_OK);
    CHECK(tack_array_reshape(a, TACK_F32, 2, two, &shaped) == TACK_OK);
    CHECK((tack_array_flags(view) & TACK_ARRAY_SHARED) == 0);
    tack_array_set_flags(a, tack_array_flags(a) | TACK_ARRAY_SHARED); /* as an export does */
    CHECK((tack_array_flags(view) & TACK_ARRAY_SHARED) != 0);
    CHECK((tack_array_flags(shaped) & TACK_ARRAY_SHARED) != 0);
    tack_array_release(a);
    tack_array_release(view);
    tack_array_release(shaped);
}

/* A subview shares the storage at an element offset: it keeps the storage
 * (and its owner) alive, sees the storage's flags and keeps the writable flag
 * of the array it was made from. */
static void test_subviews(void) {
    tack_device *cpu = NULL;
    CHECK(tack_device_get("cpu", &cpu) == TACK_OK);
    float buf[12];
    for (int i = 0; i < 12; i++)
        buf[i] = (float)i;
    int one = 1;
    int64_t shape[2] = {3, 4}, row[1] = {4}, two_rows[2] = {2, 4}, five[1] = {5};
    tack_array *a = NULL, *r = NULL, *rows = NULL, *elem = NULL, *ro = NULL, *rov = NULL, *bad = NULL;
    released = 0;
    CHECK(tack_array_wrap(cpu, TACK_F32, 2, shape, buf, 1, count_release, &one, &a) == TACK_OK);
    CHECK(tack_array_subview(a, 4, 1, row, &r) == TACK_OK);
    CHECK(tack_array_data(r) == (void *)&buf[4] && tack_array_size(r) == 4 && tack_array_writable(r));
    CHECK(tack_array_subview(a, 8, 0, NULL, &elem) == TACK_OK && *(float *)tack_array_data(elem) == 8.0f);
    CHECK(tack_array_subview(a, 4, 2, two_rows, &rows) == TACK_OK && tack_array_nbytes(rows) == 32);
    CHECK((tack_array_flags(rows) & TACK_ARRAY_SHARED) != 0); /* the storage's flag */
    /* out of range, including an offset that would overflow */
    CHECK(tack_array_subview(a, 8, 1, five, &bad) == TACK_ERR_VALUE && bad == NULL);
    CHECK(tack_array_subview(a, -1, 1, row, &bad) == TACK_ERR_VALUE && bad == NULL);
    CHECK(tack_array_subview(a, INT64_MAX, 1, row, &bad) == TACK_ERR_VALUE && bad == NULL);
    CHECK(strstr(tack_last_error(), "does not fit") != NULL);
    /* a subview of a read-only view is read-only */
    CHECK(tack_array_view(a, 0, &ro) == TACK_OK);
    CHECK(tack_array_subview(ro, 4, 1, row, &rov) == TACK_OK && !tack_array_writable(rov));
    float v = 1.0f;
    CHECK(tack_array_fill(rov, &v) == TACK_ERR_READONLY);
    tack_array_release(a);
    tack_array_release(ro);
    tack_array_release(r);
    tack_array_release(elem);
    tack_array_release(rov);
    CHECK(released == 0); /* rows still holds the storage */
    CHECK(((float *)tack_array_data(rows))[7] == 11.0f);
    tack_array_release(rows);
    CHECK(released == 1);
}

static void test_owner_release(void)
{
    tack_device *cpu;
    tack_device_get("cpu", &cpu);
    float buf[8] = {0};
    int one = 1;
    int64_t shape[1] = {8};
    tack_array *a = NULL, *v = NULL;
    released = 0;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 1, count_release, &one, &a) == TACK_OK);
    CHECK(tack_array_flags(a) & TACK_ARRAY_SHARED);
    CHECK(tack_array_view(a, 1, &v) == TACK_OK);
    tack_array_retain(a);
    tack_array_release(a);
    tack_array_release(a);
    CHECK(released == 0);
    tack_array_release(v);
    CHECK(released == 1); /* exactly once, when the last handle is gone */

    /* read-only borrowed storage refuses writable views */
    released = 0;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 0, count_release, &one, &a) == TACK_OK);
    CHECK(tack_array_view(a, 1, &v) == TACK_ERR_READONLY);
    tack_array_release(a);
    CHECK(released == 1);

    /* a failed wrap still releases the owner, once */
    released = 0;
    char *unaligned = (char *)buf + 1;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, unaligned, 1, count_release, &one, &a) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "aligned") != NULL);
    CHECK(released == 1);
    released = 0;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, NULL, 1, count_release, &one, &a) == TACK_ERR_VALUE);
    CHECK(released == 1);
    /* raw pointers: no release callback at all */
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 1, NULL, NULL, &a) == TACK_OK);
    tack_array_release(a);
}

/* tack_array_recycle empties a wrapped array only when the caller's reference is
 * the only one and no other array uses its storage, releasing the owner as the
 * last release would (or handing that release back); tack_array_rewrap refills
 * an emptied array through a wrap's checks and refuses anything else. */
static void test_recycle_and_rewrap(void)
{
    tack_device *cpu;
    tack_device_get("cpu", &cpu);
    float buf[8] = {0}, buf2[6] = {0};
    int one = 1;
    int64_t shape[1] = {8}, two_three[2] = {2, 3};
    tack_array *a = NULL, *v = NULL, *z = NULL;
    failing_allocator_install(0); /* counts, never fails */

    /* held alone: emptied, the owner released once, the handle still the caller's */
    released = 0;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 1, count_release, &one, &a) == TACK_OK);
    CHECK(tack_array_recycle(a, NULL, NULL) == 1);
    CHECK(released == 1);
    CHECK(tack_array_data(a) == NULL && tack_array_size(a) == 0 && tack_array_nbytes(a) == 0);
    CHECK(tack_array_ndim(a) == 1 && tack_array_shape(a)[0] == 0 && !tack_array_writable(a));
    CHECK(tack_array_recycle(a, NULL, NULL) == 1 && released == 1); /* emptied already: nothing to release */
    long live = alloc_live;
    CHECK(tack_array_rewrap(a, cpu, TACK_I32, 2, two_three, buf2, 1, count_release, &one) == TACK_OK);
    CHECK(alloc_live == live); /* no allocation */
    CHECK(tack_array_data(a) == (void *)buf2 && tack_array_dtype(a) == TACK_I32 && tack_array_ndim(a) == 2);
    CHECK(tack_array_shape(a)[0] == 2 && tack_array_shape(a)[1] == 3 && tack_array_size(a) == 6);
    CHECK(tack_array_nbytes(a) == 24 && tack_array_writable(a) && tack_array_strides(a) == NULL);
    CHECK((tack_array_flags(a) & TACK_ARRAY_SHARED) != 0 && tack_array_device(a) == cpu);
    CHECK(released == 1);
    /* a rewrapped array is an array like any other: views, and the owner released once at the end */
    CHECK(tack_array_view(a, 0, &v) == TACK_OK && tack_array_data(v) == (void *)buf2);
    tack_array_release(a);
    CHECK(released == 1);
    tack_array_release(v);
    CHECK(released == 2);

    /* retained by another holder: released, not emptied -- the other holder's array is untouched */
    released = 0;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 1, count_release, &one, &a) == TACK_OK);
    tack_array_retain(a);
    CHECK(tack_array_recycle(a, NULL, NULL) == 0);
    CHECK(released == 0 && tack_array_data(a) == (void *)buf && tack_array_size(a) == 8);
    CHECK(tack_array_rewrap(a, cpu, TACK_F32, 1, shape, buf2, 1, count_release, &one) == TACK_ERR_VALUE);
    CHECK(released == 1); /* the refused rewrap's owner */
    CHECK(strstr(tack_last_error(), "emptied") != NULL);
    CHECK(tack_array_data(a) == (void *)buf && tack_array_size(a) == 8); /* left as it was */
    tack_array_release(a);
    CHECK(released == 2);

    /* another array on its storage (a view): released, not emptied */
    released = 0;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 1, count_release, &one, &a) == TACK_OK);
    CHECK(tack_array_view(a, 1, &v) == TACK_OK);
    CHECK(tack_array_recycle(a, NULL, NULL) == 0 && released == 0);
    CHECK(tack_array_data(v) == (void *)buf && tack_array_size(v) == 8);
    CHECK(tack_array_recycle(v, NULL, NULL) == 1 && released == 1); /* the view, alone now: emptied */
    tack_array_release(v);
    CHECK(released == 1);

    /* storage Tack allocated is never emptied: released (freed) */
    CHECK(tack_array_zeros(cpu, TACK_F32, 1, shape, &z) == TACK_OK);
    CHECK(tack_array_recycle(z, NULL, NULL) == 0);
    CHECK(tack_array_recycle(NULL, NULL, NULL) == 0);

    /* the owner's release handed back instead of run */
    released = 0;
    tack_release_fn rel = count_release;
    void *ctx = &one;
    CHECK(tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 1, count_release, &one, &a) == TACK_OK);
    tack_array_retain(a);
    CHECK(tack_array_recycle(a, &rel, &ctx) == 0 && rel == NULL && ctx == NULL && released == 0);
    CHECK(tack_array_recycle(a, &rel, &ctx) == 1 && rel == count_release && ctx == &one && released == 0);
    rel(ctx);
    CHECK(tack_array_recycle(a, &rel, &ctx) == 1 && rel == NULL && ctx == NULL); /* nothing left to release */

    /* a refused refill: the owner released, the array still emptied and refillable */
    released = 0;
    char *unaligned = (char *)buf2 + 1;
    CHECK(tack_array_rewrap(a, cpu, TACK_F32, 1, shape, unaligned, 1, count_release, &one) == TACK_ERR_VALUE);
    CHECK(strstr(tack_last_error(), "aligned") != NULL && released == 1);
    CHECK(tack_array_rewrap(a, cpu, TACK_F32, 1, shape, NULL, 1, count_release, &one) == TACK_ERR_VALUE);
    int64_t negative[1] = {-1};
    CHECK(tack_array_rewrap(a, cpu, TACK_F32, 1, negative, buf, 1, count_release, &one) == TACK_ERR_VALUE);
    CHECK(released == 3 && tack_array_data(a) == NULL);
    CHECK(tack_array_rewrap(a, NULL, TACK_F32, 0, NULL, buf, 0, NULL, NULL) == TACK_OK); /* default device, 0-d */
    CHECK(tack_array_ndim(a) == 0 && tack_array_size(a) == 1 && !tack_array_writable(a));
    CHECK(tack_array_device(a) == cpu);
    CHECK(tack_array_rewrap(NULL, cpu, TACK_F32, 1, shape, buf, 1, count_release, &one) == TACK_ERR_VALUE);
    CHECK(released == 4);

    /* a strided wrap, emptied and refilled in C order: no strides left */
    int64_t three[1] = {3}, stride2[1] = {2};
    tack_array_release(a);
    CHECK(tack_array_wrap_strided(cpu, TACK_F32, 1, three, stride2, buf, 1, NULL, NULL, &a) == TACK_OK);
    CHECK(tack_array_strides(a) != NULL);
    CHECK(tack_array_recycle(a, NULL, NULL) == 1);
    CHECK(tack_array_rewrap(a, cpu, TACK_F32, 1, three, buf, 1, NULL, NULL) == TACK_OK);
    CHECK(tack_array_strides(a) == NULL && tack_array_nbytes(a) == 12);
    tack_array_release(a);
    CHECK(alloc_live == 0);
    tack_set_allocator(NULL);
}

/* Fail each allocation in turn: every failure is a clean TACK_ERR_NOMEM,
 * the owner is released exactly once, and nothing leaks. */
static void test_fail_nth_allocation(void)
{
    tack_device *cpu;
    tack_device_get("cpu", &cpu);
    int succeeded = 0;
    for (long n = 1; n < 100 && !succeeded; n++) {
        float buf[4] = {0};
        int one = 1;
        int64_t shape[1] = {4};
        released = 0;
        failing_allocator_install(n);
        int64_t square[2] = {2, 2}, two[1] = {2};
        tack_array *a = NULL, *b = NULL, *c = NULL, *r = NULL, *sub = NULL, *w = NULL;
        tack_status st = tack_array_zeros(cpu, TACK_F32, 1, shape, &a);
        if (st == TACK_OK)
            st = tack_array_clone(a, NULL, &b);
        if (st == TACK_OK)
            st = tack_array_view(b, 0, &c);
        if (st == TACK_OK) /* the views that share b's storage: each a handle of its own */
            st = tack_array_reshape(b, TACK_F32, 2, square, &r);
        if (st == TACK_OK)
            st = tack_array_subview(b, 1, 1, two, &sub);
        if (st == TACK_OK)
            st = tack_array_wrap(cpu, TACK_F32, 1, shape, buf, 1, count_release, &one, &w);
        else
            count_release(&one); /* the wrap never ran: count as released */
        if (st == TACK_OK) { /* emptied and refilled: the first owner released, the second at the end */
            CHECK(tack_array_recycle(w, NULL, NULL) == 1 && released == 1);
            released = 0;
            st = tack_array_rewrap(w, cpu, TACK_F32, 2, square, buf, 1, count_release, &one);
            CHECK(st == TACK_OK);
        }
        tack_array_release(w);
        tack_array_release(sub);
        tack_array_release(r);
        tack_array_release(c);
        tack_array_release(b);
        tack_array_release(a);
        CHECK(st == TACK_OK || st == TACK_ERR_NOMEM);
        CHECK(released == 1);
        CHECK(alloc_live == 0);
        if (st == TACK_OK)
            succeeded = 1;
        tack_set_allocator(NULL);
    }
    CHECK(succeeded);
}

int main(void)
{
    test_version();
    test_dtypes();
    test_devices();
    test_arrays();
    test_owner_release();
    test_shared_flag_is_the_storages();
    test_subviews();
    test_recycle_and_rewrap();
    test_fail_nth_allocation();
    return CHECK_SUMMARY();
}
