/* util/flags.c — see flags.h. */
#include "util/flags.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/units.h"

/* ---- storing one value ------------------------------------------------------------------ */

/* A number as people write it: integers without an exponent. */
static void num_text(double v, char *buf, size_t len) {
    if (v == floor(v) && fabs(v) < 1e16) snprintf(buf, len, "%.0f", v);
    else snprintf(buf, len, "%g", v);
}

/* " in 1..64", " > 0", " up to 1000000", " in [0.5, 2]" for messages. */
static void range_text(const mt_flag *f, int integer, char *buf, size_t len) {
    char lo[32], hi[32];
    num_text(f->lo, lo, sizeof lo);
    num_text(f->hi, hi, sizeof hi);
    if (integer) snprintf(buf, len, " in %s..%s", lo, hi);
    else if (f->lo_open && f->lo == 0) snprintf(buf, len, "%s%s", f->hi > 0 ? " up to " : "", f->hi > 0 ? hi : "");
    else if (f->hi > 0) snprintf(buf, len, " in %s%s, %s]", f->lo_open ? "(" : "[", lo, hi);
    else snprintf(buf, len, " %s %s", f->lo_open ? ">" : ">=", lo);
}

static int in_range(const mt_flag *f, double v) {
    if (f->lo_open ? !(v > f->lo) : !(v >= f->lo)) return 0;
    return !(f->hi > 0 && v > f->hi);
}

/* What a value of this kind looks like, for messages ("a positive ..." when it must be > 0). */
static const char *example(const mt_flag *f) {
    int pos = f->lo_open && f->lo == 0;
    switch (f->kind) {
    case MT_FLAG_BYTES: return pos ? "a positive size such as 25MiB or 80GB" : "a size such as 25MiB or 80GB";
    case MT_FLAG_BANDWIDTH: return "a bandwidth with its unit, such as 300GB/s or 400Gbps";
    case MT_FLAG_TIME: return "a time such as 500ns, 2us or 20ms";
    default: return pos ? "a positive number" : "a number";
    }
}

static mt_status store_int(const mt_flag *f, void *dst, const char *v, mt_error *err) {
    char *end = NULL, r[80];
    errno = 0;
    long long n = strtoll(v, &end, 10);
    range_text(f, 1, r, sizeof r);
    if (!*v || *end || errno || !in_range(f, (double)n))
        return mt_fail(err, MT_EINVAL, "%s needs an integer%s (got '%s')", f->name, r, v);
    if (f->kind == MT_FLAG_INT) *(int32_t *)dst = (int32_t)n;
    else *(int64_t *)dst = (int64_t)n;
    return MT_OK;
}

/* A bandwidth without a unit: "--link-bw 100 has no unit: write 100GB/s or 800Gbps (100B/s for
 * bytes per second)". MT_OK when v has a unit (or is no number at all). */
static mt_status bandwidth_unit(const mt_flag *f, const char *v, mt_error *err) {
    int bare = 0;
    double x;
    char hint[160];
    if (mt_parse_bandwidth_Bps(v, &x, &bare, NULL) != MT_OK || !bare) return MT_OK;
    return mt_fail(err, MT_EINVAL, "%s %s has no unit: %s", f->name, v, mt_bandwidth_unit_hint(v, hint, sizeof hint));
}

/* A size without a unit above 0 and under 1 KiB is a unit left out (--gpu-mem 80 would be 80 bytes),
 * refused; a larger bare number is bytes (a program passing 80e9); 0 is the range's to refuse. */
static mt_status bytes_unit(const mt_flag *f, const char *v, mt_error *err) {
    double x;
    size_t n = strlen(v);
    if (mt_parse_bytes(v, &x, NULL) != MT_OK || !n || !(isdigit((unsigned char)v[n - 1]) || v[n - 1] == '.') ||
        !(x > 0 && x < 1024))
        return MT_OK;
    return mt_fail(err, MT_EINVAL, "%s %s has no unit, so it is %s byte%s: give one, such as %sGB or %sMiB", f->name,
                   v, v, x == 1 ? "" : "s", v, v);
}

static mt_status store_real(const mt_flag *f, void *dst, const char *v, mt_error *err) {
    double x = 0;
    mt_status rc = MT_OK;
    if (f->kind == MT_FLAG_BANDWIDTH) MT_CHECK(bandwidth_unit(f, v, err));
    if (f->kind == MT_FLAG_BYTES) MT_CHECK(bytes_unit(f, v, err));
    if (f->kind == MT_FLAG_BYTES) rc = mt_parse_bytes(v, &x, NULL);
    else if (f->kind == MT_FLAG_BANDWIDTH) rc = mt_parse_bandwidth(v, &x, NULL);
    else if (f->kind == MT_FLAG_TIME) rc = mt_parse_time_ns(v, &x, NULL);
    else {
        char *end = NULL;
        x = strtod(v, &end);
        if (!*v || *end || !isfinite(x)) rc = MT_EINVAL;
    }
    char r[80];
    range_text(f, 0, r, sizeof r);
    if (rc != MT_OK || !in_range(f, x))
        return mt_fail(err, MT_EINVAL, "%s needs %s%s (got '%s')", f->name, example(f), r, v);
    *(double *)dst = x;
    return MT_OK;
}

/* Index of word v in "a|b|c", or -1. */
static int choice_index(const char *choices, const char *v) {
    int i = 0;
    size_t n = strlen(v);
    for (const char *p = choices; p && *p; i++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == n && !strncmp(p, v, n)) return i;
        p = bar ? bar + 1 : NULL;
    }
    return -1;
}

/* "a|b|c" as "a, b or c". */
static void choice_words(const char *choices, char *buf, size_t len) {
    size_t at = 0;
    int n = 1;
    for (const char *p = choices; *p; p++) n += *p == '|';
    int k = 0;
    for (const char *p = choices; *p && at + 4 < len; p++) {
        if (*p != '|') {
            buf[at++] = *p;
            continue;
        }
        k++;
        const char *sep = k == n - 1 ? " or " : ", ";
        at += (size_t)snprintf(buf + at, len - at, "%s", sep);
    }
    buf[at < len ? at : len - 1] = '\0';
}

mt_status mt_flag_store(const mt_flag *f, void *base, const char *v, mt_error *err) {
    void *dst = (char *)base + f->offset;
    if (f->kind == MT_FLAG_SWITCH) {
        *(int *)dst = 1;
        return MT_OK;
    }
    if (f->kind == MT_FLAG_CALL) return f->call(base, v, err);
    if (!v || !*v) return mt_fail(err, MT_EINVAL, "%s needs a value (%s)", f->name, f->metavar ? f->metavar : "");
    switch (f->kind) {
    case MT_FLAG_INT:
    case MT_FLAG_INT64: return store_int(f, dst, v, err);
    case MT_FLAG_STRING: *(const char **)dst = v; return MT_OK;
    case MT_FLAG_CHOICE: {
        int k = choice_index(f->choices, v);
        if (k < 0) {
            char words[256];
            choice_words(f->choices, words, sizeof words);
            return mt_fail(err, MT_EINVAL, "%s needs %s (got '%s')", f->name, words, v);
        }
        *(int *)dst = k;
        return MT_OK;
    }
    default: return store_real(f, dst, v, err);
    }
}

/* ---- parsing argv ----------------------------------------------------------------------- */

const mt_flag *mt_flag_find(const mt_flag_table *t, const char *name) {
    for (int32_t i = 0; t && i < t->n; i++)
        if (!strcmp(t->flags[i].name, name)) return &t->flags[i];
    return NULL;
}

/* Finds `name` in the bound tables; *base gets the struct it writes into. */
static const mt_flag *lookup(const mt_flag_bind *binds, int n, const char *name, void **base) {
    for (int b = 0; b < n; b++) {
        const mt_flag *f = mt_flag_find(binds[b].table, name);
        if (f) {
            *base = binds[b].base;
            return f;
        }
    }
    return NULL;
}

static mt_status check_unique(const mt_flag_bind *binds, int n, mt_error *err) {
    for (int b = 0; b < n; b++)
        for (int32_t i = 0; i < binds[b].table->n; i++) {
            const char *name = binds[b].table->flags[i].name;
            for (int c = b; c < n; c++)
                for (int32_t j = c == b ? i + 1 : 0; j < binds[c].table->n; j++)
                    if (!strcmp(name, binds[c].table->flags[j].name))
                        return mt_fail(err, MT_EINTERNAL, "flag %s is declared twice", name);
        }
    return MT_OK;
}

static int was_seen(const mt_flag_seen *s, const mt_flag *f) {
    for (int32_t i = 0; i < s->n; i++)
        if (s->flag[i] == f) return 1;
    return 0;
}

/* One flag at argv[*i] (already known to be a flag): looks it up, takes its value, stores. */
static mt_status take_flag(int argc, char **argv, int *i, const mt_flag_bind *binds, int n_binds, const char *cmd,
                           mt_flag_seen *seen, mt_error *err) {
    char name[128];
    const char *arg = argv[*i], *eq = strchr(arg, '='), *v = NULL;
    size_t nlen = eq && arg[1] == '-' ? (size_t)(eq - arg) : strlen(arg);
    if (nlen >= sizeof name) nlen = sizeof name - 1;
    memcpy(name, arg, nlen);
    name[nlen] = '\0';
    void *base = NULL;
    const mt_flag *f = lookup(binds, n_binds, name, &base);
    if (!f) return mt_fail(err, MT_EINVAL, "unknown option '%s' (see mitosis %s --help)", name, cmd);
    if (f->metavar) {
        if (eq && arg[1] == '-') v = eq + 1;
        else if (*i + 1 < argc) v = argv[++*i];
        else return mt_fail(err, MT_EINVAL, "%s needs a value (%s)", f->name, f->metavar);
    } else if (eq && arg[1] == '-') {
        return mt_fail(err, MT_EINVAL, "%s takes no value (got '%s')", f->name, arg);
    }
    (*i)++;
    if (!f->repeat && was_seen(seen, f))
        return mt_fail(err, MT_EINVAL, "%s is given twice (give it once)", f->name);
    if (seen->n >= MT_FLAG_SEEN_MAX) return mt_fail(err, MT_EINVAL, "too many options (at most %d)", MT_FLAG_SEEN_MAX);
    MT_CHECK(mt_flag_store(f, base, v, err));
    seen->flag[seen->n] = f;
    seen->value[seen->n++] = v;
    return MT_OK;
}

mt_status mt_flags_parse(int argc, char **argv, int first, const mt_flag_bind *binds, int n_binds,
                         mt_flag_positional_fn pos, void *pos_ctx, const char *cmd, mt_flag_seen *seen,
                         mt_error *err) {
    mt_flag_seen local;
    if (!seen) seen = &local;
    memset(seen, 0, sizeof *seen);
    MT_CHECK(check_unique(binds, n_binds, err));
    int flags_done = 0;
    for (int i = first; i < argc;) {
        const char *a = argv[i];
        int is_flag = !flags_done && a[0] == '-' && a[1];
        if (is_flag && !strcmp(a, "--")) {
            flags_done = 1, i++;
            continue;
        }
        if (is_flag && (!strcmp(a, "--help") || !strcmp(a, "-h"))) {
            seen->help = 1;
            return MT_OK;
        }
        if (is_flag) {
            MT_CHECK(take_flag(argc, argv, &i, binds, n_binds, cmd, seen, err));
            continue;
        }
        if (!pos) return mt_fail(err, MT_EINVAL, "unexpected argument '%s' (see mitosis %s --help)", a, cmd);
        MT_CHECK(pos(pos_ctx, a, err));
        i++;
    }
    return MT_OK;
}

int mt_flag_given(const mt_flag_seen *seen, const char *name) {
    for (int32_t i = 0; seen && i < seen->n; i++)
        if (!strcmp(seen->flag[i]->name, name)) return 1;
    return 0;
}

const mt_flag *mt_flag_given_from(const mt_flag_seen *seen, const mt_flag_table *t) {
    for (int32_t i = 0; seen && i < seen->n; i++)
        if (seen->flag[i] >= t->flags && seen->flag[i] < t->flags + t->n) return seen->flag[i];
    return NULL;
}

/* ---- printers ----------------------------------------------------------------------------- */

enum { HELP_COL = 24, HELP_WIDTH = 96 };

/* Prints text wrapped at HELP_WIDTH, continuation lines indented to col; the first line
 * starts at column `at`. */
static void wrap(FILE *out, const char *text, int at, int col) {
    const char *p = text;
    while (*p) {
        while (*p == ' ') p++;
        const char *w = p;
        while (*p && *p != ' ') p++;
        int len = (int)(p - w);
        if (at > col && at + 1 + len > HELP_WIDTH) {
            fprintf(out, "\n%*s", col, "");
            at = col;
        } else if (at > col) {
            fputc(' ', out);
            at++;
        }
        fprintf(out, "%.*s", len, w);
        at += len;
    }
    fputc('\n', out);
}

void mt_flags_help(FILE *out, const mt_flag_table *t) {
    if (t->section) fprintf(out, "%s:\n", t->section);
    for (int32_t i = 0; i < t->n; i++) {
        const mt_flag *f = &t->flags[i];
        char head[96];
        int n = snprintf(head, sizeof head, "  %s%s%s", f->name, f->metavar ? " " : "", f->metavar ? f->metavar : "");
        fputs(head, out);
        if (n + 2 > HELP_COL) {
            fprintf(out, "\n%*s", HELP_COL, "");
            n = HELP_COL;
        } else {
            fprintf(out, "%*s", HELP_COL - n, "");
            n = HELP_COL;
        }
        wrap(out, f->help ? f->help : "", n, HELP_COL);
    }
    fputc('\n', out);
}

void mt_flags_troff(FILE *out, const char *s) {
    if (*s == '.' || *s == '\'') fputs("\\&", out);
    for (; *s; s++) {
        if (*s == '\\') fputs("\\\\", out);
        else if (*s == '-') fputs("\\-", out);
        else fputc(*s, out);
    }
}

void mt_flags_man(FILE *out, const mt_flag_table *t) {
    if (t->section) {
        fputs(".SS ", out);
        mt_flags_troff(out, t->section);
        fputc('\n', out);
    }
    for (int32_t i = 0; i < t->n; i++) {
        const mt_flag *f = &t->flags[i];
        fputs(".TP\n\\fB", out);
        mt_flags_troff(out, f->name);
        fputs("\\fR", out);
        if (f->metavar) {
            fputs(" \\fI", out);
            mt_flags_troff(out, f->metavar);
            fputs("\\fR", out);
        }
        fputc('\n', out);
        mt_flags_troff(out, f->help ? f->help : "");
        fputc('\n', out);
    }
}

void mt_flags_words(FILE *out, const mt_flag_table *t) {
    for (int32_t i = 0; i < t->n; i++) fprintf(out, " %s", t->flags[i].name);
}

void mt_flags_complete_values(FILE *out, const mt_flag_table *t) {
    for (int32_t i = 0; i < t->n; i++) {
        const mt_flag *f = &t->flags[i];
        if (!f->metavar) continue;
        if (f->choices) {
            fprintf(out, "        %s) COMPREPLY=($(compgen -W \"", f->name);
            for (const char *c = f->choices; *c; c++) fputc(*c == '|' ? ' ' : *c, out);
            fprintf(out, "\" -- \"$cur\")); return ;;\n");
        } else if (f->complete && !strcmp(f->complete, "file")) {
            fprintf(out, "        %s) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", f->name);
        } else if (f->complete && !strcmp(f->complete, "dir")) {
            fprintf(out, "        %s) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n", f->name);
        } else {
            fprintf(out, "        %s) return ;;\n", f->name);
        }
    }
}
