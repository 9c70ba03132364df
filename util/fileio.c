/* util/fileio.c — see fileio.h. */
#include "util/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/budget.h"

int mt_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

void mt_remove_partial(const char *path) {
    struct stat st;
    if (path && lstat(path, &st) == 0 && S_ISREG(st.st_mode)) remove(path);
}

mt_status mt_prepare_out_dir(const char *dir, const char *what, mt_error *err) {
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) return mt_fail(err, MT_EIO, "bad %s name '%s'", what, dir);
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) { /* mkdir -p */
        if (path[i] != '/' && path[i] != '\0') continue;
        char c = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            return mt_fail(err, MT_EIO, "cannot create the %s '%s': %s (choose another directory)", what, path,
                           strerror(errno));
        path[i] = c;
    }
    if (!mt_is_dir(dir))
        return mt_fail(err, MT_EIO, "cannot create the %s '%s': a file of that name is in the way (name a "
                       "directory)", what, dir);
    if (access(dir, W_OK | X_OK) != 0)
        return mt_fail(err, MT_EIO, "cannot write into the %s '%s': %s (choose a writable directory)", what, dir,
                       strerror(errno));
    return MT_OK;
}

/* max: 0, any size; else only a regular file of at most max bytes. */
static mt_status read_raw(const char *path, size_t max, unsigned char **out, size_t *out_len, mt_error *err) {
    struct stat pre; /* a FIFO would block the open itself */
    if (max && stat(path, &pre) == 0 && !S_ISREG(pre.st_mode))
        return mt_fail(err, MT_EIO, "%s: not a regular file (name the file itself)", path);
    FILE *f = fopen(path, "rb");
    if (!f)
        return mt_fail(err, MT_EIO, "%s: cannot open: %s (check the path)", path,
                       strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || S_ISDIR(st.st_mode) || (max && !S_ISREG(st.st_mode))) {
        fclose(f);
        return mt_fail(err, MT_EIO, "%s: not a regular file (name the file itself)", path);
    }
    if (max && (size_t)st.st_size > max) {
        fclose(f);
        return mt_fail(err, MT_EIO, "%s: %lld bytes, more than the %zu MiB a configuration file may have (is it the "
                       "right file?)", path, (long long)st.st_size, max >> 20);
    }
    size_t cap = st.st_size > 0 ? (size_t)st.st_size + 1 : 4096, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        fclose(f);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory reading file", path);
    }
    for (;;) {
        if (len + 1 >= cap) {
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                fclose(f);
                return mt_fail(err, MT_ENOMEM, "%s: out of memory reading file", path);
            }
            buf = nb;
            cap *= 2;
        }
        size_t n = fread(buf + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0) break;
        if (max && len > max) { /* grew while read */
            free(buf);
            fclose(f);
            return mt_fail(err, MT_EIO, "%s: more than the %zu MiB a configuration file may have", path, max >> 20);
        }
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(buf);
        return mt_fail(err, MT_EIO, "%s: read error", path);
    }
    buf[len] = 0;
    *out = buf;
    *out_len = len;
    return MT_OK;
}

static mt_status inflate_gzip(const char *path, const unsigned char *in, size_t in_len, size_t max,
                              char **out, size_t *out_len, mt_error *err) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, 15 + 32) != Z_OK)
        return mt_fail(err, MT_EIO, "%s: cannot initialise gzip decoder", path);
    size_t cap = in_len * 8 + 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf) {
        inflateEnd(&zs);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory inflating", path);
    }
    zs.next_in = (Bytef *)in;
    size_t in_left = in_len;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        if (cap - len < 2) {
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                inflateEnd(&zs);
                return mt_fail(err, MT_ENOMEM, "%s: out of memory inflating", path);
            }
            buf = nb;
            cap *= 2;
        }
        if (zs.avail_in == 0) {
            uInt chunk = in_left > (1u << 30) ? (1u << 30) : (uInt)in_left;
            zs.avail_in = chunk;
            in_left -= chunk;
        }
        size_t room = cap - len - 1;
        zs.avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
        zs.next_out = (Bytef *)(buf + len);
        uInt before = zs.avail_out;
        rc = inflate(&zs, Z_NO_FLUSH);
        len += before - zs.avail_out;
        mt_status over = max && len > max
            ? mt_fail(err, MT_EIO, "%s: inflates to more than the %zu MiB a configuration file may have", path, max >> 20)
            : mt_budget_check_inflated((double)len, path, err); /* a server's cap (util/budget.h) */
        if (over != MT_OK) {
            free(buf);
            inflateEnd(&zs);
            return over;
        }
        if (rc == Z_STREAM_END) {
            /* Concatenated gzip members: continue with the next one. */
            if (zs.avail_in > 0 || in_left > 0) {
                if (inflateReset(&zs) != Z_OK) break;
                rc = Z_OK;
            }
            continue;
        }
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_left == 0) {
            free(buf);
            inflateEnd(&zs);
            return mt_fail(err, MT_EIO, "%s: truncated gzip data (re-copy the file)", path);
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            free(buf);
            inflateEnd(&zs);
            return mt_fail(err, MT_EIO, "%s: unreadable gzip data: %s", path,
                           zs.msg ? zs.msg : "corrupt stream");
        }
    }
    inflateEnd(&zs);
    buf[len] = 0;
    *out = buf;
    *out_len = len;
    return MT_OK;
}

static mt_status read_max(const char *path, size_t max, char **out, size_t *out_len, mt_error *err) {
    unsigned char *raw = NULL;
    size_t raw_len = 0;
    MT_CHECK(read_raw(path, max, &raw, &raw_len, err));
    if (raw_len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
        mt_status rc = inflate_gzip(path, raw, raw_len, max, out, out_len, err);
        free(raw);
        return rc;
    }
    *out = (char *)raw;
    *out_len = raw_len;
    return MT_OK;
}

mt_status mt_read_file(const char *path, char **out, size_t *out_len, mt_error *err) {
    return read_max(path, 0, out, out_len, err);
}

mt_status mt_read_config(const char *path, char **out, size_t *out_len, mt_error *err) {
    return read_max(path, MT_CONFIG_MAX_BYTES, out, out_len, err);
}

/* read_max (max 0: no bound) + mt_json_parse. */
static mt_status json_load_max(const char *path, size_t max, json_t **out, mt_error *err) {
    char *buf = NULL;
    size_t len = 0;
    MT_CHECK(read_max(path, max, &buf, &len, err));
    mt_status rc = mt_json_parse(path, buf, len, out, err);
    free(buf);
    return rc;
}

mt_status mt_json_load_config(const char *path, json_t **out, mt_error *err) {
    return json_load_max(path, MT_CONFIG_MAX_BYTES, out, err);
}

mt_status mt_read_prefix(const char *path, size_t max, char **out, size_t *out_len, int *complete,
                         mt_error *err) {
    gzFile g = gzopen(path, "rb"); /* reads plain files as they are */
    char *buf = g ? malloc(max + 1) : NULL;
    size_t len = 0;
    int n = 1, errnum = Z_OK;
    while (buf && len < max && n > 0) {
        size_t want = max - len < (1u << 30) ? max - len : (1u << 30);
        n = gzread(g, buf + len, (unsigned)want);
        if (n > 0) len += (size_t)n;
    }
    if (g) {
        gzerror(g, &errnum);
        gzclose(g);
    }
    if (!buf || n < 0 || errnum != Z_OK) {
        free(buf); /* unreadable, damaged or a directory: let the whole read say why */
        *complete = 1;
        return mt_read_file(path, out, out_len, err);
    }
    buf[len] = '\0';
    *out = buf;
    *out_len = len;
    *complete = len < max;
    return MT_OK;
}

mt_status mt_json_parse(const char *path, const char *buf, size_t len, json_t **out,
                        mt_error *err) {
    json_error_t je;
    json_t *root = json_loadb(buf, len, JSON_ALLOW_NUL, &je);
    if (!root)
        return mt_fail(err, MT_EFORMAT, "%s:%d:%d: invalid JSON: %s", path, je.line, je.column,
                       je.text);
    *out = root;
    return MT_OK;
}

mt_status mt_json_load(const char *path, json_t **out, mt_error *err) { return json_load_max(path, 0, out, err); }
