/* A minimal test harness shared by the C and libuv suites: CHECK records a
 * failure and keeps going; run_test prints one line per test; harness_summary
 * prints the closing "N passed, M failed" line and gives the exit status. */
#ifndef VOLT_TEST_HARNESS_H
#define VOLT_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>

#include "volt_sem.h"

static int harness_failures_in_test;
static int harness_passed;
static int harness_failed;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "    %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                      \
            harness_failures_in_test++;                                          \
        }                                                                        \
    } while (0)

/* Compares two statuses and prints both names when they differ. */
#define CHECK_STATUS(got, want)                                                   \
    do {                                                                          \
        volt_status got_ = (got);                                                 \
        volt_status want_ = (want);                                               \
        if (got_ != want_) {                                                      \
            fprintf(stderr, "    %s:%d: %s returned %s, expected %s\n", __FILE__, \
                    __LINE__, #got, volt_status_str(got_), volt_status_str(want_)); \
            harness_failures_in_test++;                                           \
        }                                                                         \
    } while (0)

/* Fatal variant for set-up steps whose failure would make the rest meaningless. */
#define REQUIRE(cond)                                                             \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "    %s:%d: REQUIRE failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                       \
            abort();                                                              \
        }                                                                         \
    } while (0)

static void run_test(const char *name, void (*fn)(void)) {
    harness_failures_in_test = 0;
    fn();
    if (harness_failures_in_test == 0) {
        harness_passed++;
        printf("ok   %s\n", name);
    } else {
        harness_failed++;
        printf("FAIL %s\n", name);
    }
    fflush(stdout);
}

#define RUN(fn) run_test(#fn, fn)

static int harness_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, harness_passed, harness_failed);
    return harness_failed == 0 ? 0 : 1;
}

#endif
