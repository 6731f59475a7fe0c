"""`python -m tack`: Tack's diagnostics and its kernel cache's tools, in one command.

`python -m tack` prints what a bug report needs and what a failing setup
usually lacks (tack.info(): version and build, settings, Python and NumPy,
the devices, why each absent device family is absent, the C compiler for CPU
kernels, NVRTC, hiprtc and ocloc, the kernel cache); `--json` prints the same dict
as JSON to paste into an issue.  `python -m tack cache list|clear|prune`
shows and trims the kernel cache, touching only the files Tack wrote
(tack/_info.py says how that is decided).  docs/troubleshooting.md starts
here.

Exit status: 0 when the command did what it says, 1 when it could not (a
cache directory that is refused, or does not look like Tack's; the message
says why), 2 for bad usage (argparse's own convention, with a message naming
the bad argument).
"""

import argparse
import json
import sys
import time


def _positive(kind, what):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{what} must be a number, not {text!r}") from None
        if not v >= 0 or v != v or v == float("inf"):
            raise argparse.ArgumentTypeError(f"{what} must be a finite number >= 0, not {text!r}")
        return v
    return parse


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m tack",
        description="Tack's diagnostics: version and build, settings, devices (and why a backend is absent), the C "
                    "compiler for CPU kernels, NVRTC/hiprtc/ocloc and the kernel cache. See docs/troubleshooting.md.")
    p.add_argument("--json", action="store_true", help="print tack.info() as JSON (for bug reports)")
    sub = p.add_subparsers(dest="command", metavar="{cache}")
    cache = sub.add_parser("cache", help="list, clear or prune the kernel cache",
                           description="The kernel cache (TACK_CACHE_DIR, else $XDG_CACHE_HOME/tack, else "
                                       "~/.cache/tack). Only files Tack wrote are listed or removed.")
    csub = cache.add_subparsers(dest="action", metavar="{list,clear,prune}")
    csub.required = True
    ls = csub.add_parser("list", help="Tack's files in the cache, newest first, with size and age",
                         description="Tack's files in the kernel cache, newest first, with size and age.")
    ls.add_argument("--limit", type=_positive(int, "--limit"), default=None, metavar="N",
                    help="show the newest N only")
    csub.add_parser("clear", help="remove every file Tack wrote in the cache",
                    description="Remove every file Tack wrote in the kernel cache (build temporaries younger than a "
                                "day excepted: a build may be running). Other files are left alone; a directory "
                                "holding none of Tack's files is refused.")
    pr = csub.add_parser("prune", help="remove old entries, or the oldest beyond a size",
                         description="Remove Tack's cache files last written more than DAYS ago and/or the oldest "
                                     "until the rest take at most MB megabytes (at least one option is needed).")
    pr.add_argument("--older-than", type=_positive(float, "--older-than"), metavar="DAYS",
                    help="remove files last written more than DAYS days ago")
    pr.add_argument("--max-size", type=_positive(float, "--max-size"), metavar="MB",
                    help="then remove the oldest until the rest take at most MB megabytes (10^6 bytes)")
    return p, pr


def _cache(args, prune_parser):
    from . import _info

    if args.action == "list":
        rows = _info.cache_entries()
        total = sum(r[2] for r in rows)
        now = time.time()
        from . import _core
        print(f"{_core._cache_path()}: {len(rows)} files of Tack's, {_info._size(total)}")
        for name, kind, size, mtime in rows[:args.limit] if args.limit is not None else rows:
            print(f"  {_info._size(size):>10}  {_info._age(now - mtime) + ' ago':>12}  {kind:<9}  {name}")
        if args.limit is not None and len(rows) > args.limit:
            print(f"  ... {len(rows) - args.limit} older (--limit {args.limit})")
        return 0
    if args.action == "clear":
        files, size = _info.cache_remove(lambda r: True)
        print(f"removed {files} files ({_info._size(size)}) from the kernel cache")
        return 0
    if args.older_than is None and args.max_size is None:
        prune_parser.error("give --older-than DAYS and/or --max-size MB")
    files, size = _info.cache_prune(args.older_than,
                                    None if args.max_size is None else int(args.max_size * 1e6))
    print(f"removed {files} files ({_info._size(size)}) from the kernel cache")
    return 0


def main(argv=None):
    parser, prune_parser = _parser()
    args = parser.parse_args(argv)
    if args.command == "cache":
        if args.json:
            parser.error("--json is for the report, not for 'cache'")
        from ._info import CacheError
        try:
            return _cache(args, prune_parser)
        except (CacheError, RuntimeError, OSError) as exc:
            print(f"python -m tack cache {args.action}: {exc}", file=sys.stderr)
            return 1
    import tack

    d = tack.info()
    if args.json:
        json.dump(d, sys.stdout, indent=2, sort_keys=True)
        print()
    else:
        from ._info import report
        print(report(d))
    return 0


if __name__ == "__main__":
    sys.exit(main())
