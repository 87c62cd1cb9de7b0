/* Demo: six workers share 3 permits; each job needs 1 to 3 of them (its weight).
 * Half the workers block in volt_sem_acquire_blocking(); the others queue a
 * volt_waiter whose wake callback signals their condition variable, the way an
 * event loop would be woken. Every grant is FIFO; the printout tracks how many
 * permits are in use, which never exceeds 3.
 *
 *   make -C tests demo-c */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "volt_sem.h"

enum { WORKERS = 6, PERMITS = 3, JOBS = 3 };

static const volt_sem *sem;
static atomic_int in_use;
static atomic_int peak;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int woken;
} signal_t;

static void wake(void *ctx) { /* runs on the releasing thread: short, no blocking */
    signal_t *s = ctx;
    pthread_mutex_lock(&s->lock);
    s->woken = 1;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void die(const char *what, volt_status s) {
    fprintf(stderr, "%s: %s\n", what, volt_status_str(s));
    exit(1);
}

/* Acquires `n` permits with a caller-allocated waiter and a wake callback. */
static void acquire_with_waiter(size_t n) {
    volt_waiter w;
    signal_t sig = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    volt_status s = volt_waiter_init(&w);
    if (s != VOLT_OK) die("volt_waiter_init", s);
    s = volt_sem_acquire(sem, &w, n, wake, &sig);
    if (s == VOLT_OK) return; /* ready at once */
    if (s != VOLT_PENDING) die("volt_sem_acquire", s);
    pthread_mutex_lock(&sig.lock);
    while (!sig.woken) pthread_cond_wait(&sig.cond, &sig.lock);
    pthread_mutex_unlock(&sig.lock);
    /* Collect the outcome; after this, `w` and `sig` may go out of scope. */
    s = volt_sem_cancel(sem, &w, NULL);
    if (s != VOLT_OK) die("volt_sem_cancel", s);
}

static void *worker(void *arg) {
    int id = (int)(size_t)arg;
    size_t weight = (size_t)(id % PERMITS) + 1;
    for (int job = 0; job < JOBS; job++) {
        if (id % 2 == 0) {
            volt_status s = volt_sem_acquire_blocking(sem, weight, -1);
            if (s != VOLT_OK) die("volt_sem_acquire_blocking", s);
        } else {
            acquire_with_waiter(weight);
        }
        int now = atomic_fetch_add(&in_use, (int)weight) + (int)weight;
        int seen = atomic_load(&peak);
        while (now > seen && !atomic_compare_exchange_weak(&peak, &seen, now)) {
        }
        pthread_mutex_lock(&print_lock);
        printf("worker %d (%s, weight %zu) job %d: %d/%d permits in use%s\n", id,
               id % 2 == 0 ? "blocking" : "waiter  ", weight, job + 1, now, PERMITS,
               now > PERMITS ? " <-- LIMIT BROKEN" : "");
        pthread_mutex_unlock(&print_lock);
        struct timespec ts = {0, 15 * 1000 * 1000};
        nanosleep(&ts, NULL);
        atomic_fetch_sub(&in_use, (int)weight);
        volt_status s = volt_sem_release(sem, weight);
        if (s != VOLT_OK) die("volt_sem_release", s);
    }
    return NULL;
}

int main(void) {
    printf("volt-sem %s: %d workers share %d permits (weights 1-3)\n", volt_sem_version(),
           WORKERS, PERMITS);
    volt_status s = volt_sem_new(PERMITS, &sem);
    if (s != VOLT_OK) die("volt_sem_new", s);
    pthread_t threads[WORKERS];
    for (int i = 0; i < WORKERS; i++) pthread_create(&threads[i], NULL, worker, (void *)(size_t)i);
    for (int i = 0; i < WORKERS; i++) pthread_join(threads[i], NULL);
    size_t back = volt_sem_available_permits(sem);
    printf("peak: %d of %d permits in use; %zu of %d permits back at the end: %s\n",
           atomic_load(&peak), PERMITS, back, PERMITS,
           atomic_load(&peak) <= PERMITS && back == PERMITS ? "the limit held" : "LIMIT BROKEN");
    volt_sem_free(sem);
    return atomic_load(&peak) <= PERMITS && back == PERMITS ? 0 : 1;
}
