/* tracer/reader.c — the reader registry (see reader.h). */
#include "tracer/reader.h"

#include <stdlib.h>
#include <string.h>

#define MT_TRACE_READER_REF(name) &mt_reader_##name,
static const mt_trace_reader *const registry[] = {MT_TRACE_READERS(MT_TRACE_READER_REF)};

const mt_trace_reader *mt_reader_find(const char *head, size_t len, int complete, int *more) {
    *more = 0;
    for (size_t i = 0; i < sizeof registry / sizeof *registry; i++) {
        mt_sniff s = registry[i]->sniff(head, len);
        if (s == MT_SNIFF_YES) return registry[i];
        if (s == MT_SNIFF_MORE && !complete) {
            *more = 1; /* a later reader's YES could be this one's too */
            return NULL;
        }
    }
    return NULL;
}

int mt_reader_dir_candidate(const char *name) {
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof registry / sizeof *registry; i++) {
        const char *s = registry[i]->dir_suffixes;
        while (s && *s) {
            size_t n = strcspn(s, " ");
            if (n > 0 && len > n && !strncmp(name + len - n, s, n)) return 1;
            s += n;
            while (*s == ' ') s++;
        }
    }
    return 0;
}

const char *mt_reader_part_label(mt_trace_part part) {
    static const char *const labels[MT_PART_COUNT] = {"Kineto", "Execution Trace", "TrioSim CSV", "TrioSim CSV",
                                                               "Chakra ET"};
    return (unsigned)part < MT_PART_COUNT ? labels[part] : "?";
}

void mt_reader_parts_free(mt_trace_parts *p) {
    if (p->loaded[MT_PART_EVENTS]) mt_kineto_free(&p->events);
    if (p->loaded[MT_PART_GRAPH]) mt_et_free(&p->graph);
    for (int i = 0; i < 2; i++)
        if (p->loaded[MT_PART_CSV_OPS + i]) mt_csv_table_free(&p->csv[i]);
    if (p->loaded[MT_PART_CHAKRA]) mt_ck_graph_free(&p->chakra);
    for (int i = 0; i < MT_PART_COUNT; i++) free(p->path[i]);
    memset(p, 0, sizeof *p);
}
