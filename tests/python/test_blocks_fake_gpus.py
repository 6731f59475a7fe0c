"""Blocks loops (tack.blocks) launched on Metal, Level Zero and HIP, from Python, against the fakes.

No machine here has an Apple, Intel or AMD GPU.  tests/c/fake_metal.c,
tests/c/fake_level_zero.c and tests/c/fake_hip.c stand in for the drivers
(test_metal_fake.py, test_streams.py and test_hip_fake.py say how); the
kernels do not run there (fake Metal's CPU
emulation runs a thread at a time, and a block's threads must meet at
barriers), so what is checked is the launch Tack asks for: a kernel compiled
from Python with a parallel loop, a blocks loop of 64-thread blocks with a
shared array and barriers, and serial code after them, launched as
threadgroups / work-groups of exactly 64 threads, as many groups as the
loop's blocks (gpu_launch.c's grid), on Level Zero at most as many as a
parallel phase's (compute units x 8); and a block the device cannot
hold raising ValueError naming the kernel, the block size and the limit --
on HIP the compiled function's limit (HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
the largest work-group its code object was built for) and its shared memory, before
the runtime sees a launch.
The C tests (test_metal_fake.c, test_level_zero_fake.c, test_hip_fake.c,
test_cuda_blocks.c) check the same launchers in more detail.
"""

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
@pytest.fixture(scope="module")
def fake_ze(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_level_zero.c", "libze_loader.so.1", "the fake Level Zero loader")


L0_SCRIPT = KERNEL + textwrap.dedent("""
    FAKE = ctypes.CDLL(os.environ["FAKE_ZE_LIB"])
    FAKE.fake_launch_kernel.restype = ctypes.c_char_p
    FAKE.fake_misuse.restype = ctypes.c_char_p
    for nblocks in (10, 3, 40, 100):
        before = FAKE.fake_launches()
        call("level_zero", nblocks)
        got = [(FAKE.fake_launch_kernel(i).decode(), FAKE.fake_launch_groups(i), FAKE.fake_launch_group_size(i))
               for i in range(before, FAKE.fake_launches())]
        # the fake device: 4 compute units, groups of at most 512, zeKernelSuggestGroupSize's 128;
        # the parallel loop: a group per 128 of its 64 x nblocks iterations, the blocks loop: a group
        # a block, both at most 4 x 8
        want = [("tk_phase0", min(-(-64 * nblocks // 128), 32), 128), ("tk_phase1", min(nblocks, 32), 64),
                ("tk_phase2", 1, 1)]
        assert got == want, got
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
    if not _fake_runtime.has_ocloc():
        pytest.skip("libocloc is not installed (Debian: intel-opencl-icd)")
    env = _fake_runtime.environment(tmp_path, ("FAKE_ZE_DEVICES", "FAKE_ZE_NO_IMMEDIATE", "FAKE_ZE_NO_LISTS"),
                                    FAKE_ZE_LIB=fake_ze, LD_LIBRARY_PATH=fake_ze.parent)
    assert "ok" in _fake_runtime.run_script(tmp_path, L0_SCRIPT, env).stdout


# -------------------------------------------------------------------- HIP
@pytest.fixture(scope="module")
def fake_hip(tmp_path_factory):
    return _fake_runtime.build(tmp_path_factory, "fake_hip.c", "libfake-amdhip64.so", "the fake HIP runtime")


HIP_SCRIPT = KERNEL + textwrap.dedent("""
    FAKE = ctypes.CDLL(os.environ["FAKE_HIP_LIB"])
    log = ctypes.c_char.in_dll(FAKE, "launch_log")
    for nblocks in (10, 3, 200):
        log.value = b"\\0"
        call("hip", nblocks)
        got = ctypes.cast(ctypes.addressof(log), ctypes.c_char_p).value.decode().split()
        # phase 0: 64 x nblocks items in blocks of 256, at most the fake's 4 CUs x 6; phase 1: blocks of
        # exactly 64, one a block of the loop, at most 4 CUs x 1536 / 64 resident; phase 2: serial
        assert got == [f"tk_phase0:{min((64 * nblocks + 255) // 256, 24)}:256",
                       f"tk_phase1:{min(nblocks, 96)}:64", "tk_phase2:1:1"], got
    # a compiled function that holds 32 threads a block: said at build, never launched
    ctypes.c_int.in_dll(FAKE, "func_max_threads").value = 32
    k2 = tack.kernel(partial_sums)
    try:
        k2(*(tack.zeros(n, tack.f32, device="hip") for n in (640, 640, 10)))
    except ValueError as e:
        msg = str(e)
    else:
        raise SystemExit("a block of 64 threads launched where the function allows 32")
    assert "partial_sums" in msg and "blocks of 64 threads" in msg and "at most 32" in msg, msg
    assert "HIP_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK" in msg, msg
    ctypes.c_int.in_dll(FAKE, "func_max_threads").value = 1024
    # static LDS over the device's 65536 bytes a block
    ctypes.c_int.in_dll(FAKE, "func_shared_bytes").value = 70000
    k3 = tack.kernel(partial_sums)
    try:
        k3(*(tack.zeros(n, tack.f32, device="hip") for n in (640, 640, 10)))
    except ValueError as e:
        msg = str(e)
    else:
        raise SystemExit("a kernel of 70000 bytes of LDS launched on a device of 65536")
    assert "partial_sums" in msg and "70000 bytes" in msg and "at most 65536" in msg, msg
    assert ctypes.c_int.in_dll(FAKE, "oversized").value == 0  # no launch the runtime would refuse
    print("ok")
""")


def test_hip_checks_a_blocks_loop_against_the_compiled_function(tmp_path, fake_hip):
    env = _fake_runtime.environment(tmp_path, ("FAKE_HIP_COUNT", "FAKE_HIP_ARCH", "FAKE_HIP_WARP", "FAKE_HIP_RUNTIME"),
                                    FAKE_HIP_LIB=fake_hip, TACK_HIP_PATH=fake_hip, TACK_HIPRTC_PATH=fake_hip)
    assert "ok" in _fake_runtime.run_script(tmp_path, HIP_SCRIPT, env).stdout
