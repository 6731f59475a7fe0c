/* test_dlpack.c -- DLPack import and export in libtack, without Python:
 * dtype and device mapping, contiguity rules, flags, ownership (every
 * deleter exactly once, also on failure, on another thread, under a failing
 * allocator). */
#include <pthread.h>
#include <string.h>

#include "check.h"
#include "tack.h"
#include "tack_dlpack.h"

/* ------------------------------------------------------- a fake producer */
static int deleted_legacy, deleted_versioned;
static void count_legacy(DLManagedTensor *self) { deleted_legacy++; (void)self; }
static void count_versioned(DLManagedTensorVersioned *self) { deleted_versioned++; (void)self; }

static float storage[64] __attribute__((aligned(64)));

typedef struct {
    DLManagedTensorVersioned m;
    int64_t shape[4];
    int64_t strides[4];
} producer_v;

typedef struct {
    DLManagedTensor m;
    int64_t shape[4];
    int64_t strides[4];
} producer_l;

static void make_v(producer_v *p, int ndim, const int64_t *shape, const int64_t *strides, DLDataType dt)
{
    memset(p, 0, sizeof *p);
    p->m.version.major = 1;
    p->m.version.minor = 1;
    p->m.deleter = count_versioned;
    p->m.dl_tensor.data = storage;
    p->m.dl_tensor.device.device_type = kDLCPU;
    p->m.dl_tensor.ndim = ndim;
    p->m.dl_tensor.dtype = dt;
    for (int i = 0; i < ndim; i++) {
        p->shape[i] = shape[i];
        if (strides)
            p->strides[i] = strides[i];
    }
    p->m.dl_tensor.shape = p->shape;
    p->m.dl_tensor.strides = strides ? p->strides : NULL;
}

static void make_l(producer_l *p, int ndim, const int64_t *shape, DLDataType dt)
{
    memset(p, 0, sizeof *p);
    p->m.deleter = count_legacy;
    p->m.dl_tensor.data = storage;
    p->m.dl_tensor.device.device_type = kDLCPU;
    p->m.dl_tensor.ndim = ndim;
    p->m.dl_tensor.dtype = dt;
    for (int i = 0; i < ndim; i++)
        p->shape[i] = shape[i];
    p->m.dl_tensor.shape = p->shape;
}

static const DLDataType F32 = {kDLFloat, 32, 1};

/* ---------------------------------------------------------------- dtypes */
static void test_dtypes(void)
{
    for (int i = 0; i < TACK_DTYPE_COUNT; i++) {
        const tack_dtype_info *info = tack_dtype_get((tack_dtype)i);
        DLDataType t;
        tack_dtype back;
        CHECK(tack_dtype_to_dlpack((tack_dtype)i, &t) == TACK_OK);
        CHECK(t.lanes == 1 && t.bits == tack_dtype_get(info->scalar)->itemsize * 8);
        CHECK(tack_dtype_from_dlpack(t, &back) == TACK_OK && back == info->scalar);
    }
    DLDataType b = {kDLBool, 8, 1}, bf = {kDLBfloat, 16, 1}, bf32 = {kDLBfloat, 32, 1}, c = {kDLComplex, 64, 1}, v = {kDLFloat, 32, 4},
               i4 = {kDLInt, 4, 1}, c128 = {kDLComplex, 128, 1}, c32 = {kDLComplex, 32, 1};
    tack_dtype d;
    CHECK(tack_dtype_from_dlpack(b, &d) == TACK_OK && d == TACK_BOOL);
    CHECK(tack_dtype_from_dlpack(bf, &d) == TACK_OK && d == TACK_BF16);
    CHECK(tack_dtype_from_dlpack(bf32, &d) == TACK_ERR_BUFFER && strstr(tack_last_error(), "bfloat32"));
    CHECK(tack_dtype_from_dlpack(c, &d) == TACK_OK && d == TACK_C64);
    CHECK(tack_dtype_from_dlpack(c128, &d) == TACK_OK && d == TACK_C128);
    CHECK(tack_dtype_from_dlpack(c32, &d) == TACK_ERR_BUFFER && strstr(tack_last_error(), "complex32"));
    DLDataType t;
    CHECK(tack_dtype_to_dlpack(TACK_C128, &t) == TACK_OK && t.code == kDLComplex && t.bits == 128);
    CHECK(tack_dtype_to_dlpack(TACK_BF16, &t) == TACK_OK && t.code == kDLBfloat && t.bits == 16 && t.lanes == 1);
    CHECK(tack_dtype_from_dlpack(v, &d) == TACK_ERR_BUFFER && strstr(tack_last_error(), "4 lanes"));
    CHECK(tack_dtype_from_dlpack(i4, &d) == TACK_ERR_BUFFER);
}

/* ---------------------------------------------------------------- import */
static void test_import_basic(void)
{
    producer_v p;
    producer_l l;
    tack_array *a = NULL, *v = NULL;
    int64_t shape[2] = {3, 4};
    deleted_versioned = deleted_legacy = 0;

    make_v(&p, 2, shape, NULL, F32);
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK);
    CHECK(tack_array_data(a) == storage && tack_array_ndim(a) == 2 && tack_array_shape(a)[1] == 4);
    CHECK(tack_array_dtype(a) == TACK_F32 && tack_array_writable(a));
    CHECK(tack_array_flags(a) & TACK_ARRAY_SHARED);
    CHECK(tack_array_view(a, 0, &v) == TACK_OK);
    tack_array_release(a);
    CHECK(deleted_versioned == 0); /* the view still uses it */
    tack_array_release(v);
    CHECK(deleted_versioned == 1);

    make_l(&l, 2, shape, F32);
    CHECK(tack_array_from_dlpack(&l.m, 0, NULL, &a) == TACK_OK);
    CHECK(tack_array_writable(a));
    tack_array_release(a);
    CHECK(deleted_legacy == 1);

    /* READ_ONLY travels; byte_offset is honoured. */
    make_v(&p, 2, shape, NULL, F32);
    p.m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    p.m.dl_tensor.byte_offset = 16;
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK);
    CHECK(!tack_array_writable(a) && tack_array_data(a) == storage + 4);
    CHECK(tack_array_view(a, 1, &v) == TACK_ERR_READONLY);
    tack_array_release(a);
    CHECK(deleted_versioned == 2);

    /* Explicit C-contiguous strides, and any stride on extent-1 dimensions. */
    int64_t s3[3] = {1, 4, 5}, st3[3] = {999, 5, 1};
    make_v(&p, 3, s3, st3, F32);
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK);
    tack_array_release(a);
    CHECK(deleted_versioned == 3);

    /* 0-d and size-0 (NULL data). */
    make_v(&p, 0, NULL, NULL, F32);
    p.m.dl_tensor.shape = NULL;
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK);
    CHECK(tack_array_ndim(a) == 0 && tack_array_size(a) == 1);
    tack_array_release(a);
    int64_t z[2] = {0, 5}, zs[2] = {7, 3};
    make_v(&p, 2, z, zs, F32);
    p.m.dl_tensor.data = NULL;
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK);
    CHECK(tack_array_size(a) == 0 && tack_array_data(a) == NULL);
    tack_array_release(a);
    CHECK(deleted_versioned == 5);

    /* Bool. */
    DLDataType b = {kDLBool, 8, 1};
    make_v(&p, 2, shape, NULL, b);
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK && tack_array_dtype(a) == TACK_BOOL);
    tack_array_release(a);
    CHECK(deleted_versioned == 6);
}

static void test_import_refusals(void)
{
    producer_v p;
    tack_array *a = NULL;
    int64_t shape[2] = {3, 4}, transposed[2] = {1, 3};
    deleted_versioned = 0;

    make_v(&p, 2, shape, transposed, F32);
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_BUFFER);
    CHECK(strstr(tack_last_error(), "C-contiguous") && strstr(tack_last_error(), "(1, 3)"));
    CHECK(deleted_versioned == 1); /* ownership passed: deleted on failure */

    make_v(&p, 2, shape, NULL, F32);
    p.m.version.major = 2;
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_BUFFER && strstr(tack_last_error(), "2.1"));
    CHECK(deleted_versioned == 2);

    make_v(&p, 2, shape, NULL, F32);
    p.m.dl_tensor.device.device_type = kDLVulkan;
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_BUFFER && strstr(tack_last_error(), "kDLVulkan"));
    CHECK(deleted_versioned == 3);

    DLDataType c = {kDLComplex, 32, 1}; /* complex32: no Tack dtype */
    make_v(&p, 2, shape, NULL, c);
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_BUFFER);
    CHECK(deleted_versioned == 4);

    make_v(&p, 2, shape, NULL, F32);
    p.m.dl_tensor.byte_offset = 2; /* misaligned for f32 */
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_VALUE && strstr(tack_last_error(), "aligned"));
    CHECK(deleted_versioned == 5);

    make_v(&p, 2, shape, NULL, F32);
    p.m.dl_tensor.data = NULL;
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_VALUE);
    CHECK(deleted_versioned == 6);

    make_v(&p, 2, shape, NULL, F32);
    p.m.dl_tensor.ndim = TACK_MAX_NDIM + 1;
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_VALUE);
    CHECK(deleted_versioned == 7);
    CHECK(tack_array_from_dlpack(NULL, 1, NULL, &a) == TACK_ERR_VALUE);
}

/* Strided tensors: a strided view with opt->strided (its storage the bytes
 * its elements reach, so a view of it may reach below its first element),
 * gathered by a copy, refused without either. */
static void test_import_strided(void)
{
    producer_v p;
    tack_array *a = NULL, *sub = NULL;
    int64_t shape[2] = {4, 3}, back[2] = {-1, -4}; /* storage[0..12) as a 3x4 matrix, [::-1, ::-1].T */
    tack_dlpack_import_options view = {TACK_DLPACK_COPY_IF_NEEDED, NULL, NULL, 1};
    tack_dlpack_import_options copy = {TACK_DLPACK_COPY_ALWAYS, NULL, NULL, 0};
    deleted_versioned = 0;
    for (int i = 0; i < 12; i++) storage[i] = (float)i;

    make_v(&p, 2, shape, back, F32);
    p.m.dl_tensor.byte_offset = 11 * sizeof(float); /* element (0, 0) is the last */
    CHECK(tack_array_from_dlpack(&p.m, 1, &view, &a) == TACK_OK);
    CHECK(tack_array_data(a) == storage + 11 && tack_array_strides(a) && tack_array_strides(a)[1] == -4);
    float host[12];
    CHECK(tack_array_copy_to_host(a, host, sizeof host) == TACK_OK);
    for (int i = 0; i < 12; i++) CHECK(host[i] == (float)(11 - (i % 3) * 4 - i / 3));
    int64_t two[1] = {3}, step[1] = {-4};
    CHECK(tack_array_as_strided(a, -1, 1, two, step, &sub) == TACK_OK); /* its row 1, below (0, 0): 10, 6, 2 */
    CHECK(tack_array_copy_to_host(sub, host, 3 * sizeof(float)) == TACK_OK);
    CHECK(host[0] == 10.0f && host[1] == 6.0f && host[2] == 2.0f);
    tack_array_release(a);
    CHECK(deleted_versioned == 0);
    tack_array_release(sub);
    CHECK(deleted_versioned == 1);

    make_v(&p, 2, shape, back, F32);
    p.m.dl_tensor.byte_offset = 11 * sizeof(float);
    CHECK(tack_array_from_dlpack(&p.m, 1, &copy, &a) == TACK_OK); /* gathered in C order */
    CHECK(deleted_versioned == 2 && !tack_array_strides(a) && ((float *)tack_array_data(a))[1] == 7.0f);
    tack_array_release(a);

    make_v(&p, 2, shape, back, F32);
    p.m.dl_tensor.byte_offset = 11 * sizeof(float);
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_ERR_BUFFER && strstr(tack_last_error(), "strided = 1"));
    CHECK(deleted_versioned == 3);
}

static void test_import_copy(void)
{
    producer_v p;
    tack_array *a = NULL;
    int64_t shape[1] = {8};
    for (int i = 0; i < 8; i++)
        storage[i] = (float)i;
    deleted_versioned = 0;
    tack_dlpack_import_options o = {TACK_DLPACK_COPY_ALWAYS, NULL, NULL, 0};

    make_v(&p, 1, shape, NULL, F32);
    p.m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    CHECK(tack_array_from_dlpack(&p.m, 1, &o, &a) == TACK_OK);
    CHECK(deleted_versioned == 1); /* copied at once: the producer's tensor is given back */
    CHECK(tack_array_data(a) != storage && tack_array_writable(a));
    float back[8];
    CHECK(tack_array_copy_to_host(a, back, sizeof back) == TACK_OK && back[7] == 7.0f);
    tack_array_release(a);

    /* The producer already copied (IS_COPIED): no second copy. */
    make_v(&p, 1, shape, NULL, F32);
    p.m.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
    CHECK(tack_array_from_dlpack(&p.m, 1, &o, &a) == TACK_OK && tack_array_data(a) == storage);
    tack_array_release(a);
    CHECK(deleted_versioned == 2);

    /* COPY_NEVER on the same device shares. */
    o.copy = TACK_DLPACK_COPY_NEVER;
    make_v(&p, 1, shape, NULL, F32);
    CHECK(tack_array_from_dlpack(&p.m, 1, &o, &a) == TACK_OK && tack_array_data(a) == storage);
    tack_array_release(a);
    CHECK(deleted_versioned == 3);
}

static int refuse(void) { return 0; }

static void *release_on_thread(void *arg)
{
    tack_array_release(arg);
    return NULL;
}

static void test_deleter_gate_and_threads(void)
{
    producer_v p;
    tack_array *a = NULL;
    int64_t shape[1] = {8};
    deleted_versioned = 0;
    tack_dlpack_import_options o = {TACK_DLPACK_COPY_IF_NEEDED, NULL, refuse, 0};
    make_v(&p, 1, shape, NULL, F32);
    CHECK(tack_array_from_dlpack(&p.m, 1, &o, &a) == TACK_OK);
    tack_array_release(a);
    CHECK(deleted_versioned == 0); /* the gate said no (an interpreter finalizing) */

    make_v(&p, 1, shape, NULL, F32);
    CHECK(tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, release_on_thread, a) == 0);
    pthread_join(t, NULL);
    CHECK(deleted_versioned == 1);
}

/* ---------------------------------------------------------------- export */
static void test_export(void)
{
    tack_device *cpu;
    tack_device_get("cpu", &cpu);
    tack_array *a = NULL, *ro = NULL, *back = NULL;
    int64_t shape[2] = {2, 5};
    void *out = NULL;
    CHECK(tack_array_zeros(cpu, TACK_VEC3, 2, shape, &a) == TACK_OK);

    CHECK(tack_array_to_dlpack(a, 1, TACK_DLPACK_COPY_IF_NEEDED, &out) == TACK_OK);
    DLManagedTensorVersioned *v = out;
    CHECK(v->version.major == 1 && v->flags == 0);
    CHECK(v->dl_tensor.ndim == 3 && v->dl_tensor.shape[0] == 2 && v->dl_tensor.shape[2] == 3);
    CHECK(v->dl_tensor.strides[0] == 15 && v->dl_tensor.strides[1] == 3 && v->dl_tensor.strides[2] == 1);
    CHECK(v->dl_tensor.dtype.code == kDLFloat && v->dl_tensor.dtype.bits == 32 && v->dl_tensor.dtype.lanes == 1);
    CHECK(v->dl_tensor.device.device_type == kDLCPU && v->dl_tensor.data == tack_array_data(a));
    CHECK(tack_array_flags(a) & TACK_ARRAY_SHARED);
    /* Round trip: importing our own export shares the storage. */
    CHECK(tack_array_from_dlpack(out, 1, NULL, &back) == TACK_OK);
    CHECK(tack_array_data(back) == tack_array_data(a) && tack_array_dtype(back) == TACK_F32);
    CHECK(tack_array_ndim(back) == 3);
    tack_array_release(back); /* runs our deleter: releases the retained array */

    /* Read-only: flagged in 1.x, refused in legacy unless copied. */
    CHECK(tack_array_view(a, 0, &ro) == TACK_OK);
    CHECK(tack_array_to_dlpack(ro, 1, TACK_DLPACK_COPY_IF_NEEDED, &out) == TACK_OK);
    CHECK(((DLManagedTensorVersioned *)out)->flags == DLPACK_FLAG_BITMASK_READ_ONLY);
    tack_dlpack_delete(out, 1);
    CHECK(tack_array_to_dlpack(ro, 0, TACK_DLPACK_COPY_IF_NEEDED, &out) == TACK_ERR_BUFFER);
    CHECK(strstr(tack_last_error(), "read-only") && strstr(tack_last_error(), "max_version"));
    CHECK(tack_array_to_dlpack(ro, 0, TACK_DLPACK_COPY_ALWAYS, &out) == TACK_OK);
    CHECK(((DLManagedTensor *)out)->dl_tensor.data != tack_array_data(a));
    tack_dlpack_delete(out, 0);
    CHECK(tack_array_to_dlpack(ro, 1, TACK_DLPACK_COPY_ALWAYS, &out) == TACK_OK);
    CHECK(((DLManagedTensorVersioned *)out)->flags == DLPACK_FLAG_BITMASK_IS_COPIED);
    tack_dlpack_delete(out, 1);
    tack_array_release(ro);

    /* The tensor outlives the Tack handle. */
    CHECK(tack_array_to_dlpack(a, 0, TACK_DLPACK_COPY_IF_NEEDED, &out) == TACK_OK);
    tack_array_release(a);
    float *data = ((DLManagedTensor *)out)->dl_tensor.data;
    data[29] = 1.0f; /* still valid memory (ASan would object otherwise) */
    tack_dlpack_delete(out, 0);

    /* Size 0: NULL data; mat33: two trailing dimensions; 0-d. */
    int64_t zero[1] = {0};
    CHECK(tack_array_empty(cpu, TACK_MAT33D, 1, zero, &a) == TACK_OK);
    CHECK(tack_array_to_dlpack(a, 1, TACK_DLPACK_COPY_IF_NEEDED, &out) == TACK_OK);
    v = out;
    CHECK(v->dl_tensor.data == NULL && v->dl_tensor.ndim == 3 && v->dl_tensor.shape[1] == 3 &&
          v->dl_tensor.dtype.bits == 64);
    tack_dlpack_delete(out, 1);
    tack_array_release(a);
    CHECK(tack_array_empty(cpu, TACK_BOOL, 0, NULL, &a) == TACK_OK);
    CHECK(tack_array_to_dlpack(a, 1, TACK_DLPACK_COPY_IF_NEEDED, &out) == TACK_OK);
    v = out;
    CHECK(v->dl_tensor.ndim == 0 && v->dl_tensor.data != NULL && v->dl_tensor.dtype.code == kDLBool);
    tack_dlpack_delete(out, 1);
    tack_array_release(a);
}

/* ------------------------------------------- failing the Nth allocation */
static void test_out_of_memory(void)
{
    tack_device *cpu;
    tack_device_get("cpu", &cpu);
    int64_t shape[1] = {16};
    int completed = 0;
    for (long n = 1; n < 40 && !completed; n++) {
        producer_v p;
        make_v(&p, 1, shape, NULL, F32);
        deleted_versioned = 0;
        failing_allocator_install(n);
        tack_array *a = NULL, *b = NULL, *c = NULL;
        void *out = NULL;
        tack_dlpack_import_options copy = {TACK_DLPACK_COPY_ALWAYS, NULL, NULL, 0};
        int ok = tack_array_from_dlpack(&p.m, 1, NULL, &a) == TACK_OK;
        CHECK(ok || deleted_versioned == 1);
        if (ok && tack_array_to_dlpack(a, 1, TACK_DLPACK_COPY_IF_NEEDED, &out) == TACK_OK) {
            if (tack_array_from_dlpack(out, 1, &copy, &b) == TACK_OK) {
                if (tack_array_clone(b, NULL, &c) == TACK_OK) {
                    completed = 1;
                    tack_array_release(c);
                }
                tack_array_release(b);
            }
        }
        tack_array_release(a);
        CHECK(deleted_versioned == 1);
        CHECK(alloc_live == 0);
        tack_set_allocator(NULL);
    }
    CHECK(completed);
}

int main(void)
{
    tack_device *cpu;
    tack_device_get("cpu", &cpu); /* the registry's own allocations happen before the counting */
    test_dtypes();
    test_import_basic();
    test_import_refusals();
    test_import_strided();
    test_import_copy();
    test_deleter_gate_and_threads();
    test_export();
    test_out_of_memory();
    return CHECK_SUMMARY();
}
