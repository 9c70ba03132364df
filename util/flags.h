/* util/flags.h — declarative command-line flags: one table entry per flag (its name, the kind of
 * value it takes, where the value goes, one help paragraph). Parsing, `--help`, the man page and
 * the bash completion are all generated from the same tables, so they cannot drift apart.
 *
 * A table describes the flags of one struct: each entry writes at `offset` into the struct
 * that the caller binds to the table (mt_flag_bind). A command parses its argv against several
 * bound tables at once (its own flags, the plan's, the network's, each network model's), and
 * gets back which flags were given (mt_flag_seen), so that it can refuse a flag that does not
 * apply to what was chosen ("--ports applies to --network photonic only") instead of ignoring
 * it.
 *
 * Invariants: flag names are unique across the tables bound for one parse (checked, MT_EINTERNAL
 * otherwise); a value is parsed and range-checked before it is stored, so on error the
 * destination is unchanged; every error is one line naming the flag, the value and what is
 * accepted. Arguments that are not flags (not starting with '-', or "-" alone) are positional
 * and go to the caller's callback; "--" ends the flags. "--help" and "-h" are built in.
 * Costs: parsing O(args x flags); the printers O(flags).
 */
#ifndef MT_UTIL_FLAGS_H
#define MT_UTIL_FLAGS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/err.h"

typedef enum {
    MT_FLAG_SWITCH = 0, /* no value: stores int 1 */
    MT_FLAG_INT,        /* int32_t in [lo, hi] */
    MT_FLAG_INT64,      /* int64_t in [lo, hi] */
    MT_FLAG_DOUBLE,     /* double in [lo, hi] (lo excluded when lo_open) */
    MT_FLAG_BYTES,      /* double bytes; units as util/units.h mt_parse_bytes; range as DOUBLE */
    MT_FLAG_BANDWIDTH,  /* double bytes/s; mt_parse_bandwidth; range as DOUBLE */
    MT_FLAG_TIME,       /* double ns; mt_parse_time_ns; range as DOUBLE */
    MT_FLAG_STRING,     /* const char *, pointing into argv (non-empty) */
    MT_FLAG_CHOICE,     /* int: the index of the value in `choices` ("ring|tree|direct") */
    MT_FLAG_CALL        /* call(base, value, err) stores it (lists, compound values, repeats) */
} mt_flag_kind;

/* MT_FLAG_CALL: parses `value` (NULL for a switch-like call flag without metavar) into the
 * struct at `base`. Returns MT_OK or a one-line error. */
typedef mt_status (*mt_flag_call_fn)(void *base, const char *value, mt_error *err);

typedef struct mt_flag {
    const char *name;       /* "--link-bw" */
    mt_flag_kind kind;
    size_t offset;          /* of the destination in the bound struct (unused by CALL) */
    const char *metavar;    /* "BW"; NULL: the flag takes no value (SWITCH, or a CALL switch) */
    const char *help;       /* one paragraph: what it does, its default; wrapped when printed */
    double lo, hi;          /* INT, INT64, DOUBLE, BYTES, BANDWIDTH, TIME: accepted range (hi 0:
                               none) */
    int lo_open;            /* 1: lo itself is refused (a factor > 0) */
    const char *choices;    /* CHOICE: the accepted words, '|'-separated (other kinds: only
                               for completion) */
    mt_flag_call_fn call;   /* CALL */
    int repeat;             /* 1: may be given more than once (else a repeat is an error) */
    const char *complete;   /* how a shell completes the value: "file", "dir", or NULL
                               (the choices for CHOICE, nothing otherwise) */
} mt_flag;

typedef struct mt_flag_table {
    const char *section;    /* heading in --help and the man page ("Network options") */
    const mt_flag *flags;
    int32_t n;
} mt_flag_table;

#define MT_FLAG_TABLE(section, array) {(section), (array), (int32_t)(sizeof(array) / sizeof((array)[0]))}

/* A table and the struct its entries write into. */
typedef struct mt_flag_bind {
    const mt_flag_table *table;
    void *base;
} mt_flag_bind;

enum { MT_FLAG_SEEN_MAX = 256 };

/* What one parse found: the flags given (in argv order, a repeated flag once per use) and
 * whether --help was asked for. */
typedef struct mt_flag_seen {
    const mt_flag *flag[MT_FLAG_SEEN_MAX];
    const char *value[MT_FLAG_SEEN_MAX];
    int32_t n;
    int help;
} mt_flag_seen;

/* Called for each positional argument; returns MT_OK or a one-line error. */
typedef mt_status (*mt_flag_positional_fn)(void *ctx, const char *arg, mt_error *err);

/* Parses argv[first .. argc) against the bound tables. Positional arguments go to pos (NULL:
 * refused, "unexpected argument 'x'"). An unknown flag is refused naming it and `cmd`
 * ("see mitosis CMD --help"). On --help, stops and sets seen->help. seen may be NULL. */
mt_status mt_flags_parse(int argc, char **argv, int first, const mt_flag_bind *binds, int n_binds,
                         mt_flag_positional_fn pos, void *pos_ctx, const char *cmd,
                         mt_flag_seen *seen, mt_error *err);

/* Stores one flag's value into base (what mt_flags_parse does per flag). */
mt_status mt_flag_store(const mt_flag *f, void *base, const char *value, mt_error *err);

/* 1 when the flag named `name` was given (seen may be NULL: 0). */
int mt_flag_given(const mt_flag_seen *seen, const char *name);
/* The first given flag that belongs to table t, or NULL. */
const mt_flag *mt_flag_given_from(const mt_flag_seen *seen, const mt_flag_table *t);

/* Finds a flag by name in a table, or NULL. */
const mt_flag *mt_flag_find(const mt_flag_table *t, const char *name);

/* "  --link-bw BW          help wrapped to the terminal-friendly width" for every flag. */
void mt_flags_help(FILE *out, const mt_flag_table *t);
/* text as troff: backslashes doubled, a leading '.' or '\'' escaped, '-' as \-. */
void mt_flags_troff(FILE *out, const char *text);
/* The table as man-page (troff -man) text: ".SS section" then ".TP" per flag. */
void mt_flags_man(FILE *out, const mt_flag_table *t);
/* The flag names of the table separated by spaces (for a completion word list). */
void mt_flags_words(FILE *out, const mt_flag_table *t);
/* bash `case` arms completing each value-taking flag's value: choices, files or directories. */
void mt_flags_complete_values(FILE *out, const mt_flag_table *t);

#endif
