/* util/outpath.h — outputs that never destroy an input and never leave a partial file.
 *
 * Invariants (docs/refusals.md "Outputs"):
 * - An output is refused, in one line naming its flag, before anything is opened, when it is the
 *   same file (same st_dev and st_ino) as an input the command reads (trace files, the meta.json
 *   beside them, topology, scenario, cluster, job, model and GPU-table files, measurements), or
 *   lies inside an input trace folder. A multi-file output folder is also refused when it is the
 *   folder that holds an input trace's files.
 * - A single-file output is written to a temporary name beside the target (NAME.mitosis-XXXXXX)
 *   and renamed onto it only when every byte was written and the file closed: a failure leaves the
 *   old file or nothing. A target that is not a regular file (/dev/null, /dev/full, a FIFO) is
 *   written in place, and its write errors are still reported.
 * - A multi-file output (mt_out_dir: --csv, --chakra, --kineto DIR) is written into a fresh
 *   staging folder inside DIR and moved into DIR only on success, after the files of the previous
 *   run of the same kind (listed in DIR/.mitosis-KIND, its manifest) are removed; files of our
 *   naming that no manifest lists are never removed: the run is refused instead. So DIR never
 *   mixes two runs, and a failure leaves DIR as it was.
 *
 * Cost: recording a folder reads its entries once (its files count as inputs: a link to one is
 * caught); a check is one stat plus one realpath; a commit is one rename.
 */
#ifndef MT_UTIL_OUTPATH_H
#define MT_UTIL_OUTPATH_H

#include <stdio.h>
#include <sys/types.h>

#include "util/err.h"

/* What a command reads, for the checks. */
enum { MT_OUT_FILE = 0, /* a file read (config, measurement, a trace's file): same inode refused */
       MT_OUT_TRACE = 1 /* a trace path: a folder (nothing written inside), or a trace's file (its folder
                         * refused as a multi-file output; its meta.json beside it counted as an input) */
};

typedef struct mt_out_input {
    dev_t dev;
    ino_t ino;
    int is_dir;
    char *real;   /* realpath of a folder input, or of a trace file's folder (NULL otherwise) */
    char *path;   /* as given, for messages */
} mt_out_input;

typedef struct mt_out_inputs {
    mt_out_input *v;
    int n, cap;
    int oom;
} mt_out_inputs;

void mt_out_inputs_init(mt_out_inputs *s);
void mt_out_inputs_free(mt_out_inputs *s);
/* Records `path` (NULL or a path that does not exist: nothing; a spec that is no file, such as
 * "fattree:k=8", does not exist). kind: MT_OUT_FILE or MT_OUT_TRACE. */
void mt_out_inputs_add(mt_out_inputs *s, const char *path, int kind);

/* A single-file output `path` given by `flag` (NULL: nothing to check): MT_EINVAL when it is an
 * input or inside an input folder. "-" (stdout) passes. */
mt_status mt_out_check_file(const mt_out_inputs *s, const char *flag, const char *path, mt_error *err);
/* A multi-file output folder: MT_EINVAL when it is or lies inside an input folder, is the folder of
 * an input trace's files, or is an input file. */
mt_status mt_out_check_dir(const mt_out_inputs *s, const char *flag, const char *dir, mt_error *err);

/* An output a command was given: its flag, its path (NULL: not given), and whether it is a folder
 * of files. */
typedef struct mt_out_spec {
    const char *flag;
    const char *path;
    int is_dir;
} mt_out_spec;
/* mt_out_check_file / _dir on each, and two outputs naming the same path refused too. */
mt_status mt_out_check_all(const mt_out_inputs *s, const mt_out_spec *outs, int n, mt_error *err);

/* One single-file output being written. */
typedef struct mt_out_file {
    FILE *f;           /* write here */
    char path[4096];   /* the target */
    char tmp[4096];    /* the temporary beside it ("" when written in place) */
    const char *what;  /* names it in messages ("--html", "the timeline") */
} mt_out_file;

/* Opens a temporary beside `path` for writing ("w" text; binary is the same on POSIX). MT_EIO
 * naming `what` and the path when the folder is missing or not writable, or path is a folder. */
mt_status mt_out_open(mt_out_file *o, const char *path, const char *what, mt_error *err);
/* Checks, without creating anything, that mt_out_open will be able to write `path` (its folder
 * exists and is writable, it is not a folder): for failing before a long run. */
mt_status mt_out_probe(const char *path, const char *what, mt_error *err);
/* Finishes: with rc == MT_OK, flushes, checks every write, closes and renames onto the target
 * (MT_EIO naming it on any failure, and the temporary removed); with rc != MT_OK, removes the
 * temporary and returns rc. Safe on a zeroed or already finished struct. */
mt_status mt_out_close(mt_out_file *o, mt_status rc, mt_error *err);

/* One multi-file output folder being written. */
typedef struct mt_out_dir {
    char dir[4096];     /* the folder named */
    char stage[4096];   /* the staging folder inside it, where the writer writes */
    char kind[32];      /* manifest DIR/.mitosis-KIND */
    int created;        /* dir was made by mt_out_dir_open: removed again (when empty) on failure */
    const char *what;   /* names it in messages ("CSV directory", "--csv") */
} mt_out_dir;

/* Creates `dir` when missing (mt_prepare_out_dir), refuses it when it holds files matching
 * `globs` (fnmatch patterns of the names this writer writes) that its manifest does not list, and
 * makes the staging folder. After it, the writer writes into mt_out_dir_path(d). */
mt_status mt_out_dir_open(mt_out_dir *d, const char *dir, const char *kind, const char *what,
                          const char *const *globs, mt_error *err);
const char *mt_out_dir_path(const mt_out_dir *d);
/* With rc == MT_OK: removes the previous run's listed files, moves the staged files into dir,
 * writes the manifest; else (or on a failure doing so) empties and removes the staging folder and
 * returns the error. Safe on a finished or zeroed struct. */
mt_status mt_out_dir_close(mt_out_dir *d, mt_status rc, mt_error *err);

/* Flushes and checks stdout (call once, at exit): MT_EIO "cannot write the output to stdout: ..."
 * when any earlier write to it failed or the flush fails (a full disk, /dev/full, a closed pipe). */
mt_status mt_out_stdout_close(mt_error *err);

#endif
