/* Example: waiting for permits with a deadline, on a condition variable that the
 * wake callback signals, the pattern the header suggests for threads.
 *
 * The callback takes the condition variable's mutex, and volt_sem_cancel() waits
 * for a callback that is running on another thread. So the owner must never call
 * volt_sem_cancel() while holding that mutex: after pthread_cond_timedwait()
 * times out, the grant may be arriving at that very moment, its callback blocked
 * on the mutex the owner holds, and the cancel would wait for it for ever.
 *
 * Two correct ways, both below:
 *   timed_acquire()       unlock the mutex, then volt_sem_cancel();
 *   timed_acquire_locked() stay under the mutex and use volt_sem_try_cancel(),
 *                          which returns VOLT_PENDING instead of waiting for the
 *                          callback; then wait for the callback (cond_wait drops
 *                          the mutex) and try again.
 * Both return VOLT_OK (the caller owns the permits), VOLT_TIMED_OUT or
 * VOLT_CLOSED, and leave the waiter idle.
 *
 * main() races each against a releaser that hands over the permits right around
 * the deadline, and checks that no permit is lost or duplicated.
 *
 *   make -C tests examples */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "volt_sem.h"

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int woken; /* guarded by lock */
    volt_waiter waiter;
} timed_waiter;

/* Runs on the thread that completes the grant (or closes the semaphore). */
static void wake(void *ctx) {
    timed_waiter *t = ctx;
    pthread_mutex_lock(&t->lock);
    t->woken = 1;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static struct timespec deadline_after(long ns) {
    struct timespec d;
    clock_gettime(CLOCK_MONOTONIC, &d); /* the condvar uses CLOCK_MONOTONIC too */
    d.tv_nsec += ns;
    d.tv_sec += d.tv_nsec / 1000000000L;
    d.tv_nsec %= 1000000000L;
    return d;
}

/* Maps what the cancel found to the caller's result. */
static volt_status outcome(volt_status ended) {
    switch (ended) {
    case VOLT_OK:
        return VOLT_OK; /* the grant won the race with the timeout: keep it */
    case VOLT_CLOSED:
        return VOLT_CLOSED;
    case VOLT_CANCELLED:
        return VOLT_TIMED_OUT; /* any partial grant was handed on */
    default:
        fprintf(stderr, "unexpected cancel result %s\n", volt_status_str(ended));
        abort();
    }
}

/* Pattern 1: wait under the mutex, cancel after unlocking it. */
static volt_status timed_acquire(const volt_sem *sem, timed_waiter *t, size_t n, long timeout_ns) {
    pthread_mutex_lock(&t->lock);
    t->woken = 0;
    pthread_mutex_unlock(&t->lock);
    volt_status s = volt_sem_acquire(sem, &t->waiter, n, wake, t);
    if (s != VOLT_PENDING) return s; /* VOLT_OK at once, or an error: not busy */

    struct timespec deadline = deadline_after(timeout_ns);
    pthread_mutex_lock(&t->lock);
    int rc = 0;
    while (!t->woken && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&t->cond, &t->lock, &deadline);
    pthread_mutex_unlock(&t->lock); /* BEFORE the cancel: the callback may need it */

    /* Woken or not, the PENDING acquire is ended by exactly one cancel. */
    return outcome(volt_sem_cancel(sem, &t->waiter, NULL));
}

/* Pattern 2: the mutex stays held; volt_sem_try_cancel() never waits for the
 * callback. The mutex must only be one that this waiter's own callback takes. */
static volt_status timed_acquire_locked(const volt_sem *sem, timed_waiter *t, size_t n,
                                        long timeout_ns) {
    pthread_mutex_lock(&t->lock);
    t->woken = 0;
    volt_status s = volt_sem_acquire(sem, &t->waiter, n, wake, t);
    if (s != VOLT_PENDING) {
        pthread_mutex_unlock(&t->lock);
        return s;
    }
    struct timespec deadline = deadline_after(timeout_ns);
    int rc = 0;
    while (!t->woken && rc != ETIMEDOUT) rc = pthread_cond_timedwait(&t->cond, &t->lock, &deadline);
    volt_status ended;
    /* VOLT_PENDING: the callback is running (blocked on our mutex) or about to
     * run; it will signal. Let it (cond_wait drops the mutex), then try again.
     * Once it has signalled it no longer needs the mutex, but it may not have
     * returned yet: then yield and try again. */
    while ((ended = volt_sem_try_cancel(sem, &t->waiter, NULL)) == VOLT_PENDING) {
        if (t->woken) sched_yield();
        while (!t->woken) pthread_cond_wait(&t->cond, &t->lock);
    }
    pthread_mutex_unlock(&t->lock);
    return outcome(ended);
}

/* ---------------------------------------------------------------- the demo */

static int init_timed_waiter(timed_waiter *t) {
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int ok = pthread_mutex_init(&t->lock, NULL) == 0 && pthread_cond_init(&t->cond, &attr) == 0 &&
             volt_waiter_init(&t->waiter) == VOLT_OK;
    pthread_condattr_destroy(&attr);
    return ok;
}

typedef struct {
    const volt_sem *sem;
    long delay_ns;
} releaser_args;

static void *releaser(void *p) {
    releaser_args *a = p;
    struct timespec d = {0, a->delay_ns};
    nanosleep(&d, NULL);
    if (volt_sem_release(a->sem, 1) != VOLT_OK) abort();
    return NULL;
}

enum { ROUNDS = 200 };
static const long TIMEOUT_NS = 200000; /* 200 us */

int main(void) {
    const volt_sem *sem = NULL;
    if (volt_sem_new(0, &sem) != VOLT_OK) return 1;
    timed_waiter t;
    if (!init_timed_waiter(&t)) return 1;
    int failures = 0;
    for (int locked = 0; locked < 2; locked++) {
        int granted = 0, timed_out = 0;
        for (int i = 0; i < ROUNDS; i++) {
            /* The permit arrives between half and one and a half timeouts in. */
            releaser_args a = {sem, TIMEOUT_NS / 2 + (long)(i % 10) * (TIMEOUT_NS / 10)};
            pthread_t th;
            if (pthread_create(&th, NULL, releaser, &a) != 0) return 1;
            volt_status s = locked ? timed_acquire_locked(sem, &t, 1, TIMEOUT_NS)
                                   : timed_acquire(sem, &t, 1, TIMEOUT_NS);
            pthread_join(th, NULL);
            if (s == VOLT_OK) {
                granted++; /* we own the permit: give it back */
                if (volt_sem_release(sem, 1) != VOLT_OK) failures++;
            } else if (s == VOLT_TIMED_OUT) {
                timed_out++; /* the releaser's permit went to the counter */
            } else {
                failures++;
            }
            /* Exactly the released permit is left, and the waiter is idle again. */
            if (volt_sem_try_acquire(sem, 1) != VOLT_OK) failures++;
            if (volt_sem_available_permits(sem) != 0) failures++;
            if (volt_waiter_is_busy(&t.waiter)) failures++;
        }
        printf("%-22s %d granted, %d timed out\n",
               locked ? "timed_acquire_locked:" : "timed_acquire:", granted, timed_out);
    }
    volt_sem_free(sem);
    pthread_cond_destroy(&t.cond);
    pthread_mutex_destroy(&t.lock);
    printf("timed_wait: %d failures\n", failures);
    return failures == 0 ? 0 : 1;
}
