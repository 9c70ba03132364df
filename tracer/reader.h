/* tracer/reader.h — the registry of trace readers: which file is what, by content.
 *
 * A trace is put together from parts, one file each: the host and device events of a profiler
 * trace (MT_PART_EVENTS, kineto_data), the operator graph with its tensors (MT_PART_GRAPH,
 * et_data), or the two tables of a TrioSim CSV trace (MT_PART_CSV_OPS, MT_PART_CSV_TENSORS).
 * A reader recognises its files from the first bytes of their inflated content, never from
 * their names (sniff, tracer/sniff.h), and loads one file into its part (load).
 * mt_trace_load (load.c) sniffs every file against the registry in order, keeps at most one file
 * per part, loads the parts it needs, and hands them to the linker (events and/or graph,
 * link.h) or to the TrioSim builder (triosim.h).
 *
 * Adding a reader is one file plus one registry line: the file defines
 *     const mt_trace_reader mt_reader_NAME = {"name", MT_PART_..., ".suffix", sniff, load};
 * with static sniff and load functions, and X(NAME) joins MT_TRACE_READERS below (CMake builds
 * every .c file of tracer/). Earlier lines are asked first; a reader that needs more bytes holds back
 * the ones after it, so the order alone decides between two readers that both say YES.
 * Invariant: the registry is constant; readers keep no state between calls.
 */
#ifndef MT_TRACER_READER_H
#define MT_TRACER_READER_H

#include <stddef.h>

#include "tracer/chakra.h"
#include "tracer/csvtable.h"
#include "tracer/et.h"
#include "tracer/kineto.h"
#include "tracer/sniff.h"
#include "tracer/strpool.h"
#include "util/jstream.h"

typedef enum {
    MT_PART_EVENTS = 0,    /* timed host ops, runtime calls, kernels: kineto_data */
    MT_PART_GRAPH,         /* operators with tensor ids and shapes: et_data */
    MT_PART_CSV_OPS,       /* TrioSim trace.csv */
    MT_PART_CSV_TENSORS,   /* TrioSim tensor.csv */
    MT_PART_CHAKRA,        /* one rank's Chakra ET: chakra (tracer/cktrace.h) */
    MT_PART_COUNT
} mt_trace_part;

/* The parts of one trace being loaded; load.c owns it (mt_reader_parts_free). */
struct mt_trace_reader;

typedef struct mt_trace_parts {
    char *path[MT_PART_COUNT];         /* the file of each part, NULL when absent */
    const struct mt_trace_reader *reader[MT_PART_COUNT];  /* the reader that claimed it */
    int loaded[MT_PART_COUNT];         /* the part below holds data (set by load.c) */
    kineto_data events;
    et_data graph;
    csv_table csv[2];                  /* [0] trace.csv, [1] tensor.csv */
    mt_ck_graph chakra;
    mt_jstream_opts jopts;             /* how JSON parts are read: progress, DOM (from trace_load_opts) */
    int keep_steps[2];                 /* the Kineto reader keeps only the neighbourhoods of these
                                        * ProfilerSteps (tracer/kfilter.h); -1 none */
} mt_trace_parts;

typedef struct mt_trace_reader {
    const char *name;                  /* e.g. "kineto-json", for messages and tests */
    mt_trace_part part;
    /* Which files of a directory are worth sniffing: space-separated name suffixes (".json
     * .gz"). Only for scanning directories, which hold other things too; the format itself is
     * always told by content, and a file named explicitly is sniffed whatever its name. */
    const char *dir_suffixes;
    /* head: the first len bytes of the inflated file, NUL-terminated. */
    mt_sniff (*sniff)(const char *head, size_t len);
    /* Loads `path` into its part of `parts` (strings interned in pool). On failure the part
     * holds nothing to free and the message names the file. */
    mt_status (*load)(const char *path, trace_strpool *pool, mt_trace_parts *parts, mt_error *err);
} mt_trace_reader;

/* The registry: X(name) for each reader, in the order they are asked. */
#define MT_TRACE_READERS(X) X(kineto) X(et) X(triosim_ops) X(triosim_tensors) X(chakra)

#define MT_TRACE_READER_DECLARE(name) extern const mt_trace_reader mt_reader_##name;
MT_TRACE_READERS(MT_TRACE_READER_DECLARE)
#undef MT_TRACE_READER_DECLARE

/* The reader of a file from its first len bytes: the first in registry order that says YES.
 * NULL when none does, with *more set when some reader (before any YES) needs more bytes;
 * complete says head is the whole file (then MORE counts as NO). O(len x readers). */
const mt_trace_reader *mt_reader_find(const char *head, size_t len, int complete, int *more);
/* 1 when a directory entry named `name` is worth sniffing: it ends with a suffix some reader
 * lists (and is longer than it). */
int mt_reader_dir_candidate(const char *name);
/* "Kineto", "Execution Trace", "TrioSim CSV", "Chakra ET": what a part's file is called in messages. */
const char *mt_reader_part_label(mt_trace_part part);
/* Frees every loaded part and path; leaves p zeroed. */
void mt_reader_parts_free(mt_trace_parts *p);

#endif
