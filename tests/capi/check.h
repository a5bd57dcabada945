/* The check the C API's tests (test_capi.c, test_capi_internal.c) count failures with: a
 * failed CHECK prints where and what, and the program ends with a non-zero status when
 * `failures` is not 0. */
#ifndef ONNXSTREAM_TESTS_CAPI_CHECK_H
#define ONNXSTREAM_TESTS_CAPI_CHECK_H

#include <stdio.h>

static int failures = 0;

#define CHECK(condition)                                                                  \
    do {                                                                                  \
        if (!(condition)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
            ++failures;                                                                   \
        }                                                                                 \
    } while (0)

#endif
