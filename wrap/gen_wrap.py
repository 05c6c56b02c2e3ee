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
  rh_family_gen.c     the __wrap_ shims of the allocator families ("afn" lines),
                      generated from each function's role (see ROLES below).

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
FLAG_FAMILY = 4  # an "afn" line: weak __real_, shim generated from the role
FLAG_THROWS = 8  # a family function that may throw (tc_new): shim releases the guard
KNOWN_FLAGS = {"dynamic": FLAG_DYNAMIC, "throws": FLAG_THROWS}

# Roles of allocator-family functions ("afn" lines), with how many argument
# indexes follow the role name (see wrap_table.txt for their meaning).
ROLES = {
    "alloc": (1, 2),      # S [N]: returns the block; size aS (times aN if given)
    "zalloc": (2, 2),     # N S: calloc-like, size aN * aS
    "realloc": (2, 3),    # P S, or P N S: realloc-like
    "reallocf": (2, 2),   # P S: realloc that frees P when it fails
    "expand": (2, 2),     # P S: resizes in place, returns P or NULL
    "xalloc": (2, 2),     # P S: jemalloc xallocx, returns the new usable size
    "memalign": (2, 2),   # PP S: posix_memalign-like, returns 0 and stores *aPP
    "strdup": (1, 1),     # S: returns a copy of string aS (strlen + 1 bytes)
    "free": (1, 1),       # P: frees aP (sized and aligned frees alike)
}


class TableError(Exception):
    """A malformed table line: carries the message printed as TABLE:LINE: msg."""


class Fn:
    """One "fn" line: a wrapped symbol and its prototype."""

    def __init__(self, line, sym, kind, ret, params, vafwd, flags, role=None):
        self.line = line
        self.role = role  # ("alloc", [indexes]) for an "afn" line, else None
        self.sym = sym
        self.link = sym  # the symbol the linker sees (size_t_mangle)
        self.kind = kind  # kind name, or None for "-"
        self.ret = ret
        self.params = params  # list of type strings; [] for (void)
        self.vafwd = vafwd  # name of the v-function, or None
        # "argv" / "argv+envp": the variadic part is a NULL-terminated list of
        # strings (execl), forwarded as a vector to vafwd (execv); with envp the
        # list is followed by an environment vector (execle -> execve)
        self.valist = None
        if vafwd and " " in vafwd:
            self.valist, self.vafwd = vafwd.split(None, 1)
        self.flags = flags  # RH_WRAP_F_* bits

    @property
    def variadic(self):
        return bool(self.params) and self.params[-1] == "..."


def kind_enum(name):
    """Enum name of a kind: uppercased, "[]" becomes _ARRAY, other punctuation _."""
    s = name.replace("[]", "_array")
    s = re.sub(r"[^A-Za-z0-9]", "_", s)
    return "RH_KIND_" + s.upper()


def size_t_mangle(sym):
    """The table names the C++ operators as LP64 targets spell them, size_t
    being unsigned long ('m' in the Itanium ABI). Returns SYM as a target with a
    32-bit size_t (unsigned int, 'j') spells it: _Znwm -> _Znwj, _ZdlPvm ->
    _ZdlPvj. The C names stay; rh_wrap_gen.h binds them to these symbols."""
    return re.sub(r"^(_Zn[wa]|_Zd[la]Pv)m", r"\1j", sym)


def asm_label(fn, prefix):
    """ __asm__("PREFIX+link") when the target spells the symbol differently."""
    return ' __asm__("%s%s")' % (prefix, fn.link) if fn.link != fn.sym else ""


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
        elif line.startswith("afn "):
            fns.append(parse_afn(line, where, no, kinds))
        else:
            raise TableError("%s: expected 'kind', 'fn' or 'afn'" % where)

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
        if fn.valist:
            tgt = by_sym.get(fn.vafwd)
            want = fn.params[:-2] + ["char *const *"] * (2 if fn.valist == "argv+envp" else 1)
            if fn.valist not in ("argv", "argv+envp") or len(fn.params) < 3 \
                    or fn.params[-2] != "const char *" or not tgt or tgt.params != want \
                    or tgt.ret != fn.ret:
                raise TableError("%s:%d: VA-FORWARD '%s %s' must be argv or argv+envp and a "
                                 "table fn taking the leading parameters and the vector(s)"
                                 % (path, fn.line, fn.valist, fn.vafwd))
        elif fn.vafwd:
            tgt = by_sym.get(fn.vafwd)
            if not tgt or not tgt.params or tgt.params[-1] != "va_list" \
                    or tgt.params[:-1] != fn.params[:-1] or tgt.ret != fn.ret:
                raise TableError("%s:%d: VA-FORWARD '%s' must be a table fn with the same "
                                 "leading parameters and a va_list last"
                                 % (path, fn.line, fn.vafwd))
    if not fns:
        raise TableError("%s: no fn lines" % path)
    return [(n, name) for n, name, _ in kinds], fns


def parse_afn(line, where, no, kinds):
    """An allocator-family line: "afn KIND SYMBOL | ROLE IDX... | RET | PARAMS | FLAGS".
    Defines kind KIND named SYMBOL (appended to kinds) and returns its Fn."""
    cols = [c.strip() for c in line[4:].split("|")]
    while len(cols) < 5:
        cols.append("")
    if len(cols) > 5:
        raise TableError("%s: more than 5 columns" % where)
    head, role, ret, params, flags = cols
    hp = head.split()
    if len(hp) != 2 or not hp[0].isdigit() or not IDENT.match(hp[1]):
        raise TableError("%s: expected 'afn KIND SYMBOL'" % where)
    num, sym = int(hp[0]), hp[1]
    if num < 1 or num > 255:
        raise TableError("%s: kind number %d outside 1..255" % (where, num))
    rp = role.split()
    if not rp or rp[0] not in ROLES:
        raise TableError("%s: unknown role '%s'" % (where, role))
    lo, hi = ROLES[rp[0]]
    if not lo <= len(rp) - 1 <= hi or not all(x.isdigit() for x in rp[1:]):
        raise TableError("%s: role '%s' takes %d to %d argument indexes" % (where, rp[0], lo, hi))
    plist = [p.strip() for p in params.split(",")] if params else []
    idx = [int(x) for x in rp[1:]]
    if any(i >= len(plist) for i in idx):
        raise TableError("%s: argument index past the parameters" % where)
    if "..." in plist:
        raise TableError("%s: a family function cannot be variadic" % where)
    bits = FLAG_FAMILY
    for fl in flags.split():
        if fl not in KNOWN_FLAGS:
            raise TableError("%s: unknown flag '%s'" % (where, fl))
        bits |= KNOWN_FLAGS[fl]
    kinds.append((num, sym, no))
    return Fn(no, sym, sym, ret, plist, None, bits, (rp[0], idx))


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
    w("#define RH_WRAP_F_FAMILY %d  /* an allocator family's function (afn line) */" % FLAG_FAMILY)
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
    w("#ifndef RH_REAL_FAM")
    w("#define RH_REAL_FAM")
    w("#endif")
    w("/* Put on every __wrap_ definition: exported from executables, kept by the linker. */")
    w('#define RH_WRAP __attribute__((used, visibility("default")))')
    w("")
    for fn in fns:
        attr = ""
        if fn.flags & FLAG_CXX:
            attr = " RH_REAL_CXX"
        elif fn.flags & FLAG_FAMILY:
            attr = " RH_REAL_FAM"
        elif fn.flags & FLAG_DYNAMIC:
            attr = " RH_REAL_DYN"
        w("extern %s%s%s;" % (proto(fn.ret, "__real_" + fn.sym, fn.params),
                               asm_label(fn, "__real_"), attr))
        w('extern %s%s __attribute__((visibility("default")));'
          % (proto(fn.ret, "__wrap_" + fn.sym, fn.params), asm_label(fn, "__wrap_")))
        if fn.link != fn.sym:  # the operator itself (wrap/interpose_cxx.c defines it)
            w("extern %s%s;" % (proto(fn.ret, fn.sym, fn.params), asm_label(fn, "")))
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
    out += ['    {"%s", %d},' % (fn.link, fn.flags) for fn in fns]
    out += ["    {NULL, 0},", "};", ""]
    out += c_str_array("rh_link_wrap_flags", ["-Wl,--wrap=" + fn.link for fn in fns],
                       "One -Wl,--wrap=SYM per table function.")
    out += c_str_array("rh_link_export_flags",
                       ["-Wl,--export-dynamic-symbol=__wrap_" + fn.link for fn in fns],
                       "Exports each __wrap_SYM from an executable, for shared libraries.")
    out += c_str_array("rh_link_cxx_undef_flags",
                       ["-Wl,-u," + fn.link for fn in fns if fn.flags & FLAG_CXX],
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
        if fn.valist:
            # the list after the last fixed string, up to its NULL, as a vector
            fixed = len(fn.params) - 1
            lead = ", ".join("a%d" % j for j in range(fixed - 1))
            first = "a%d" % (fixed - 1)
            out.append("    va_list ap;")
            out.append("    size_t n = 1;")
            out.append("    va_start(ap, %s);" % first)
            out.append("    while (va_arg(ap, const char *) != NULL)")
            out.append("        n++;")
            out.append("    va_end(ap);")
            out.append("    const char *argv[n + 1];")
            out.append("    argv[0] = %s;" % first)
            out.append("    va_start(ap, %s);" % first)
            out.append("    for (size_t i = 1; i <= n; i++)")
            out.append("        argv[i] = va_arg(ap, const char *);")
            vecs = "(char *const *)argv"
            if fn.valist == "argv+envp":
                out.append("    char *const *envp = va_arg(ap, char *const *);")
                vecs += ", envp"
            out.append("    va_end(ap);")
            out.append("    return __real_%s(%s%s%s);" % (fn.vafwd, lead, ", " if lead else "", vecs))
        elif fn.variadic:
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
    lines = ["-Wl,--wrap=" + fn.link for fn in fns]
    lines += ["-Wl,--export-dynamic-symbol=__wrap_" + fn.link for fn in fns]
    return "\n".join(lines) + "\n"


def gen_family_c(fns):
    """rh_family_gen.c: one __wrap_ shim per "afn" function, from its role. Each
    follows runtime/rh_hooks.h: pass through unless rh_hook_begin(), guard held
    across the real call (outermost-call rule), allocation times after the call,
    free times before it."""
    out = ["/* rh_family_gen.c: " + HEADER_NOTE,
           " *",
           " * The shims of the allocator families (jemalloc, mimalloc, gperftools), one",
           " * per \"afn\" line, written from the function's role. The __real_ functions",
           " * are weak: a program that does not link the allocator leaves them NULL and",
           " * never calls the shim. Nothing here allocates or uses stdio.",
           " */",
           "#define RH_REAL_FAM __attribute__((weak))",
           "#include <string.h>",
           "#include \"rh_shims.h\"",
           "",
           "/* A throwing family function (tc_new) left by an exception: the cleanup",
           " * records the failure and releases the guard. */",
           "struct rh_fam_pending {",
           "    unsigned kind;",
           "    size_t size;",
           "    void *fp;",
           "    int open;",
           "};",
           "",
           "static void __attribute__((unused)) rh_fam_unwind(struct rh_fam_pending *c)",
           "{",
           "    if (rh_unlikely(c->open)) {",
           "        c->open = 0;",
           "        rh_record_fail(c->kind, c->size, c->fp);",
           "        rh_hook_end();",
           "    }",
           "}",
           ""]
    for fn in fns:
        if not fn.flags & FLAG_FAMILY:
            continue
        role, idx = fn.role
        a = ["a%d" % i for i in range(len(fn.params))]
        call = "__real_%s(%s)" % (fn.sym, ", ".join(a))
        kind = kind_enum(fn.kind)
        void = fn.ret == "void"
        out.append("RH_WRAP " + proto(fn.ret, "__wrap_" + fn.sym, fn.params, names=True))
        out.append("{")
        w = out.append
        if role == "free":
            p = a[idx[0]]
            w("    if (%s == NULL || !rh_hook_begin()) {" % p)
            w("        %s%s;" % ("" if void else "return ", call))
            if void:
                w("        return;")
            w("    }")
            w("    rh_record_free((void *)%s, rh_now());" % p)
            if void:
                w("    %s;" % call)
                w("    rh_hook_end();")
            else:
                w("    %s r = %s;" % (fn.ret, call))
                w("    rh_hook_end();")
                w("    return r;")
            w("}")
            w("")
            continue
        w("    if (!rh_hook_begin())")
        w("        return %s;" % call)
        if role in ("alloc", "zalloc", "strdup"):
            if role == "strdup":
                size = "r ? strlen((const char *)r) + 1 : 0"
            elif len(idx) == 2 and role == "alloc":
                size = "rh_mul_size(%s, %s)" % (a[idx[1]], a[idx[0]])
            elif role == "zalloc":
                size = "rh_mul_size(%s, %s)" % (a[idx[0]], a[idx[1]])
            else:
                size = a[idx[0]]
            if fn.flags & FLAG_THROWS:
                w("    struct rh_fam_pending c __attribute__((cleanup(rh_fam_unwind))) ="
                  " {%s, %s, RH_FP(), 1};" % (kind, size if role != "strdup" else "0"))
                w("    %s r = %s;" % (fn.ret, call))
                w("    c.open = 0;")
            else:
                w("    %s r = %s;" % (fn.ret, call))
            w("    rh_shim_alloc_done(%s, (void *)r, %s, RH_FP());" % (kind, size))
            w("    return r;")
        elif role == "memalign":
            pp, sz = a[idx[0]], a[idx[1]]
            w("    %s rc = %s;" % (fn.ret, call))
            w("    if (rc == 0)")
            w("        rh_shim_alloc_done(%s, *(void **)%s, %s, RH_FP());" % (kind, pp, sz))
            w("    else if (rc == ENOMEM)")
            w("        rh_shim_alloc_done(%s, NULL, %s, RH_FP());" % (kind, sz))
            w("    else")
            w("        rh_hook_end();")
            w("    return rc;")
        elif role in ("realloc", "reallocf"):
            p = a[idx[0]]
            size = a[idx[1]] if len(idx) == 2 else "rh_mul_size(%s, %s)" % (a[idx[1]], a[idx[2]])
            w("    size_t size = %s;" % size)
            w("    if (%s == NULL) {" % p)
            w("        %s r = %s;" % (fn.ret, call))
            w("        rh_shim_alloc_done(%s, (void *)r, size, RH_FP());" % kind)
            w("        return r;")
            w("    }")
            w("    uint64_t t0 = rh_now();")
            w("    %s r = %s;" % (fn.ret, call))
            if role == "reallocf":
                w("    if (r == NULL && size != 0) {")
                w("        rh_record_free((void *)%s, t0);" % p)
                w("        rh_hook_end();")
                w("        return r;")
                w("    }")
            w("    rh_shim_realloc_done(%s, (void *)%s, (void *)r, size, t0, RH_FP());"
              % (kind, p))
            w("    return r;")
        elif role in ("expand", "xalloc"):
            p, sz = a[idx[0]], a[idx[1]]
            w("    uint64_t t0 = rh_now();")
            w("    %s r = %s;" % (fn.ret, call))
            ok = "r != NULL" if role == "expand" else "r >= %s" % sz
            w("    if (%s)" % ok)
            w("        rh_record_realloc(%s, (void *)%s, (void *)%s, %s, t0, rh_now(), RH_FP());"
              % (kind, p, p, sz))
            w("    rh_hook_end();")
            w("    return r;")
        out.append("}")
        out.append("")
    return "\n".join(out)


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
    ap.add_argument("--size-t", type=int, default=8, choices=(4, 8),
                    help="the target's sizeof(size_t): 4 respells the C++ operators")
    args = ap.parse_args(argv)
    try:
        kinds, fns = parse_table(args.table)
        if args.size_t == 4:
            for fn in fns:
                fn.link = size_t_mangle(fn.sym)
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
    write_if_changed(os.path.join(args.out, "rh_family_gen.c"), gen_family_c(fns))
    for i in range(len(fns)):
        write_if_changed(os.path.join(args.out, "rh_weak_%03d.c" % i),
                         "/* " + HEADER_NOTE + " */\n#define RH_WEAK_ONLY %d\n"
                         "#include \"rh_weak_gen.c\"\n" % i)
    write_if_changed(os.path.join(args.out, "rheaper_wrap.flags"), gen_flags_txt(fns))
    write_if_changed(os.path.join(args.out, "rheaper_wrap_static.flags"),
                     "".join("-Wl,--wrap=%s\n" % fn.link for fn in fns
                             if not fn.flags & FLAG_DYNAMIC))
    write_if_changed(os.path.join(args.out, "rheaper_wrap_cxx.flags"),
                     "".join("-Wl,-u,%s\n" % fn.link for fn in fns if fn.flags & FLAG_CXX))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
