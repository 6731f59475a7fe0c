/*
 * config.c -- every setting of libtack, in one table, read from the
 * environment once.
 *
 * Tack has knobs: the optimize default, the CPU pool's thread count, the
 * kernel cache's directory, compiler switches for measuring, the paths of
 * the GPU compilers' libraries.  They used to be getenv calls scattered over
 * a dozen files, each read whenever its code ran, so a program could not
 * tell what was in force, could not change one without changing its own
 * environment (not thread safe: setenv races every getenv), and tests
 * started processes just to flip one.  Here each setting is one line of
 * config.def -- name, environment variable, kind, default, one line of doc
 * and one of effect -- and this file is the only reader of the TACK_*
 * environment.
 *
 * The environment is read once, at the first use of any setting
 * (pthread_once): its value becomes the setting's initial value, and a
 * later setenv changes nothing.  A set environment variable that is empty
 * counts as unset, except for a text setting, where empty is a value
 * (TACK_ZIG= means "no zig").  A value that cannot be read ("TACK_OPT=yes")
 * leaves the default in force and is kept for tk_config_env_check, which
 * tack_compile and the Python module's import call, so a typo is an error
 * naming the variable rather than a silently ignored wish.
 *
 * At run time tack_config_set changes a setting by name, from text parsed
 * as the environment's would be (NULL: back to the environment's value, or
 * the default), and tack_config_get reads it back with where it came from.
 * When a change takes effect is each setting's own (its `effect` line): a
 * compile option's default applies to the kernels defined or options
 * initialized after it, a compiler switch to the next compile, the thread
 * count to the next launch, a library path only before that library is
 * loaded.  Precedence, from strongest: an explicit option of the API call
 * (tack_compile_options, @tack.kernel(optimize=...)), then the setting --
 * set at run time, else from the environment, else the default.
 *
 * Numbers and choices are atomics, read without a lock on every compile and
 * launch; text values are copied out under a mutex, so a reader never sees
 * half of a concurrent change.  Nothing here allocates: values live in
 * fixed buffers (TK_CONFIG_STR_MAX bytes, a path's size), and a longer
 * value is refused by name.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "platform/platform.h"
#include "runtime/config.h"
#include "runtime/runtime.h"

typedef enum { K_BOOL, K_INT, K_CHOICE, K_STR } kind;

typedef struct {
    const char *name, *env;
    kind k;
    const char *def, *choices, *doc, *effect;
} entry;

static const entry E[TK_CFG_COUNT] = {
#define TK_CONFIG(ID, name, env, kind, def, choices, doc, effect) {name, env, K_##kind, def, choices, doc, effect},
#include "runtime/config.def"
#undef TK_CONFIG
};

static const char *const KIND_NAME[] = {"bool", "int", "choice", "str"};

typedef struct {
    _Atomic int ival;                    /* BOOL, INT, CHOICE (the choice's index) */
    _Atomic int source;                  /* tack_config_source */
    char sval[TK_CONFIG_STR_MAX];        /* STR (under `lock`) */
} slot;

static slot cur[TK_CFG_COUNT];  /* in force */
static slot init[TK_CFG_COUNT]; /* from the environment (or the default): what NULL puts back */
static char bad_env[TK_CFG_COUNT][512]; /* why an environment value could not be read ("" if it could) */
static tk_once_t once = TK_ONCE_INIT;
static tk_mutex_t lock = TK_MUTEX_INIT;

/* The index of `s` among a CHOICE's "a|b|c", or -1. */
static int choice_index(const char *choices, const char *s) {
    size_t n = strlen(s);
    int i = 0;
    for (const char *c = choices;; i++) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == n && !strncmp(c, s, n)) return i;
        if (!bar) return -1;
        c = bar + 1;
    }
}

/* Text -> value for entry i; 0 on success, else -1 with the error set naming
 * `who` (the environment variable, or the setting for tack_config_set). */
static int parse(int i, const char *who, const char *text, int *ival, char *sval) {
    const entry *e = &E[i];
    switch (e->k) {
    case K_BOOL:
        if (!strcmp(text, "0") || !strcmp(text, "1")) {
            *ival = text[0] - '0';
            return 0;
        }
        tack_set_error(TACK_ERR_VALUE, "%s must be 0 or 1, not '%.60s' (%s: %s)", who, text, e->name, e->doc);
        return -1;
    case K_INT: {
        long long v = 0;
        size_t n = strlen(text);
        int ok = n > 0 && n <= 8 && strspn(text, "0123456789") == n;
        if (ok) v = atoll(text);
        if (ok && v <= TK_CONFIG_INT_MAX) {
            *ival = (int)v;
            return 0;
        }
        tack_set_error(TACK_ERR_VALUE, "%s must be a whole number from 0 to %d, not '%.60s' (%s: %s)", who,
                       TK_CONFIG_INT_MAX, text, e->name, e->doc);
        return -1;
    }
    case K_CHOICE: {
        int k = choice_index(e->choices, text);
        /* the switches' 0 and 1, and NumPy's float names, as aliases */
        if (k < 0 && !strcmp(text, "0")) k = choice_index(e->choices, "off");
        if (k < 0 && !strcmp(text, "1")) k = choice_index(e->choices, "on");
        if (k < 0 && !strcmp(text, "float32")) k = choice_index(e->choices, "f32");
        if (k < 0 && !strcmp(text, "float64")) k = choice_index(e->choices, "f64");
        if (k >= 0) {
            *ival = k;
            return 0;
        }
        char list[128];
        snprintf(list, sizeof list, "%s", e->choices);
        for (char *p = list; *p; p++)
            if (*p == '|') *p = '/';
        tack_set_error(TACK_ERR_VALUE, "%s must be one of %s, not '%.60s' (%s: %s)", who, list, text, e->name,
                       e->doc);
        return -1;
    }
    case K_STR: {
        size_t n = strlen(text);
        if (n < TK_CONFIG_STR_MAX) {
            memcpy(sval, text, n + 1);
            return 0;
        }
        tack_set_error(TACK_ERR_VALUE, "%s is %zu bytes long; at most %d are kept (%s: %s)", who, n,
                       TK_CONFIG_STR_MAX - 1, e->name, e->doc);
        return -1;
    }
    }
    return -1;
}

static void store(slot *v, int ival, const char *sval, int source) {
    atomic_store(&v->ival, ival);
    if (sval && sval != v->sval) memcpy(v->sval, sval, strlen(sval) + 1);
    atomic_store(&v->source, source);
}

static void read_environment(void) {
    /* parsing sets the thread's error on a bad value: the caller's is kept */
    char saved[1024];
    tack_status saved_st = tack_last_status();
    snprintf(saved, sizeof saved, "%s", tack_last_error());
    tk_mutex_lock(&lock);
    for (int i = 0; i < TK_CFG_COUNT; i++) {
        int ival = 0;
        static char sval[TK_CONFIG_STR_MAX]; /* under `lock`, once */
        sval[0] = 0;
        parse(i, E[i].env, E[i].def, &ival, sval); /* the defaults always parse (test_config.c) */
        int source = TACK_CONFIG_DEFAULT;
        const char *v = getenv(E[i].env);
        if (v && (*v || E[i].k == K_STR)) {
            int ev = 0;
            static char es[TK_CONFIG_STR_MAX];
            if (parse(i, E[i].env, v, &ev, es) == 0) {
                ival = ev;
                memcpy(sval, es, strlen(es) + 1);
                source = TACK_CONFIG_ENV;
            } else {
                snprintf(bad_env[i], sizeof bad_env[i], "%s", tack_last_error()); /* parse's words, naming it */
            }
        }
        store(&init[i], ival, sval, source);
        store(&cur[i], ival, sval, source);
    }
    tk_mutex_unlock(&lock);
    if (saved_st != TACK_OK) tack_set_error(saved_st, "%s", saved);
    else tack_clear_error();
}

static void ready(void) { tk_once(&once, read_environment); }

int tk_config_int(tk_config_id id) {
    ready();
    return atomic_load(&cur[id].ival);
}

const char *tk_config_str(tk_config_id id, char *buf, size_t cap) {
    ready();
    if (!cap) return buf;
    if (E[id].k == K_CHOICE) {
        int k = atomic_load(&cur[id].ival);
        const char *c = E[id].choices;
        for (; k > 0; k--) c = strchr(c, '|') + 1;
        size_t len = strcspn(c, "|");
        snprintf(buf, cap, "%.*s", (int)len, c);
        return buf;
    }
    tk_mutex_lock(&lock);
    snprintf(buf, cap, "%s", cur[id].sval);
    tk_mutex_unlock(&lock);
    return buf;
}

tack_status tk_config_env_check(void) {
    ready();
    tack_status st = TACK_OK;
    tk_mutex_lock(&lock);
    for (int i = 0; i < TK_CFG_COUNT && st == TACK_OK; i++) {
        if (!bad_env[i][0] || atomic_load(&cur[i].source) == TACK_CONFIG_SET) continue; /* set since: fixed */
        st = tack_set_error(TACK_ERR_VALUE, "%s", bad_env[i]); /* kept when it was read: a value too long to keep */
    }
    tk_mutex_unlock(&lock);
    return st;
}

/* ------------------------------------------------------------- public */
static int find(const char *name) {
    for (int i = 0; name && i < TK_CFG_COUNT; i++)
        if (!strcmp(E[i].name, name)) return i;
    return -1;
}

static tack_status unknown(const char *fn, const char *name) {
    return tack_set_error(TACK_ERR_VALUE, "%s: no setting is named '%.60s' (tack_config_describe lists them)", fn,
                          name ? name : "(null)");
}

int tack_config_count(void) { return TK_CFG_COUNT; }

tack_status tack_config_describe(int index, tack_config_info *out) {
    if (!out) return tack_set_error(TACK_ERR_VALUE, "tack_config_describe: out is NULL");
    if (index < 0 || index >= TK_CFG_COUNT)
        return tack_set_error(TACK_ERR_VALUE, "tack_config_describe: no setting %d (there are %d)", index,
                              TK_CFG_COUNT);
    const entry *e = &E[index];
    out->name = e->name;
    out->env = e->env;
    out->type = KIND_NAME[e->k];
    out->default_value = e->def;
    out->choices = e->choices;
    out->doc = e->doc;
    out->effect = e->effect;
    return TACK_OK;
}

tack_status tack_config_get(const char *name, char *buf, size_t cap, tack_config_source *source) {
    int i = find(name);
    if (i < 0) return unknown("tack_config_get", name);
    if (!buf || !cap) return tack_set_error(TACK_ERR_VALUE, "tack_config_get: no buffer for '%s'", name);
    ready();
    char tmp[TK_CONFIG_STR_MAX];
    tk_mutex_lock(&lock); /* the value and its source together */
    if (E[i].k == K_STR) snprintf(tmp, sizeof tmp, "%s", cur[i].sval);
    else if (E[i].k == K_CHOICE) tk_config_str((tk_config_id)i, tmp, sizeof tmp);
    else snprintf(tmp, sizeof tmp, "%d", atomic_load(&cur[i].ival));
    int src = atomic_load(&cur[i].source);
    tk_mutex_unlock(&lock);
    size_t n = strlen(tmp);
    if (n >= cap)
        return tack_set_error(TACK_ERR_VALUE, "tack_config_get: '%s' is %zu bytes long, and the buffer holds %zu",
                              name, n + 1, cap);
    memcpy(buf, tmp, n + 1);
    if (source) *source = (tack_config_source)src;
    return TACK_OK;
}

tack_status tack_config_set(const char *name, const char *value) {
    int i = find(name);
    if (i < 0) return unknown("tack_config_set", name);
    ready();
    if (!value) {
        tk_mutex_lock(&lock);
        store(&cur[i], atomic_load(&init[i].ival), init[i].sval, atomic_load(&init[i].source));
        tk_mutex_unlock(&lock);
        return TACK_OK;
    }
    char who[96];
    snprintf(who, sizeof who, "tack_config_set: '%s'", E[i].name);
    int ival = 0;
    tk_mutex_lock(&lock);
    static char sval[TK_CONFIG_STR_MAX]; /* under `lock` */
    sval[0] = 0;
    int rc = parse(i, who, value, &ival, sval);
    if (rc == 0) store(&cur[i], ival, E[i].k == K_STR ? sval : NULL, TACK_CONFIG_SET);
    tk_mutex_unlock(&lock);
    return rc == 0 ? TACK_OK : TACK_ERR_VALUE;
}

tack_status tack_config_check_environment(void) { return tk_config_env_check(); }
