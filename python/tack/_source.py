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
"""

import ast
import inspect
import linecache
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


def getsourcelines(fn):
    """(lines, first line number) of ``fn``'s definition, as inspect gives them."""
    got = _fast(fn)
    return got if got is not None else inspect.getsourcelines(fn)
