"""A kernel's source lines, for the frontend (src/python/frontend_source.c,
which calls getsourcelines through the hook tack/__init__.py hands it).

``inspect.getsourcelines`` finds the end of a function with the tokenize
module, whose regular expressions are compiled on first use: about 3 ms of
the first call of a kernel in a new process, more than everything else in a
call that finds its compiled code in the disk cache.  Here the block is cut
by indentation instead -- from the first decorator to a line indented no
deeper than the ``def`` -- and the cut is accepted only if it parses as
exactly that one function.  A cut in the wrong place cannot: it would end
inside brackets, a string or a continued line (then the next such line is
tried), or take in the statement after the function.
Whatever this does not recognise (lambdas, wrapped callables, functions
without a file) goes to inspect, which also raises the errors.

Notebooks.  IPython compiles each cell under a file name of its own and
puts the cell's text in linecache under that name (ipykernel: a temporary
file of the kernel's process, named by a hash of the cell's text; the
terminal: "<ipython-input-3-...>"), so a kernel defined in a cell is read
like one from a file, and a cell run again with changes is a new file name
and a new function, compiled anew.  ``cell_name`` turns such a file name
into the cell's name as IPython's tracebacks write it ("Cell In[3]"), from
the shell's own table of cells (``get_ipython().compile._filename_map``,
IPython 8) or the terminal's file name.  The front end records that name
as the function's file (the run-time errors name the cell, and the kernel
cache finds a notebook's kernels again after its kernel restarts), and
CompileError's message names the cell and line (tack._kernels).
"""

import ast
import errno
import inspect
import linecache
import re
import sys
import types


def _indent(line):
    return len(line) - len(line.lstrip(" \t\f"))


def _fast(fn):
    if type(fn) is not types.FunctionType or hasattr(fn, "__wrapped__"):
        return None
    code = fn.__code__
    if code.co_name == "<lambda>":
        return None
    lines = linecache.getlines(code.co_filename, fn.__globals__)
    start = code.co_firstlineno - 1
    if not lines or not 0 <= start < len(lines):
        return None
    head = _indent(lines[start])
    i = start
    while i < len(lines) and not lines[i].lstrip().startswith(("def ", "def\t")):
        i += 1  # decorator lines
    # every line indented no deeper than the def may end it: the first such
    # cut that parses as exactly this function is its end (an earlier cut is
    # inside brackets, a string or a continued line, and does not parse)
    for tries, end in enumerate(_cuts(lines, i + 1, head)):
        if tries == 8:
            return None
        while end > i + 1 and (not lines[end - 1].strip() or lines[end - 1].lstrip().startswith("#")):
            end -= 1  # trailing blank and comment lines, as inspect leaves them out
        block = lines[start:end]
        text = "".join(block)
        try:
            tree = ast.parse("if 1:\n" + text if head else text)
        except (SyntaxError, ValueError):
            continue
        body = tree.body[0].body if head else tree.body
        if len(body) == 1 and isinstance(body[0], ast.FunctionDef) and body[0].name == code.co_name:
            return block, start + 1
        return None
    return None


def _cuts(lines, k, head):
    for end in range(k, len(lines)):
        s = lines[end].strip()
        if s and not s.startswith("#") and _indent(lines[end]) <= head:
            yield end
    yield len(lines)


def _fingerprint(code):
    """What the source of a code object decides, where a function compiled
    inside another (a closure) and the same text compiled alone agree: the
    names it uses (wherever they live), its constants, its arguments and the
    lines of its statements relative to its first line."""
    names = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars) | set(code.co_cellvars)
    names.discard("__class__")
    consts, nested = [], []
    for c in code.co_consts:
        (nested if isinstance(c, types.CodeType) else consts).append(c if isinstance(c, types.CodeType) else repr(c))
    lines = sorted({line - code.co_firstlineno for _, _, line in code.co_lines() if line is not None})
    return (sorted(names), consts, lines, code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
            _ops(code), [_fingerprint(c) for c in nested])


_SKIP = {"RESUME", "NOP", "CACHE", "PUSH_NULL", "COPY_FREE_VARS", "MAKE_CELL", "PRECALL", "EXTENDED_ARG"}
_WITH_ARG = {"BINARY_OP", "COMPARE_OP", "IS_OP", "CONTAINS_OP", "LOAD_CONST", "LOAD_ATTR", "LOAD_METHOD",
             "STORE_ATTR", "UNARY_NEGATIVE", "UNARY_NOT", "UNARY_INVERT", "CALL", "CALL_FUNCTION"}


def _ops(code):
    """The instructions, with loads and stores of names alike wherever the
    name lives (a closure's LOAD_DEREF is the standalone LOAD_GLOBAL) and
    jumps without their targets (the offsets move with those differences)."""
    import dis

    out = []
    for ins in dis.get_instructions(code):
        op = ins.opname
        if op in _SKIP:
            continue
        if op.startswith(("LOAD_FAST", "LOAD_GLOBAL", "LOAD_DEREF", "LOAD_NAME", "LOAD_CLOSURE", "LOAD_CLASSDEREF",
                          "STORE_FAST", "STORE_DEREF", "STORE_GLOBAL", "STORE_NAME")):
            kind = "LOAD" if op.startswith("LOAD") else "STORE"
            vals = ins.argval if isinstance(ins.argval, tuple) else (ins.argval,)
            if op.count("_FAST") == 2 and op.startswith("STORE_FAST_LOAD"):  # STORE_FAST_LOAD_FAST
                out += [("STORE", vals[0]), ("LOAD", vals[-1])]
                continue
            out += [(kind, v) for v in vals]
        elif "JUMP" in op or op.startswith(("FOR_ITER", "POP_JUMP", "SEND")):
            out.append((op, None))
        else:
            if op == "LOAD_METHOD":  # on a closure's variable the compiler picks LOAD_ATTR instead
                op = "LOAD_ATTR"
            arg = ins.argval
            arg = ("code", arg.co_name) if isinstance(arg, types.CodeType) else repr(arg)
            out.append((op, arg if op in _WITH_ARG else None))
    return out


def _check_unchanged(fn, lines, carried=False):
    """Refuse a source that is not the function's any more (the file was
    edited after it was imported; carried: the text a pickled kernel came
    with, whose function came by name from a file edited since): compiled
    alone, the text must give the function's own code, up to where its names
    live."""
    code = getattr(fn, "__code__", None)
    if code is None or not lines:
        return
    if any(n.startswith("@py") for n in code.co_names + code.co_varnames):
        return  # pytest rewrote this module's asserts: the code is not the text's by design
    text = "".join(lines)
    head = _indent(lines[0])
    try:
        module = compile("if 1:\n" + text if head else text, code.co_filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return  # not ours to judge; the front end reports what it cannot parse
    found = [c for c in _walk_codes(module) if c.co_name == code.co_name]
    try:
        if not found or any(_fingerprint(c) == _fingerprint(code) for c in found):
            return
    except Exception:  # noqa: BLE001 - an instruction this Python spells differently: do not judge
        return
    from ._kernels import CompileError

    if carried:
        raise CompileError(
            f"the source that came with the pickled kernel {code.co_name}() is not the function "
            f"{code.co_name}() this process has from {code.co_filename} (the file changed between pickling "
            f"and unpickling); send the kernel from a process that imported the file as it is now, or "
            f"restore the file, so the kernel compiled is the function you run")
    raise CompileError(
        f"the source of {code.co_name}() in {code.co_filename} is not the function that was defined "
        f"(the file changed after it was imported); reload the module or restart, so the kernel "
        f"compiled is the function you run")


def _walk_codes(code):
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield c
            yield from _walk_codes(c)


def getsourcelines(fn):
    """(lines, first line number) of ``fn``'s definition, as inspect gives them,
    refused with a CompileError when the file no longer holds that function.
    A kernel that came through pickle carries its source (tack/_pickle.py);
    a struct build's function reads the source of the function it was made
    from (tack._structs)."""
    origin = getattr(fn, "__tack_struct_of__", None)
    if origin is not None:  # a struct build (tack._structs): its tree is numbered by the source it came from
        return getsourcelines(origin)
    carried = getattr(fn, "__tack_source__", None)
    if carried is not None:
        _check_unchanged(fn, carried[0], carried=True)
        return carried
    got = _fast(fn)
    if got is None:
        try:
            got = inspect.getsourcelines(fn)
        except OSError as e:
            if e.errno is None:  # "could not get source code": was the file there but unreadable?
                _raise_read_error(fn, e)
                why = _NO_TEXT.get(getattr(getattr(fn, "__code__", None), "co_filename", None))
                if why:
                    raise OSError(f"{why}; define the kernel in a cell of its own, without the magic, "
                                  f"and time its calls") from None
            raise
    _check_unchanged(fn, got[0])
    return got


# A file that is not there (deleted, or never a file: "<stdin>") has no
# source; any other failure to open it is the real cause.
_NO_FILE = {errno.ENOENT, errno.ENOTDIR}


def _raise_read_error(fn, no_source):
    """linecache and inspect turn every failure to read a file into "no
    source": open the function's file once more, and raise that OSError (too
    many open files, permission denied, an I/O error) with its errno, naming
    the function and the file, instead of the misleading "not available"."""
    code = getattr(fn, "__code__", None)
    filename = getattr(code, "co_filename", "")
    if not filename or filename.startswith("<"):
        return
    try:
        with open(filename, "rb"):
            return
    except OSError as e:
        if e.errno in _NO_FILE:
            return
        raise OSError(e.errno, f"cannot read the source of {code.co_name}() from {filename}: {e.strerror}",
                      filename) from e


# ---------------------------------------------------------------- notebooks

_TERMINAL_CELL = re.compile(r"<ipython-input-(\d+)-[0-9a-f]+>")
_CELLS = {}  # "Cell In[3]" -> the file name IPython compiled that cell under (the latest)


def cell_name(filename):
    """The notebook cell a code object's file name stands for, as IPython
    names it ("Cell In[3]"), or None for any other file."""
    if not isinstance(filename, str):
        return None
    count = None
    ipython = sys.modules.get("IPython")  # never imported here: only a running shell has cells
    if ipython is not None:
        try:
            shell = ipython.get_ipython()
            count = getattr(getattr(shell, "compile", None), "_filename_map", {}).get(filename)
        except Exception:  # noqa: BLE001 - a shell without the table (older IPython): the name below
            count = None
    if count is None:
        m = _TERMINAL_CELL.fullmatch(filename)
        count = int(m.group(1)) if m else None
    if not isinstance(count, int):
        return None
    name = f"Cell In[{count}]"
    _CELLS[name] = filename
    return name


def shown_file(filename):
    """The file name messages give for a function's code: its notebook cell's
    name where it has one (as the compiled kernel's run-time errors give it)."""
    return cell_name(filename) or filename


def cell_file(name):
    """The file name behind a cell's name from ``cell_name`` (the cell's text
    is in linecache under it), else ``name`` itself."""
    return _CELLS.get(name, name)


# Names under which IPython compiles code without keeping its text: what the
# "no source" error says instead of inspect's bare "could not get source code".
_NO_TEXT = {
    "<timed exec>": "the cell runs under %%time, which compiles it without keeping its text",
    "<timed eval>": "the cell runs under %%time, which compiles it without keeping its text",
    "<magic-timeit>": "the cell runs under %%timeit, which compiles it without keeping its text",
}
