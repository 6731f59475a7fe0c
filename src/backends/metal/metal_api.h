/*
 * metal_api.h -- the slice of the Objective-C runtime and of Metal that the
 * Metal backend calls, declared by us.
 *
 * Tack has no Objective-C compiler and includes no Apple header: the
 * backend is plain C11, built on every platform, and reaches Metal at run
 * time through the Objective-C runtime -- libobjc's objc_getClass,
 * sel_registerName and objc_msgSend, and Metal's MTLCreateSystemDefaultDevice
 * / MTLCopyAllDevices -- found with dlopen and dlsym (metal.c).  These are
 * our own declarations of the few types those calls use, written from
 * Apple's documentation of the Objective-C runtime and of the Metal and
 * Foundation APIs:
 *
 *   - id, Class and SEL are opaque pointers; BOOL is `bool` on arm64 and
 *     `signed char` on x86-64 (objc.h's two definitions).
 *   - NSUInteger is an unsigned long (64 bits on every Mac Metal runs on);
 *     the enums Metal takes and returns (MTLResourceOptions, MTLStorageMode,
 *     MTLLanguageVersion, MTLCommandBufferStatus) are NSUInteger-based.
 *   - MTLSize is three NSUIntegers, passed by value.
 *
 * objc_msgSend is never called as a variadic function: each signature Tack
 * sends has one small typed wrapper (metal.c) that casts objc_msgSend to
 * that exact function type, as Apple requires since objc_msgSend became an
 * untyped trampoline.  Every selector sent, with its documented signature,
 * is listed in metal_selectors.def; tests/python/test_metal_selectors.py
 * checks the code against that table.  No message returns a struct (that
 * would need objc_msgSend_stret on x86-64): the backend reads NSUInteger
 * getters only.
 */
#ifndef TACK_METAL_API_H
#define TACK_METAL_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tk_objc_object *id;
typedef struct tk_objc_selector *SEL;
#if defined(__aarch64__) || defined(__arm64__)
typedef bool BOOL;
#else
typedef signed char BOOL;
#endif
typedef unsigned long NSUInteger;
typedef NSUInteger MTLResourceOptions;
typedef NSUInteger MTLStorageMode;
typedef NSUInteger MTLLanguageVersion;
typedef NSUInteger MTLCommandBufferStatus;

typedef struct MTLSize {
    NSUInteger width, height, depth;
} MTLSize;

#define TK_YES ((BOOL)1)
#define TK_NO ((BOOL)0)

/* MTLResourceOptions: MTLResourceStorageModeShared (0 << 4) with the default CPU cache mode */
#define TK_MTL_RESOURCE_STORAGE_SHARED 0UL
/* MTLStorageMode */
#define TK_MTL_STORAGE_SHARED 0UL
#define TK_MTL_STORAGE_MANAGED 1UL
#define TK_MTL_STORAGE_PRIVATE 2UL
/* MTLLanguageVersion3_0: (3 << 16) + 0 */
#define TK_MTL_LANGUAGE_VERSION_3_0 0x30000UL
/* MTLCommandBufferStatus */
#define TK_MTL_CB_NOT_ENQUEUED 0UL
#define TK_MTL_CB_COMPLETED 4UL
#define TK_MTL_CB_ERROR 5UL

/* The entry points found with dlsym. */
typedef struct tack_metal_api {
    void *objc;  /* libobjc */
    void *metal; /* Metal.framework */
    id (*objc_getClass)(const char *name);
    SEL (*sel_registerName)(const char *name);
    void (*objc_msgSend)(void); /* untyped: called only through the typed casts of metal.c */
    /* optional (NULL: no pool): the autorelease pool push/pop clang emits for @autoreleasepool */
    void *(*objc_autoreleasePoolPush)(void);
    void (*objc_autoreleasePoolPop)(void *pool);
    id (*MTLCreateSystemDefaultDevice)(void);
    id (*MTLCopyAllDevices)(void); /* optional: macOS only */
} tack_metal_api;

/* The runtime and Metal, loaded on first use (TACK_METAL_OBJC_PATH and
 * TACK_METAL_PATH name the libraries to use instead); NULL when there is
 * none, with the reason in `why`. */
const tack_metal_api *metal_load(char *why, size_t why_len);

#endif /* TACK_METAL_API_H */
