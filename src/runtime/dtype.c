/*
 * dtype.c -- the element types of Tack arrays.
 *
 * One static table describes every dtype: its scalar kind and width, and its
 * shape as a vector (rows x 1) or matrix (rows x cols) of that scalar.  The
 * compiler, the runtime and the Python binding all read this table, so a
 * dtype's size, alignment and name are decided in exactly one place.
 * Vectors and matrices are stored as plain packed scalars (a vec3 is 12
 * bytes, aligned like an f32), which is what NumPy's (n, 3) float32 arrays
 * and VTK's 3-component arrays hold, so sharing them costs nothing.
 * complex64 / complex128 are scalars of a kind of their own (TACK_KIND_COMPLEX),
 * stored as NumPy stores them: the real part, then the imaginary part, with
 * the alignment of one part; `bits` is the pair's width, as DLPack counts it.
 * A quaternion (quat, quatd: x, y, z, w) and a rigid transform (transform,
 * transformd: the position's x, y, z, then the rotation's quaternion) are
 * stored as vectors of 4 and 7 floats -- NumPy's (n, 4) and (n, 7) arrays --
 * and marked by their `form`, so the compiler gives them their own algebra
 * and never mistakes them for vec4 (docs/design/decisions.md).  Composing a
 * shape (tack_dtype_compose) never gives one: vec4 comes first.
 *
 * bf16 (bfloat16: f32's sign and exponent, 7 bits of fraction) is a float of
 * 16 bits like f16, a storage type that kernels compute with as f32; it
 * comes after them so that the ids before it keep their numbers.
 */
#include <string.h>

#include "runtime/runtime.h"

#define S(id, nm, kind, bits) \
    { nm, id, id, kind, bits, 1, 1, (bits) / 8 ? (bits) / 8 : 1, (bits) / 8 ? (bits) / 8 : 1, TACK_FORM_PLAIN }
#define V(id, nm, sc, bits, r, c) \
    { nm, id, sc, TACK_KIND_##sc##_KIND, bits, r, c, (size_t)(r) * (c) * ((bits) / 8), (bits) / 8, TACK_FORM_PLAIN }

#define TACK_KIND_TACK_F32_KIND TACK_KIND_FLOAT
#define TACK_KIND_TACK_F64_KIND TACK_KIND_FLOAT
#define TACK_KIND_TACK_I32_KIND TACK_KIND_INT

static const tack_dtype_info table[TACK_DTYPE_COUNT] = {
    S(TACK_BOOL, "bool", TACK_KIND_BOOL, 8),
    S(TACK_I8, "i8", TACK_KIND_INT, 8),
    S(TACK_I16, "i16", TACK_KIND_INT, 16),
    S(TACK_I32, "i32", TACK_KIND_INT, 32),
    S(TACK_I64, "i64", TACK_KIND_INT, 64),
    S(TACK_U8, "u8", TACK_KIND_UINT, 8),
    S(TACK_U16, "u16", TACK_KIND_UINT, 16),
    S(TACK_U32, "u32", TACK_KIND_UINT, 32),
    S(TACK_U64, "u64", TACK_KIND_UINT, 64),
    S(TACK_F16, "f16", TACK_KIND_FLOAT, 16),
    S(TACK_F32, "f32", TACK_KIND_FLOAT, 32),
    S(TACK_F64, "f64", TACK_KIND_FLOAT, 64),
    V(TACK_VEC2, "vec2", TACK_F32, 32, 2, 1),
    V(TACK_VEC3, "vec3", TACK_F32, 32, 3, 1),
    V(TACK_VEC4, "vec4", TACK_F32, 32, 4, 1),
    V(TACK_VEC2D, "vec2d", TACK_F64, 64, 2, 1),
    V(TACK_VEC3D, "vec3d", TACK_F64, 64, 3, 1),
    V(TACK_VEC4D, "vec4d", TACK_F64, 64, 4, 1),
    V(TACK_VEC2I, "vec2i", TACK_I32, 32, 2, 1),
    V(TACK_VEC3I, "vec3i", TACK_I32, 32, 3, 1),
    V(TACK_VEC4I, "vec4i", TACK_I32, 32, 4, 1),
    V(TACK_MAT22, "mat22", TACK_F32, 32, 2, 2),
    V(TACK_MAT33, "mat33", TACK_F32, 32, 3, 3),
    V(TACK_MAT44, "mat44", TACK_F32, 32, 4, 4),
    V(TACK_MAT22D, "mat22d", TACK_F64, 64, 2, 2),
    V(TACK_MAT33D, "mat33d", TACK_F64, 64, 3, 3),
    V(TACK_MAT44D, "mat44d", TACK_F64, 64, 4, 4),
    { "complex64", TACK_C64, TACK_C64, TACK_KIND_COMPLEX, 64, 1, 1, 8, 4, TACK_FORM_PLAIN },
    { "complex128", TACK_C128, TACK_C128, TACK_KIND_COMPLEX, 128, 1, 1, 16, 8, TACK_FORM_PLAIN },
    { "quat", TACK_QUAT, TACK_F32, TACK_KIND_FLOAT, 32, 4, 1, 16, 4, TACK_FORM_QUAT },
    { "quatd", TACK_QUATD, TACK_F64, TACK_KIND_FLOAT, 64, 4, 1, 32, 8, TACK_FORM_QUAT },
    { "transform", TACK_TRANSFORM, TACK_F32, TACK_KIND_FLOAT, 32, 7, 1, 28, 4, TACK_FORM_TRANSFORM },
    { "transformd", TACK_TRANSFORMD, TACK_F64, TACK_KIND_FLOAT, 64, 7, 1, 56, 8, TACK_FORM_TRANSFORM },
    S(TACK_BF16, "bf16", TACK_KIND_FLOAT, 16),
};

/* Other spellings accepted by name: NumPy's, and a few common aliases.  "float"
 * is Tack's default float, f32, as everywhere in Tack (docs/design/decisions.md). */
static const struct { const char *alias; tack_dtype id; } aliases[] = {
    {"bool_", TACK_BOOL}, {"b1", TACK_BOOL}, {"?", TACK_BOOL},
    {"int8", TACK_I8}, {"int16", TACK_I16}, {"int32", TACK_I32}, {"int64", TACK_I64},
    {"uint8", TACK_U8}, {"uint16", TACK_U16}, {"uint32", TACK_U32}, {"uint64", TACK_U64},
    {"float16", TACK_F16}, {"float32", TACK_F32}, {"float64", TACK_F64},
    {"half", TACK_F16}, {"float", TACK_F32}, {"double", TACK_F64}, {"int", TACK_I64},
    {"vec2f", TACK_VEC2}, {"vec3f", TACK_VEC3}, {"vec4f", TACK_VEC4},
    {"mat22f", TACK_MAT22}, {"mat33f", TACK_MAT33}, {"mat44f", TACK_MAT44},
    {"c64", TACK_C64}, {"c128", TACK_C128},
    {"quatf", TACK_QUAT}, {"transformf", TACK_TRANSFORM}, {"bfloat16", TACK_BF16},
};

const tack_dtype_info *tack_dtype_get(tack_dtype id) {
    if ((int)id < 0 || id >= TACK_DTYPE_COUNT)
        return NULL;
    return &table[id];
}

tack_status tack_dtype_from_name(const char *name, tack_dtype *out) {
    if (!name)
        return tack_set_error(TACK_ERR_TYPE, "dtype name is NULL");
    for (int i = 0; i < TACK_DTYPE_COUNT; i++)
        if (strcmp(table[i].name, name) == 0) {
            *out = (tack_dtype)i;
            return TACK_OK;
        }
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, name) == 0) {
            *out = aliases[i].id;
            return TACK_OK;
        }
    return tack_set_error(TACK_ERR_TYPE,
                          "unknown dtype '%.100s' (expected one of bool, i8, i16, i32, i64, u8, u16, "
                          "u32, u64, f16, f32, f64, vec2, vec3, vec4, vec2d, vec3d, vec4d, vec2i, "
                          "vec3i, vec4i, mat22, mat33, mat44, mat22d, mat33d, mat44d, complex64, complex128, quat, quatd, transform, "
                          "transformd)",

                          name);
}

tack_status tack_dtype_compose(tack_dtype s, int rows, int cols, tack_dtype *out) {
    for (int i = 0; i < TACK_DTYPE_COUNT; i++)
        if (table[i].scalar == s && table[i].rows == rows && table[i].cols == cols && table[i].form == TACK_FORM_PLAIN) {
            *out = (tack_dtype)i;
            return TACK_OK;
        }
    const tack_dtype_info *si = tack_dtype_get(s);
    return tack_set_error(TACK_ERR_TYPE, "there is no %dx%d dtype of %s", rows, cols,
                          si ? si->name : "?");
}
