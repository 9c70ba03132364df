/* util/fileio.h — whole-file reading with transparent gzip, and JSON loading with jansson.
 *
 * Formats are detected by content: a file starting with the gzip magic (1f 8b) is inflated
 * whatever its name. Errors name the file and, for JSON, the line and column jansson reports.
 */
#ifndef MT_UTIL_FILEIO_H
#define MT_UTIL_FILEIO_H

#include <stddef.h>

#include <jansson.h>

#include "util/err.h"

/* Reads the whole file (inflating gzip) into a malloc'd, NUL-terminated buffer.
 * Cost: O(file size); one realloc-doubling pass when inflating. Caller frees *out. */
mt_status mt_read_file(const char *path, char **out, size_t *out_len, mt_error *err);

/* The largest configuration file (topology, scenario, cluster job file, fitted model, GPU table,
 * meta.json, a measurement CSV), before and after inflating: 64 MiB. */
#define MT_CONFIG_MAX_BYTES ((size_t)64 << 20)

/* mt_read_file for a configuration file: a regular file only (a FIFO, /dev/zero or a folder is
 * refused before reading), at most MT_CONFIG_MAX_BYTES on disk and inflated; MT_EIO naming the file
 * and the limit. Cost: O(file size). */
mt_status mt_read_config(const char *path, char **out, size_t *out_len, mt_error *err);
/* mt_read_config + mt_json_parse. */
mt_status mt_json_load_config(const char *path, json_t **out, mt_error *err);

/* Reads at most `max` bytes of the file's content (inflating gzip) into a malloc'd,
 * NUL-terminated buffer; *complete is 1 when that is the whole content. For recognising a file
 * by its first bytes without reading it all. On any error the whole file is read instead
 * (mt_read_file), so the message is mt_read_file's. Cost: O(max) for an intact file. */
mt_status mt_read_prefix(const char *path, size_t max, char **out, size_t *out_len, int *complete,
                         mt_error *err);

/* Parses a buffer as JSON (strict, no duplicate-key check). *out is a new reference.
 * `path` is only used in messages. */
mt_status mt_json_parse(const char *path, const char *buf, size_t len, json_t **out,
                        mt_error *err);

/* mt_read_file + mt_json_parse. */
mt_status mt_json_load(const char *path, json_t **out, mt_error *err);

/* True when `path` names an existing directory. */
int mt_is_dir(const char *path);

/* Removes what a failed writer left at `path`, only when it is a regular file: a device such as
 * /dev/full or /dev/null, a FIFO, a symbolic link or a directory named as an output stays. */
void mt_remove_partial(const char *path);

/* Creates dir (and its parents) when missing and checks that files can be made in it, so that a
 * bad directory is reported before a long run. `what` names it in messages ("CSV directory",
 * "Chakra directory"). MT_EIO with a message naming it. */
mt_status mt_prepare_out_dir(const char *dir, const char *what, mt_error *err);

#endif
