/* onnxstream's C API: run any onnxstream command by name, get its report as JSON.
 *
 * The stable face of the library for other languages (the Python package is built on it)
 * and for programs that should not depend on a C++ ABI. Nothing C++ crosses it: strings
 * are NUL-terminated UTF-8 (paths are the operating system's bytes), results are opaque
 * handles, and no C++ exception ever leaves a function here (one that would becomes an
 * ONNXSTREAM_ERROR_INTERNAL result).
 *
 * A command and its parameters are those of the command line, described as data by
 * onnxstream_commands_json(): "merge" with "model", "output", "data" (repeatable),
 * "force" (a flag: "1" or "0") ... A parameter may be spelled "data-name" or "data_name".
 *
 *     const char* keys[] = {"model", "output", "data"};
 *     const char* values[] = {"model.onnx", "merged.onnx", "weights.bin"};
 *     onnxstream_result* r = NULL;
 *     if (onnxstream_run("merge", keys, values, 3, NULL, NULL, NULL, &r) != ONNXSTREAM_OK)
 *         fprintf(stderr, "%s\n%s\n", onnxstream_result_error_message(r), onnxstream_result_error_hint(r));
 *     else
 *         puts(onnxstream_result_report_json(r));
 *     onnxstream_result_free(r);
 *
 * The first run that maps a model installs the library's process-wide SIGBUS guard, which
 * chains to a handler installed before it: a model truncated while it is read gives an
 * error instead of killing the process.
 *
 * Versioning: ONNXSTREAM_API_VERSION grows when a function is added; a function never
 * changes its signature or meaning, and the error numbers below never change. A program
 * compiled against version N runs with a library whose onnxstream_api_version() >= N. The
 * shared library's SOVERSION changes only if that promise is broken.
 */
#ifndef ONNXSTREAM_H
#define ONNXSTREAM_H

#include <stddef.h>
#include <stdint.h>

#define ONNXSTREAM_API_VERSION 1

#if defined(_WIN32)
#  if defined(ONNXSTREAM_C_BUILDING)
#    define ONNXSTREAM_C_EXPORT __declspec(dllexport)
#  else
#    define ONNXSTREAM_C_EXPORT __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define ONNXSTREAM_C_EXPORT __attribute__((visibility("default")))
#else
#  define ONNXSTREAM_C_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* What went wrong, as a number that never changes (onnxstream_error_name() gives the
 * short name the JSON reports use, "missing_data"). */
enum onnxstream_status {
    ONNXSTREAM_OK = 0,
    ONNXSTREAM_ERROR_IO = 1,                 /* the operating system refused (open, read, write, rename) */
    ONNXSTREAM_ERROR_NO_SPACE = 2,           /* the output's file system is full */
    ONNXSTREAM_ERROR_MALFORMED = 3,          /* the bytes are not valid protobuf */
    ONNXSTREAM_ERROR_LIMIT_EXCEEDED = 4,     /* valid protobuf past a limit (depth, counts) */
    ONNXSTREAM_ERROR_NOT_ONNX = 5,           /* valid protobuf that is not an ONNX model */
    ONNXSTREAM_ERROR_MISSING_DATA = 6,       /* an external data file could not be found */
    ONNXSTREAM_ERROR_TRUNCATED_DATA = 7,     /* an external data file is shorter than a tensor needs */
    ONNXSTREAM_ERROR_UNSAFE_LOCATION = 8,    /* an external location is absolute, leaves the folder, links out */
    ONNXSTREAM_ERROR_INVALID_TENSOR = 9,     /* bad external_data entry, negative dims, overflowing sizes */
    ONNXSTREAM_ERROR_SIZE_MISMATCH = 10,     /* tensor bytes != product(dims) * element size */
    ONNXSTREAM_ERROR_CHECKSUM_MISMATCH = 11, /* a SHA-1 checksum key does not match the bytes */
    ONNXSTREAM_ERROR_TOO_LARGE = 12,         /* a single-file output would pass protobuf's 2 GB limit */
    ONNXSTREAM_ERROR_OUTPUT_EXISTS = 13,     /* the output exists and force was not given */
    ONNXSTREAM_ERROR_OUTPUT_IS_INPUT = 14,   /* the output would overwrite one of the inputs */
    ONNXSTREAM_ERROR_INTERRUPTED = 15,       /* cancelled by the caller; nothing was left behind */
    ONNXSTREAM_ERROR_UNSUPPORTED = 16,       /* valid input this version cannot handle */
    ONNXSTREAM_ERROR_INVALID_ARGUMENT = 17,  /* an unknown command or parameter, a bad value */
    ONNXSTREAM_ERROR_INTERNAL = 99           /* a bug or no memory left: the message says which */
};

/* The library's ONNXSTREAM_API_VERSION (may be newer than the header a program saw). */
ONNXSTREAM_C_EXPORT int onnxstream_api_version(void);
/* The library's release, "0.1.0". */
ONNXSTREAM_C_EXPORT const char* onnxstream_version(void);
/* "missing_data" for ONNXSTREAM_ERROR_MISSING_DATA, "ok" for 0, "internal", or "unknown". */
ONNXSTREAM_C_EXPORT const char* onnxstream_error_name(int code);

/* Every command and its parameters, as JSON (static storage; NULL only if memory ran out):
 * [{"name", "title", "summary", "description", "writes", "surfaces": [...],
 *   "parameters": [{"name", "kind", "default", "help", "label", "placeholder", "short",
 *                   "choices", "repeatable", "required", "positional", "hidden", "surfaces"}]}]
 * kind: text, path, model, size ("4096", "64K", "1M", "2G"), count, number, flag, choice.
 * onnxstream_run takes the parameters whose "surfaces" list "python". */
ONNXSTREAM_C_EXPORT const char* onnxstream_commands_json(void);

/* Progress: one stage at a time ("merge model.onnx"), `done` of `total` in `unit` ("bytes",
 * "passes"...). Called on the thread running onnxstream_run or on one of its workers, never
 * two at once, and not more often than the work moves on by about a thousandth. Returning
 * nonzero cancels the run as onnxstream_cancel_set does. */
typedef int (*onnxstream_progress_fn)(void* user, const char* stage, uint64_t done, uint64_t total,
                                      const char* unit);

/* A cancellation flag that another thread sets: the run stops at its next check with
 * ONNXSTREAM_ERROR_INTERRUPTED and removes what it had started writing (inputs are never
 * changed). Set before the run starts, the run does nothing. */
typedef struct onnxstream_cancel onnxstream_cancel;
ONNXSTREAM_C_EXPORT onnxstream_cancel* onnxstream_cancel_new(void); /* NULL if memory ran out */
ONNXSTREAM_C_EXPORT void onnxstream_cancel_set(onnxstream_cancel* cancel);
ONNXSTREAM_C_EXPORT int onnxstream_cancel_is_set(const onnxstream_cancel* cancel);
ONNXSTREAM_C_EXPORT void onnxstream_cancel_free(onnxstream_cancel* cancel); /* after the run returned */

typedef struct onnxstream_result onnxstream_result;

/* Runs `command` ("merge", "export-caffe" or "export_caffe") with `count` parameters:
 * keys[i] = values[i]. A repeatable parameter's key may come several times; a flag is "1"
 * or "0"; a parameter not given takes its default. Returns ONNXSTREAM_OK or the error's
 * number, and stores a result in *out (when out is not NULL) that the caller frees with
 * onnxstream_result_free, whatever the outcome. *out is NULL only when even the result
 * could not be allocated. progress, user and cancel may be NULL. Several runs may go on
 * at once on different threads. */
ONNXSTREAM_C_EXPORT int onnxstream_run(const char* command, const char* const* keys, const char* const* values,
                                       size_t count, onnxstream_progress_fn progress, void* user,
                                       onnxstream_cancel* cancel, onnxstream_result** out);

/* The result's strings live until onnxstream_result_free; none is NULL (a string that
 * does not apply is empty), and each accessor takes a NULL result (as after no memory). */
ONNXSTREAM_C_EXPORT int onnxstream_result_ok(const onnxstream_result* r);
/* The report ({"ok": true, ...}); on an error {"ok": false, "error": {"code", "message", "hint", ...}}. */
ONNXSTREAM_C_EXPORT const char* onnxstream_result_report_json(const onnxstream_result* r);
/* The report for people, as the command line prints it (empty on an error). */
ONNXSTREAM_C_EXPORT const char* onnxstream_result_report_text(const onnxstream_result* r);
/* verify: the model is whole; diff: the models are equivalent; export-caffe check: within
 * tolerance; 1 for every other successful run, 0 on an error. */
ONNXSTREAM_C_EXPORT int onnxstream_result_passed(const onnxstream_result* r);
/* The files the run wrote (the output first). */
ONNXSTREAM_C_EXPORT size_t onnxstream_result_output_count(const onnxstream_result* r);
ONNXSTREAM_C_EXPORT const char* onnxstream_result_output(const onnxstream_result* r, size_t index);
/* ONNXSTREAM_OK, or the error's number, its message (with the byte offset and field path
 * where known) and its hint, which names remedies as keyword arguments ("pass force=True"). */
ONNXSTREAM_C_EXPORT int onnxstream_result_error_code(const onnxstream_result* r);
ONNXSTREAM_C_EXPORT const char* onnxstream_result_error_message(const onnxstream_result* r);
ONNXSTREAM_C_EXPORT const char* onnxstream_result_error_hint(const onnxstream_result* r);
ONNXSTREAM_C_EXPORT void onnxstream_result_free(onnxstream_result* r);

#ifdef __cplusplus
}
#endif

#endif /* ONNXSTREAM_H */
