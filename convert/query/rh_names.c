/* rh_names.c: shortening C++ names for the tables and titles a person reads.
 *
 * One scan of the demangled name: an outermost `<` opens a template argument
 * list and an outermost `(` a parameter list (or a lambda's); each is found
 * up to its matching bracket and written as `<…>` or `(…)`. Brackets that are
 * part of a name stay: `(anonymous namespace)` and the tokens after the
 * keyword `operator` (`operator<<`, `operator()`, `operator->*`, ...). The
 * full name is never lost: callers keep it beside the short one (rh_names.h).
 */
#include "rh_names.h"

#include <string.h>

/* The output cursor: writes never pass the end and stop at a UTF-8
 * character boundary, so a cut name is still valid text. */
struct rh_nbuf {
    char *out;
    size_t n, len;
    int full; /* set once something did not fit: nothing more is written */
};

static void nb_put(struct rh_nbuf *b, const char *s, size_t k)
{
    if (b->full)
        return;
    if (b->len + k + 1 > b->n) {
        size_t room = b->n - 1 - b->len;
        /* back off to the start of a UTF-8 character */
        while (room > 0 && (((unsigned char)s[room]) & 0xC0) == 0x80)
            room--;
        memcpy(b->out + b->len, s, room);
        b->len += room;
        b->full = 1;
        return;
    }
    memcpy(b->out + b->len, s, k);
    b->len += k;
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

/* The length of the operator token at s (just past the keyword `operator`):
 * `()`, `[]`, or a run of operator characters (`<<=`, `->*`, `,`). 0 for a
 * conversion operator or `operator new`, whose name goes on as usual. */
static size_t op_token(const char *s)
{
    if (s[0] == '(' && s[1] == ')')
        return 2;
    if (s[0] == '[' && s[1] == ']')
        return 2;
    size_t k = 0;
    while (s[k] && strchr("<>=!+-*/%^&|~,", s[k]))
        k++;
    return k;
}

/* 1 when the keyword `operator` starts at full+i (a whole word). */
static int at_operator(const char *full, size_t i)
{
    if (strncmp(full + i, "operator", 8) != 0)
        return 0;
    if (i > 0 && is_ident(full[i - 1]))
        return 0;
    return !is_ident(full[i + 8]);
}

/* The index of the bracket that closes the one at full+i (`<` or `(`), or
 * (size_t)-1 when it is not closed. Inside a template list parentheses nest
 * on their own (`enable_if<(N>0)>`); inside a parameter list only
 * parentheses count (`f(std::vector<int>)` holds a `>` of its own). */
static size_t match_close(const char *full, size_t i)
{
    char open = full[i];
    int angle = 0, paren = 0;
    for (size_t j = i; full[j]; j++) {
        char c = full[j];
        if (j > i && at_operator(full, j)) {
            /* `operator()` or `operator<` inside keeps its brackets out of
             * the count; the loop's j++ steps past the last of them */
            j += 8 + op_token(full + j + 8) - 1;
            continue;
        }
        if (c == '(') {
            paren++;
        } else if (c == ')') {
            if (--paren < 0)
                return (size_t)-1;
            if (open == '(' && paren == 0)
                return j;
        } else if (open == '<' && paren == 0) {
            if (c == '<')
                angle++;
            else if (c == '>' && --angle == 0)
                return j;
        }
    }
    return (size_t)-1;
}

size_t rh_name_short(const char *full, char *out, size_t n)
{
    struct rh_nbuf b = {out, n, 0, 0};
    if (!out || n == 0)
        return 0;
    if (!full)
        full = "";
    size_t i = 0;
    while (full[i] && !b.full) {
        char c = full[i];
        if (at_operator(full, i)) {
            size_t t = op_token(full + i + 8);
            nb_put(&b, full + i, 8 + t);
            i += 8 + t;
            continue;
        }
        if (c == '(' && strncmp(full + i, "(anonymous namespace)", 21) == 0) {
            nb_put(&b, full + i, 21);
            i += 21;
            continue;
        }
        if (c == '<' || c == '(') {
            size_t close = match_close(full, i);
            if (close == (size_t)-1) {
                nb_put(&b, full + i, strlen(full + i)); /* unbalanced: as it is */
                break;
            }
            if (close == i + 1) {
                nb_put(&b, full + i, 2); /* `<>`, `()` */
            } else {
                nb_put(&b, full + i, 1);
                nb_put(&b, RH_NAME_ELLIPSIS, 3);
                nb_put(&b, full + close, 1);
            }
            i = close + 1;
            continue;
        }
        /* a whole UTF-8 character at once, so a cut never splits one */
        size_t k = 1;
        if (((unsigned char)c & 0xC0) == 0xC0)
            while (k < 4 && (((unsigned char)full[i + k]) & 0xC0) == 0x80)
                k++;
        nb_put(&b, full + i, k);
        i += k;
    }
    out[b.len] = '\0';
    return b.len;
}

int rh_name_shortens(const char *full)
{
    char buf[4096];
    if (!full)
        return 0;
    size_t k = rh_name_short(full, buf, sizeof buf);
    /* a name cut at the buffer's end counts by the part that fit */
    return strncmp(buf, full, k) != 0 || (k + 8 < sizeof buf && full[k] != '\0');
}
