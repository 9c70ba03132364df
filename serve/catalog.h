/* serve/catalog.h — the traces the web UI offers, and the only way from a client's trace id to a
 * path: the shipped traces, every sub-folder of each `--traces DIR`, and uploads.
 *
 * Ids: "shipped/NAME", "dirK/NAME" (the K-th --traces folder, from 1), "upload/N"; sources:
 * "shipped with mitosis", "--traces folder K", "upload" (never a path). A client
 * names a trace only by an id the catalogue listed; anything else (an unknown id, "..", an
 * absolute path) is refused, so no path from a client is ever opened.
 * Uploads live in one private folder made by mkdtemp (mode 0700) under $TMPDIR, removed with the
 * catalogue: upload N is the folder upload-N holding file-0, file-1 ...; the client's file names
 * are never used (the readers tell the formats apart by content). An upload is parsed by the same
 * readers as the CLI's before it is listed; a bad one is removed and refused with the reader's
 * message.
 * Invariant: every listed entry's paths lie in a shipped or --traces folder or in the private
 * folder, and an upload is listed only after the readers loaded it.
 * Thread safety: every function may be called from any thread (one mutex); trace summaries
 * (`inspect --json`'s JSON) are computed once per trace and cached. The readers do not use
 * igraph, so loading runs beside a simulation.
 * Costs: listing O(traces); a first summary loads the trace.
 */
#ifndef MT_SERVE_CATALOG_H
#define MT_SERVE_CATALOG_H

#include <stddef.h>

#include <jansson.h>

#include "util/err.h"

enum { MT_CATALOG_MAX_DIRS = 16, MT_CATALOG_MAX_FILES = 4 };

typedef struct mt_catalog mt_catalog;

/* Scans shipped (may be NULL or absent) and dirs; creates the private upload folder. */
mt_status mt_catalog_new(const char *shipped, const char *const *dirs, int n_dirs, mt_catalog **out,
                         mt_error *err);
/* Removes the upload folder and everything in it. */
void mt_catalog_free(mt_catalog *c);

/* The private folder (uploads and the runs' files go under it). */
const char *mt_catalog_dir(const mt_catalog *c);

/* [{id, name, source}] in listing order. */
json_t *mt_catalog_list_json(mt_catalog *c);
enum { MT_CATALOG_PATH_MAX = 1024 };

/* What a run reads for a trace: its folder, or an upload's files. */
typedef struct mt_catalog_paths {
    char path[MT_CATALOG_MAX_FILES][MT_CATALOG_PATH_MAX];
    int n;
} mt_catalog_paths;

/* The paths of trace `id` into *out; MT_EINVAL naming the id when it is not listed. */
mt_status mt_catalog_paths_of(mt_catalog *c, const char *id, mt_catalog_paths *out, mt_error *err);
/* {id, name, source, summary} of trace `id` (summary: inspect --json's object); a new reference.
 * MT_EINVAL for an unknown id, the reader's error for a trace that does not load. */
mt_status mt_catalog_summary(mt_catalog *c, const char *id, json_t **out, mt_error *err);

/* The server's own paths are never shown to clients: every text a client gets that may hold one
 * (a run's result, files and error, a trace summary or a reader's error) goes through these,
 * which write a shipped trace's folder as "shipped/NAME", a --traces folder's as "dirK/NAME", an
 * upload's as "upload/N" and the private folder's runs as "run-N" (paths as the server was given
 * them: a relative --traces folder is replaced as written).
 * mt_catalog_redacted: a malloc'd copy of text[0..len) (*out_len its length; NULL: out of memory);
 * mt_catalog_redact: msg in place (cut at size); mt_catalog_redact_json: every string in j;
 * mt_catalog_redact_file: the file at path rewritten when it holds a path (absent: MT_OK). */
char *mt_catalog_redacted(const mt_catalog *c, const char *text, size_t len, size_t *out_len);
void mt_catalog_redact(const mt_catalog *c, char *msg, size_t size);
void mt_catalog_redact_json(const mt_catalog *c, json_t *j);
mt_status mt_catalog_redact_file(const mt_catalog *c, const char *path, mt_error *err);

/* An upload being received: files written as they arrive, at most max_bytes in all. */
typedef struct mt_upload mt_upload;
mt_status mt_upload_begin(mt_catalog *c, double max_bytes, mt_upload **out, mt_error *err);
/* Starts the next file (at most MT_CATALOG_MAX_FILES). */
mt_status mt_upload_file(mt_upload *u, mt_error *err);
/* Appends to the current file; MT_EINVAL "upload over the limit" past max_bytes. */
mt_status mt_upload_write(mt_upload *u, const char *data, size_t len, mt_error *err);
/* Parses the files; on success lists them and returns the new entry ({id, name, source,
 * summary}); on failure removes them. Frees u either way. */
mt_status mt_upload_finish(mt_upload *u, const char *name, json_t **out, mt_error *err);
/* Drops an unfinished upload and its files (a client that went away). */
void mt_upload_abort(mt_upload *u);

#endif
