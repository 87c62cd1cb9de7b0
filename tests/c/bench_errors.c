/* What a failed call costs through the C ABI (`make -C tests bench-errors`,
 * against the release static library): the error statuses a C program meets
 * every day (VOLT_WOULD_BLOCK from volt_sem_try_acquire, VOLT_INVALID_ARGUMENT
 * from a refused argument), beside a successful try_acquire + release, and
 * a failed try_acquire followed by the read of its message. Not a test: it
 * prints nanoseconds per call, the best of ROUNDS rounds (the machine's
 * noise only ever adds time). `bench_errors K` runs case K (0 to 3) alone,
 * once: under callgrind, its function's inclusive count over CALLS is the
 * instructions per call, which the load of the machine does not change. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "volt_sem.h"

#ifndef ROUNDS
#define ROUNDS 7
#endif
#ifndef CALLS
#define CALLS 5000000L
#endif

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Keeps the compiler from dropping the calls' results. */
static volatile int32_t sink;

static double failed_try_acquire(const volt_sem *empty) {
    double t = now_ns();
    for (long i = 0; i < CALLS; i++) sink = volt_sem_try_acquire(empty, 1);
    return (now_ns() - t) / CALLS;
}

static double refused_argument(const volt_sem *empty) {
    double t = now_ns();
    for (long i = 0; i < CALLS; i++) sink = volt_sem_try_acquire(empty, 0);
    return (now_ns() - t) / CALLS;
}

static double try_acquire_release(const volt_sem *one) {
    double t = now_ns();
    for (long i = 0; i < CALLS; i++) {
        sink = volt_sem_try_acquire(one, 1);
        sink = volt_sem_release(one, 1);
    }
    return (now_ns() - t) / CALLS;
}

static double failed_try_acquire_and_message(const volt_sem *empty) {
    char msg[128];
    double t = now_ns();
    for (long i = 0; i < CALLS; i++) {
        sink = volt_sem_try_acquire(empty, 1);
        sink = (int32_t)volt_last_error_message(msg, sizeof msg);
    }
    return (now_ns() - t) / CALLS;
}

int main(int argc, char **argv) {
    const volt_sem *empty = NULL, *one = NULL;
    if (volt_sem_new(0, &empty) != VOLT_OK || volt_sem_new(1, &one) != VOLT_OK) return 1;
    if (argc > 1) {
        /* One case, one round (for callgrind: instructions per call are the
         * case's function's inclusive count over CALLS). */
        double (*cases[])(const volt_sem *) = {failed_try_acquire, refused_argument,
                                               try_acquire_release, failed_try_acquire_and_message};
        int k = atoi(argv[1]);
        if (k < 0 || k > 3) return 2;
        printf("%.2f ns\n", cases[k](k == 2 ? one : empty));
        return 0;
    }
    static const char *names[] = {
        "try_acquire failed (VOLT_WOULD_BLOCK)",
        "try_acquire refused (VOLT_INVALID_ARGUMENT, n == 0)",
        "try_acquire + release (VOLT_OK)",
        "try_acquire failed + volt_last_error_message",
    };
    double best[4] = {1e30, 1e30, 1e30, 1e30};
    for (int r = 0; r < ROUNDS; r++) {
        double ns[4] = {failed_try_acquire(empty), refused_argument(empty),
                        try_acquire_release(one), failed_try_acquire_and_message(empty)};
        for (int k = 0; k < 4; k++)
            if (ns[k] < best[k]) best[k] = ns[k];
    }
    for (int k = 0; k < 4; k++) printf("%-55s %6.2f ns\n", names[k], best[k]);
    volt_sem_free(empty);
    volt_sem_free(one);
    return 0;
}
