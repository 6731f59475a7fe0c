/*
 * ast.c -- the kernel AST builder behind tack_kernel.h.
 *
 * A front end (the Python extension walking CPython's `ast`, or a C test)
 * describes each function of a module node by node.  Nodes are plain structs
 * in the module's arena; children and comparison operators are growable
 * arrays in the same arena (growth copies into a bigger block and abandons
 * the old one, which is cheap for trees of this size).  The builder does no
 * checking of the tree's shape beyond what it must to stay memory safe: the
 * lowering pass (lower.c) reports malformed or unsupported trees as compile
 * errors with the node's line and column.
 *
 * Every function here that allocates returns TACK_ERR_NOMEM (or NULL / -1)
 * with the error set when the allocator refuses; the module stays valid and
 * can still be freed.
 */
#include <string.h>

#include "compiler/compiler.h"

static tack_status nomem(void) { return tack_set_error(TACK_ERR_NOMEM, "out of memory building a kernel AST"); }

TACK_API tack_status tack_module_new(tack_module **out) {
    if (!out) return tack_set_error(TACK_ERR_VALUE, "tack_module_new: out is NULL");
    *out = NULL;
    tack_module *m = tack_calloc(1, sizeof *m);
    if (!m) return nomem();
    tk_arena_init(&m->arena);
    *out = m;
    return TACK_OK;
}

TACK_API void tack_module_free(tack_module *m) {
    if (!m) return;
    tk_arena_free(&m->arena);
    tack_free(m);
}

/* Grow an arena array of `n` elements of `size` to hold one more. */
static int grow(tk_arena *a, void **arr, int n, int *cap, size_t size) {
    if (n < *cap) return 1;
    int ncap = *cap ? *cap * 2 : 4;
    void *p = tk_alloc(a, (size_t)ncap * size);
    if (!p) return 0;
    if (n) memcpy(p, *arr, (size_t)n * size);
    *arr = p;
    *cap = ncap;
    return 1;
}

TACK_API int tack_module_add_function(tack_module *m, tack_function_kind kind, const char *name,
                                      const char *filename, int first_line, const char *source) {
    if (!m || !name) {
        tack_set_error(TACK_ERR_VALUE, "tack_module_add_function: module and name are required");
        return -1;
    }
    void *arr = m->funcs;
    if (!grow(&m->arena, &arr, m->nfuncs, &m->capfuncs, sizeof(tk_func))) {
        nomem();
        return -1;
    }
    m->funcs = arr;
    tk_func f;
    memset(&f, 0, sizeof f);
    f.kind = kind;
    f.first_line = first_line;
    f.name = tk_strdup(&m->arena, name);
    f.filename = tk_strdup(&m->arena, filename ? filename : "<kernel>");
    f.source = source ? tk_strdup(&m->arena, source) : NULL;
    if (!f.name || !f.filename || (source && !f.source)) {
        nomem();
        return -1;
    }
    m->funcs[m->nfuncs] = f;
    return m->nfuncs++;
}

static tk_func *get_func(tack_module *m, int func) {
    if (!m || func < 0 || func >= m->nfuncs) {
        tack_set_error(TACK_ERR_VALUE, "no function %d in the module", func);
        return NULL;
    }
    return &m->funcs[func];
}

TACK_API tack_status tack_function_add_param(tack_module *m, int func, const char *name, tack_node *annotation) {
    tk_func *f = get_func(m, func);
    if (!f) return TACK_ERR_VALUE;
    if (!name) return tack_set_error(TACK_ERR_VALUE, "parameter name is NULL");
    void *arr = f->params;
    if (!grow(&m->arena, &arr, f->nparams, &f->capparams, sizeof(tk_fparam))) return nomem();
    f->params = arr;
    const char *n = tk_strdup(&m->arena, name);
    if (!n) return nomem();
    f->params[f->nparams].name = n;
    f->params[f->nparams].annotation = annotation;
    f->nparams++;
    return TACK_OK;
}

TACK_API tack_status tack_function_set_body(tack_module *m, int func, tack_node *body) {
    tk_func *f = get_func(m, func);
    if (!f) return TACK_ERR_VALUE;
    f->body = body;
    return TACK_OK;
}

TACK_API tack_status tack_function_set_returns(tack_module *m, int func, tack_node *annotation) {
    tk_func *f = get_func(m, func);
    if (!f) return TACK_ERR_VALUE;
    f->returns = annotation;
    return TACK_OK;
}

TACK_API int tack_module_function_count(const tack_module *m) { return m ? m->nfuncs : 0; }

TACK_API tack_node *tack_node_new(tack_module *m, tack_node_kind kind, int line, int col) {
    if (!m || (int)kind < 0 || kind >= TACK_N_KIND_COUNT) {
        tack_set_error(TACK_ERR_VALUE, "tack_node_new: bad module or node kind %d", (int)kind);
        return NULL;
    }
    tack_node *n = tk_alloc(&m->arena, sizeof *n);
    if (!n) {
        nomem();
        return NULL;
    }
    n->kind = kind;
    n->line = line;
    n->col = col;
    return n;
}

TACK_API tack_status tack_node_add_child(tack_module *m, tack_node *n, tack_node *child) {
    if (!m || !n) return tack_set_error(TACK_ERR_VALUE, "tack_node_add_child: NULL node");
    void *arr = n->kids;
    if (!grow(&m->arena, &arr, n->nkids, &n->capkids, sizeof(tack_node *))) return nomem();
    n->kids = arr;
    n->kids[n->nkids++] = child;
    return TACK_OK;
}

TACK_API tack_status tack_node_set_name(tack_module *m, tack_node *n, const char *name) {
    if (!m || !n) return tack_set_error(TACK_ERR_VALUE, "tack_node_set_name: NULL node");
    const char *s = tk_strdup(&m->arena, name ? name : "");
    if (!s) return nomem();
    n->name = s;
    return TACK_OK;
}

TACK_API void tack_node_set_int(tack_node *n, int64_t v) {
    if (!n) return;
    n->ival = v;
    n->is_uint = 0;
}

TACK_API void tack_node_set_uint(tack_node *n, uint64_t v) {
    if (!n) return;
    n->ival = (int64_t)v;
    n->is_uint = v > (uint64_t)INT64_MAX;
}

TACK_API void tack_node_set_float(tack_node *n, double v) {
    if (n) n->fval = v;
}

TACK_API void tack_node_set_op(tack_node *n, tack_op op) {
    if (n) n->op = op;
}

TACK_API tack_status tack_node_add_op(tack_module *m, tack_node *n, tack_op op) {
    if (!m || !n) return tack_set_error(TACK_ERR_VALUE, "tack_node_add_op: NULL node");
    void *arr = n->ops;
    if (!grow(&m->arena, &arr, n->nops, &n->capops, sizeof(tack_op))) return nomem();
    n->ops = arr;
    n->ops[n->nops++] = op;
    return TACK_OK;
}
