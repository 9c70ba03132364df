/* Unit tests for the reader registry (tracer/reader.h) and the prefix sniffers (tracer/sniff.h):
 * which reader claims a file from its first bytes, when a prefix is too short to tell, and which
 * directory entries are worth sniffing. (test_tracer.c loads files whose telling member comes
 * after the first 64 KiB.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "tracer/reader.h"
#include "tracer/sniff.h"

/* The name of the reader claiming `text` (whole file when complete), "none", or "more". */
static const char *claim(const char *text, size_t len, int complete) {
    int more = 0;
    const mt_trace_reader *r = mt_reader_find(text, len, complete, &more);
    return r ? r->name : more ? "more" : "none";
}

static void claim_whole(const char *text, const char *want) {
    const char *got = claim(text, strlen(text), 1);
    if (strcmp(got, want)) fail_msg("%s: claimed by %s, want %s", text, got, want);
}

static void registry_by_content(void **state) {
    (void)state;
    claim_whole("{\"schemaVersion\": 1, \"traceEvents\": []}", "kineto-json");
    claim_whole("  [{\"ts\": 1, \"name\": \"x\", \"ph\": \"X\"}]", "kineto-json");
    claim_whole("{\"schema\": \"1.0.1\", \"pid\": 7, \"nodes\": [{}]}", "execution-trace-json");
    claim_whole("{\"nodes\": [], \"pid\": 1}", "execution-trace-json");
    claim_whole("{\"nodes\": [], \"traceEvents\": []}", "kineto-json"); /* earlier line wins */
    claim_whole("OperatorID,OperatorName,Operator_input\n", "triosim-trace-csv");
    claim_whole("\nIndex,TensorID,TensorShape\n", "triosim-tensor-csv");
    claim_whole("{\"traceEvents\": {}}", "none");    /* not an array */
    claim_whole("{\"nodes\": []}", "none");          /* no schema or pid */
    claim_whole("[1, 2]", "none");
    claim_whole("[{\"ph\": \"X\"}]", "none");        /* no ts */
    claim_whole("{\"a\": \"}\\\"\", \"b\": [{\"c\": \"]\"}], \"traceEvents\": [1]}", "kineto-json");
    claim_whole("foo,bar\n", "none");
    claim_whole("{\"a\": 1,,}", "none");             /* malformed before any telling member */
}

static void prefixes_ask_for_more(void **state) {
    (void)state;
    const char *k = "{\"deviceProperties\": [{\"name\": \"GPU\"}], \"traceEvents\": []}";
    for (size_t n = 1; n < strlen(k); n++) {
        const char *got = claim(k, n, 0);
        /* a prefix either tells (once "traceEvents": [ is in) or asks for more; never says no */
        if (strcmp(got, "more") && strcmp(got, "kineto-json")) fail_msg("prefix %zu: %s", n, got);
        /* the same bytes as a whole (truncated) file: told, or no reader's */
        assert_string_equal(claim(k, n, 1), strcmp(got, "more") ? got : "none");
    }
    assert_string_equal(claim("OperatorI", 9, 0), "more");
    assert_string_equal(claim("OperatorI", 9, 1), "none");
    assert_string_equal(claim("Operand", 7, 0), "none");
    const char *nested = "{\"a\": [1, {\"b\": 2}], \"c\": 3}", *top = "{\"a\": {\"b\": 2}, \"b\" : 3}", *v = NULL;
    assert_int_equal(mt_sniff_json_member(nested, nested + strlen(nested), "b", &v), MT_SNIFF_NO);
    assert_int_equal(mt_sniff_json_member(top, top + strlen(top), "b", &v), MT_SNIFF_YES);
    assert_int_equal(*v, '3');
}

static void dir_candidates(void **state) {
    (void)state;
    static const struct { const char *name; int want; } names[] = {
        {"kineto.json", 1}, {"et.json.gz", 1}, {"trace.csv", 1}, {"x.gz", 1},
        {"notes.txt", 0}, {".json", 0} /* a suffix alone is not a name */,
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (mt_reader_dir_candidate(names[i].name) != names[i].want) fail_msg("%s", names[i].name);
    assert_string_equal(mt_reader_part_label(MT_PART_GRAPH), "Execution Trace");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(registry_by_content),
        cmocka_unit_test(prefixes_ask_for_more),
        cmocka_unit_test(dir_candidates),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
