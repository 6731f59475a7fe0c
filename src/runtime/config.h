/*
 * config.h -- libtack's settings, inside the library (config.c).
 *
 * The code that uses a setting asks here, by id, at the moment it acts on
 * it; nothing else in src/ reads a TACK_* environment variable.  The public
 * side (by name, as text) is tack_config_* in tack.h.
 */
#ifndef TACK_CONFIG_H
#define TACK_CONFIG_H

#include <stddef.h>

#include "tack.h"

typedef enum tk_config_id {
#define TK_CONFIG(ID, name, env, kind, def, choices, doc, effect) TK_CFG_##ID,
#include "runtime/config.def"
#undef TK_CONFIG
    TK_CFG_COUNT
} tk_config_id;

/* Room for a text setting's value, its terminating NUL included. */
#define TK_CONFIG_STR_MAX 32768
/* The largest INT setting. */
#define TK_CONFIG_INT_MAX 1048576

/* A BOOL (0/1), INT, or CHOICE (the index of the choice, in the order of
 * config.def's list) setting's value now.  Lock-free. */
int tk_config_int(tk_config_id id);
/* A STR or CHOICE setting's value now, copied into buf (cap bytes; cap of
 * TK_CONFIG_STR_MAX always holds it); returns buf. */
const char *tk_config_str(tk_config_id id, char *buf, size_t cap);
/* TACK_OK, or TACK_ERR_VALUE naming the first environment variable whose
 * value could not be read (its setting keeps the default until set). */
tack_status tk_config_env_check(void);

#endif /* TACK_CONFIG_H */
