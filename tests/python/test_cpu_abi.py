"""The CPU launch ABI is written once (runtime/cpu_abi.h), compiled into libtack
and copied by the build into the prelude of every generated file (dialect_c.c),
where the platform C compiler compiles it again with the kernel's own flags.
cpu_jit.c ends each generated file with
static assertions of libtack's struct sizes and field offsets, so a prelude whose
layout differs fails to compile, naming the struct, instead of misreading
arguments.  The drift is simulated here by packing the generated file's structs
(TACK_CFLAGS=-fpack-struct=4), which moves the 8-byte fields of tk_pv and tk_abi."""

import os
import subprocess
import sys
import textwrap

KERNEL = textwrap.dedent(
    """
    import numpy as np, tack

    @tack.kernel
    def fill(out):
        for i in range(out.shape[0]):
            out[i] = 1.0

    x = np.zeros(4, np.float32)
    fill(x)
    print(x.sum())
    """
)


def run(tmp_path, cflags):
    script = tmp_path / "k.py"
    script.write_text(KERNEL)
    env = dict(os.environ, TACK_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("TACK_CFLAGS", None)
    if cflags:
        env["TACK_CFLAGS"] = cflags
    return subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=120)


def test_matching_layout_compiles(tmp_path):
    r = run(tmp_path, None)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "4.0"


def test_drifted_layout_is_a_compile_error(tmp_path):
    r = run(tmp_path, "-fpack-struct=4")
    assert r.returncode != 0
    assert "layout in the generated code differs from libtack (runtime/cpu_abi.h)" in r.stderr
    assert "tk_abi" in r.stderr
