/*
 * gpu_common.h -- the contract every GPU launcher shares.
 *
 * The CUDA, OpenCL and Level Zero launchers (cuda_launch.c,
 * opencl_launch.c, level_zero_launch.c) differ in their driver calls and
 * agree on everything else; what they agree on is here, so that a new
 * launcher (HIP, Metal) reuses it rather than copying it a fourth time:
 *
 *   - The device-side error record.  Generated code writes a failed check
 *     into one 32-byte record per device, {i32 failed, i32 site, u64 prog,
 *     i64 a, i64 b}, the first failure winning; `prog` is the id of the
 *     program whose check failed.
 *
 *   - The programs built for a device (gpu_records): a list, under the
 *     device's kernel lock, that a record's id is looked up in so that the
 *     failure is worded from that program's site table (tk_site_error); and
 *     an error kept for the next synchronization point when a program is
 *     freed with a failure still unreported.  gpu_check_record is every
 *     backend's *_check_record: the kept error first (a later record is
 *     read, cleared and dropped: the first failure wins), else the record,
 *     worded from its program or, when that is gone, saying so.  Each
 *     backend reads and clears the record through its own driver, in a
 *     gpu_take_fn.
 *
 *   - The program header every launcher's program starts with (gpu_prog):
 *     the list link, the Tack program, its id (unique in the process), the
 *     lock that orders its launches, its phases ('p' parallel, 's' serial)
 *     and its frame size.
 *
 *   - The layout comment the dialects end their source with
 *     (`/ * tack-cuda: phases=psp frame=N block=B * /`,
 *     `/ * tack-opencl: phases=psp frame=N fp64=0|1 * /`,
 *     `/ * tack-metal: phases=psp frame=N * /`): the dialect check
 *     and its message, the last occurrence of the mark, the phase letters;
 *     and the whole of the OpenCL form, which OpenCL and Level Zero share.
 *
 *   - The argument convention: ctx, frame, prog, then per parameter an
 *     array's address and extents or a scalar's 64 bits (a float's as a
 *     double, an integer's or a bool's as a 64-bit integer).  An array the
 *     program indexes with strides (tk_pinfo.strided) has its element
 *     strides after its extents, and its address is element (0, ..., 0)'s;
 *     the OpenCL dialect adds that element's offset into the buffer (a
 *     cl_mem cannot be offset by the host) after the strides.
 *
 *   - Kernel cache entries (kcache.c seals them): the key (a hash of the
 *     source, the dialect and what else the entry depends on), reading an
 *     entry into a buffer of our own, and the framing of a binary entry (a line naming
 *     its key and length, the bytes, a trailer), which OpenCL program
 *     binaries and Level Zero's SPIR-V share.
 *
 * Every symbol here is internal to the library (hidden) and starts gpu_.
 */
#ifndef TACK_GPU_COMMON_H
#define TACK_GPU_COMMON_H

#include "platform/platform.h"
#include <stddef.h>
#include <stdint.h>

#include "backends/common/kcache.h"
#include "runtime/program.h"
#include "runtime/runtime.h"

/* The error record, as every GPU prelude declares it. */
typedef struct gpu_err_record {
    int32_t failed;
    int32_t site;
    uint64_t prog;
    int64_t a, b;
} gpu_err_record;

_Static_assert(sizeof(gpu_err_record) == 32, "the device error record is 32 bytes");

/* The start of every launcher's program struct. */
typedef struct gpu_prog {
    struct gpu_prog *next;
    tack_program *p;
    uint64_t id;
    int nph;
    char *kinds;           /* 'p' parallel, 's' serial, 'b' a blocks loop (tack.blocks), per phase */
    unsigned *bsize;       /* per phase: a 'b' phase's threads a block (`tack-grid-block`), else 0 */
    size_t frame_bytes;
    tk_mutex_t lock;  /* orders the program's launches */
    tack_stream *last;     /* the stream (a reference; NULL: the device's own) its last launch went to */
} gpu_prog;

/* A device's kernel state (the record itself is the backend's: device memory). */
typedef struct gpu_records {
    tk_mutex_t lock;  /* guards the record, progs and pending */
    gpu_prog *progs;       /* programs built for the device */
    tack_status pending;   /* an error to report at the next synchronization */
    char pending_msg[1200];
    const char *where;     /* "the GPU": a failed check with an unknown site is "on" it */
} gpu_records;

void gpu_records_init(gpu_records *r, const char *where);

/* A program's header: its lock initialized, its id assigned. */
void gpu_prog_init(gpu_prog *g, tack_program *p);
/* Destroys the lock and frees the phase letters (not g itself). */
void gpu_prog_fini(gpu_prog *g);

/* With r->lock held: add g to / remove it from the device's programs. */
void gpu_link(gpu_records *r, gpu_prog *g);
void gpu_unlink(gpu_records *r, gpu_prog *g);
/* With r->lock held: the program with id `id`, or NULL. */
const gpu_prog *gpu_find_prog(const gpu_records *r, uint64_t id);

/* Read the device's record (r->lock held, the device's work finished).
 * Returns 1 with *rec filled when a check failed, and clears the record
 * then; 0 otherwise, with *st saying whether reading failed. */
typedef int (*gpu_take_fn)(tack_device *d, gpu_err_record *rec, tack_status *st);

/* The backend's *_check_record (takes r->lock): report the kept error, or a
 * failed check recorded on the device, and clear it.  TACK_OK when none. */
tack_status gpu_check_record(gpu_records *r, tack_device *d, gpu_take_fn take);
/* When a program is freed (r->lock held, the device's work finished): a
 * failure still recorded is worded now, while its program is listed, and
 * kept for the next synchronization. */
void gpu_keep_pending(gpu_records *r, tack_device *d, gpu_take_fn take);

/* The layout comment.  Checks that p was compiled for `dialect` (else the
 * error names `device`, e.g. "a CUDA device") and finds the last `mark` in
 * its source; sets g->nph and g->kinds from the phase letters after it and
 * *rest to what follows them.  When the mark is missing the error is
 * `missing` (a format taking the kernel's name), or the dialect's error
 * when `missing` is NULL. */
tack_status gpu_layout(tack_program *p, gpu_prog *g, const char *dialect, const char *mark, const char *device,
                       const char *missing, const char **rest);
/* The "opencl" dialect's layout (`/ * tack-opencl: phases=.. frame=N fp64=0|1 * /`)
 * into g and *fp64. */
tack_status gpu_opencl_layout(tack_program *p, gpu_prog *g, const char *device, int *fp64);

/* The argument slots of one launch: ctx, frame, prog, then per parameter
 * (a strided array's strides included; not OpenCL's offsets). */
int gpu_arg_count(const tack_program *p);
/* An array argument's element strides, ndim of them into out (C order's
 * for an array that has none: a strided build also takes those). */
void gpu_strides(const tack_array *a, int ndim, int64_t *out);
/* A scalar argument's 64 bits. */
uint64_t gpu_scalar_bits(const tk_pinfo *pi, const tack_arg *a, int im);
/* How many slots a scalar parameter takes: 2 for a complex (re, im), else 1. */
int gpu_scalar_slots(const tk_pinfo *pi);
/* Whether an array argument is shared with another library (TACK_ARRAY_SHARED). */
int gpu_any_shared(const tack_program *p, const tack_arg *args, int nargs);

/* A program's cache key (32 hex digits): a hash of its source, its dialect
 * and `misc`, which names everything else the entry depends on. */
void gpu_cache_key(const tack_program *p, const char *misc, char key[40]);
/* A cache entry's contents (tack_malloc'd, *n bytes), checked and unsealed
 * by kcache.c; NULL when it is missing or unusable (then removed, and said
 * with TACK_LOG=info). */
char *gpu_entry_read(const kc_dir *d, const char *name, size_t *n);
/* A binary entry, `HEAD KEY LEN\n` then LEN bytes then a trailer: the
 * buffer, with *bin and *len the bytes inside it; NULL when it is missing,
 * unusable, not the entry for `key` or refused by `valid` (then "not
 * `what` for its key" with TACK_LOG=info). */
char *gpu_bin_entry_read(const kc_dir *d, const char *name, const char *head, const char *key, const char *what,
                         int (*valid)(const unsigned char *bin, size_t len), const unsigned char **bin, size_t *len);
tack_status gpu_bin_entry_write(const kc_dir *d, const char *name, const char *head, const char *key,
                                const unsigned char *bin, size_t len);

/* ------------------------------------------------------- gpu_launch.c
 * What the CUDA and HIP launchers share (gpu_launch.c's comment). */

/* A lost device: the first sticky error wins; under its own lock. */
typedef struct gpu_lost {
    tk_mutex_t lock;
    int lost;              /* no driver call is made any more */
    int told;              /* the loss has been reported (once) */
    int code;              /* the driver's error code */
    char after[128];       /* the kernel launched last when it was lost; "" when none */
    char last_kernel[128]; /* the kernel launched last on the device */
} gpu_lost;

/* A backend's sticky codes: the code's name with *what saying it in words;
 * NULL when `code` is not sticky. */
typedef const char *(*gpu_sticky_fn)(int code, const char **what);

void gpu_lost_init(gpu_lost *l);
void gpu_lost_mark(gpu_lost *l, int code);
int gpu_lost_is(gpu_lost *l);
void gpu_lost_launched(gpu_lost *l, const char *kernel);
/* TACK_OK when not lost; else "DEVICE: LOST_WORDS (NAME, WHAT) after kernel
 * 'K' was launched; CONSEQUENCE; restart the process" the first time, and
 * "DEVICE is unusable since an earlier error (...)" after that. */
tack_status gpu_lost_error(gpu_lost *l, const char *device, gpu_sticky_fn name_of, const char *lost_words,
                           const char *consequence);

/* A program's grid: the block size, per phase its loop's extent
 * (layout_grid.c's postfix; NULL when not written), the blocks that fill
 * the device and the phase's own block size where the backend sets one (the
 * last two set by the backend once the kernel is loaded). */
typedef struct gpu_grid {
    unsigned block;
    const char *blocks;    /* the program's phase kinds (gpu_prog.kinds): 'b' phases count blocks */
    int nph;
    char **work;
    unsigned *fill;
    unsigned *local;       /* per phase: a 'p' phase's threads a block where they differ by phase (OpenCL,
                            * Level Zero: each kernel's own limit); 0: block */
} gpu_grid;

/* The CUDA-family layout comment (`MARK` phases, ` frame=N block=B`) and the
 * loops' extents into g and grid; `family` ("CUDA", "HIP") names it in errors. */
tack_status gpu_cu_layout(tack_program *p, gpu_prog *g, gpu_grid *grid, const char *dialect, const char *mark,
                          const char *device, const char *family);
/* The Metal layout comment (`/ * tack-metal: phases=psp frame=N * /`) and the
 * loops' extents into g and grid (grid->block is left to the backend). */
tack_status gpu_metal_layout(tack_program *p, gpu_prog *g, gpu_grid *grid);
/* The grid's per-phase tables (fill and local zeroed, for the backend) and the loops'
 * extents the source says (`/ * tack-grid-work: ... * /`), after g's layout is
 * read; grid->block and grid->blocks are the caller's. */
tack_status gpu_grid_work(tack_program *p, gpu_prog *g, gpu_grid *grid);
void gpu_grid_free(gpu_grid *g);
/* Phase k's blocks for this call's arguments: ceil(work / its block size) for a 'p' phase (local[k],
 * else block), its loop's blocks for a 'b' phase; at least 1, at most the grid's fill, and the fill
 * when the extent cannot be told from the arguments. */
unsigned gpu_phase_grid(const gpu_grid *g, int k, const tack_program *p, const tack_arg *args, int nargs);

/* What a GPU and one compiled kernel allow a block of a blocks loop (-1: not said): the CUDA, HIP,
 * Metal and Level Zero launchers fill it, gpu_block_check words the error. */
typedef struct gpu_block_limits {
    const char *family;       /* "CUDA", "HIP", "Metal", "Level Zero" */
    const char *device_name;  /* the driver's name for the device */
    int threads;              /* the most threads in a block of this kernel */
    const char *threads_what; /* where that limit comes from (an attribute's name) */
    int shared;               /* bytes of static shared memory the kernel declares */
    int shared_most;          /* the most a block may use on the device */
    const char *shared_what;
} gpu_block_limits;
/* Blocks phase k's B threads (g->bsize[k]) against the limits: TACK_OK, or a
 * ValueError naming the kernel, B and the limit (never a smaller block: the
 * kernel's barriers and shared indices count on B threads). */
tack_status gpu_block_check(const tack_device *d, const tack_program *p, const gpu_prog *g, int k,
                            const gpu_block_limits *l);

#define GPU_MAX_SLOTS 512 /* 4 KiB of kernel parameters */

/* A backend's driver calls for one launch. */
typedef struct gpu_launch_hooks {
    /* queue phase k: `blocks` blocks of `threads`, the slots (`bytes` long) as its one argument */
    tack_status (*queue)(tack_device *d, gpu_prog *g, int k, unsigned blocks, unsigned threads, uint64_t *slots,
                         size_t bytes);
    /* the phases were queued: the name a loss is reported after */
    void (*launched)(tack_device *d, const char *kernel);
    /* wait for the device's stream and report a failed check (a shared argument) */
    tack_status (*finish)(tack_device *d);
    /* Optional, asked only while a profile records (profile.c): an event
     * recorded on the stream before the phases (NULL when it cannot be), and
     * one after them, making the timer that reads the time between. */
    void *(*time_start)(tack_device *d);
    rt_prof_timer (*time_stop)(tack_device *d, void *start);
} gpu_launch_hooks;

/* Pack the slots (ctx = err, frame, id, the arguments), queue every phase
 * under g's lock, and when an array argument is shared with another library
 * finish before returning ("When a call returns"). */
tack_status gpu_launch_phases(tack_device *d, gpu_prog *g, const gpu_grid *grid, uint64_t err, uint64_t frame,
                              const tack_arg *args, int nargs, const char *family, const gpu_launch_hooks *h);
/* A graph's replay (runtime/graph.c) on s: the programs it launches (each
 * handle a backend program whose first member is its gpu_prog) locked,
 * their frames ordered after their last stream as a launch orders them,
 * then go(d, exec, s) queues the graph. */
tack_status gpu_replay(tack_device *d, tack_program *const *progs, int n, const tack_stream *s,
                       tack_status (*go)(tack_device *d, void *exec, const tack_stream *s), void *exec);

#endif /* TACK_GPU_COMMON_H */
