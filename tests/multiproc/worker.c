/* The C worker of the mixed-language stress (tests/multiproc/driver.py).
 *
 *   worker NAME TOTAL DEADLINE_MS SEED        threads hammering the name
 *   worker --check NAME TOTAL                 the final conservation check
 *   worker --unlink NAME                      removes the name
 *
 * Three threads loop until DEADLINE_MS (wall clock, ms since the epoch), each
 * round with a random weight 1..=4 and one of: try_acquire; a blocking acquire
 * with a random timeout; a queued raw acquire (volt_sem_acquire) cancelled
 * after a random delay unless granted first. A grant is reported to the
 * driver's counter ("+ w") before the permits are used and "- w" before they
 * are released, each a round trip on the pipes VOLT_MP_WFD / VOLT_MP_RFD (one
 * round trip at a time per process). At the end it reports "d 0" and waits,
 * still attached, until the driver's conservation check is over (so a permit
 * it leaked would still be held); then one JSON line of counts on stdout.
 * Any unexpected status exits 1.
 *
 * --check: acquires the whole total (waiting at most 20 s: a dead process's
 * permits come back within the liveness sweep), checks that nothing is left
 * available, releases, and checks that everything is available again.
 *
 * With VOLT_MP_REDIS set (a Redis URL), the semaphore is the one stored there
 * under NAME (volt_sem_connect, lease VOLT_MP_LEASE_MS), not a named segment.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "volt_sem.h"

#define THREADS 3

static const struct volt_sem *sem;
static size_t total;
static int64_t deadline_ms;
static int rfd = -1, wfd = -1;
static pthread_mutex_t pipe_lock = PTHREAD_MUTEX_INITIALIZER;

static atomic_long grants, timeouts, cancels, try_fails;

static void die(const char *what, volt_status st) {
    fprintf(stderr, "c worker %d: %s: unexpected status %d\n", (int)getpid(), what, (int)st);
    exit(1);
}

static int64_t now_ms(void) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* One round trip with the driver's counter: "+ w" / "- w", answered "ok". */
static void counter(char sign, size_t w) {
    char line[32];
    int len = snprintf(line, sizeof line, "%c %zu\n", sign, w);
    pthread_mutex_lock(&pipe_lock);
    if (write(wfd, line, (size_t)len) != len) {
        perror("c worker: write to the driver");
        exit(1);
    }
    char ok[3];
    size_t got = 0;
    while (got < sizeof ok) {
        ssize_t r = read(rfd, ok + got, sizeof ok - got);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            fprintf(stderr, "c worker: the driver went away\n");
            exit(1);
        }
        got += (size_t)r;
    }
    pthread_mutex_unlock(&pipe_lock);
}

static void use_and_release(size_t w, unsigned *seed) {
    atomic_fetch_add(&grants, 1);
    counter('+', w);
    sleep_us(rand_r(seed) % 3000);
    counter('-', w);
    volt_status st = volt_sem_release(sem, w);
    if (st != VOLT_OK) die("release", st);
}

static void on_wake(void *ctx) {
    atomic_store((atomic_int *)ctx, 1);
}

static void *run(void *arg) {
    unsigned seed = (unsigned)(uintptr_t)arg;
    _Alignas(16) struct volt_waiter waiter;
    volt_status st = volt_waiter_init(&waiter);
    if (st != VOLT_OK) die("waiter_init", st);
    while (now_ms() < deadline_ms) {
        size_t w = 1 + rand_r(&seed) % 4;
        switch (rand_r(&seed) % 3) {
        case 0:
            st = volt_sem_try_acquire(sem, w);
            if (st == VOLT_OK) use_and_release(w, &seed);
            else if (st == VOLT_WOULD_BLOCK) atomic_fetch_add(&try_fails, 1), sleep_us(500);
            else die("try_acquire", st);
            break;
        case 1:
            st = volt_sem_acquire_blocking(sem, w, (int64_t)(1 + rand_r(&seed) % 50) * 1000000);
            if (st == VOLT_OK) use_and_release(w, &seed);
            else if (st == VOLT_TIMED_OUT) atomic_fetch_add(&timeouts, 1);
            else die("acquire_blocking", st);
            break;
        default: {
            atomic_int woken = 0;
            st = volt_sem_acquire(sem, &waiter, w, on_wake, &woken);
            if (st == VOLT_OK) {
                use_and_release(w, &seed);
                break;
            }
            if (st != VOLT_PENDING) die("acquire", st);
            sleep_us(rand_r(&seed) % 30000);
            size_t returned = 0;
            st = volt_sem_cancel(sem, &waiter, &returned);
            if (st == VOLT_OK) use_and_release(w, &seed);
            else if (st == VOLT_CANCELLED) atomic_fetch_add(&cancels, 1);
            else die("cancel", st);
        }
        }
    }
    return NULL;
}

/* The semaphore of the run: in Redis when VOLT_MP_REDIS names one, else the
 * named segment (attach-only for the check, which must not create it). */
static volt_status open_sem(const char *name, uint32_t flags) {
    const char *url = getenv("VOLT_MP_REDIS");
    if (!url) return volt_sem_open(name, total, flags, &sem);
    volt_connect_options opts;
    volt_connect_options_init(&opts, sizeof opts);
    const char *lease = getenv("VOLT_MP_LEASE_MS");
    if (lease) opts.lease_ms = strtoull(lease, NULL, 10);
    return volt_sem_connect(url, name, total, &opts, &sem);
}

static int check(const char *name) {
    volt_status st = open_sem(name, VOLT_OPEN_ATTACH_ONLY);
    if (st != VOLT_OK) die("open (check)", st);
    st = volt_sem_acquire_blocking(sem, total, (int64_t)20 * 1000000000);
    if (st != VOLT_OK) {
        fprintf(stderr, "check: acquire(%zu) of the whole total: status %d (available %zu): permits lost\n",
                total, (int)st, volt_sem_available_permits(sem));
        return 1;
    }
    size_t left = volt_sem_available_permits(sem);
    st = volt_sem_release(sem, total);
    size_t after = volt_sem_available_permits(sem);
    printf("{\"check\": true, \"available_while_held\": %zu, \"available_after\": %zu, \"release\": %d}\n",
           left, after, (int)st);
    volt_sem_free(sem);
    return left == 0 && after == total && st == VOLT_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "--unlink") == 0) {
        volt_status st = volt_sem_unlink(argv[2]);
        return st == VOLT_OK || st == VOLT_NOT_FOUND ? 0 : 1;
    }
    if (argc == 4 && strcmp(argv[1], "--check") == 0) {
        total = strtoull(argv[3], NULL, 10);
        return check(argv[2]);
    }
    if (argc != 5) {
        fprintf(stderr, "usage: worker NAME TOTAL DEADLINE_MS SEED | worker --check NAME TOTAL\n");
        return 2;
    }
    total = strtoull(argv[2], NULL, 10);
    deadline_ms = strtoll(argv[3], NULL, 10);
    unsigned seed = (unsigned)strtoul(argv[4], NULL, 10);
    const char *r = getenv("VOLT_MP_RFD"), *w = getenv("VOLT_MP_WFD");
    if (!r || !w) {
        fprintf(stderr, "c worker: VOLT_MP_RFD / VOLT_MP_WFD not set\n");
        return 2;
    }
    rfd = atoi(r);
    wfd = atoi(w);
    volt_status st = open_sem(argv[1], 0);
    if (st != VOLT_OK) die("open", st);
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++) {
        pthread_create(&t[i], NULL, run, (void *)(uintptr_t)(seed * 7919u + (unsigned)i));
    }
    for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
    /* Everything released: stay attached (a leak would stay held) until the
     * driver's conservation check is done. */
    counter('d', 0);
    printf("{\"lang\": \"c\", \"grants\": %ld, \"timeouts\": %ld, \"cancels\": %ld, \"try_fails\": %ld}\n",
           atomic_load(&grants), atomic_load(&timeouts), atomic_load(&cancels), atomic_load(&try_fails));
    volt_sem_free(sem);
    return 0;
}
