/* tests/unit/tracefix.h — loading a trace fixture in a unit test: tests/fixtures/DIR/NAME (the
 * directory from MT_FIXTURES, which ctest sets), failing the test when it does not load. */
#ifndef MT_TESTS_TRACEFIX_H
#define MT_TESTS_TRACEFIX_H

#include <stdio.h>
#include <stdlib.h>

#include "tracer/trace.h"

static inline mt_trace *mt_test_load_fixture(const char *dir, const char *name) {
    const char *fx = getenv("MT_FIXTURES");
    char path[1024];
    snprintf(path, sizeof path, "%s/%s/%s", fx ? fx : "tests/fixtures", dir, name);
    const char *paths[1] = {path};
    trace_load_opts o;
    mt_trace_load_opts_init(&o);
    mt_trace *t = NULL;
    mt_error err = {0};
    assert_int_equal(mt_trace_load(paths, 1, &o, &t, &err), MT_OK);
    return t;
}

#endif
