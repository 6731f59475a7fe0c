/*
 * strength.c -- integer division by loop-invariant divisors.
 *
 * Python's // and % on integers cost a hardware division plus a sign fix-up
 * and, in Tack, a zero check.  When the divisor does not change inside a
 * loop, the zero check is a property of the loop, not of the iteration: it
 * moves before the loop (guarded by "the loop runs at least once"), which
 * leaves the loop body free of the branch and lets the C compiler vectorize
 * or unswitch it.  Division by a constant needs nothing from us: lowering
 * emits no check for a non-zero constant and the C compiler turns the
 * division into a multiply by a magic number.
 *
 * Not done yet: computing magic numbers for a run-time invariant divisor
 * once per launch (libdivide style).  The hook is here: a loop-invariant
 * divisor is exactly a hoisted CK_ZERODIV check's operand.
 */
#include "compiler/compiler.h"

void tk_strength(tk_cc *C) {
    if (!C->opts.checks) return;
    tk_hoist_invariant_checks(C, CK_ZERODIV);
}
