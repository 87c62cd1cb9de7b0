/* Demo (the C part of `make demo`): twelve threads share 3 permits; each asks
 * for 1 to 3 of them (its weight). While the pool is held, they queue one at a
 * time, so the arrival order is known; then the pool opens. Each thread queues
 * a caller-allocated volt_waiter whose wake callback (run by the releasing
 * thread, the way an event loop would be woken) records the grant and signals
 * the thread's condition variable. The demo prints the arrival order beside
 * the service order, checks FIFO and that the weight-3 request was never
 * overtaken, then runs the same arrivals against the usual pthread counter (a
 * mutex and a condition variable, broadcast on release), which lets later
 * small requests barge past the big one.
 *
 *   make demo-c  (or: make -C tests demo-c) */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "volt_sem.h"

enum { PERMITS = 3, N = 12, BIG = 3, BIG_AT = 3 };

/* Who arrives, in this order; the big request is fourth (index BIG_AT). */
static const struct {
    const char *name;
    size_t weight;
} ARRIVALS[N] = {{"t1", 1}, {"t2", 2}, {"t3", 1}, {"BIG", BIG}, {"t4", 1},  {"t5", 1},
                 {"t6", 2}, {"t7", 1}, {"t8", 2}, {"t9", 1},    {"t10", 1}, {"t11", 1}};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* guards the fields below */
static int served[N], n_served;
static size_t held, peak;

static void served_push(int who) {
    pthread_mutex_lock(&lock);
    served[n_served++] = who;
    held += ARRIVALS[who].weight;
    if (held > peak) peak = held;
    pthread_mutex_unlock(&lock);
}

static void held_sub(size_t n) {
    pthread_mutex_lock(&lock);
    held -= n;
    pthread_mutex_unlock(&lock);
}

static void pause_ms(long ms) {
    struct timespec ts = {0, ms * 1000 * 1000};
    nanosleep(&ts, NULL);
}

static void die(const char *what, volt_status s) {
    fprintf(stderr, "%s: %s\n", what, volt_status_str(s));
    exit(1);
}

/* How many requests that arrived after `who` were served before it. */
static int overtaken(int who) {
    int count = 0;
    for (int i = 0; i < n_served && served[i] != who; i++) count += served[i] > who;
    return count;
}

static void print_order(const char *label, const int *order, int n) {
    printf("%s", label);
    for (int i = 0; i < n; i++) printf(" %s(w%zu)", ARRIVALS[order[i]].name, ARRIVALS[order[i]].weight);
    printf("\n");
}

/* ------------------------------------------------------------- volt-sem */

static const volt_sem *sem;
/* One release at a time: the wake callbacks a release causes run on the
 * releasing thread before it returns, oldest grant first, so the service order
 * they record is the order in which the semaphore granted. */
static pthread_mutex_t release_lock = PTHREAD_MUTEX_INITIALIZER;

typedef struct {
    int who;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int queued, woken;
} request;

static request requests[N];

static void wake(void *ctx) { /* on the releasing thread: short, no blocking */
    request *r = ctx;
    served_push(r->who);
    pthread_mutex_lock(&r->lock);
    r->woken = 1;
    pthread_cond_signal(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

static void release_one(void) {
    pthread_mutex_lock(&release_lock);
    volt_status s = volt_sem_release(sem, 1);
    pthread_mutex_unlock(&release_lock);
    if (s != VOLT_OK) die("volt_sem_release", s);
}

static void *volt_worker(void *arg) {
    request *r = arg;
    size_t n = ARRIVALS[r->who].weight;
    volt_waiter w;
    volt_status s = volt_waiter_init(&w);
    if (s != VOLT_OK) die("volt_waiter_init", s);
    s = volt_sem_acquire(sem, &w, n, wake, r);
    if (s != VOLT_PENDING) die("volt_sem_acquire (the pool is held: it must queue)", s);
    pthread_mutex_lock(&r->lock);
    r->queued = 1; /* tell main: the next one may arrive */
    pthread_cond_broadcast(&r->cond);
    while (!r->woken) pthread_cond_wait(&r->cond, &r->lock);
    pthread_mutex_unlock(&r->lock);
    s = volt_sem_cancel(sem, &w, NULL); /* collect the outcome: VOLT_OK, we hold n */
    if (s != VOLT_OK) die("volt_sem_cancel", s);
    pause_ms(2); /* work */
    for (size_t i = 0; i < n; i++) { /* give them back one by one */
        held_sub(1);
        release_one();
    }
    return NULL;
}

static int run_volt_sem(void) {
    volt_status s = volt_sem_new(PERMITS, &sem);
    if (s != VOLT_OK) die("volt_sem_new", s);
    if ((s = volt_sem_try_acquire(sem, PERMITS)) != VOLT_OK) die("volt_sem_try_acquire", s);
    pthread_t threads[N];
    for (int i = 0; i < N; i++) {
        request *r = &requests[i];
        r->who = i;
        pthread_mutex_init(&r->lock, NULL);
        pthread_cond_init(&r->cond, NULL);
        pthread_create(&threads[i], NULL, volt_worker, r);
        pthread_mutex_lock(&r->lock);
        while (!r->queued) pthread_cond_wait(&r->cond, &r->lock);
        pthread_mutex_unlock(&r->lock);
    }
    for (int i = 0; i < PERMITS; i++) release_one(); /* open the pool */
    for (int i = 0; i < N; i++) pthread_join(threads[i], NULL);

    int arrival[N];
    for (int i = 0; i < N; i++) arrival[i] = i;
    print_order("arrival order:", arrival, N);
    print_order("service order:", served, n_served);
    int fifo = n_served == N && memcmp(served, arrival, sizeof arrival) == 0;
    int big = overtaken(BIG_AT);
    size_t back = volt_sem_available_permits(sem);
    printf("FIFO: %s\n", fifo ? "yes" : "NO");
    printf("weight-%d request overtaken by later arrivals: %d (never overtaken: %s)\n", BIG, big,
           big == 0 ? "yes" : "NO");
    printf("peak permits held: %zu of %d; permits back in the pool: %zu\n", peak, PERMITS, back);
    for (int i = 0; i < N; i++) {
        pthread_mutex_destroy(&requests[i].lock);
        pthread_cond_destroy(&requests[i].cond);
    }
    volt_sem_free(sem);
    return fifo && big == 0 && peak <= PERMITS && back == PERMITS;
}

/* ------------------------------------------- the contrast: a barging counter */

/* The semaphore usually written with pthreads: a count under a mutex, and a
 * condition variable broadcast on release. Whoever sees enough permits first
 * takes them, so small requests keep slipping past a big one. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    size_t available;
    int waiting;
} counter = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0};

static void counter_acquire(size_t n) {
    pthread_mutex_lock(&counter.lock);
    counter.waiting++;
    pthread_cond_broadcast(&counter.cond); /* tells main this one is waiting */
    while (counter.available < n) pthread_cond_wait(&counter.cond, &counter.lock);
    counter.available -= n;
    counter.waiting--;
    pthread_mutex_unlock(&counter.lock);
}

static void counter_release(size_t n) {
    pthread_mutex_lock(&counter.lock);
    counter.available += n;
    pthread_cond_broadcast(&counter.cond);
    pthread_mutex_unlock(&counter.lock);
}

static void *counter_worker(void *arg) {
    int who = (int)(size_t)arg;
    size_t n = ARRIVALS[who].weight;
    counter_acquire(n);
    served_push(who);
    pause_ms(2);
    for (size_t i = 0; i < n; i++) {
        held_sub(1);
        counter_release(1);
        pause_ms(3);
    }
    return NULL;
}

static int run_counter(void) {
    n_served = 0;
    held = peak = 0;
    pthread_t threads[N];
    for (int i = 0; i < N; i++) {
        pthread_create(&threads[i], NULL, counter_worker, (void *)(size_t)i);
        pthread_mutex_lock(&counter.lock);
        while (counter.waiting < i + 1) pthread_cond_wait(&counter.cond, &counter.lock);
        pthread_mutex_unlock(&counter.lock);
    }
    for (int i = 0; i < PERMITS; i++) {
        counter_release(1);
        pause_ms(3);
    }
    for (int i = 0; i < N; i++) pthread_join(threads[i], NULL);
    return overtaken(BIG_AT);
}

int main(void) {
    printf("volt-sem %s (C ABI): %d threads share %d permits, weights 1-%d\n", volt_sem_version(), N,
           PERMITS, BIG);
    int ok = run_volt_sem();
    int barged = run_counter();
    printf("contrast: a pthread mutex+condvar counter, same arrivals: the weight-%d request was "
           "overtaken by %d of the %d later arrivals\n",
           BIG, barged, N - BIG_AT - 1);
    return ok ? 0 : 1;
}
