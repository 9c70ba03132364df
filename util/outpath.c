/* util/outpath.c — see outpath.h. */
#define _XOPEN_SOURCE 700 /* realpath, mkdtemp */
#include "util/outpath.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"

/* ---- the inputs --------------------------------------------------------------------------- */

void mt_out_inputs_init(mt_out_inputs *s) { memset(s, 0, sizeof *s); }

void mt_out_inputs_free(mt_out_inputs *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i].real), free(s->v[i].path);
    free(s->v);
    memset(s, 0, sizeof *s);
}

/* The folder part of path ("." when none), into buf. */
static const char *folder_of(const char *path, char *buf, size_t len) {
    const char *slash = strrchr(path, '/');
    if (!slash) return snprintf(buf, len, "."), buf;
    if (slash == path) return snprintf(buf, len, "/"), buf;
    snprintf(buf, len, "%.*s", (int)(slash - path), path);
    return buf;
}

static void add_one(mt_out_inputs *s, const char *path, const struct stat *st, char *real) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 16;
        mt_out_input *v = realloc(s->v, (size_t)cap * sizeof *v);
        if (!v) {
            s->oom = 1;
            free(real);
            return;
        }
        s->v = v, s->cap = cap;
    }
    mt_out_input *in = &s->v[s->n++];
    in->dev = st->st_dev;
    in->ino = st->st_ino;
    in->is_dir = S_ISDIR(st->st_mode);
    in->real = real;
    in->path = strdup(path);
}

void mt_out_inputs_add(mt_out_inputs *s, const char *path, int kind) {
    struct stat st;
    if (!path || !*path || stat(path, &st) != 0) return;
    char dir[4096];
    if (S_ISDIR(st.st_mode)) {
        add_one(s, path, &st, realpath(path, NULL));
        /* its files too, so that a link to one of them elsewhere is still that input */
        DIR *d = opendir(path);
        struct dirent *de;
        char p[8400];
        for (int n = 0; d && n < 4096 && (de = readdir(d)); n++) {
            snprintf(p, sizeof p, "%s/%s", path, de->d_name);
            struct stat fs;
            if (de->d_name[0] != '.' && stat(p, &fs) == 0 && S_ISREG(fs.st_mode)) add_one(s, p, &fs, NULL);
        }
        if (d) closedir(d);
        return;
    }
    add_one(s, path, &st, kind == MT_OUT_TRACE ? realpath(folder_of(path, dir, sizeof dir), NULL) : NULL);
    if (kind == MT_OUT_TRACE) { /* the measured step beside it is read too (tracer/meta.h) */
        char meta[4200];
        snprintf(meta, sizeof meta, "%s/meta.json", folder_of(path, dir, sizeof dir));
        if (stat(meta, &st) == 0 && !S_ISDIR(st.st_mode)) add_one(s, meta, &st, NULL);
    }
}

/* 1 when the real path `child` is `parent` or lies under it. */
static int is_under(const char *child, const char *parent) {
    size_t n = strlen(parent);
    if (n == 1 && parent[0] == '/') return 1;
    return strncmp(child, parent, n) == 0 && (child[n] == '/' || child[n] == '\0');
}

static const mt_out_input *same_file(const mt_out_inputs *s, const struct stat *st) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i].dev == st->st_dev && s->v[i].ino == st->st_ino) return &s->v[i];
    return NULL;
}

/* The input folder that real path `real` lies in, NULL when none. */
static const mt_out_input *inside_folder(const mt_out_inputs *s, const char *real) {
    for (int i = 0; i < s->n; i++)
        if (s->v[i].is_dir && s->v[i].real && is_under(real, s->v[i].real)) return &s->v[i];
    return NULL;
}

static mt_status refuse_same(const char *flag, const char *path, const mt_out_input *in, mt_error *err) {
    return mt_fail(err, MT_EINVAL, "%s '%s' is the input %s: an output never overwrites what is read (name "
                   "another path)", flag, path, in->path);
}

static mt_status refuse_inside(const char *flag, const char *path, const mt_out_input *in, mt_error *err) {
    return mt_fail(err, MT_EINVAL, "%s '%s' is or lies inside the input trace folder %s: outputs are never "
                   "written into an input (name a path outside it)", flag, path, in->path);
}

mt_status mt_out_check_file(const mt_out_inputs *s, const char *flag, const char *path, mt_error *err) {
    if (!path || !strcmp(path, "-")) return MT_OK;
    if (s->oom) return mt_fail(err, MT_ENOMEM, "out of memory");
    struct stat st;
    const mt_out_input *in;
    if (stat(path, &st) == 0 && (in = same_file(s, &st))) return refuse_same(flag, path, in, err);
    char dir[4096];
    char *real = realpath(folder_of(path, dir, sizeof dir), NULL); /* missing: the open says so */
    in = real ? inside_folder(s, real) : NULL;
    free(real);
    return in ? refuse_inside(flag, path, in, err) : MT_OK;
}

mt_status mt_out_check_dir(const mt_out_inputs *s, const char *flag, const char *dir, mt_error *err) {
    if (!dir) return MT_OK;
    if (s->oom) return mt_fail(err, MT_ENOMEM, "out of memory");
    struct stat st;
    const mt_out_input *in;
    if (stat(dir, &st) == 0 && (in = same_file(s, &st)) && !in->is_dir) return refuse_same(flag, dir, in, err);
    /* the folder, or the nearest existing folder above it (what is missing is made inside that) */
    char probe[4096];
    snprintf(probe, sizeof probe, "%s", dir);
    char *real = NULL;
    int exists = 1;
    for (;;) {
        if ((real = realpath(probe, NULL))) break;
        exists = 0;
        char up[4096];
        folder_of(probe, up, sizeof up);
        if (!strcmp(up, probe)) break;
        memcpy(probe, up, sizeof probe);
    }
    if (!real) return MT_OK;
    in = inside_folder(s, real);
    if (!in && exists)
        for (int i = 0; i < s->n && !in; i++)
            if (!s->v[i].is_dir && s->v[i].real && !strcmp(s->v[i].real, real)) in = &s->v[i];
    free(real);
    if (!in) return MT_OK;
    if (!in->is_dir)
        return mt_fail(err, MT_EINVAL, "%s '%s' is the folder of the input trace %s: its files would be read as "
                       "part of that trace next time (name another folder)", flag, dir, in->path);
    return refuse_inside(flag, dir, in, err);
}

mt_status mt_out_check_all(const mt_out_inputs *s, const mt_out_spec *outs, int n, mt_error *err) {
    for (int i = 0; i < n; i++) {
        if (!outs[i].path) continue;
        MT_CHECK(outs[i].is_dir ? mt_out_check_dir(s, outs[i].flag, outs[i].path, err)
                                : mt_out_check_file(s, outs[i].flag, outs[i].path, err));
        for (int k = 0; k < i; k++)
            if (outs[k].path && !outs[k].is_dir && !outs[i].is_dir && strcmp(outs[i].path, "-") &&
                !strcmp(outs[k].path, outs[i].path))
                return mt_fail(err, MT_EINVAL, "%s and %s both name '%s': one would overwrite the other (name two "
                               "files)", outs[k].flag, outs[i].flag, outs[i].path);
    }
    return MT_OK;
}

/* "--dot: cannot write" for a flag, "cannot write the model" for a thing (as the messages were). */
static const char *lead(const char *what, char *buf, size_t len) {
    snprintf(buf, len, what[0] == '-' ? "%s: cannot write" : "cannot write %s", what);
    return buf;
}
#define LEAD(w) lead((w), (char[96]){0}, 96)

/* ---- one file ----------------------------------------------------------------------------- */

static mt_status open_tmp(mt_out_file *o, mode_t mode, mt_error *err) {
    unsigned long seed = (unsigned long)getpid() ^ (unsigned long)(uintptr_t)o ^ (unsigned long)time(NULL);
    for (int k = 0; k < 100; k++) {
        seed = seed * 6364136223846793005UL + 1442695040888963407UL;
        int n = snprintf(o->tmp, sizeof o->tmp, "%s.mitosis-%06lx", o->path, (seed >> 20) & 0xffffff);
        if (n < 0 || n >= (int)sizeof o->tmp)
            return mt_fail(err, MT_EIO, "%s: the name '%s' is too long", o->what, o->path);
        int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) {
            int e = errno;
            o->tmp[0] = '\0';
            return mt_fail(err, MT_EIO, "%s '%s': %s (check the folder exists and is writable)",
                           LEAD(o->what), o->path, strerror(e));
        }
        if (mode != 0666) (void)fchmod(fd, mode); /* an existing file keeps its permissions */
        if (!(o->f = fdopen(fd, "w"))) {
            close(fd);
            unlink(o->tmp);
            o->tmp[0] = '\0';
            return mt_fail(err, MT_ENOMEM, "out of memory");
        }
        return MT_OK;
    }
    o->tmp[0] = '\0';
    return mt_fail(err, MT_EIO, "%s: cannot make a temporary file beside '%s'", o->what, o->path);
}

mt_status mt_out_open(mt_out_file *o, const char *path, const char *what, mt_error *err) {
    memset(o, 0, sizeof *o);
    o->what = what;
    struct stat st;
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode))
        return mt_fail(err, MT_EIO, "%s: '%s' is a folder (name a file)", what, path);
    if (exists && !S_ISREG(st.st_mode)) { /* a device or FIFO: written in place, checked at close */
        snprintf(o->path, sizeof o->path, "%s", path);
        if (!(o->f = fopen(path, "w")))
            return mt_fail(err, MT_EIO, "%s '%s': %s", LEAD(what), path, strerror(errno));
        return MT_OK;
    }
    char *real = exists ? realpath(path, NULL) : NULL; /* a link: its target is replaced, not the link */
    int n = snprintf(o->path, sizeof o->path, "%s", real ? real : path);
    free(real);
    if (n < 0 || n >= (int)sizeof o->path) return mt_fail(err, MT_EIO, "%s: the name '%s' is too long", what, path);
    return open_tmp(o, exists ? (st.st_mode & 07777) : 0666, err);
}

mt_status mt_out_probe(const char *path, const char *what, mt_error *err) {
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) return mt_fail(err, MT_EIO, "%s: '%s' is a folder (name a file)", what, path);
        if (!S_ISREG(st.st_mode)) return access(path, W_OK) == 0 ? MT_OK
            : mt_fail(err, MT_EIO, "%s '%s': %s", LEAD(what), path, strerror(errno));
    }
    char dir[4096];
    folder_of(path, dir, sizeof dir);
    if (!mt_is_dir(dir))
        return mt_fail(err, MT_EIO, "%s '%s': the folder %s does not exist (create it or name "
                       "another path)", LEAD(what), path, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return mt_fail(err, MT_EIO, "%s '%s': %s (choose a writable folder)", LEAD(what), path,
                       strerror(errno));
    return MT_OK;
}

mt_status mt_out_close(mt_out_file *o, mt_status rc, mt_error *err) {
    if (!o->f) return rc;
    errno = 0;
    int bad = fflush(o->f) != 0 || ferror(o->f);
    int e = errno;
    if (fclose(o->f) != 0 && !bad) bad = 1, e = errno;
    o->f = NULL;
    if (rc == MT_OK && bad)
        rc = mt_fail(err, MT_EIO, "%s '%s': %s (check the disk space or choose another path)",
                     LEAD(o->what), o->path, e ? strerror(e) : "write error");
    if (rc == MT_OK && o->tmp[0] && rename(o->tmp, o->path) != 0)
        rc = mt_fail(err, MT_EIO, "%s: cannot put '%s' in place: %s", o->what, o->path, strerror(errno));
    if (rc != MT_OK && o->tmp[0]) unlink(o->tmp);
    o->tmp[0] = '\0';
    return rc;
}

/* ---- a folder of files -------------------------------------------------------------------- */

/* The manifest's names, one per line, as one buffer of NUL-separated names (NULL: none). */
static char *manifest_read(const mt_out_dir *d, size_t *len) {
    char path[4200];
    snprintf(path, sizeof path, "%s/.mitosis-%s", d->dir, d->kind);
    struct stat st;
    *len = 0;
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 24)) return NULL;
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = malloc((size_t)st.st_size + 1);
    size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
    fclose(f);
    if (!buf) return NULL;
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        if (buf[i] == '\n') buf[i] = '\0';
    *len = n;
    return buf;
}

static int manifest_has(const char *m, size_t len, const char *name) {
    for (size_t i = 0; m && i < len; i += strlen(m + i) + 1)
        if (!strcmp(m + i, name)) return 1;
    return 0;
}

/* A name this writer may write: not hidden, not a path, matching a glob. */
static int ours(const char *name, const char *const *globs) {
    if (name[0] == '.') return 0;
    for (int k = 0; globs[k]; k++)
        if (fnmatch(globs[k], name, 0) == 0) return 1;
    return 0;
}

mt_status mt_out_dir_open(mt_out_dir *d, const char *dir, const char *kind, const char *what,
                          const char *const *globs, mt_error *err) {
    memset(d, 0, sizeof *d);
    d->what = what;
    snprintf(d->kind, sizeof d->kind, "%s", kind);
    int n = snprintf(d->dir, sizeof d->dir, "%s", dir);
    if (n < 0 || n + 40 >= (int)sizeof d->dir) return mt_fail(err, MT_EIO, "%s: the name '%s' is too long", what, dir);
    d->created = !mt_is_dir(dir);
    MT_CHECK(mt_prepare_out_dir(dir, what, err));
    size_t mlen;
    char *m = manifest_read(d, &mlen);
    DIR *dp = opendir(dir);
    if (!dp) {
        free(m);
        return mt_fail(err, MT_EIO, "%s: cannot read the folder '%s': %s", what, dir, strerror(errno));
    }
    struct dirent *de;
    char foreign[256] = "";
    while ((de = readdir(dp)))
        if (ours(de->d_name, globs) && !manifest_has(m, mlen, de->d_name)) {
            snprintf(foreign, sizeof foreign, "%s", de->d_name);
            break;
        }
    closedir(dp);
    free(m);
    if (foreign[0] && d->created) rmdir(dir);
    if (foreign[0])
        return mt_fail(err, MT_EINVAL, "%s '%s' holds %s, which no earlier run of mitosis recorded there "
                       "(.mitosis-%s): its files would mix with this run's (name an empty folder, or remove them)",
                       what, dir, foreign, kind);
    n = snprintf(d->stage, sizeof d->stage, "%s/.mitosis-stage-XXXXXX", dir);
    if (!mkdtemp(d->stage)) {
        int e = errno;
        d->stage[0] = '\0';
        return mt_fail(err, MT_EIO, "%s: cannot write into '%s': %s (choose a writable folder)", what, dir,
                       strerror(e));
    }
    return MT_OK;
}

const char *mt_out_dir_path(const mt_out_dir *d) { return d->stage; }

static void stage_remove(mt_out_dir *d) {
    DIR *dp = opendir(d->stage);
    struct dirent *de;
    char p[8400];
    while (dp && (de = readdir(dp)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
            snprintf(p, sizeof p, "%s/%s", d->stage, de->d_name);
            mt_remove_partial(p);
        }
    if (dp) closedir(dp);
    rmdir(d->stage);
    d->stage[0] = '\0';
}

static mt_status move_in(mt_out_dir *d, mt_error *err) {
    size_t mlen;
    char *m = manifest_read(d, &mlen);
    char p[8400], q[8400];
    for (size_t i = 0; m && i < mlen; i += strlen(m + i) + 1) { /* the previous run's files go */
        if (!m[i] || strchr(m + i, '/') || m[i] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", d->dir, m + i);
        mt_remove_partial(p);
    }
    free(m);
    mt_out_file man;
    char mpath[4200];
    snprintf(mpath, sizeof mpath, "%s/.mitosis-%s", d->dir, d->kind);
    MT_CHECK(mt_out_open(&man, mpath, d->what, err));
    DIR *dp = opendir(d->stage);
    struct dirent *de;
    mt_status rc = dp ? MT_OK : mt_fail(err, MT_EIO, "%s: cannot read '%s'", d->what, d->stage);
    while (rc == MT_OK && (de = readdir(dp))) {
        if (de->d_name[0] == '.') continue;
        snprintf(p, sizeof p, "%s/%s", d->stage, de->d_name);
        snprintf(q, sizeof q, "%s/%s", d->dir, de->d_name);
        if (rename(p, q) != 0)
            rc = mt_fail(err, MT_EIO, "%s: cannot put '%s' in place: %s", d->what, q, strerror(errno));
        else fprintf(man.f, "%s\n", de->d_name);
    }
    if (dp) closedir(dp);
    return mt_out_close(&man, rc, err);
}

/* A writer's message names its file in the staging folder: name it where it was going instead. */
static void unstage_message(const mt_out_dir *d, mt_error *err) {
    char *at = err ? strstr(err->msg, d->stage) : NULL;
    if (!at) return;
    char msg[3 * sizeof err->msg + sizeof d->dir];
    int n = snprintf(msg, sizeof msg, "%.*s%s%s", (int)(at - err->msg), err->msg, d->dir, at + strlen(d->stage));
    if (n > 0 && (size_t)n < sizeof err->msg) memcpy(err->msg, msg, (size_t)n + 1);
}

mt_status mt_out_dir_close(mt_out_dir *d, mt_status rc, mt_error *err) {
    if (!d->stage[0]) return rc;
    if (rc == MT_OK) rc = move_in(d, err);
    if (rc != MT_OK) unstage_message(d, err);
    stage_remove(d);
    if (rc != MT_OK && d->created) rmdir(d->dir); /* only when nothing else went in */
    return rc;
}

/* ---- stdout ------------------------------------------------------------------------------- */

mt_status mt_out_stdout_close(mt_error *err) {
    errno = 0;
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int e = errno;
    if (fclose(stdout) != 0 && !bad) bad = 1, e = errno;
    if (!bad) return MT_OK;
    return mt_fail(err, MT_EIO, "cannot write the output to stdout: %s (check the disk space or the pipe)",
                   e ? strerror(e) : "write error");
}
