"""The Metal backend's Objective-C messages against their documented signatures.

The backend (src/backends/metal/metal*.c) reaches Metal through objc_msgSend with no
Objective-C compiler, so nothing at build time checks that a message is sent
with the types the method takes.  src/backends/metal/metal_selectors.def lists every
selector the backend sends, each with the return and argument types of its
documented declaration; the code sends a selector only as `TK_S(key)`, the
second argument of a typed wrapper `mtl_*(id o, SEL s, ...)` that casts
objc_msgSend to exactly its own type.  This test reads both and fails when:

- a wrapper's cast of objc_msgSend differs from the wrapper's own signature;
- a call sends a selector through a wrapper whose return or argument types
  differ from the table's for that selector, or with another argument count;
- a selector reaches the runtime any other way (a `TK_S` outside a wrapper
  call's selector or SEL-typed argument, objc_msgSend or sel_registerName
  used outside the wrappers and the table's loader);
- a selector's colons do not match its argument count, or a table entry is
  never sent (the table has drifted from the code).

The checker runs on the real sources, and on altered copies to show that
each rule can fail.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "src" / "backends" / "metal" / "metal_selectors.def"
SOURCES = sorted((ROOT / "src" / "backends" / "metal").glob("metal*.c"))


def norm(t):
    t = re.sub(r"\s+", " ", t.strip())
    return re.sub(r"\s*\*\s*", "*", t)


def strip_comments(s):
    return re.sub(r"/\*.*?\*/", " ", s, flags=re.S)


def read_table(text):
    table = {}
    for key, sel, ret, args in re.findall(r'TK_SEL\((\w+),\s*"([^"]*)",\s*([^,()]+?),\s*\(([^()]*)\)\)',
                                          strip_comments(text)):
        types = [] if norm(args) == "void" else [norm(a) for a in args.split(",")]
        table[key] = (sel, norm(ret), types)
    return table


def split_args(s, start):
    """The arguments of the call whose '(' is at s[start - 1]; and where it ends."""
    depth, args, cur, i = 0, [], "", start
    while i < len(s):
        c = s[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            if depth == 0:
                args.append(cur.strip())
                return args, i
            depth -= 1
        if c == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
        else:
            cur += c
        i += 1
    raise ValueError("unbalanced call")


WRAPPER = re.compile(r"^([A-Za-z_][\w ]*?[\s*]+)(mtl_\w+)\(id o, SEL s((?:, [^)]*)?)\)\s*\{", re.M)
CAST = re.compile(r"\(\(([\w ]+?\s*\**)\s*\(\*\)\(id, SEL((?:, [^)]*)?)\)\)api\.objc_msgSend\)")


def problems(table_text, sources):
    out = []
    table = read_table(table_text)
    if not table:
        return ["the selector table is empty or unreadable"]
    for key, (sel, _, types) in table.items():
        if sel.count(":") != len(types):
            out.append(f"{key}: selector {sel} has {sel.count(':')} colons and {len(types)} argument types")
    wrappers, used = {}, set()
    texts = {name: strip_comments(text) for name, text in sources.items()}
    for name, s in texts.items():
        for m in WRAPPER.finditer(s):
            ret = norm(m.group(1))
            params = [p for p in m.group(3).split(",") if p.strip()]
            types = [norm(re.sub(r"\w+$", "", p.strip())) for p in params]
            wrappers[m.group(2)] = (ret, types)
            body = s[m.end():s.index("}\n", m.end())]
            c = CAST.search(body)
            if not c:
                out.append(f"{name}: wrapper {m.group(2)} does not cast objc_msgSend")
                continue
            cast_types = [norm(t) for t in c.group(2).split(",") if t.strip()]
            if norm(c.group(1)) != ret or cast_types != types:
                out.append(f"{name}: wrapper {m.group(2)} casts objc_msgSend to {norm(c.group(1))}({cast_types}), "
                           f"not its own type {ret}({types})")
    for name, s in texts.items():
        defs = {m.start(2) for m in WRAPPER.finditer(s)}
        allowed = set()  # positions of TK_S uses that were checked
        for m in re.finditer(r"\b(mtl_\w+)\(", s):
            if m.start(1) in defs or s[m.start(1) - 1:m.start(1)] == "_":
                continue
            fn = m.group(1)
            if fn not in wrappers:
                continue
            args, _ = split_args(s, m.end())
            ret, types = wrappers[fn]
            if len(args) < 2:
                out.append(f"{name}: {fn} called without a selector")
                continue
            sm = re.fullmatch(r"TK_S\((\w+)\)", args[1])
            if not sm:
                out.append(f"{name}: {fn} sends {args[1]!r}, not a TK_S(key) of the table")
                continue
            key = sm.group(1)
            if key not in table:
                out.append(f"{name}: {fn} sends {key}, which is not in the selector table")
                continue
            used.add(key)
            sel, tret, ttypes = table[key]
            if (ret, types) != (tret, ttypes):
                out.append(f"{name}: [{sel}] is sent through {fn}, typed {ret}({', '.join(types)}); "
                           f"the table says {tret}({', '.join(ttypes)})")
            if len(args) - 2 != len(types):
                out.append(f"{name}: {fn} called with {len(args) - 2} arguments for {len(types)}")
            pos = m.end()
            for i, a in enumerate(args):
                at = s.find(a, pos)
                pos = at + len(a)
                if "TK_S(" in a and (i == 1 or (i >= 2 and i - 2 < len(types) and types[i - 2] == "SEL")):
                    allowed.add(at)
        for m in re.finditer(r"TK_S\(", s):
            if m.start() not in allowed and not s[:m.start()].rstrip().endswith("#define"):
                line = s.count("\n", 0, m.start()) + 1
                out.append(f"{name}:{line}: a selector used outside a wrapper call's selector or SEL argument")
        for what, limit in (("objc_msgSend)", len(defs)), ("sel_registerName(", 1)):
            n = s.count("api." + what)
            if n > limit:
                out.append(f"{name}: api.{what} used {n} times; only the wrappers and the table's loader may")
    for key in table:
        if key not in used:
            out.append(f"{key}: in the selector table but never sent")
    return out


def load():
    return TABLE.read_text(), {p.name: p.read_text() for p in SOURCES}


def test_the_backend_sends_only_the_tables_selectors_with_their_signatures():
    table, sources = load()
    assert len(read_table(table)) >= 30
    assert {"metal.c", "metal_launch.c"} <= set(sources)
    assert problems(table, sources) == []


def test_a_wrong_wrapper_type_is_caught():
    table, sources = load()
    # the table says setBuffer:offset:atIndex: takes (id, NSUInteger, NSUInteger)
    bad = table.replace('"setBuffer:offset:atIndex:", void, (id, NSUInteger, NSUInteger)',
                        '"setBuffer:offset:atIndex:", void, (id, NSUInteger, uint32_t)')
    assert bad != table
    found = problems(bad, sources)
    assert any("setBuffer:offset:atIndex:" in p and "the table says" in p for p in found), found


def test_a_selector_outside_the_table_is_caught():
    table, sources = load()
    bad = table.replace('TK_SEL(endEncoding, "endEncoding", void, (void))', "")
    assert bad != table
    assert any("endEncoding, which is not in the selector table" in p for p in problems(bad, sources))


def test_a_cast_that_differs_from_its_wrapper_is_caught():
    table, sources = load()
    src = sources["metal.c"]
    bad = src.replace("return ((NSUInteger(*)(id, SEL))api.objc_msgSend)(o, s);",
                      "return ((unsigned(*)(id, SEL))api.objc_msgSend)(o, s);")
    assert bad != src
    found = problems(table, dict(sources, **{"metal.c": bad}))
    assert any("mtl_uint casts objc_msgSend" in p for p in found), found


def test_a_selector_sent_another_way_is_caught():
    table, sources = load()
    src = sources["metal_launch.c"]
    extra = src + "\nstatic SEL stray(void) { return TK_S(commit); }\n"
    assert any("outside a wrapper call" in p for p in problems(table, dict(sources, **{"metal_launch.c": extra})))
    raw = src + "\nstatic void raw(id o) { mtl_void(o, api.sel_registerName(\"commit\")); }\n"
    assert any("not a TK_S(key)" in p for p in problems(table, dict(sources, **{"metal_launch.c": raw})))


def test_colons_match_the_argument_count():
    table, sources = load()
    bad = table.replace('"waitUntilCompleted", void, (void)', '"waitUntilCompleted:", void, (void)')
    assert any("waitUntilCompleted: has 1 colons" in p for p in problems(bad, sources))
