"""The struct rewrite's vocabulary: how a leaf is named, the tree builders, and what an
expression is.

tack._structs_rewrite (the rewriter's expressions, its entry points) and tack._structs_stmts
(its statements) both speak it, so it sits below them both, importing neither:

- ``SEP``, the middle dot that joins a struct's leaf name to its parameter or local (``p·vel``);
- the builders of Python syntax nodes, each placing the node it makes at the line and column of
  the node it replaces, so that an error the compiler raises in the rewritten tree points at the
  user's line;
- ``_R``, what a struct-related expression is (an array, an element, a leaf of one, a struct local,
  a constructor, a func call returning a struct), as ``_Rw.ref`` finds it, and ``_ArrSrc``,
  ``_Plain`` and ``_Rel``, the pieces of a struct's value as ``_Rw.leaf_values`` lists them.
"""

import ast
import copy


# A struct's leaf travels as a parameter or local named after its path, p·vel or q·shape·radius: an
# identifier to Python (debug mode's signature) that no source spells, and readable in messages.
SEP = "\u00b7"


def _sep(dotted):
    return dotted.replace(".", SEP)


class _R:
    """What a struct-related expression is (see _Rw.ref)."""

    __slots__ = ("kind", "name", "lay", "idx", "path", "leaf", "sub", "node", "ndim")

    def __init__(self, kind, **kw):
        self.kind = kind
        self.name = self.lay = self.idx = self.path = self.leaf = self.sub = self.node = self.ndim = None
        for k, v in kw.items():
            setattr(self, k, v)


def _loc(new, old):
    return ast.fix_missing_locations(ast.copy_location(new, old)) if old is not None else new


def _name(id_, node, ctx=None):
    return _loc(ast.Name(id=id_, ctx=ctx or ast.Load()), node)


def _const(v, node):
    return _loc(ast.Constant(value=v), node)


def _index(elts, node):
    return elts[0] if len(elts) == 1 else _loc(ast.Tuple(elts=list(elts), ctx=ast.Load()), node)


def _store(node):
    """node as an assignment target (its own context Store; a tuple's elements too)."""
    if isinstance(node, (ast.Name, ast.Subscript, ast.Attribute, ast.Starred, ast.Tuple, ast.List)):
        node = copy.copy(node)
        node.ctx = ast.Store()
        if isinstance(node, (ast.Tuple, ast.List)):
            node.elts = [_store(e) for e in node.elts]
    return node


def _elts(sl):
    return list(sl.elts) if isinstance(sl, ast.Tuple) else [sl]



class _ArrSrc:
    """The value of a whole array field: load(indices) gives an element (None: zeros); name_node the
    local array holding it, when it is a struct local's."""

    __slots__ = ("load", "name_node")

    def __init__(self, load, name_node=None):
        self.load, self.name_node = load, name_node


class _Plain:
    """A leaf's dtype alone (an element of an array field), for zero()."""

    ashape = ()

    def __init__(self, dt):
        self.dt = dt


class _Rel:
    """A leaf seen from a sub-struct: the last len(leaf.path) - n names, behind `prefix`."""

    __slots__ = ("leaf", "n", "prefix")

    def __init__(self, leaf, n, prefix=()):
        self.leaf, self.n, self.prefix = leaf, n, prefix

    def leaf_rel_path(self):
        return self.prefix + self.leaf.path[self.n:]

    @property
    def name(self):
        return ".".join(self.leaf_rel_path())
