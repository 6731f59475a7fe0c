/*
 * prelude_atomic_vec.c -- atomics on vector and matrix elements, once for every dialect.
 *
 * `tack.atomic_add(f, j, v)` and `f[j] += v` on an array of vec3 (Warp's
 * force scatter) lower to one IR_ATOMIC of the element's type, like a
 * scalar's (lower/lower_call.c): the analyses see one atomic update of one
 * element -- the race check, the rule that drops the atomic on the
 * iteration's own element (passes/privatize.c) -- and the emitter writes it
 * as every atomic, tk_atomic_<op>_<type>(&a[idx], v).  This file writes
 * those functions for the vector and matrix types a kernel updates so
 * (tk_cc.atomic_dts): each component is its own atomic of the component
 * type, through the dialect's scalar atomics that its prelude already
 * defines (a compare-and-swap loop or the hardware's add), and the function
 * returns the vector of the components' old values, as Warp's atomic_add
 * does.
 *
 * Why not one atomic for the whole vector: no target has a 96-bit (vec3)
 * or 288-bit (mat33d) atomic, and a lock per element would cost a word per
 * element and serialize the adds that per-component atomics let the memory
 * system overlap.  The price is that the vector is not updated as a whole:
 * another thread reading the element meanwhile can see the x of one add
 * and the y of the one before (the language documents it, as for the two
 * parts of a complex number, emit_complex.c).  No update of a component is
 * lost, which is what a scatter of forces needs.
 *
 * Only add, sub, min and max: each is meaningful component by component
 * (min and max as NumPy's np.minimum of the two vectors would be, stored
 * where it differs).  An exchange or a compare-and-swap of a vector that
 * may be torn means nothing a program could rely on, and the language has
 * no &, | or ^ of vectors for and/or/xor to stand for; lowering refuses
 * those with a CompileError naming the call and the type.
 *
 * The functions are written in the C subset that the C, CUDA, HIP, OpenCL C
 * and Metal dialects all accept (structs by value, a fixed loop), with the
 * dialect's function qualifier and the address space of an atomic's
 * pointer; a vector's components are v[i], a matrix's m[i][j] (the vector
 * preludes' layouts, row major as NumPy's).
 */
#include "compiler/compiler.h"

static const char *const OPS[] = {"add", "sub", "min", "max"};

void tk_vec_atomic_prelude(tk_cc *C, tk_buf *b, const char *qual, const char *global, int with_f64) {
    const tk_dialect *D = C->dialect;
    for (int d = TACK_VEC2; d <= TACK_MAT44D; d++) {
        tack_dtype dt = (tack_dtype)d, comp = dt_scalar(dt);
        if (!(C->atomic_dts >> d & 1) || (comp == TACK_F64 && !with_f64)) continue;
        const char *N = D->ctype(dt), *T = D->ctype(comp);
        int rows = dt_rows(dt), cols = dt_cols(dt);
        for (int o = 0; o < 4; o++) {
            if (cols == 1)
                tk_printf(b, "%s %s tk_atomic_%s_%s(%s %s *p, %s v) { %s r; for (int i = 0; i < %d; i++) "
                             "r.v[i] = tk_atomic_%s_%s(&p->v[i], v.v[i]); return r; }\n",
                          qual, N, OPS[o], N, global, N, N, N, rows, OPS[o], T);
            else
                tk_printf(b, "%s %s tk_atomic_%s_%s(%s %s *p, %s v) { %s r; for (int i = 0; i < %d; i++) "
                             "for (int j = 0; j < %d; j++) r.m[i][j] = tk_atomic_%s_%s(&p->m[i][j], v.m[i][j]); "
                             "return r; }\n",
                          qual, N, OPS[o], N, global, N, N, N, rows, cols, OPS[o], T);
        }
    }
}
