/*
 * spawn_guard.h -- running a tool so that nothing of it outlives us
 * (spawn_guard.c): a process group of its own, killed whole if this
 * process dies, Ctrl-C passed on only to an interruptible caller's tool.
 */
#ifndef TACK_SPAWN_GUARD_H
#define TACK_SPAWN_GUARD_H

#include <stddef.h>

/* Run argv (argv[0] a path: nothing is searched) without a shell, inside
 * directory `dirfd` (or here when it is -1), stdin from /dev/null, stdout
 * and stderr together into out: the first cap - 1 bytes, NUL-terminated.
 * forward_int: pass SIGINT on to it (an interruptible caller: interrupt.c).
 * Returns 0 with its wait status in *status, or the errno that kept it from
 * running. */
int tk_spawn_guarded(char **argv, int dirfd, char *out, size_t cap, size_t *len, int *status, int forward_int);

#endif
