"""Blocks loops (tack.blocks) launched on Metal and Level Zero, from Python, against the fakes.

No machine here has an Apple or Intel GPU.  tests/c/fake_metal.c and
tests/c/fake_level_zero.c stand in for the drivers (test_metal_fake.py and
test_streams.py say how); the kernels do not run there (fake Metal's CPU
emulation runs a thread at a time, and a block's threads must meet at
barriers), so what is checked is the launch Tack asks for: a kernel compiled
from Python with a parallel loop, a blocks loop of 64-thread blocks with a
shared array and barriers, and serial code after them, launched as
threadgroups / work-groups of exactly 64 threads, as many groups as the
loop's blocks on Metal (gpu_launch.c's grid) and as a parallel phase's on
Level Zero (compute units x 8, as OpenCL); and a block the device cannot
hold raising ValueError naming the kernel, the block size and the limit.
The C tests (test_metal_fake.c, test_level_zero_fake.c) check the same
launchers in more detail with hand-written sources.
"""

import ctypes
import textwrap

import pytest

import _fake_runtime

pytestmark = [_fake_runtime.needs_cc("the fake GPU runtimes")]

KERNEL = textwrap.dedent("""
    import ctypes, os
    import numpy as np
    import tack

    def partial_sums(x, y, out):
        for i in range(x.shape[0]):
            y[i] = x[i] * 2.0
        for b, t in tack.blocks(out.shape[0], 64):
            s = tack.shared(64, tack.f32)
            s[t] = y[b * 64 + t]
            tack.barrier()
            if t == 0:
                acc = 0.0
                for j in range(64):
                    acc += s[j]
                out[b] = acc
        out[0] += 1.0

    k = tack.kernel(partial_sums)

    def call(dev, nblocks):
        x = tack.zeros(64 * nblocks, tack.f32, device=dev)
        y = tack.zeros(64 * nblocks, tack.f32, device=dev)
        out = tack.zeros(nblocks, tack.f32, device=dev)
        k(x, y, out)
        tack.synchronize()
""")


# ------------------------------------------------------------------ Metal
@pytest.fixture(scope="module")
def fake_metal(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_metal.c", "libfake-metal.so", "the fake Metal runtime")


METAL_SCRIPT = KERNEL + textwrap.dedent("""
    FAKE = ctypes.CDLL(os.environ["FAKE_METAL_LIB"])
    groups = (ctypes.c_ulong * 16).in_dll(FAKE, "fake_metal_groups")
    threads = (ctypes.c_ulong * 16).in_dll(FAKE, "fake_metal_threads")
    ndispatch = ctypes.c_int.in_dll(FAKE, "fake_metal_ndispatch")
    phases = (ctypes.c_int * 16).in_dll(FAKE, "fake_metal_dispatch_phase")
    src = k.generated_source(np.zeros(640, np.float32), np.zeros(640, np.float32), np.zeros(10, np.float32),
                             target="metal")
    assert "phases=pbs" in src and "threadgroup float" in src and "tack-grid-block: 1:64" in src, src[-400:]
    for nblocks in (10, 3):
        call("metal", nblocks)
        got = [(phases[i], groups[i], threads[i]) for i in range(ndispatch.value)]
        # phase 0: 640 items in groups of 256; phase 1: one threadgroup of 64 a block; phase 2: serial
        assert got == [(0, (64 * nblocks + 255) // 256, 256), (1, nblocks, 64), (2, 1, 1)], got
    assert ctypes.c_int.in_dll(FAKE, "fake_metal_oversized").value == 0
    # pipelines of at most 32 threads cannot hold a block of 64: said, never a smaller group
    ctypes.c_int.in_dll(FAKE, "fake_metal_max_threads").value = 32
    k2 = tack.kernel(partial_sums)
    try:
        k2(*(tack.zeros(n, tack.f32, device="metal") for n in (640, 640, 10)))
    except ValueError as e:
        msg = str(e)
    else:
        raise SystemExit("a block of 64 threads launched on pipelines of at most 32")
    assert "partial_sums" in msg and "blocks of 64 threads" in msg and "at most 32" in msg, msg
    assert "maxTotalThreadsPerThreadgroup" in msg, msg
    print("ok")
""")


@_fake_runtime.needs_fake_objc
def test_metal_launches_a_blocks_loop_in_threadgroups_of_its_block_size(tmp_path, fake_metal):
    env = _fake_runtime.environment(tmp_path, ("FAKE_METAL_COUNT", "FAKE_METAL_EMULATE"),
                                    FAKE_METAL_LIB=fake_metal, TACK_METAL_OBJC_PATH=fake_metal,
                                    TACK_METAL_PATH=fake_metal)
    assert "ok" in _fake_runtime.run_script(tmp_path, METAL_SCRIPT, env).stdout


# ------------------------------------------------------------- Level Zero
def _has_ocloc():
    for name in ("libocloc.so", "libocloc.so.1"):
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            pass
    return False


@pytest.fixture(scope="module")
def fake_ze(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_level_zero.c", "libze_loader.so.1", "the fake Level Zero loader")


L0_SCRIPT = KERNEL + textwrap.dedent("""
    FAKE = ctypes.CDLL(os.environ["FAKE_ZE_LIB"])
    FAKE.fake_launch_kernel.restype = ctypes.c_char_p
    FAKE.fake_misuse.restype = ctypes.c_char_p
    for nblocks in (10, 3, 40):
        before = FAKE.fake_launches()
        call("level_zero", nblocks)
        got = [(FAKE.fake_launch_kernel(i).decode(), FAKE.fake_launch_groups(i), FAKE.fake_launch_group_size(i))
               for i in range(before, FAKE.fake_launches())]
        # the fake device: 4 compute units, groups of at most 512, zeKernelSuggestGroupSize's 128;
        # the blocks loop: a group a block, at most a parallel phase's 4 x 8
        assert got == [("tk_phase0", 32, 128), ("tk_phase1", min(nblocks, 32), 64), ("tk_phase2", 1, 1)], got
    # a kernel whose properties allow 32 work-items a group cannot hold a block of 64
    ctypes.c_uint.in_dll(FAKE, "fake_kernel_max_group").value = 32
    k2 = tack.kernel(partial_sums)
    try:
        k2(*(tack.zeros(n, tack.f32, device="level_zero") for n in (640, 640, 10)))
    except ValueError as e:
        msg = str(e)
    else:
        raise SystemExit("a block of 64 work-items launched where the kernel allows 32")
    assert "partial_sums" in msg and "blocks of 64 threads" in msg and "at most 32" in msg, msg
    assert "maxNumSubgroups" in msg, msg
    assert not FAKE.fake_misuse(), FAKE.fake_misuse()
    print("ok")
""")


def test_level_zero_launches_a_blocks_loop_in_work_groups_of_its_block_size(tmp_path, fake_ze):
    if not _has_ocloc():
        pytest.skip("libocloc is not installed (Debian: intel-opencl-icd)")
    env = _fake_runtime.environment(tmp_path, ("FAKE_ZE_DEVICES", "FAKE_ZE_NO_IMMEDIATE", "FAKE_ZE_NO_LISTS"),
                                    FAKE_ZE_LIB=fake_ze, LD_LIBRARY_PATH=fake_ze.parent)
    assert "ok" in _fake_runtime.run_script(tmp_path, L0_SCRIPT, env).stdout
