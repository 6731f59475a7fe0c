/*
 * tack.h -- the public C API of libtack's runtime.
 *
 * Everything a program needs to use Tack from C lives behind this header and
 * its companion tack_kernel.h (building and compiling kernels).  Handles are
 * opaque; every exported symbol starts with tack_ (types) or TACK_ (macros and
 * enumerators).  Functions that can fail return a tack_status; on failure a
 * message naming the bad value is kept per thread and read with
 * tack_last_error().  Nothing here includes or needs Python.
 *
 * Lifetimes: arrays are reference counted (tack_array_retain/release, safe
 * from any thread).  An array's storage has an owner -- its own allocation,
 * or borrowed memory plus a release callback -- and that owner is released
 * exactly once, when the last array using the storage is gone.
 */
#ifndef TACK_H
#define TACK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#  define TACK_API __declspec(dllexport)
#else
#  define TACK_API __attribute__((visibility("default")))
#endif

/* Version handshake: a client compiled against TACK_ABI_VERSION calls
 * tack_check_version(TACK_ABI_VERSION) before using anything else. */
#define TACK_VERSION_MAJOR 0
#define TACK_VERSION_MINOR 1
#define TACK_VERSION_PATCH 0
#define TACK_VERSION_STRING "0.1.0"
#define TACK_ABI_VERSION 1

/* ------------------------------------------------------------------ status */
typedef enum tack_status {
    TACK_OK = 0,
    TACK_ERR_NOMEM,       /* out of memory (host or device)            -> MemoryError */
    TACK_ERR_VALUE,       /* a bad value: shape, name, size            -> ValueError */
    TACK_ERR_TYPE,        /* a value of the wrong kind                 -> TypeError */
    TACK_ERR_INDEX,       /* out-of-bounds index                       -> IndexError */
    TACK_ERR_READONLY,    /* a write to a read-only array              -> ValueError */
    TACK_ERR_DEVICE,      /* device missing, wrong device              -> RuntimeError */
    TACK_ERR_UNSUPPORTED, /* not supported here                        -> NotImplementedError */
    TACK_ERR_BUFFER,      /* storage cannot be shared as asked         -> BufferError */
    TACK_ERR_ZERODIV,     /* integer division by zero in a kernel      -> ZeroDivisionError */
    TACK_ERR_ASSERT,      /* a failed assert in a kernel               -> AssertionError */
    TACK_ERR_COMPILE,     /* kernel compile error                      -> tack.CompileError */
    TACK_ERR_RUNTIME,     /* anything else                             -> RuntimeError */
    TACK_ERR_INTERRUPTED, /* stopped by a signal (Ctrl-C)              -> KeyboardInterrupt */
    TACK_ERR_OVERFLOW,    /* a value that does not fit its type        -> OverflowError */
    TACK_ERR_RACE,        /* two iterations of a parallel loop met at one element, one of
                             them writing it (check_races)           -> tack.RaceError */
    TACK_ERR_UNBOUND      /* a kernel read a local before assigning it -> UnboundLocalError */
} tack_status;

/* The message of the last failure on this thread ("" if none). */
TACK_API const char *tack_last_error(void);
/* The status of the last failure on this thread (TACK_OK if none). */
TACK_API tack_status tack_last_status(void);
/* Forget this thread's last failure: status TACK_OK, message "". */
TACK_API void tack_clear_error(void);
/* Record an error on this thread (printf-style); returns st. */
TACK_API tack_status tack_set_error(tack_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The ABI version of the library loaded (TACK_ABI_VERSION of the headers it was built with). */
TACK_API int tack_abi_version(void);
/* The version of Tack, "MAJOR.MINOR.PATCH". */
TACK_API const char *tack_version_string(void);
/* TACK_OK when the library speaks the caller's ABI version. */
TACK_API tack_status tack_check_version(int abi_version);

/* --------------------------------------------------------------- allocator */
/* Every host allocation of libtack goes through this hook, so tests can fail
 * the Nth allocation.  All three functions are required. */
typedef struct tack_allocator {
    void *(*malloc)(size_t size, void *ud);
    void *(*realloc)(void *ptr, size_t size, void *ud);
    void (*free)(void *ptr, void *ud);
    void *ud;
} tack_allocator;

/* Install a hook (NULL restores the C library).  Not thread safe: call it
 * when no other thread is inside libtack. */
TACK_API void tack_set_allocator(const tack_allocator *a);
/* libtack's allocation through the installed hook; NULL when it fails. */
TACK_API void *tack_malloc(size_t size);
/* As tack_malloc, zeroed, for `n` elements of `size` bytes. */
TACK_API void *tack_calloc(size_t n, size_t size);
/* As the C library's realloc, through the installed hook. */
TACK_API void *tack_realloc(void *ptr, size_t size);
/* Free what tack_malloc, tack_calloc or tack_realloc gave (NULL: nothing). */
TACK_API void tack_free(void *ptr);

/* ------------------------------------------------------------------ dtypes */
typedef enum tack_dtype {
    TACK_BOOL = 0,
    TACK_I8, TACK_I16, TACK_I32, TACK_I64,
    TACK_U8, TACK_U16, TACK_U32, TACK_U64,
    TACK_F16, TACK_F32, TACK_F64,
    TACK_VEC2, TACK_VEC3, TACK_VEC4,          /* f32 components */
    TACK_VEC2D, TACK_VEC3D, TACK_VEC4D,       /* f64 components */
    TACK_VEC2I, TACK_VEC3I, TACK_VEC4I,       /* i32 components */
    TACK_MAT22, TACK_MAT33, TACK_MAT44,       /* f32, row major */
    TACK_MAT22D, TACK_MAT33D, TACK_MAT44D,    /* f64, row major */
    TACK_C64, TACK_C128,                      /* complex: (re, im) pairs of f32 / f64, NumPy's layout */
    TACK_QUAT, TACK_QUATD,                    /* quaternions (x, y, z, w) of f32 / f64: form TACK_FORM_QUAT */
    TACK_TRANSFORM, TACK_TRANSFORMD,          /* rigid transforms: position (x, y, z), then rotation quat */
    TACK_BF16,                                /* bfloat16: storage, computed as f32 (appended: ids above keep theirs) */
    TACK_DTYPE_COUNT
} tack_dtype;

typedef enum tack_scalar_kind {
    TACK_KIND_BOOL = 0, TACK_KIND_INT, TACK_KIND_UINT, TACK_KIND_FLOAT,
    TACK_KIND_COMPLEX      /* a scalar of its own: bits are the pair's (64, 128), as DLPack counts */
} tack_scalar_kind;

/* What a dtype's components mean beyond their shape: most are plain vectors
 * and matrices; a quaternion and a rigid transform are stored as vectors of
 * 4 and 7 floats but have an algebra of their own (`*` is the Hamilton
 * product and the composition), so the compiler never treats them as vec4 or
 * as a vector of 7. */
typedef enum tack_dtype_form {
    TACK_FORM_PLAIN = 0, TACK_FORM_QUAT, TACK_FORM_TRANSFORM
} tack_dtype_form;

typedef struct tack_dtype_info {
    const char *name;      /* "f32", "vec3", "mat33d", ... */
    tack_dtype id;
    tack_dtype scalar;     /* element scalar type (itself for scalars) */
    tack_scalar_kind kind; /* kind of the scalar */
    int bits;              /* bits of the scalar */
    int rows, cols;        /* 1x1 scalar, Nx1 vector, RxC matrix */
    size_t itemsize;       /* bytes of one element */
    size_t alignment;      /* required alignment in bytes */
    tack_dtype_form form;  /* TACK_FORM_PLAIN, or a quaternion / transform (rows 4 / 7, cols 1) */
} tack_dtype_info;

/* NULL for an id out of range. */
TACK_API const tack_dtype_info *tack_dtype_get(tack_dtype id);
/* By name ("f32", "float32", "vec3", "bool", ...); TACK_ERR_TYPE naming it if unknown. */
TACK_API tack_status tack_dtype_from_name(const char *name, tack_dtype *out);
/* The vector/matrix dtype of `rows`x`cols` with scalar `s`, if there is one. */
TACK_API tack_status tack_dtype_compose(tack_dtype s, int rows, int cols, tack_dtype *out);

/* ----------------------------------------------------------------- devices */
/* Device types use DLPack's codes, so the runtime and DLPack agree. */
typedef enum tack_device_type {
    TACK_DEVICE_CPU = 1,
    TACK_DEVICE_CUDA = 2,
    TACK_DEVICE_OPENCL = 4,
    TACK_DEVICE_METAL = 8,
    TACK_DEVICE_ROCM = 10,
    TACK_DEVICE_ONEAPI = 14
} tack_device_type;

typedef struct tack_device tack_device; /* owned by the registry; never freed by callers */

/* Look a device up by name: "cpu", "cuda", "cuda:1", "opencl", "opencl:1", "hip",
 * "metal", "level_zero".
 * TACK_ERR_VALUE for a malformed or unknown name, TACK_ERR_DEVICE when the
 * backend is known but not available here (the message says why). */
TACK_API tack_status tack_device_get(const char *name, tack_device **out);
/* The device of a DLPack device type and index ("cuda:1" for TACK_DEVICE_CUDA, 1); TACK_ERR_DEVICE when there is none. */
TACK_API tack_status tack_device_from_type(tack_device_type type, int index, tack_device **out);
/* Available devices, in order; returns the count, fills up to `cap`. */
TACK_API int tack_devices(tack_device **out, int cap);
TACK_API const char *tack_device_name(const tack_device *d); /* "cpu", "cuda:0", "opencl:0" */
/* The device's type (DLPack's code). */
TACK_API tack_device_type tack_device_kind(const tack_device *d);
/* The kernel-source dialect the device's backend compiles ("c", "cuda", "hip", "opencl" or
 * "metal"; Level Zero's is "opencl"): the
 * target to pass to tack_compile for kernels that run on it. */
TACK_API const char *tack_device_dialect(const tack_device *d);
/* The number N of "kind:N" (0 for the CPU). */
TACK_API int tack_device_index(const tack_device *d);
/* What the device is, as its driver names it ("NVIDIA H200"; an OpenCL device's
 * name and platform; the CPU's model name), for reports; "" when it gives none. */
TACK_API const char *tack_device_description(const tack_device *d);
/* The device's memory in bytes, for reports: the driver's total for a CUDA, HIP
 * or OpenCL device, the physical memory for the CPU; 0 where the backend does
 * not say (Level Zero, Metal). */
TACK_API uint64_t tack_device_memory(const tack_device *d);
/* Number of worker threads the device uses (CPU: those of its next launch, the
 * num_threads setting or the usable cores). */
TACK_API int tack_device_threads(const tack_device *d);
/* Whether the calling thread's CPU launches run on that thread alone (on != 0) or
 * share their parallel loops with the pool as usual (0, the default), for a caller
 * that knows a launch's work is too small to repay waking the pool's threads (the
 * parallel primitives on a few thousand elements). A launch run alone sees one
 * thread throughout (tack_device_threads outside a launch is unchanged). Only the
 * calling thread is affected; returns its previous setting. */
TACK_API int tack_cpu_launch_alone(int on);
/* 1 when the device's work runs on the host CPU's cores -- the CPU itself, or an
 * OpenCL device whose type is CPU (PoCL) -- so that an algorithm can choose the
 * form that suits cores (a few long serial loops) over the form that suits a
 * GPU (many cooperating threads); 0 for a GPU or another accelerator. */
TACK_API int tack_device_on_host_cores(const tack_device *d);
/* A Level Zero device's driver, context and device handles (ze_driver_handle_t,
 * ze_context_handle_t, ze_device_handle_t), for a library that is to allocate in the
 * context Tack uses; TACK_ERR_VALUE for a device of another kind. */
TACK_API tack_status tack_level_zero_handles(tack_device *d, void **driver, void **context, void **device);
/* Make Tack use a Level Zero context that another library (VTK) created, instead of
 * its own: `context` becomes the context of every Tack device of `driver`, and `device`
 * (ze_device_handle_t) must be one of that driver's devices.  Call it before any Level
 * Zero device is used, or after tack_device_get("level_zero...") but before anything is
 * allocated or built on a device of that driver.  Tack never destroys an adopted
 * context.  Adopting the context already in use does nothing.  TACK_ERR_DEVICE when
 * Level Zero is unavailable; TACK_ERR_VALUE for a NULL handle, a driver Tack does not
 * know, a device not of that driver, a context whose zeContextGetStatus fails, and when
 * Tack has already allocated or built a program on one of that driver's devices in
 * its own context (too late). */
TACK_API tack_status tack_level_zero_adopt(void *driver, void *context, void *device);
/* The device families Tack knows, in its order ("cpu", "cuda", "hip", "metal",
 * "level_zero", "opencl"): the ith's name, NULL past the last. */
TACK_API const char *tack_backend_name(int i);
/* How many devices the family `name` has here (probing it as tack_device_get
 * would).  With none, `why` (cap bytes; may be NULL) receives the reason, the
 * text tack_device_get's message carries ("no NVIDIA driver: libcuda.so.1
 * could not be loaded").  -1 with TACK_ERR_VALUE for an unknown family. */
TACK_API int tack_backend_status(const char *name, char *why, size_t cap);
/* A GPU toolchain Tack loads at run time: "nvrtc" (CUDA), "hiprtc" (HIP) or
 * "ocloc" (Level Zero's OpenCL C to SPIR-V), loaded here if it was not yet.
 * 1 when found: `where` (cap bytes; may be NULL) receives the library's path,
 * *version its version (NVRTC, hiprtc: major*1000 + minor*10; ocloc: its
 * oclocVersion number, major << 16 | minor).  0 when not: `where` receives why, as the compile's
 * error would say it.  -1 with TACK_ERR_VALUE for another name. */
TACK_API int tack_toolchain(const char *name, char *where, size_t cap, int *version);
/* Wait for everything queued on the device. */
TACK_API tack_status tack_device_synchronize(tack_device *d);
/* Wait for everything queued on every device in use. */
TACK_API tack_status tack_synchronize_all(void);

/* ------------------------------------------------------- streams and events */
/* A stream orders the copies and launches queued on it (docs/backends.md,
 * "Streams, events and graphs").  Each GPU device has Tack's own stream (the one work
 * goes to when no other is named); tack_stream_create makes another, and
 * tack_stream_wrap takes one another library made (a CUstream, a hipStream_t),
 * which Tack never destroys.  Work on different streams may overlap; an array
 * used on one stream and then on another is ordered between them on the
 * device (the second waits for the first), so results never depend on the
 * streams chosen.  On the CPU every call returns when its work is done: a
 * stream there orders nothing, and an event records the host's clock.
 * TACK_ERR_UNSUPPORTED on a device whose backend has no streams yet. */
typedef struct tack_stream tack_stream;
typedef struct tack_event tack_event;
/* A new stream on dev (blocking: ordered with the API's legacy default stream, as Tack's own). */
TACK_API tack_status tack_stream_create(tack_device *dev, tack_stream **out);
/* A stream of the device's API, not owned: it must outlive the tack_stream. */
TACK_API tack_status tack_stream_wrap(tack_device *dev, uintptr_t handle, tack_stream **out);
/* Reference counting: the last release destroys a stream Tack made (its work
 * still completes). */
TACK_API void tack_stream_retain(tack_stream *s);
/* Drop a reference (NULL: nothing); see tack_stream_retain. */
TACK_API void tack_stream_release(tack_stream *s);
/* The API's handle (CUstream, hipStream_t as an integer; 0 on the CPU). */
TACK_API uintptr_t tack_stream_handle(const tack_stream *s);
/* The device s belongs to. */
TACK_API tack_device *tack_stream_device(const tack_stream *s);
/* Wait for the work queued on s; a failed check in a kernel of it is reported. */
TACK_API tack_status tack_stream_synchronize(tack_stream *s);
/* The calling thread's current stream: copies and launches on s's device go
 * to it (NULL: Tack's own stream).  Returns the one it replaces (borrowed: the
 * caller keeps s alive while it is current). */
TACK_API tack_stream *tack_stream_use(tack_stream *s);
/* The calling thread's current stream (NULL: none named). */
TACK_API tack_stream *tack_stream_current(void);
/* An event on dev; `timing`: it can be used for tack_event_elapsed. */
TACK_API tack_status tack_event_create(tack_device *dev, int timing, tack_event **out);
/* Free e (NULL: nothing); a recorded point not yet reached still completes. */
TACK_API void tack_event_free(tack_event *e);
/* Record e on s, the point after everything queued on s so far (s NULL: the
 * thread's current stream on e's device, else Tack's own). */
TACK_API tack_status tack_event_record(tack_event *e, tack_stream *s);
/* Make s wait on the device, not the host, for e's point (s NULL as above). */
TACK_API tack_status tack_event_wait(tack_event *e, tack_stream *s);
/* Wait on the host for e's point. */
TACK_API tack_status tack_event_synchronize(tack_event *e);
/* 1 when e's point has been reached (or e was never recorded), 0 when not
 * yet, -1 on an error (the message says which). */
TACK_API int tack_event_query(tack_event *e);
/* Milliseconds between two recorded timing events of one device, once the
 * second has been reached (waits for it). */
TACK_API tack_status tack_event_elapsed(tack_event *start, tack_event *end, float *ms);

/* ------------------------------------------------------------------ graphs */
/* A graph is the work one thread queued on one stream between
 * tack_capture_begin and tack_capture_end, replayed by tack_graph_launch
 * (docs/backends.md, "Graphs").  CUDA and HIP record it with the driver's
 * stream capture into a graph; other devices (the CPU) keep a list of the
 * calls.  Nothing captured runs at capture time: it runs at each launch,
 * with the same arrays and the same scalar values.  A graph holds references
 * to its arrays and kernels, so they live as long as it does.  During a
 * capture the capturing thread's launches, same-device copies and fills on
 * the stream's device are captured; host copies, synchronizing the stream
 * or the device, and events on the stream are refused with TACK_ERR_VALUE. */
typedef struct tack_graph tack_graph;
/* Start capturing on s: s becomes the calling thread's current stream until
 * tack_capture_end.  Refused while this thread captures already (no nesting)
 * or another thread captures s. */
TACK_API tack_status tack_capture_begin(tack_stream *s);
/* End the capture begun on s by this thread and restore the current stream
 * it replaced; *out is the graph (released with tack_graph_release), or NULL
 * with an error when the capture failed.  The capture ends either way. */
TACK_API tack_status tack_capture_end(tack_stream *s, tack_graph **out);
/* The stream this thread is capturing on (NULL: none). */
TACK_API tack_stream *tack_capture_stream(void);
/* Replay g on s (NULL: the stream it was captured on), ordered after the
 * work queued before it on any stream that touched its arrays. */
TACK_API tack_status tack_graph_launch(tack_graph *g, tack_stream *s);
/* The launches, copies and fills captured into g. */
TACK_API int64_t tack_graph_count(const tack_graph *g);
/* The device g runs on. */
TACK_API tack_device *tack_graph_device(const tack_graph *g);
/* Free g, dropping its references to its arrays, kernels and stream (NULL: nothing). */
TACK_API void tack_graph_release(tack_graph *g);

/* ----------------------------------------------------------- configuration */
/* Every setting of libtack (optimize default, thread count, cache directory,
 * compiler switches, library paths; docs/configuration.md lists them) has a
 * name, a TACK_* environment variable read once at the first use of any
 * setting, a default, and a value that can be changed at run time.  An
 * explicit option of an API call beats the setting, which is the
 * environment's value until set.  Values are text, as in the environment:
 * "0"/"1" for a bool, digits for an int, one of the choices, or any text. */
typedef enum tack_config_source {
    TACK_CONFIG_DEFAULT = 0, /* neither the environment nor a set gave it */
    TACK_CONFIG_ENV,         /* its environment variable, read at first use */
    TACK_CONFIG_SET          /* tack_config_set */
} tack_config_source;

typedef struct tack_config_info {
    const char *name;          /* "optimize" */
    const char *env;           /* "TACK_OPT" */
    const char *type;          /* "bool", "int", "choice" or "str" */
    const char *default_value; /* as text */
    const char *choices;       /* "off|ir|source" for a choice, else NULL */
    const char *doc;           /* what it is, one line */
    const char *effect;        /* when a change takes effect, one line */
} tack_config_info;

/* The number of settings in the configuration table (docs/configuration.md). */
TACK_API int tack_config_count(void);
/* Setting `index` (0 <= index < tack_config_count()); strings are static. */
TACK_API tack_status tack_config_describe(int index, tack_config_info *out);
/* The value now, as text, into buf (cap bytes), and where it came from
 * (source may be NULL).  TACK_ERR_VALUE for an unknown name or a short buffer. */
TACK_API tack_status tack_config_get(const char *name, char *buf, size_t cap, tack_config_source *source);
/* Set from text; NULL puts back the environment's value (or the default).
 * TACK_ERR_VALUE naming the setting for an unknown name or a bad value. */
TACK_API tack_status tack_config_set(const char *name, const char *value);
/* TACK_ERR_VALUE naming the first TACK_* variable whose value could not be
 * read (its setting has the default meanwhile); tack_compile checks too. */
TACK_API tack_status tack_config_check_environment(void);

/* The kernel cache on disk (TACK_CACHE_DIR, else $XDG_CACHE_HOME/tack, else
 * ~/.cache/tack; docs/troubleshooting.md), for tools that list and clear it
 * (`python -m tack cache`).  tack_cache_path gives the directory without
 * creating it; the other two open it with the checks every build makes (it
 * belongs to this user and nobody else may write it) and name a file in it.
 * Tack's own files are its sealed entries (compiled kernels and the records
 * beside them), the C source kept beside a CPU kernel and the temporaries of
 * builds; anything else is TACK_CACHE_FOREIGN and is never removed. */
typedef enum tack_cache_kind {
    TACK_CACHE_FOREIGN = 0,   /* not Tack's, a build lock, or no such file */
    TACK_CACHE_ENTRY = 1,     /* a sealed entry whose seal matches its contents */
    TACK_CACHE_SOURCE = 2,    /* KEY.c: a CPU kernel's C source, kept for its messages */
    TACK_CACHE_TEMPORARY = 3, /* a build's temporary (a live build's, or one a killed build left) */
} tack_cache_kind;
/* The directory's path into buf (cap bytes); TACK_ERR_VALUE for a short buffer. */
TACK_API tack_status tack_cache_path(char *buf, size_t cap);
/* What `name` (a file name, no slash) in the cache directory is. */
TACK_API tack_status tack_cache_classify(const char *name, tack_cache_kind *kind);
/* Remove `name` when it is Tack's; TACK_ERR_VALUE naming it when it is not. */
TACK_API tack_status tack_cache_remove(const char *name);

/* The C compiler the next CPU kernel build would run, chosen as builds choose
 * (TACK_CC, CC, cc/gcc/clang on PATH, TACK_ZIG; docs/getting-started.md):
 * `command` (cap bytes) receives it as it runs (the program's path, " cc"
 * for zig, its arguments), `version` (vcap bytes) the first line of its
 * --version (remembered in the kernel cache when that directory exists, as
 * builds remember it; this call creates no directory), *from the rule that found it ("TACK_CC", "CC", "PATH",
 * "TACK_ZIG"; static).  Any of them may be NULL.  1 when one is found; 0
 * when none is (a kernel not in the cache cannot be built); -1 with the
 * error set when TACK_CC or CC names no program or the compiler does not run. */
TACK_API int tack_cpu_compiler(char *command, size_t cap, char *version, size_t vcap, const char **from);

/* -------------------------------------------------------------- interrupts */
/* Ask the CPU launches running on interruptible threads to stop: each
 * returns TACK_ERR_INTERRUPTED within about 100 ms, its output arrays
 * holding the iterations that ran (docs/runtime-contract.md).
 * Async-signal-safe: made to be called from a SIGINT handler. */
TACK_API void tack_interrupt(void);
/* Whether this thread's CPU launches heed tack_interrupt() (default: no).
 * Each such launch clears a request made before it started. */
TACK_API void tack_set_interruptible(int on);
/* Whether this thread's CPU launches heed tack_interrupt(). */
TACK_API int tack_interruptible(void);
/* A function called once by an interruptible launch still running 10 ms
 * after it first asked whether to stop (on one of its threads): an embedder checks there that its
 * signal handler is still installed.  NULL: none. */
TACK_API void tack_set_long_launch_hook(void (*fn)(void));

/* ---------------------------------------------------------- flush-to-zero */
/* Set flush-to-zero (x86-64: MXCSR FTZ and DAZ; aarch64: FPCR.FZ) on the calling
 * thread, as a flush_denormals kernel runs; *saved receives the mode to give back to
 * tack_flush_denormals_leave.  TACK_ERR_VALUE (nothing changed) on a CPU where Tack
 * cannot set it.  Debug mode (jit=False) runs a flush_denormals kernel between the two. */
TACK_API tack_status tack_flush_denormals_enter(unsigned long long *saved);
/* Put back the flush bits saved by tack_flush_denormals_enter (the exception flags stay). */
TACK_API void tack_flush_denormals_leave(unsigned long long saved);

/* --------------------------------------------------------------- profiling */
/* A recorder of compiles and launches (docs/performance.md, "Profiling").  While
 * one is started, the library records every compile step (the front end, the
 * compiler's passes, the C compiler or NVRTC, a kernel-cache hit) and every
 * launch, with its host time and, where measured, its time on the device (GPU
 * events; on the CPU, the thread pool's parallel loops); each worker thread's
 * part of a parallel loop is recorded on its own track.  One recorder is active
 * in the process at a time; with none, recording costs one load per launch. */
typedef struct tack_profile tack_profile;
typedef struct tack_profile_event {
    const char *kind;       /* "compile", "launch" or "worker" (a pool thread's part of a launch) */
    const char *phase;      /* "frontend", "compile", "cc", "cache hit", "nvrtc", "launch", ... */
    const char *name;       /* the kernel */
    const char *device;     /* "cpu", "cuda:0", ... */
    uint64_t thread;        /* the host thread (a worker's: its pool slot, 1 and up) */
    int64_t start_ns;       /* on the host's monotonic clock (tack_profile_now) */
    int64_t host_ns;        /* how long the host spent on it */
    int64_t device_ns;      /* how long it ran on the device; -1 when not measured */
} tack_profile_event;
/* Start recording; TACK_ERR_VALUE when another recorder is active. */
TACK_API tack_status tack_profile_start(tack_profile **out);
/* Stop recording, then wait for the devices to give the launches' device times
 * (a failure to read one leaves it -1 and is returned, the rest kept). */
TACK_API tack_status tack_profile_stop(tack_profile *p);
/* Stops p if it records, and frees it with its events. */
TACK_API void tack_profile_free(tack_profile *p);
/* How many events p recorded (read them after tack_profile_stop). */
TACK_API int64_t tack_profile_count(const tack_profile *p);
/* Event i of p, in the order they ended, into *out (its strings live with p); 0 when there is none. */
TACK_API int tack_profile_get(const tack_profile *p, int64_t i, tack_profile_event *out);
/* The clock events are stamped with, in nanoseconds. */
TACK_API int64_t tack_profile_now(void);
/* Whether a recorder is active. */
TACK_API int tack_profile_active(void);
/* An event of the embedder's own (the Python front end, debug mode) into the
 * active recorder, on the calling thread's track: nothing when none is active.
 * device_ns < 0: not measured. */
TACK_API void tack_profile_record(const char *kind, const char *phase, const char *name, const char *device,
                                  int64_t start_ns, int64_t end_ns, int64_t device_ns);

/* ------------------------------------------------------------------ arrays */
#define TACK_MAX_NDIM 8

typedef struct tack_array tack_array;
/* Called exactly once when the last array using borrowed storage is gone,
 * possibly on any thread. */
typedef void (*tack_release_fn)(void *ctx);

/* A new array with uninitialized (empty) or zeroed storage on `dev`. */
TACK_API tack_status tack_array_empty(tack_device *dev, tack_dtype dt, int ndim,
                                      const int64_t *shape, tack_array **out);
/* As tack_array_empty, with every byte zero. */
TACK_API tack_status tack_array_zeros(tack_device *dev, tack_dtype dt, int ndim,
                                      const int64_t *shape, tack_array **out);
/* Borrow `data` (C-contiguous, on `dev`).  `release(ctx)` runs once when the
 * storage is no longer used; it also runs if this call fails, so ownership
 * of ctx always passes to libtack.  release may be NULL (raw pointer).
 * On a Metal device `data` is an MTLBuffer (an id) in shared storage, not an
 * address: Tack retains it while the storage is used, and the array's data
 * is its contents. */
TACK_API tack_status tack_array_wrap(tack_device *dev, tack_dtype dt, int ndim,
                                     const int64_t *shape, void *data, int writable,
                                     tack_release_fn release, void *ctx, tack_array **out);
/* Borrow a strided view of memory on `dev` (a kernel argument, a DLPack import):
 * `data` is the address of element (0, ..., 0) and strides[k] the distance,
 * in elements and of any sign (zero for a broadcast axis), between
 * neighbours along axis k.  Strides that are C order's give an ordinary
 * array.  A strided array is read and written in place by kernels and
 * exports through DLPack with its strides; a clone and a copy to the host
 * gather its elements; the operations that write or reshape in C order
 * (copies into it, fill, reshape, subview) refuse it.  On a device whose
 * data are handles (OpenCL buffers) no element may lie before `data`.
 * Ownership of ctx as for tack_array_wrap. */
TACK_API tack_status tack_array_wrap_strided(tack_device *dev, tack_dtype dt, int ndim,
                                             const int64_t *shape, const int64_t *strides,
                                             void *data, int writable, tack_release_fn release,
                                             void *ctx, tack_array **out);
/* A view of a's storage with strides, on any device (no copy): element
 * (0, ..., 0) of the view is `offset` elements from a's first element, and
 * strides[k] (in elements, any sign, zero for a broadcast axis) is the
 * distance between neighbours along axis k.  Every element must lie inside
 * a's storage.  It is what a[::2], m[:, 0], a[::-1] and m.T give: kernels
 * read and write it in place; the operations that write or reshape in C
 * order refuse it; copying it to the host or cloning it gathers it (the
 * whole storage, or the bytes it spans, copied then gathered) and a DLPack
 * export carries the strides (an OpenCL buffer's view: the buffer and a
 * byte_offset).  A view in C order from a's
 * address is an ordinary array. */
TACK_API tack_status tack_array_as_strided(tack_array *a, int64_t offset, int ndim, const int64_t *shape,
                                           const int64_t *strides, tack_array **out);
/* A strided view's element strides, or NULL for an array in C order. */
TACK_API const int64_t *tack_array_strides(const tack_array *a);
/* Whether two elements of `a` share a byte (a zero stride, or strides that
 * interleave): such an array can be read by a kernel but not written. */
TACK_API int tack_array_self_overlaps(const tack_array *a);
/* A new handle on the same storage, read-only if `writable` is 0 (a writable
 * view of read-only storage is refused). */
TACK_API tack_status tack_array_view(tack_array *a, int writable, tack_array **out);
/* Reinterpret the storage with another dtype and shape of the same byte size. */
TACK_API tack_status tack_array_reshape(tack_array *a, tack_dtype dt, int ndim,
                                        const int64_t *shape, tack_array **out);
/* A view of the `count` elements of `a` from element `start` on (C order),
 * with shape (ndim, shape) of that many elements: it shares the storage (and
 * so the storage's flags) and keeps `a`'s writable flag.  Devices whose array
 * data is a handle rather than an address (OpenCL buffers) refuse a view that
 * does not start at the first element. */
TACK_API tack_status tack_array_subview(tack_array *a, int64_t start, int ndim,
                                        const int64_t *shape, tack_array **out);

/* Take one more reference to `a` (safe from any thread). */
TACK_API void tack_array_retain(tack_array *a);
/* Drop one reference; the last frees the handle, and the storage once no handle uses it (NULL: nothing). */
TACK_API void tack_array_release(tack_array *a);
/* Drop one reference as tack_array_release does, keeping the handle for
 * reuse when it can: when `a`'s storage is borrowed (tack_array_wrap's,
 * tack_array_wrap_strided's, tack_array_rewrap's), the caller's reference
 * is the only one, and no other array uses that storage, the
 * storage's owner is released now -- release(ctx) runs, as it would have --
 * and `a` is kept, emptied: an empty array that borrows nothing, still the
 * caller's, to refill with tack_array_rewrap or free with
 * tack_array_release; returns 1.  Otherwise it is tack_array_release(a),
 * and returns 0: `a` is no longer the caller's.  An array passed to
 * another holder (a retain, a view, a captured graph) is never emptied.
 * With `release` and `ctx` not NULL, the owner's release is handed to the
 * caller instead of run: when `a` is emptied, *release and *ctx are what
 * would have run, and the caller must call release(ctx) itself (*release
 * NULL: nothing); else both are NULL. */
TACK_API int tack_array_recycle(tack_array *a, tack_release_fn *release, void **ctx);
/* tack_array_wrap into `a`, an array emptied by tack_array_recycle, instead
 * of new allocations: the same checks and the same result, returned in `a`
 * itself.  On failure release(ctx) has run, as for tack_array_wrap, and `a`
 * is still emptied and the caller's; an `a` that is not emptied is refused
 * (TACK_ERR_VALUE) and left as it was. */
TACK_API tack_status tack_array_rewrap(tack_array *a, tack_device *dev, tack_dtype dt, int ndim,
                                       const int64_t *shape, void *data, int writable,
                                       tack_release_fn release, void *ctx);

/* The address of the array's first element; on an OpenCL buffer device the cl_mem handle, on Metal the buffer's contents. */
TACK_API void *tack_array_data(const tack_array *a);
/* The array's element type. */
TACK_API tack_dtype tack_array_dtype(const tack_array *a);
/* The number of dimensions (0 to TACK_MAX_NDIM). */
TACK_API int tack_array_ndim(const tack_array *a);
/* The `ndim` extents, owned by the array. */
TACK_API const int64_t *tack_array_shape(const tack_array *a);
TACK_API int64_t tack_array_size(const tack_array *a);   /* elements */
/* The bytes of its elements (size times itemsize). */
TACK_API size_t tack_array_nbytes(const tack_array *a);
/* Whether the memory of a and b overlaps (views of one buffer that share bytes; an empty array overlaps nothing).
 * Strided views are compared by the bytes they span and, where that says
 * overlap, by their elements' offsets modulo the strides' common divisor
 * (m[:, 0] and m[:, 1] are apart): a conservative answer, never a false "apart". */
TACK_API int tack_arrays_overlap(const tack_array *a, const tack_array *b);
/* Whether kernels and copies may write the array (1) or not (0). */
TACK_API int tack_array_writable(const tack_array *a);
/* The device the storage lives on. */
TACK_API tack_device *tack_array_device(const tack_array *a);
/* Flags of arrays shared with another library (see "When a call returns"). */
/* Flags are kept on the storage: every handle and view of it has the same. */
#define TACK_ARRAY_SHARED 1u  /* exported, wrapped or imported: launches using it complete before return */
TACK_API unsigned tack_array_flags(const tack_array *a);
/* Set the storage's flags (TACK_ARRAY_SHARED), for every handle and view of it. */
TACK_API void tack_array_set_flags(tack_array *a, unsigned flags);

/* Copies. Host buffers are C-contiguous bytes of the array's dtype. */
TACK_API tack_status tack_array_copy_from_host(tack_array *dst, const void *src, size_t nbytes);
/* The array's values into `dst` (`nbytes` must be the array's), waiting for the work queued before it. */
TACK_API tack_status tack_array_copy_to_host(const tack_array *src, void *dst, size_t nbytes);
/* dst <- src, same dtype and element count, any devices. */
TACK_API tack_status tack_array_copy(tack_array *dst, const tack_array *src);
/* Every element <- one element's bytes (itemsize bytes). */
TACK_API tack_status tack_array_fill(tack_array *a, const void *value);
/* A new C-order array on `dev` (NULL: the same device) with a copy of the
 * values (a strided view's elements gathered). */
TACK_API tack_status tack_array_clone(const tack_array *a, tack_device *dev, tack_array **out);

#ifdef __cplusplus
}
#endif
#endif /* TACK_H */
