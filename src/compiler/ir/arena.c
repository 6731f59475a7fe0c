/*
 * arena.c -- bump allocation for one compile, freed in bulk.
 *
 * A compile allocates thousands of small objects (AST nodes, IR nodes, local
 * tables, strings) whose lifetimes all end together: when the program has
 * been emitted, or when an error aborts the compile.  An arena fits that
 * exactly.  Memory comes in chunks from tack_malloc (so the fail-the-Nth-
 * allocation test reaches every one of them) and is handed out by bumping a
 * pointer.  Nothing is freed individually.
 *
 * When an arena has an `oom` jump buffer, a failed chunk allocation
 * longjmps there instead of returning NULL: the compiler's passes never test
 * for NULL, and the driver turns the jump into TACK_ERR_NOMEM after freeing
 * the whole arena.  The module arena (ast.c) has no jump buffer; its
 * builder functions check for NULL and report TACK_ERR_NOMEM themselves.
 *
 * tk_buf is a growable string inside the same arena (the emitted source and
 * the IR dump); growth abandons the old copy in the arena, which costs at
 * most as much again as the final text.
 */
#include <stdio.h>
#include <string.h>

#include "compiler/compiler.h"

struct tk_chunk {
    tk_chunk *next;
    size_t cap;
    _Alignas(16) unsigned char data[];
};

#define TK_CHUNK_MIN (32u * 1024u)

void tk_arena_init(tk_arena *a) {
    a->head = NULL;
    a->used = a->cap = 0;
    a->oom = NULL;
}

void tk_arena_free(tk_arena *a) {
    tk_chunk *c = a->head;
    while (c) {
        tk_chunk *n = c->next;
        tack_free(c);
        c = n;
    }
    a->head = NULL;
    a->used = a->cap = 0;
}

void *tk_alloc(tk_arena *a, size_t size) {
    size = (size + 15u) & ~(size_t)15u;
    if (size == 0) size = 16;
    if (!a->head || a->cap - a->used < size) {
        size_t cap = size > TK_CHUNK_MIN ? size : TK_CHUNK_MIN;
        tk_chunk *c = tack_malloc(sizeof(tk_chunk) + cap);
        if (!c) {
            if (a->oom) longjmp(*a->oom, 1);
            return NULL;
        }
        c->cap = cap;
        c->next = a->head;
        a->head = c;
        a->used = 0;
        a->cap = cap;
    }
    void *p = a->head->data + a->used;
    a->used += size;
    memset(p, 0, size);
    return p;
}

char *tk_strdup(tk_arena *a, const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = tk_alloc(a, n);
    if (p) memcpy(p, s, n);
    return p;
}

char *tk_fmt(tk_arena *a, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char tmp[256];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) n = 0;
    char *p = tk_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    if ((size_t)n < sizeof tmp) {
        memcpy(p, tmp, (size_t)n + 1);
    } else {
        va_start(ap, fmt);
        vsnprintf(p, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    return p;
}

void tk_buf_init(tk_buf *b, tk_arena *a) {
    b->arena = a;
    b->s = NULL;
    b->len = b->cap = 0;
}

static void buf_reserve(tk_buf *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap * 2 : 1024;
    while (cap < b->len + extra + 1) cap *= 2;
    char *s = tk_alloc(b->arena, cap);
    if (!s) return; /* unreachable with an oom jump */
    if (b->len) memcpy(s, b->s, b->len);
    s[b->len] = 0;
    b->s = s;
    b->cap = cap;
}

void tk_puts(tk_buf *b, const char *s) {
    size_t n = strlen(s);
    buf_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

void tk_vprintf(tk_buf *b, const char *fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    char tmp[512];
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap2);
    va_end(ap2);
    if (n <= 0) return;
    buf_reserve(b, (size_t)n);
    if ((size_t)n < sizeof tmp) memcpy(b->s + b->len, tmp, (size_t)n + 1);
    else vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void tk_printf(tk_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    tk_vprintf(b, fmt, ap);
    va_end(ap);
}
