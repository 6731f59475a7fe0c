"""Two ways a kernel's compile lock could wait forever, each in its own
process with a timeout: a kernel called from Python code its own compile
runs (a module __getattr__), and a fork while another thread compiles."""

import subprocess
import sys
import textwrap


def run(tmp_path, source, timeout=120):
    path = tmp_path / "case.py"
    path.write_text(textwrap.dedent(source))
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=timeout)


def test_kernel_called_from_its_own_compile_is_an_error(tmp_path):
    # The kernel reads cfg.SCALE; resolving it runs cfg's module __getattr__,
    # which calls the kernel whose compile is under way.
    (tmp_path / "cfg.py").write_text(textwrap.dedent("""
        import numpy as np

        def __getattr__(name):
            if name == "SCALE":
                import kmod
                kmod.k(np.ones(2))
                return 2.0
            raise AttributeError(name)
    """))
    (tmp_path / "kmod.py").write_text(textwrap.dedent("""
        import tack
        import cfg

        @tack.kernel
        def k(x):
            for i in range(x.shape[0]):
                x[i] = cfg.SCALE * x[i]
    """))
    proc = run(tmp_path, """
        import sys, numpy as np
        sys.path.insert(0, %r)
        import kmod
        try:
            kmod.k(np.ones(3))
        except Exception as e:
            print(type(e).__name__, e)
    """ % str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "while it is being compiled" in proc.stdout, proc.stdout + proc.stderr[-3000:]


def test_fork_while_another_thread_compiles(tmp_path):
    slow = tmp_path / "slowcc"
    slow.write_text('#!/bin/sh\nif [ "$1" = --version ]; then exec cc --version; fi\nsleep 2\nexec cc "$@"\n')
    slow.chmod(0o755)
    proc = run(tmp_path, """
        import os, sys, threading, time
        import numpy as np, tack
        tack.config.cc = %r

        @tack.kernel
        def k(x):
            for i in range(x.shape[0]):
                x[i] = x[i] + 1

        t = threading.Thread(target=k, args=(np.zeros(2),))
        t.start()
        time.sleep(0.5)  # the thread now holds the kernel's compile lock
        pid = os.fork()
        if pid == 0:
            x = np.zeros(3)
            k(x)  # the compiling thread does not exist here
            os._exit(0 if x.tolist() == [1, 1, 1] else 3)
        _, status = os.waitpid(pid, 0)
        t.join()
        print("child", os.waitstatus_to_exitcode(status))
    """ % str(slow))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "child 0" in proc.stdout, proc.stdout + proc.stderr[-3000:]
