/* A minimal test harness shared by the C and libuv suites: CHECK records a
 * failure and keeps going; run_test prints one line per test; harness_summary
 * prints the closing "N passed, M failed" line and gives the exit status. */
#ifndef VOLT_TEST_HARNESS_H
#define VOLT_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if !defined(_WIN32)
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

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

/* Checks that volt_last_error_message() holds `needle` (the message of the
 * call just made), printing the message when it does not; `call` names the
 * call in that report. */
static inline void expect_message(const char *call, const char *needle) {
    char msg[512];
    size_t n = volt_last_error_message(msg, sizeof msg);
    if (n == 0 || strstr(msg, needle) == NULL) {
        fprintf(stderr, "  %s: message \"%s\" lacks \"%s\"\n", call, msg, needle);
        CHECK(0);
    }
}

#if !defined(_WIN32)
/* A test that hangs fails its suite with its name instead of holding the run
 * (CI's budget) until something outside kills it: each test gets this many
 * seconds (valgrind included), then SIGALRM ends the process. */
#define HARNESS_TEST_SECONDS 300
static const char *harness_current = "";

static void harness_write(const char *s) {
    size_t n = strlen(s);
    if (write(2, s, n) != (ssize_t)n) return;
}

static void harness_timed_out(int sig) {
    (void)sig; /* async-signal-safe calls only */
    harness_write("TIMEOUT: ");
    harness_write(harness_current);
    harness_write(" did not finish in time (a hang)\n");
    _exit(124);
}

/* For a child of fork() that does not exec: the parent's handler and timer
 * are not its own; a child that hangs dies of SIGALRM after `seconds`, so
 * its parent sees it end (and its test fail) instead of waiting for ever. */
static inline void harness_child_watchdog(unsigned seconds) {
    signal(SIGALRM, SIG_DFL);
    alarm(seconds);
}

/* The end of a fork child made by harness_fork_and_return_in_child, when its
 * last thread ends: skips the exit handlers registered before
 * (LeakSanitizer's leak check in a fork child of a threaded process can
 * stall). */
static inline void harness_end_child_quietly(void) { _exit(0); }

/* The destructor of a thread-specific value that the fork child's one
 * thread sets: it runs once that thread has returned from its start routine
 * (the library's thread ended there: what the tests check) and its Rust
 * thread-locals are destroyed, and ends the child at once. Without it the
 * thread's exit went on into the sanitizer runtime's own teardown of the
 * thread (ASan's AsanThread::Destroy hands the thread's allocator cache back
 * under the allocator's size-class lock), which can wait for ever in a fork
 * child: another of the parent's threads may have held that lock at the
 * fork, and the runtime does not take it around fork(). Under load the child
 * then died of its watchdog, its thread already ended (seen with gdb: stuck
 * in __nptl_deallocate_tsd -> AsanThread::Destroy -> ReturnToAllocator). The
 * sanitizers run their own destructor last (they re-arm it until the last
 * round), so this one comes first. */
static void harness_end_child_at_thread_exit(void *unused) {
    (void)unused;
    _exit(0);
}

/* fork() from inside a wake callback running on a library thread, for the
 * tests that check what that thread does in the child once the callback
 * returns there: returns 0 in the child (watchdog armed, `report_read`, the
 * read end of the parent's report pipe, closed unless -1) and the child's
 * pid in the parent. The child exits with status 0 as soon as that thread
 * ends (harness_end_child_at_thread_exit); a thread that never ends leaves
 * the child to its watchdog (killed by SIGALRM, not exited). */
static inline pid_t harness_fork_and_return_in_child(int report_read) {
    pid_t pid = fork();
    if (pid == 0) {
        harness_child_watchdog(5); /* a child that never ends dies of SIGALRM */
        if (atexit(harness_end_child_quietly) != 0) _exit(2);
        static pthread_key_t end_at_exit;
        if (pthread_key_create(&end_at_exit, harness_end_child_at_thread_exit) != 0) _exit(2);
        if (pthread_setspecific(end_at_exit, &end_at_exit) != 0) _exit(2);
        if (report_read >= 0) close(report_read);
    }
    return pid;
}

/* The parent's end of a harness_fork_and_return_in_child test: closes the
 * write end of the report pipe, reaps the child, and checks that it ended on
 * its own (exited, not killed by its watchdog) and that no callback ran in it
 * (nothing was written to the pipe). Closes the read end too. */
static inline void harness_check_fork_child_ended_quietly(pid_t pid, int report[2]) {
    close(report[1]);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status)); /* not killed by its watchdog: it ended */
    char byte = 0;
    CHECK(read(report[0], &byte, 1) == 0); /* no callback ran in the child */
    close(report[0]);
}
#endif

static void run_test(const char *name, void (*fn)(void)) {
    /* VOLT_TEST=part: run only the tests whose name contains it (to repeat one). */
    const char *only = getenv("VOLT_TEST");
    if (only && *only && !strstr(name, only)) return;
    harness_failures_in_test = 0;
#if !defined(_WIN32)
    harness_current = name;
    signal(SIGALRM, harness_timed_out);
    alarm(HARNESS_TEST_SECONDS);
#endif
    fn();
#if !defined(_WIN32)
    alarm(0);
#endif
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

#if !defined(_WIN32)
/* A thread blocked in volt_sem_acquire_blocking(sem, 1, forever): start it
 * with pthread_create(&t, NULL, block_one, &b), read `got` after the join. */
typedef struct {
    const volt_sem *sem;
    volt_status got;
} blocked_acquire;

static inline void *block_one(void *arg) {
    blocked_acquire *b = arg;
    b->got = volt_sem_acquire_blocking(b->sem, 1, -1);
    return NULL;
}
#endif

static int harness_summary(const char *suite) {
    printf("%s: %d passed, %d failed\n", suite, harness_passed, harness_failed);
    return harness_failed == 0 ? 0 : 1;
}

#endif
