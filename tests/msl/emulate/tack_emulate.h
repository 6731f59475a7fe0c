// tack_emulate.h (emulation) -- what runs a "metal" dialect phase on the CPU,
// shared by the two users of the emulation: tests/python/_msl_emulate.py and
// the fake Metal framework's library runner (tests/c/fake_metal.c).
//
// Each emits, after the kernel's source, one wrapper per phase K:
//
//   extern "C" void run_tk_phaseK(void **b, unsigned tid, unsigned nth) {
//       tk_phaseK(tk_emu_ptr{b[0]}, ..., tid, nth); }
//
// passing, parameter by parameter, the buffer bound at [[buffer(N)]] as
// tk_emu_ptr{b[N]}, thread_position_in_grid as tid and threads_per_grid as
// nth.  tk_emu_ptr converts to whatever pointer type the parameter has, so
// a wrapper needs no type from the kernel's source, only its attributes.
// The caller runs run_tk_phaseK for tid = 0 .. nth-1, one after another.
#ifndef TACK_EMULATE_H
#define TACK_EMULATE_H

struct tk_emu_ptr {
    void *p;
    template <typename T> operator T *() const { return static_cast<T *>(p); }
};

#endif
