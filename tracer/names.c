/* tracer/names.c — the names of the trace model's enums and of PyTorch dtypes (trace.h).
 * Each is a table lookup; an out-of-range value reads "?" (a dtype unknown, 0 bytes). */
#include <string.h>

#include "tracer/trace.h"

const char *mt_trace_phase_name(trace_phase p) {
    static const char *const n[] = {"forward", "backward", "optimizer", "other"};
    return (unsigned)p < TRACE_PHASE_COUNT ? n[p] : "?";
}

const char *mt_trace_role_name(trace_role r) {
    static const char *const n[] = {"activation", "weight", "gradient", "optimizer_state",
                                    "input", "other"};
    return (unsigned)r < TRACE_ROLE_COUNT ? n[r] : "?";
}

const char *mt_trace_comm_name(trace_comm c) {
    static const char *const n[] = {"none", "allreduce", "allgather", "reducescatter",
                                    "broadcast", "reduce", "alltoall", "send", "recv",
                                    "barrier", "other"};
    return (unsigned)c <= TRACE_COMM_OTHER ? n[c] : "?";
}

const char *mt_trace_group_src_name(trace_group_src s) {
    static const char *const n[] = {"unknown", "recorded", "process_group", "shapes", "world"};
    return (unsigned)s <= TRACE_GROUP_WORLD ? n[s] : "?";
}

const char *mt_trace_format_name(trace_format f) {
    static const char *const n[] = {"kineto+et", "kineto", "et", "triosim-csv", "chakra"};
    return (unsigned)f <= TRACE_FORMAT_CHAKRA ? n[f] : "?";
}

const char *mt_trace_link_method_name(trace_link_method m) {
    static const char *const n[] = {"none", "rf_id", "external_id", "order"};
    return (unsigned)m <= TRACE_LINK_ORDER ? n[m] : "?";
}

int32_t mt_trace_dtype_size(const char *d) {
    if (!d) return 0;
    if (!strncmp(d, "c10::", 5)) d += 5;
    static const struct { const char *name; int32_t size; } tab[] = {
        {"float", 4}, {"Float", 4}, {"float32", 4}, {"double", 8}, {"Double", 8},
        {"Half", 2}, {"half", 2}, {"float16", 2}, {"BFloat16", 2}, {"bfloat16", 2},
        {"long int", 8}, {"long", 8}, {"Long", 8}, {"int64", 8}, {"int", 4}, {"Int", 4},
        {"short", 2}, {"Short", 2}, {"signed char", 1}, {"unsigned char", 1}, {"Byte", 1}, {"Char", 1},
        {"bool", 1}, {"Bool", 1},
        {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1}, {"c10::complex<float>", 8},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(d, tab[i].name)) return tab[i].size;
    return 0;
}
