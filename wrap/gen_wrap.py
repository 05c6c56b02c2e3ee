#!/usr/bin/env python3
"""gen_wrap.py: turns wrap/wrap_table.txt into the code and flags built around it.

The wrap table is the single source of truth for what rheaper wraps. This script
runs at build time (Python 3, standard library only) and writes into --out:

  rh_wrap_gen.h       kind numbers (RH_KIND_*), kind names, RH_WRAP_TABLE X-macro,
                      and the prototypes of every __real_SYM / __wrap_SYM pair;
  rh_link_flags.h     the linker flags rheaper-cc adds, as NULL-terminated arrays,
                      plus rh_wrap_syms[] (symbol and RH_WRAP_F_* flags);
  rh_weak_gen.c       a weak __wrap_SYM per function that only calls __real_SYM;
  rh_weak_NNN.c       one tiny file per function that compiles just that fallback
                      of rh_weak_gen.c, so librheaper_weak.a has one member per
                      function and a shared library pulls in only the fallbacks
                      it references (a C library then never needs libstdc++);
  rheaper_wrap.flags  one linker flag per line (wrap and export flags of every
                      function) for the CMake package and toolchain file;
  rheaper_wrap_static.flags  the same for -static links: no export flags, and
                      no wrap of the dynamic-only functions (dlopen, dlclose);
  rheaper_wrap_cxx.flags  -Wl,-u,SYM for each C++ operator: what a C++ link with
                      a static libstdc++ adds so that it provides the operators.

Files are rewritten only when their content changes, so an edit of the table that
does not change an output does not rebuild its users.

Usage: gen_wrap.py --table wrap_table.txt --out DIR
       gen_wrap.py --table wrap_table.txt --count     (prints the number of fns)
Exit status 0 on success, 1 with "TABLE:LINE: message" on a malformed table.
"""

import argparse
import os
import re
import sys

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
FLAG_CXX = 1
FLAG_DYNAMIC = 2
KNOWN_FLAGS = {"dynamic": FLAG_DYNAMIC}


class TableError(Exception):
    """A malformed table line: carries the message printed as TABLE:LINE: msg."""


class Fn:
    """One "fn" line: a wrapped symbol and its prototype."""

    def __init__(self, line, sym, kind, ret, params, vafwd, flags):
        self.line = line
        self.sym = sym
        self.kind = kind  # kind name, or None for "-"
        self.ret = ret
        self.params = params  # list of type strings; [] for (void)
        self.vafwd = vafwd  # name of the v-function, or None
        self.flags = flags  # RH_WRAP_F_* bits

    @property
    def variadic(self):
        return bool(self.params) and self.params[-1] == "..."


def kind_enum(name):
    """Enum name of a kind: uppercased, "[]" becomes _ARRAY, other punctuation _."""
    s = name.replace("[]", "_array")
    s = re.sub(r"[^A-Za-z0-9]", "_", s)
    return "RH_KIND_" + s.upper()


def parse_table(path):
    """Reads the table. Returns (kinds, fns): kinds is a list of (number, name) in
    file order, fns a list of Fn. Raises TableError naming the line on any
    inconsistency: duplicate kind numbers or names, unknown kinds, bad symbols,
    a VA-FORWARD that is not a table function taking a va_list last."""
    kinds, fns = [], []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = "%s:%d" % (path, no)
        if line.startswith("kind "):
            parts = line.split()
            if len(parts) != 3 or not parts[1].isdigit():
                raise TableError("%s: expected 'kind NUMBER NAME'" % where)
            num = int(parts[1])
            if num < 1 or num > 255:
                raise TableError("%s: kind number %d outside 1..255" % (where, num))
            kinds.append((num, parts[2], no))
        elif line.startswith("fn "):
            cols = [c.strip() for c in line[3:].split("|")]
            while len(cols) < 6:
                cols.append("")
            if len(cols) > 6:
                raise TableError("%s: more than 6 columns" % where)
            sym, kind, ret, params, vafwd, flags = cols
            if not IDENT.match(sym):
                raise TableError("%s: bad symbol '%s'" % (where, sym))
            if not ret:
                raise TableError("%s: missing return type" % where)
            plist = [p.strip() for p in params.split(",")] if params else []
            if plist == ["void"]:
                plist = []
            if any(not p for p in plist):
                raise TableError("%s: empty parameter type" % where)
            if "..." in plist[:-1]:
                raise TableError("%s: '...' must be the last parameter" % where)
            bits = FLAG_CXX if sym.startswith("_Z") else 0
            for fl in flags.split():
                if fl not in KNOWN_FLAGS:
                    raise TableError("%s: unknown flag '%s'" % (where, fl))
                bits |= KNOWN_FLAGS[fl]
            fn = Fn(no, sym, None if kind in ("-", "") else kind, ret, plist, vafwd or None, bits)
            if fn.variadic and not fn.vafwd:
                raise TableError("%s: variadic '%s' needs a VA-FORWARD" % (where, sym))
            if fn.vafwd and not fn.variadic:
                raise TableError("%s: VA-FORWARD on non-variadic '%s'" % (where, sym))
            fns.append(fn)
        else:
            raise TableError("%s: expected 'kind' or 'fn'" % where)

    seen_num, seen_name = {}, {}
    for num, name, no in kinds:
        if num in seen_num:
            raise TableError("%s:%d: kind number %d already used on line %d"
                             % (path, no, num, seen_num[num]))
        if kind_enum(name) in seen_name:
            raise TableError("%s:%d: kind name '%s' already used on line %d"
                             % (path, no, name, seen_name[kind_enum(name)]))
        seen_num[num] = no
        seen_name[kind_enum(name)] = no
    names = {name for _, name, _ in kinds}
    by_sym = {}
    for fn in fns:
        if fn.sym in by_sym:
            raise TableError("%s:%d: '%s' already listed on line %d"
                             % (path, fn.line, fn.sym, by_sym[fn.sym].line))
        if fn.kind and fn.kind not in names:
            raise TableError("%s:%d: unknown kind '%s'" % (path, fn.line, fn.kind))
        by_sym[fn.sym] = fn
    for fn in fns:
        if fn.vafwd:
            tgt = by_sym.get(fn.vafwd)
            if not tgt or not tgt.params or tgt.params[-1] != "va_list" \
                    or tgt.params[:-1] != fn.params[:-1] or tgt.ret != fn.ret:
                raise TableError("%s:%d: VA-FORWARD '%s' must be a table fn with the same "
                                 "leading parameters and a va_list last"
                                 % (path, fn.line, fn.vafwd))
    if not fns:
        raise TableError("%s: no fn lines" % path)
    return [(n, name) for n, name, _ in kinds], fns


def proto(ret, name, params, names=False):
    """C prototype text: "ret name(types)" or, with names, "ret name(type a0, ...)"."""
    if not params:
        args = "void"
    elif names:
        args = ", ".join(p if p == "..." else "%s%sa%d" % (p, "" if p.endswith("*") else " ", i)
                         for i, p in enumerate(params))
    else:
        args = ", ".join(params)
    sep = "" if ret.endswith("*") else " "
    return "%s%s%s(%s)" % (ret, sep, name, args)


HEADER_NOTE = "generated by wrap/gen_wrap.py from wrap/wrap_table.txt; do not edit."


def gen_wrap_h(kinds, fns):
    """rh_wrap_gen.h: usable from plain C (converter) and C++; prototypes for shims."""
    kmax = max(n for n, _ in kinds)
    out = []
    w = out.append
    w("/* rh_wrap_gen.h: " + HEADER_NOTE)
    w(" *")
    w(" * Kind numbers and names of the allocation functions (part of the rip format),")
    w(" * the RH_WRAP_TABLE X-macro, and the prototypes of every __real_/__wrap_ pair.")
    w(" * Define RH_WRAP_NO_PROTOTYPES to get only the kinds (the converter does).")
    w(" * RH_REAL_CXX and RH_REAL_DYN are attributes put on the __real_ declarations of")
    w(" * C++ operators and of dynamic-only functions (the runtime defines them as weak).")
    w(" */")
    w("#ifndef RH_WRAP_GEN_H")
    w("#define RH_WRAP_GEN_H")
    w("")
    w("#include <stdarg.h>")
    w("#include <stddef.h>")
    w("#include <stdio.h>")
    w("")
    w("#ifdef __cplusplus")
    w('extern "C" {')
    w("#endif")
    w("")
    w("enum {")
    for n, name in kinds:
        w("    %s = %d, /* %s */" % (kind_enum(name), n, name))
    w("};")
    w("")
    w("#define RH_KIND_MAX %d" % kmax)
    w("#define RH_KIND_COUNT %d" % len(kinds))
    w("")
    w("/* Name of each kind, indexed by number; NULL where no kind has that number.")
    w(" * (Named rh_wrap_kind_names so that a file with its own rh_kind_names can include")
    w(" * this header.) RH_KIND_NAME(k) is the name of kind k, or NULL. */")
    w("static const char *const rh_wrap_kind_names[RH_KIND_MAX + 1] __attribute__((unused)) = {")
    by_num = dict(kinds)
    for i in range(kmax + 1):
        w('    %s, /* %d */' % ('"%s"' % by_num[i] if i in by_num else "NULL", i))
    w("};")
    w("#define RH_KIND_NAME(k) \\")
    w("    ((unsigned long long)(k) <= RH_KIND_MAX ? rh_wrap_kind_names[(k)] : (const char *)0)")
    w("")
    w("/* Flags of a wrapped function (rh_wrap_syms[], RH_WRAP_TABLE). */")
    w("#define RH_WRAP_F_CXX %d     /* a C++ operator: C++ links add -Wl,-u,SYM */" % FLAG_CXX)
    w("#define RH_WRAP_F_DYNAMIC %d /* wrapped in dynamic links only */" % FLAG_DYNAMIC)
    w("#define RH_WRAP_FN_COUNT %d" % len(fns))
    w("")
    w("/* X(symbol, kind number or 0 for none, RH_WRAP_F_* flags), in table order. */")
    w("#define RH_WRAP_TABLE(X) \\")
    for i, fn in enumerate(fns):
        kind = kind_enum(fn.kind) if fn.kind else "0"
        end = " \\" if i + 1 < len(fns) else ""
        w("    X(%s, %s, %d)%s" % (fn.sym, kind, fn.flags, end))
    w("")
    w("#ifndef RH_WRAP_NO_PROTOTYPES")
    w("#ifndef RH_REAL_CXX")
    w("#define RH_REAL_CXX")
    w("#endif")
    w("#ifndef RH_REAL_DYN")
    w("#define RH_REAL_DYN")
    w("#endif")
    w("/* Put on every __wrap_ definition: exported from executables, kept by the linker. */")
    w('#define RH_WRAP __attribute__((used, visibility("default")))')
    w("")
    for fn in fns:
        attr = ""
        if fn.flags & FLAG_CXX:
            attr = " RH_REAL_CXX"
        elif fn.flags & FLAG_DYNAMIC:
            attr = " RH_REAL_DYN"
        w("extern %s%s;" % (proto(fn.ret, "__real_" + fn.sym, fn.params), attr))
        w('extern %s __attribute__((visibility("default")));'
          % proto(fn.ret, "__wrap_" + fn.sym, fn.params))
    w("#endif /* RH_WRAP_NO_PROTOTYPES */")
    w("")
    w("#ifdef __cplusplus")
    w("}")
    w("#endif")
    w("#endif")
    return "\n".join(out) + "\n"


def c_str_array(name, items, comment):
    lines = ["/* %s */" % comment,
             "static const char *const %s[] __attribute__((unused)) = {" % name]
    lines += ['    "%s",' % s for s in items]
    lines += ["    NULL,", "};", ""]
    return lines


def gen_flags_h(fns):
    """rh_link_flags.h: arrays indexed like the table; consumed by cc-wrapper."""
    out = ["/* rh_link_flags.h: " + HEADER_NOTE,
           " *",
           " * rh_wrap_syms[i], rh_link_wrap_flags[i] and rh_link_export_flags[i] describe",
           " * the same table function; each array ends with NULL.",
           " */",
           "#ifndef RH_LINK_FLAGS_H",
           "#define RH_LINK_FLAGS_H",
           "",
           "#include <stddef.h>",
           "",
           "struct rh_wrap_sym {",
           "    const char *name; /* the wrapped symbol */",
           "    unsigned flags;   /* RH_WRAP_F_* (rh_wrap_gen.h) */",
           "};",
           "",
           "static const struct rh_wrap_sym rh_wrap_syms[] __attribute__((unused)) = {"]
    out += ['    {"%s", %d},' % (fn.sym, fn.flags) for fn in fns]
    out += ["    {NULL, 0},", "};", ""]
    out += c_str_array("rh_link_wrap_flags", ["-Wl,--wrap=" + fn.sym for fn in fns],
                       "One -Wl,--wrap=SYM per table function.")
    out += c_str_array("rh_link_export_flags",
                       ["-Wl,--export-dynamic-symbol=__wrap_" + fn.sym for fn in fns],
                       "Exports each __wrap_SYM from an executable, for shared libraries.")
    out += c_str_array("rh_link_cxx_undef_flags",
                       ["-Wl,-u," + fn.sym for fn in fns if fn.flags & FLAG_CXX],
                       "C++ links: make a static libstdc++ provide the real operators.")
    out += ["#endif"]
    return "\n".join(out) + "\n"


def gen_weak_c(fns):
    """rh_weak_gen.c: weak __wrap_SYM fallbacks. Compiled whole, or one function at a
    time with RH_WEAK_ONLY=index (the rh_weak_NNN.c files)."""
    out = ["/* rh_weak_gen.c: " + HEADER_NOTE,
           " *",
           " * Weak __wrap_SYM fallbacks that just call __real_SYM, linked into shared",
           " * libraries built with rheaper-cc: such a library still loads into a program",
           " * that is not instrumented, and an instrumented program's exported, strong",
           " * __wrap_SYM wins over these. With RH_WEAK_ONLY=i only function i is compiled.",
           " */",
           "#include \"rh_wrap_gen.h\"",
           ""]
    for i, fn in enumerate(fns):
        out.append("#if !defined(RH_WEAK_ONLY) || RH_WEAK_ONLY == %d" % i)
        out.append('__attribute__((weak, visibility("default")))')
        out.append(proto(fn.ret, "__wrap_" + fn.sym, fn.params, names=True))
        out.append("{")
        void = fn.ret == "void"
        if fn.variadic:
            fixed = len(fn.params) - 1
            args = ", ".join("a%d" % j for j in range(fixed))
            out.append("    va_list ap;")
            out.append("    va_start(ap, a%d);" % (fixed - 1))
            if void:
                out.append("    __real_%s(%s, ap);" % (fn.vafwd, args))
            else:
                out.append("    %s r = __real_%s(%s, ap);" % (fn.ret, fn.vafwd, args))
            out.append("    va_end(ap);")
            if not void:
                out.append("    return r;")
        else:
            args = ", ".join("a%d" % j for j in range(len(fn.params)))
            call = "__real_%s(%s)" % (fn.sym, args)
            out.append("    %s%s;" % ("" if void else "return ", call))
        out.append("}")
        out.append("#endif")
        out.append("")
    return "\n".join(out)


def gen_flags_txt(fns):
    lines = ["-Wl,--wrap=" + fn.sym for fn in fns]
    lines += ["-Wl,--export-dynamic-symbol=__wrap_" + fn.sym for fn in fns]
    return "\n".join(lines) + "\n"


def write_if_changed(path, text):
    """Writes text to path unless the file already holds exactly that text."""
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    ap = argparse.ArgumentParser(description="Generate rheaper's wrap code and flags.")
    ap.add_argument("--table", required=True)
    ap.add_argument("--out")
    ap.add_argument("--count", action="store_true", help="print the number of fn lines")
    args = ap.parse_args(argv)
    try:
        kinds, fns = parse_table(args.table)
    except OSError as e:
        print("gen_wrap.py: cannot read %s: %s" % (args.table, e.strerror), file=sys.stderr)
        return 1
    except TableError as e:
        print("gen_wrap.py: %s" % e, file=sys.stderr)
        return 1
    if args.count:
        print(len(fns))
        return 0
    if not args.out:
        ap.error("--out is required")
    os.makedirs(args.out, exist_ok=True)
    write_if_changed(os.path.join(args.out, "rh_wrap_gen.h"), gen_wrap_h(kinds, fns))
    write_if_changed(os.path.join(args.out, "rh_link_flags.h"), gen_flags_h(fns))
    write_if_changed(os.path.join(args.out, "rh_weak_gen.c"), gen_weak_c(fns))
    for i in range(len(fns)):
        write_if_changed(os.path.join(args.out, "rh_weak_%03d.c" % i),
                         "/* " + HEADER_NOTE + " */\n#define RH_WEAK_ONLY %d\n"
                         "#include \"rh_weak_gen.c\"\n" % i)
    write_if_changed(os.path.join(args.out, "rheaper_wrap.flags"), gen_flags_txt(fns))
    write_if_changed(os.path.join(args.out, "rheaper_wrap_static.flags"),
                     "".join("-Wl,--wrap=%s\n" % fn.sym for fn in fns
                             if not fn.flags & FLAG_DYNAMIC))
    write_if_changed(os.path.join(args.out, "rheaper_wrap_cxx.flags"),
                     "".join("-Wl,-u,%s\n" % fn.sym for fn in fns if fn.flags & FLAG_CXX))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
