/* The C API (include/onnxstream.h) as a C program sees it, compiled as C: run by ctest as
 * `capi` with the fixtures folder (scripts/make_fixtures.py), and again under ASan + UBSan
 * by scripts/test.sh. Every case frees what it got, so LeakSanitizer checks the results'
 * ownership too.
 *
 *     onnxstream_capi_test FIXTURES
 */
#define _POSIX_C_SOURCE 200809L

#include <onnxstream.h>

#include "check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char fixtures[4096];
static char scratch[4096];

static void path_in(char* out, size_t size, const char* folder, const char* name) {
    snprintf(out, size, "%s/%s", folder, name);
}

static int exists(const char* path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* Files in the scratch folder: a cancelled run must leave none (no output, no temp file). */
static int files_in_scratch(void) {
    DIR* dir = opendir(scratch);
    int n = 0;
    struct dirent* entry;
    if (dir == NULL) return -1;
    while ((entry = readdir(dir)) != NULL)
        if (strcmp(entry->d_name, ".") != 0 && strcmp(entry->d_name, "..") != 0) ++n;
    closedir(dir);
    return n;
}

static void empty_scratch(void) {
    DIR* dir = opendir(scratch);
    struct dirent* entry;
    char path[8192];
    if (dir == NULL) return;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
        path_in(path, sizeof path, scratch, entry->d_name);
        remove(path);
    }
    closedir(dir);
}

struct progress_log {
    int calls;
    int decreasing;
    uint64_t last_done;
    uint64_t last_total;
    char last_stage[256];
    int cancel_at_call; /* return nonzero on this call (0: never) */
};

static int on_progress(void* user, const char* stage, uint64_t done, uint64_t total, const char* unit) {
    struct progress_log* log = (struct progress_log*)user;
    ++log->calls;
    if (strcmp(stage, log->last_stage) == 0 && done < log->last_done) log->decreasing = 1;
    snprintf(log->last_stage, sizeof log->last_stage, "%s", stage);
    log->last_done = done;
    log->last_total = total;
    CHECK(unit != NULL && unit[0] != '\0');
    return log->cancel_at_call != 0 && log->calls >= log->cancel_at_call;
}

static void test_version_and_table(void) {
    const char* table = onnxstream_commands_json();
    CHECK(onnxstream_api_version() >= ONNXSTREAM_API_VERSION);
    CHECK(strlen(onnxstream_version()) > 0);
    CHECK(table != NULL && table[0] == '[');
    CHECK(table != NULL && strstr(table, "\"name\":\"merge\"") != NULL);
    CHECK(table != NULL && strstr(table, "\"data-name\"") != NULL);
    CHECK(strcmp(onnxstream_error_name(ONNXSTREAM_OK), "ok") == 0);
    CHECK(strcmp(onnxstream_error_name(ONNXSTREAM_ERROR_MISSING_DATA), "missing_data") == 0);
    CHECK(strcmp(onnxstream_error_name(ONNXSTREAM_ERROR_INVALID_ARGUMENT), "invalid_argument") == 0);
    CHECK(strcmp(onnxstream_error_name(ONNXSTREAM_ERROR_INTERRUPTED), "interrupted") == 0);
    CHECK(strcmp(onnxstream_error_name(ONNXSTREAM_ERROR_INTERNAL), "internal") == 0);
    CHECK(strcmp(onnxstream_error_name(1000), "unknown") == 0);
}

static void test_inspect(const char* model) {
    const char* keys[] = {"model"};
    const char* values[] = {model};
    onnxstream_result* r = NULL;
    CHECK(onnxstream_run("inspect", keys, values, 1, NULL, NULL, NULL, &r) == ONNXSTREAM_OK);
    CHECK(onnxstream_result_ok(r));
    CHECK(onnxstream_result_passed(r));
    CHECK(strstr(onnxstream_result_report_json(r), "model.onnx.data") != NULL);
    CHECK(strlen(onnxstream_result_report_text(r)) > 0);
    CHECK(onnxstream_result_error_code(r) == ONNXSTREAM_OK);
    CHECK(strcmp(onnxstream_result_error_message(r), "") == 0);
    CHECK(onnxstream_result_output_count(r) == 0);
    onnxstream_result_free(r);
}

static void test_merge(const char* model) {
    char output[8192];
    const char* keys[] = {"model", "output"};
    const char* values[] = {model, output};
    struct progress_log log = {0};
    onnxstream_result* r = NULL;
    path_in(output, sizeof output, scratch, "merged.onnx");
    CHECK(onnxstream_run("merge", keys, values, 2, on_progress, &log, NULL, &r) == ONNXSTREAM_OK);
    CHECK(onnxstream_result_ok(r));
    CHECK(exists(output));
    CHECK(onnxstream_result_output_count(r) == 1);
    CHECK(strcmp(onnxstream_result_output(r, 0), output) == 0);
    CHECK(strcmp(onnxstream_result_output(r, 1), "") == 0);
    CHECK(strstr(onnxstream_result_report_json(r), "\"ok\":true") != NULL);
    CHECK(log.calls >= 2);
    CHECK(!log.decreasing);
    CHECK(log.last_done == log.last_total && log.last_total > 0);
    onnxstream_result_free(r);

    /* Again: the output exists; the hint words the remedy as a keyword argument. */
    r = NULL;
    CHECK(onnxstream_run("merge", keys, values, 2, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_OUTPUT_EXISTS);
    CHECK(!onnxstream_result_ok(r));
    CHECK(onnxstream_result_error_code(r) == ONNXSTREAM_ERROR_OUTPUT_EXISTS);
    CHECK(strstr(onnxstream_result_error_message(r), "already exists") != NULL);
    CHECK(strstr(onnxstream_result_error_hint(r), "force=True") != NULL);
    CHECK(strstr(onnxstream_result_report_json(r), "\"output_exists\"") != NULL);
    CHECK(strcmp(onnxstream_result_report_text(r), "") == 0);
    onnxstream_result_free(r);

    /* force as a flag "1", spelled either way; the result may be dropped (out NULL). */
    {
        const char* force_keys[] = {"model", "output", "force"};
        const char* force_values[] = {model, output, "1"};
        CHECK(onnxstream_run("merge", force_keys, force_values, 3, NULL, NULL, NULL, NULL) == ONNXSTREAM_OK);
    }
    empty_scratch();
}

static void test_keys_with_underscores(const char* model) {
    char output[8192];
    char data[8192];
    const char* keys[] = {"model", "output", "data_name", "allow_size_mismatch"};
    const char* values[] = {model, output, "weights.bin", "0"};
    onnxstream_result* r = NULL;
    path_in(output, sizeof output, scratch, "split.onnx");
    path_in(data, sizeof data, scratch, "weights.bin");
    CHECK(onnxstream_run("split", keys, values, 4, NULL, NULL, NULL, &r) == ONNXSTREAM_OK);
    CHECK(exists(output) && exists(data));
    CHECK(onnxstream_result_output_count(r) == 2);
    onnxstream_result_free(r);
    empty_scratch();

    /* A command named as Python names it. */
    {
        const char* st_keys[] = {"model", "output"};
        const char* st_values[] = {model, output};
        path_in(output, sizeof output, scratch, "weights.safetensors");
        r = NULL;
        CHECK(onnxstream_run("export_safetensors", st_keys, st_values, 2, NULL, NULL, NULL, &r) == ONNXSTREAM_OK);
        CHECK(exists(output));
        onnxstream_result_free(r);
        empty_scratch();
    }
}

static void test_bad_calls(const char* model) {
    onnxstream_result* r = NULL;
    const char* keys[] = {"model", "bogus"};
    const char* values[] = {model, "1"};
    const char* null_key[] = {NULL};

    CHECK(onnxstream_run("mergee", keys, values, 1, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(onnxstream_result_error_message(r), "unknown command 'mergee'") != NULL);
    CHECK(strstr(onnxstream_result_error_message(r), "merge") != NULL);
    CHECK(strstr(onnxstream_result_report_json(r), "\"invalid_argument\"") != NULL);
    onnxstream_result_free(r);

    r = NULL;
    CHECK(onnxstream_run(NULL, keys, values, 1, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INVALID_ARGUMENT);
    onnxstream_result_free(r);

    r = NULL;
    CHECK(onnxstream_run("inspect", keys, values, 2, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(onnxstream_result_error_message(r), "unknown parameter 'bogus'") != NULL);
    onnxstream_result_free(r);

    /* A value the kind refuses, named as a keyword. */
    {
        const char* threads_keys[] = {"model", "threads"};
        const char* threads_values[] = {model, "many"};
        r = NULL;
        CHECK(onnxstream_run("verify", threads_keys, threads_values, 2, NULL, NULL, NULL, &r) ==
              ONNXSTREAM_ERROR_INVALID_ARGUMENT);
        CHECK(strstr(onnxstream_result_error_message(r), "threads=") != NULL);
        onnxstream_result_free(r);
    }

    r = NULL;
    CHECK(onnxstream_run("inspect", null_key, values, 1, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INVALID_ARGUMENT);
    onnxstream_result_free(r);
    r = NULL;
    CHECK(onnxstream_run("inspect", NULL, NULL, 1, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INVALID_ARGUMENT);
    onnxstream_result_free(r);

    /* The required model left out. */
    r = NULL;
    CHECK(onnxstream_run("inspect", NULL, NULL, 0, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_INVALID_ARGUMENT);
    CHECK(strstr(onnxstream_result_error_message(r), "model") != NULL);
    onnxstream_result_free(r);

    /* Accessors take NULL (the result of a run that found no memory). */
    CHECK(!onnxstream_result_ok(NULL));
    CHECK(strcmp(onnxstream_result_report_json(NULL), "") == 0);
    CHECK(onnxstream_result_output_count(NULL) == 0);
    onnxstream_result_free(NULL);
}

static void test_missing_model(void) {
    char model[8192];
    const char* keys[] = {"model"};
    const char* values[] = {model};
    onnxstream_result* r = NULL;
    int code;
    path_in(model, sizeof model, scratch, "no-such-model.onnx");
    code = onnxstream_run("inspect", keys, values, 1, NULL, NULL, NULL, &r);
    CHECK(code != ONNXSTREAM_OK && code != ONNXSTREAM_ERROR_INTERNAL);
    CHECK(onnxstream_result_error_code(r) == code);
    CHECK(strstr(onnxstream_result_error_message(r), "no-such-model.onnx") != NULL);
    onnxstream_result_free(r);
}

static void test_missing_data(void) {
    char model[8192];
    const char* keys[] = {"model"};
    const char* values[] = {model};
    onnxstream_result* r = NULL;
    path_in(model, sizeof model, fixtures, "bad_missing_data/model.onnx");
    CHECK(onnxstream_run("merge", keys, values, 1, NULL, NULL, NULL, &r) == ONNXSTREAM_ERROR_MISSING_DATA);
    CHECK(strstr(onnxstream_result_error_hint(r), "data=") != NULL);
    onnxstream_result_free(r);
}

static void test_cancel(const char* model) {
    char output[8192];
    const char* keys[] = {"model", "output"};
    const char* values[] = {model, output};
    onnxstream_result* r = NULL;
    onnxstream_cancel* cancel = onnxstream_cancel_new();
    struct progress_log log = {0};
    path_in(output, sizeof output, scratch, "cancelled.onnx");

    /* Set before the run: nothing happens. */
    CHECK(cancel != NULL);
    CHECK(!onnxstream_cancel_is_set(cancel));
    onnxstream_cancel_set(cancel);
    CHECK(onnxstream_cancel_is_set(cancel));
    CHECK(onnxstream_run("merge", keys, values, 2, NULL, NULL, cancel, &r) == ONNXSTREAM_ERROR_INTERRUPTED);
    CHECK(strcmp(onnxstream_error_name(onnxstream_result_error_code(r)), "interrupted") == 0);
    CHECK(!exists(output));
    CHECK(files_in_scratch() == 0);
    onnxstream_result_free(r);
    onnxstream_cancel_free(cancel);

    /* From the progress callback, on its first call: the output and its temp file are gone. */
    r = NULL;
    log.cancel_at_call = 1;
    CHECK(onnxstream_run("merge", keys, values, 2, on_progress, &log, NULL, &r) == ONNXSTREAM_ERROR_INTERRUPTED);
    CHECK(log.calls >= 1);
    CHECK(!exists(output));
    CHECK(files_in_scratch() == 0);
    onnxstream_result_free(r);
}

int main(int argc, char** argv) {
    char model[8192];
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURES\n", argv[0]);
        return 2;
    }
    snprintf(fixtures, sizeof fixtures, "%s", argv[1]);
    snprintf(scratch, sizeof scratch, "%s", "/tmp/onnxstream-capi-XXXXXX");
    if (mkdtemp(scratch) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    path_in(model, sizeof model, fixtures, "one_file/model.onnx");
    if (!exists(model)) {
        fprintf(stderr, "no fixture %s: run scripts/make_fixtures.py first\n", model);
        return 2;
    }

    test_version_and_table();
    test_inspect(model);
    test_merge(model);
    test_keys_with_underscores(model);
    test_bad_calls(model);
    test_missing_model();
    test_missing_data();
    test_cancel(model);

    empty_scratch();
    rmdir(scratch);
    if (failures != 0) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("C API: all checks passed\n");
    return 0;
}
