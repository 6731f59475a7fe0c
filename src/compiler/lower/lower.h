/*
 * lower.h -- what the files of lowering share (not installed): lower.c,
 * lower_expr.c, lower_call.c, lower_stmt.c and lower_loop.c.  lower.c has
 * the essay.
 */
#ifndef TACK_LOWER_H
#define TACK_LOWER_H

#include "compiler/compiler.h"

typedef struct lw_state {
    tk_cc *C;
    tk_spec *S;
    tk_func *F;
    int fidx;
    int is_kernel;
    tk_ir *blk;
    int pfor;        /* current parallel loop id, -1 outside */
    int pfor_one;    /* the current parallel loop has at most one iteration (ir_pfor_one): serial code */
    int npfor;
    int depth;       /* statement nesting in the kernel body (0 = top level) */
    int loops;       /* serial loops around the statement */
    int pfor_loops;  /* serial loops inside the current parallel loop */
    /* the current parallel loop's own variables (locals; -1 where the body
     * assigns one), whose values no two iterations share */
    int pfor_vars[TACK_MAX_NDIM];
    int npfor_vars;
    tk_ir *bpf;            /* the blocks loop whose body is being lowered (lower_blocks.c), else NULL */
    const char *bcoll;     /* the collective being lowered, which its barriers name (lower_blocks.c), else NULL */
    int independent;       /* the loop being lowered is tack.independent(...) (lower_loop.c) */
    int infer;
    int changed;
    int ntemps;
    int discard;     /* the call being lowered is an expression statement */
    /* unbound.c: the named locals definitely assigned here, whether here is
     * reached, and each local's flag for reads that may precede its assignment */
    unsigned char *da;
    int reach;
    int *uflag;
} lw_state;

#define ERR(n, ...) tk_error(L->C, L->fidx, (n) ? (n)->line : 0, (n) ? (n)->col + 1 : 0, __VA_ARGS__)
#define TN(t) ty_name(&L->C->arena, (t))


tk_ir *lw_mk(lw_state *L, int op, tk_type ty, tack_node *n);
void lw_choice(lw_state *L, tack_node *n, int k, tk_type ty, int local);
void lw_emit(lw_state *L, tk_ir *s);
tk_ir *lw_kid(lw_state *L, tk_ir *p, tk_ir *k);
tk_ir *lw_unknown(lw_state *L, tack_node *n);
int lw_known(tk_ir *e);
int lw_array_param(lw_state *L, const char *name);
tk_ir *lw_local_ref(lw_state *L, int loc, int line);
int lw_temp(lw_state *L, tk_type ty);
tk_ir *lw_assign_ir(lw_state *L, int loc, tk_ir *v, int line);
tk_ir *lw_hoist(lw_state *L, tk_ir *e);
tk_ir *lw_cast(lw_state *L, tk_ir *e, tk_type to);
int lw_literal_tree(const tk_ir *e);
int lw_weak_recomputed(const tk_ir *e);
tk_ir *lw_truth(lw_state *L, tk_ir *e, tack_node *n);
int lw_site(lw_state *L, int kind, int line, int axis, const char *array, const char *msg);
void lw_check(lw_state *L, int kind, int site, tk_ir *a, tk_ir *b, int line);
tk_type lw_dtype_type(tack_dtype dt);
/* unbound.c: definite assignment, and the check of a read that may come first */
void lw_unbound_begin(lw_state *L);
unsigned char *lw_da_save(lw_state *L);
void lw_da_restore(lw_state *L, const unsigned char *s);
void lw_da_meet(lw_state *L, const unsigned char *a);
void lw_da_set(lw_state *L, int loc);
void lw_da_jump(lw_state *L);
void lw_unbound_use(lw_state *L, int loc, tack_node *n);
void lw_unbound_finish(lw_state *L, tk_ir *body);
tk_ir *lw_index_value(lw_state *L, tack_node *n);
tk_ir *lw_index_of(lw_state *L, tk_ir *e, tack_node *n);
tk_ir *lw_transpose_attr(lw_state *L, tk_ir *x, tack_node *n);
int lw_vector_index(lw_state *L, tack_node *ix, int ndim, const char *what, const char *name, tk_ir **vi);
tk_ir *lw_matrix_index(lw_state *L, tack_node *n, tk_type ty, int axis); /* m[i, j]: checked and wrapped (lower_expr.c) */
/* A scalar meaning of an intrinsic, which lw_elementwise applies to each component (lower_call.c). */
typedef tk_ir *(*scalar_fn)(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n);
tk_ir *lw_elementwise(lw_state *L, const tk_intrinsic *in, tk_ir **a, int na, tack_node *n, scalar_fn f);
tk_ir *lw_numpy_call(lw_state *L, const char *name, tack_node *n); /* lower_numpy.c: NULL when not one */
tk_ir *lw_axis_index(lw_state *L, tk_ir *k, tk_type ty, int axis, int len, tack_node *n);
void lw_indices(lw_state *L, int p, tack_node **idx, int nidx, tk_ir *out, tack_node *n);
void lw_mark_written(lw_state *L, int p);
tk_ir *lw_component_index(lw_state *L, tk_ir *k, tk_type ty, int len, tack_node *n);
tk_ir *lw_component(lw_state *L, tk_ir *v, tk_ir *k, tack_node *n);
tk_ir *lw_bin(lw_state *L, int b, tk_type ty, tk_ir *x, tk_ir *y, int line);
tk_ir *lw_expr(lw_state *L, tack_node *n);
/* par: the parallel context of the call (tk_spec's par, npar_own, par_own) */
tk_spec *lw_specialize(tk_cc *C, int func, tk_type *ptypes, int nparams, const tk_spec *par, tack_node *at);
/* lower.c: locals by name (-1 when none) */
int lw_find_local_in(tk_spec *S, const char *name, int scope);
int lw_lookup(lw_state *L, const char *name);
/* lower_expr.c */
tk_ir *lw_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n);
const char *lw_op_symbol(tack_op op);                 /* "+", "//", ... */
/* The one type rule's run-time integers (lower_expr.c): t, or the default
 * float where an integer known only at run time meets a float (arith) or is
 * made a float (/, math functions). */
tk_type lw_rule_arith(tk_type t, const tk_ir *x, const tk_ir *y);
tk_type lw_rule_floatify(tk_type t, const tk_ir *x, const tk_ir *y);
/* Python ints at compile time (lower_pyint.c): exact results of literal
 * expressions (NULL: lower as usual), and the check where one meets a type. */
int lw_is_big_pyint(const tk_ir *e);
tk_ir *lw_big_pyint(lw_state *L, uint64_t v, int line);
tk_ir *lw_pyint_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n);
tk_ir *lw_pyint_neg(lw_state *L, tk_ir *x, tack_node *n);
tk_ir *lw_pyint_invert(lw_state *L, tk_ir *x, tack_node *n);
tk_ir *lw_pyint_abs(lw_state *L, tk_ir *x, tack_node *n);
tk_ir *lw_pyint_pick(int is_min, tk_ir *acc, tk_ir *y);
tk_ir *lw_pyint_of_bool(lw_state *L, tk_ir *e, const tk_ir *other);
int lw_pyint_truth(const tk_ir *e, int *truth);
void lw_pyint_fits(lw_state *L, const tk_ir *e, tk_type to);
tk_ir *lw_pyint_compare(lw_state *L, int b, tk_ir *x, tk_ir *y, tack_node *n);
tk_ir *lw_pyint_narrow(lw_state *L, tk_ir *e, tk_type to, tack_node *n);
/* The values fixed-width integer type dt holds, as int64 (uint64's top half left out). */
void lw_int_range(tack_dtype dt, int64_t *lo, int64_t *hi);
/* Whether statement tree x assigns `name` (=, :=, op=, or as a for target); lower_call.c. */
int lw_assigns_name(const tack_node *x, const char *name);
/* `if v > a[k]: a[k] = v` in a parallel loop, lowered as tack.atomic_max (lower_reduce.c); 0: not that form. */
int lw_running_extreme(lw_state *L, tack_node *n);
int lw_comp_of_attr(const char *a);                   /* x y z w -> 0..3, else -1 */
tk_ir *lw_in(lw_state *L, tk_ir *blk, tack_node *n);  /* n's statements go into blk */
/* lower_stmt.c */
void lw_assign_local(lw_state *L, int loc, tk_ir *v, tack_node *n);
int lw_target_local(lw_state *L, tack_node *t);
void lw_stmt(lw_state *L, tack_node *n);
void lw_block_into(lw_state *L, tack_node *n, tk_ir *blk);
/* lower_loop.c */
int lw_is_range_call(tack_node *it, const char *name);
int lw_shape_param(lw_state *L, tack_node *x);  /* a.shape: the array parameter a, else -1 */
tk_ir *lw_shape_of(lw_state *L, int p, int d, tack_node *n);  /* extent d of array parameter p */
void lw_for(lw_state *L, tack_node *n);
void lw_while(lw_state *L, tack_node *n);
void lw_refuse_assigned_pfor_vars(lw_state *L, tack_node *t, tack_node *body);
/* lower_blocks.c: for b, t in tack.blocks(n, B); tack.barrier(); tack.shared's rules (bytes: its size) */
void lw_blocks_pfor(lw_state *L, tack_node *n, tack_node *it, int parallel);
void lw_barrier(lw_state *L, tack_node *n);
void lw_blocks_shared(lw_state *L, tack_node *call, int loc, int64_t bytes);
/* r = tack.block_sum(v) & co (op: 0 sum, 1 min, 2 max, 3 scan), target the name r */
void lw_block_collective(lw_state *L, tack_node *target, tack_node *call, int op);
/* lower_call.c */
tk_ir *lw_call(lw_state *L, tack_node *n);
/* a function lowered for a parallel loop: its own-index parameters as L->pfor_vars */
void lw_par_own_vars(lw_state *L);
/* inside a parallel loop, or a function called from one */
int lw_in_parallel(lw_state *L);
/* want_value 0: a statement, returns NULL */
/* An IR_ATOMIC (A_*) on array p: exp is A_CAS's expected value, NULL for the others. */
tk_ir *lw_atomic(lw_state *L, int which, int p, tack_node **idx, int nidx, tk_ir *val, tk_ir *exp, tack_node *n,
                 int want_value);

/* lower_linalg.c: transpose ... qr3 (a TK_IK_LINALG row: its name and M_* row) */
tk_ir *lw_linalg_call(lw_state *L, const char *name, int m, tack_node *n);

/* complex.c: complex numbers */
tk_ir *lw_complex_make(lw_state *L, tk_type t, tk_ir *re, tk_ir *im, int line);
tk_ir *lw_complex_part(lw_state *L, tk_ir *z, int k, int line);  /* k 0: .real, 1: .imag */
tk_ir *lw_complex_cast(lw_state *L, tk_ir *e, tk_type to);        /* lw_cast with a complex side */
tk_ir *lw_complex_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n);
tk_ir *lw_complex_compare(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n);
tk_ir *lw_complex_abs(lw_state *L, tk_ir *z, tack_node *n);
tk_ir *lw_complex_math(lw_state *L, int m, tk_ir *z, tack_node *n);
tk_ir *lw_complex_call(lw_state *L, const char *name, tack_node *n); /* NULL: not a complex call */
/* quat.c: quaternions and transforms */
tk_ir *lw_quat_cast(lw_state *L, tk_ir *e, tk_type to);            /* lw_cast with a quat/transform side */
tk_ir *lw_quat_binop(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n);
tk_ir *lw_quat_compare(lw_state *L, tack_op op, tk_ir *x, tk_ir *y, tack_node *n);
tk_ir *lw_quat_neg(lw_state *L, tk_ir *x, tack_node *n);
tk_ir *lw_quat_attr(lw_state *L, tk_ir *v, const char *name, tack_node *n); /* NULL: v is neither */
tk_ir *lw_quat_ctor(lw_state *L, tack_dtype dt, tack_node *n);
tk_ir *lw_quat_call(lw_state *L, int m, tack_node *n);             /* a TK_IK_QUAT row */
/* lower_local.c: local arrays (x = np.zeros(8) inside a kernel or function) */
int lw_local_array(lw_state *L, const char *name);      /* its local, else -1 */
int lw_is_array_maker(const tack_node *n);              /* a CALL of np.zeros & co (and tack.shared) */
int lw_const_int(const tack_node *n, int64_t *out);     /* a constant integer expression's value, else 0 */
void lw_create_array(lw_state *L, tack_node *t, tack_node *call);
tk_ir *lw_local_load(lw_state *L, int loc, tack_node **idx, int nidx, tack_node *n);
tk_ir *lw_local_arg(lw_state *L, int loc, tack_node *n);   /* passed to a @tack.func: IR_LARRAY */
void lw_local_written_by(lw_state *L, int loc, const char *fn, tack_node *n);
void lw_local_store(lw_state *L, tack_node *t, int loc, tk_ir *v);
void lw_local_augassign(lw_state *L, tack_node *n, int loc);
tk_ir *lw_local_part_load(lw_state *L, tack_node *t, int loc);
void lw_local_store_back(lw_state *L, tack_node *t, int loc, tk_ir *ld, tk_ir *v);
tk_ir *lw_local_attr(lw_state *L, int loc, tack_node *n);           /* x.ndim, x.size */
tk_ir *lw_local_extent(lw_state *L, int loc, tack_node *ix, tack_node *n); /* x.shape[k] */
tk_ir *lw_half_value(lw_state *L, tk_ir *v, int dt); /* a value stored into an f16/bf16 element, to be rounded once */
void lw_uses_half(lw_state *L, int dt); /* dt f16 or bf16: the prelude's helpers for it (else nothing) */
tk_ir *lw_half_round(lw_state *L, tk_ir *v, int dt, tack_node *n); /* tack.f16(v), tack.bf16(v): rounded, as f32 */

#endif /* TACK_LOWER_H */
