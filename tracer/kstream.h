/* tracer/kstream.h — the events of a Kineto trace, one at a time, from a JSON event stream.
 *
 * A kstream is an mt_jsax handler (util/jstream.h): fed the events of a Kineto document (from
 * the streaming parser, or walked from a jansson document), it gathers each element of
 * traceEvents (or of the bare top-level array) into a flat record, kin_event, and hands it to one
 * consumer callback (kineto.c) before reading the next. Of each event it gathers only the fields
 * the reader uses (kin_field, kin_arg below, "Input Dims" and "Input type"); every other member
 * is skipped without being stored. deviceProperties and distributedInfo (small) are built as
 * jansson values for the consumer to take at the end.
 * Invariant: a record's strings and arrays stay valid only during the consumer's call.
 * Cost: O(1) per JSON event; memory O(largest event).
 */
#ifndef MT_TRACER_KSTREAM_H
#define MT_TRACER_KSTREAM_H

#include <stdint.h>

#include <jansson.h>

#include "util/err.h"
#include "util/jstream.h"

#define KV_CONTAINER 100   /* kval.type of a member whose value is an object or array */

typedef struct kval {      /* one member of an event: absent (present 0), a scalar, or a container */
    int present;
    int type;              /* mt_jv_type, or KV_CONTAINER */
    int64_t i;             /* MT_JV_INT */
    double d;              /* MT_JV_INT and MT_JV_REAL */
    const char *s;         /* MT_JV_STRING (NUL-terminated) */
    int64_t off;           /* private: s's offset while gathering */
} kval;

/* The event members read, and the args members read. */
typedef enum { KF_PH = 0, KF_CAT, KF_NAME, KF_TS, KF_DUR, KF_TID, KF_ARGS, KF_COUNT } kin_field;
typedef enum {
    KA_EXT_ID = 0, KA_RF_ID, KA_SEQ, KA_CORRELATION, KA_STREAM, KA_REC_CORR, KA_WAIT_STREAM,
    KA_GROUP, KA_IN_NELEMS, KA_OUT_NELEMS, KA_COLL_NAME, KA_DTYPE, KA_PG_NAME, KA_PG_DESC, KA_COUNT
} kin_arg;

typedef struct kin_dims {  /* one entry of "Input Dims" */
    int64_t first;         /* its leading integers: kin_event.dimv[first .. +ndim) */
    int32_t ndim;
    int32_t size;          /* elements, -1 when the entry is not an array */
} kin_dims;

typedef struct kin_event {
    int64_t index;                 /* traceEvents[index] */
    kval f[KF_COUNT];              /* f[KF_ARGS].type is KV_CONTAINER for an object */
    int args_object;               /* "args" is an object (the a[] below come from it) */
    kval a[KA_COUNT];
    kin_dims *dims; int32_t n_dims;     /* "Input Dims" entries (0 when absent or not an array) */
    int64_t *dimv;
    const char **types; int32_t n_types; /* "Input type" (NULL entries: not strings); n_types 0
                                          * when absent or not an array */
} kin_event;

/* The consumer: 1 to go on, 0 to stop (it has filled the kstream's err). */
typedef int (*kin_event_fn)(void *ctx, const kin_event *e);

typedef struct kstream kstream;

/* A new gatherer calling on_event(ctx, ...) for each event; errors name `path`. NULL on OOM. */
kstream *mt_kstream_new(const char *path, kin_event_fn on_event, void *ctx, mt_error *err);
void mt_kstream_free(kstream *s);
/* Its handler: pass it with s as ctx to mt_jstream_file. */
extern const mt_jsax mt_kstream_sax;
/* After the document: 1 when it had a traceEvents array (or was a bare array); and the
 * deviceProperties / distributedInfo values (new references, the caller owns them; NULL absent). */
int mt_kstream_saw_events(const kstream *s);
json_t *mt_kstream_take(kstream *s, const char *member);
/* The smallest positive "ts" of any event (any phase), +inf when none: the trace's base time. */
double mt_kstream_min_ts(const kstream *s);

#endif
