/* The C API's last line of defence, compiled as C: an exception that escapes a command
 * (a bug below the table, or no memory) becomes ONNXSTREAM_ERROR_INTERNAL with a result
 * the caller frees, and never crosses into C. The exceptions come from a test hook
 * (ONNXSTREAM_C_TEST_HOOKS in src/api/c_api.cpp), compiled into this program's own copy of
 * c_api.cpp only. Run by ctest as `capi_internal`.
 */
#include <onnxstream.h>

#include "check.h"

#include <stdio.h>
#include <string.h>

static int starts_with(const char* text, const char* prefix) { return strncmp(text, prefix, strlen(prefix)) == 0; }

/* `command` throws; `what` is the message's words after "internal error: ". */
static void check_internal(const char* command, const char* what) {
    const char* keys[] = {"model"};
    const char* values[] = {"model.onnx"};
    onnxstream_result* r = NULL;
    char message[256];
    CHECK(onnxstream_run(command, keys, values, 1, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INTERNAL);
    CHECK(r != NULL);
    CHECK(onnxstream_result_ok(r) == 0);
    CHECK(onnxstream_result_passed(r) == 0);
    CHECK(onnxstream_result_error_code(r) == ONNXSTREAM_ERROR_INTERNAL);
    snprintf(message, sizeof message, "internal error: %s", what);
    CHECK(strcmp(onnxstream_result_error_message(r), message) == 0);
    CHECK(starts_with(onnxstream_result_error_hint(r), "please report it"));
    CHECK(strstr(onnxstream_result_report_json(r), "\"ok\": false") != NULL);
    CHECK(strstr(onnxstream_result_report_json(r), "\"code\": \"internal\"") != NULL);
    CHECK(strcmp(onnxstream_result_report_text(r), "") == 0);
    CHECK(onnxstream_result_output_count(r) == 0);
    onnxstream_result_free(r);
    /* Without a result to store, the number alone. */
    CHECK(onnxstream_run(command, keys, values, 1, NULL, NULL, NULL, NULL) == ONNXSTREAM_ERROR_INTERNAL);
}

int main(void) {
    CHECK(strcmp(onnxstream_error_name(ONNXSTREAM_ERROR_INTERNAL), "internal") == 0);
    check_internal("test-throw", "thrown by the test hook");
    check_internal("test-throw-bad-alloc", "out of memory");
    check_internal("test-throw-unknown", "an unknown exception");
    /* The library still runs commands after them. */
    {
        onnxstream_result* r = NULL;
        CHECK(onnxstream_run("no-such-command", NULL, NULL, 0, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INVALID_ARGUMENT);
        onnxstream_result_free(r);
    }
    if (failures != 0) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("C API internal errors: all checks passed\n");
    return 0;
}
