/* C test suite for the volt-sem C ABI, built against include/volt_sem.h and the
 * static library with ASan+UBSan, with ThreadSanitizer and under valgrind, and
 * against the shared library.
 *
 * STRESS_ROUNDS scales the stress tests (the TSan build uses fewer rounds). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32 /* fork(): POSIX only */
#include <sys/wait.h>
#include <unistd.h>
#endif
#include <time.h>

#include "harness.h"

#ifndef EXPECTED_VERSION
#error "build with -DEXPECTED_VERSION=\"x.y.z\" (the Makefile reads it from Cargo.toml)"
#endif
#ifndef STRESS_ROUNDS
#define STRESS_ROUNDS 2000
#endif

/* ------------------------------------------------------------------ helpers */

static const volt_sem *new_sem(size_t permits) {
    const volt_sem *sem = NULL;
    REQUIRE(volt_sem_new(permits, &sem) == VOLT_OK);
    REQUIRE(sem != NULL);
    return sem;
}

/* A wake context that counts its wakes. */
typedef struct {
    atomic_int wakes;
} counter;

static void count_wake(void *ctx) {
    counter *c = ctx;
    atomic_fetch_add(&c->wakes, 1);
}

/* C11 aligned_alloc; Windows' C runtime has _aligned_malloc/_aligned_free. */
#ifdef _WIN32
#include <malloc.h>
#define test_aligned_alloc(align, size) _aligned_malloc((size), (align))
#define test_aligned_free _aligned_free
#else
#define test_aligned_alloc(align, size) aligned_alloc((align), (size))
#define test_aligned_free free
#endif

static void init_waiter(volt_waiter *w) { REQUIRE(volt_waiter_init(w) == VOLT_OK); }

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* ---------------------------------------------------------------- the tests */

#define STR_(x) #x
#define STR(x) STR_(x)

static void test_version_and_layout(void) {
    CHECK(strcmp(volt_sem_version(), EXPECTED_VERSION) == 0);
    /* The header's compile-time version is the library's run-time version. */
    const char *header_version =
        STR(VOLT_SEM_VERSION_MAJOR) "." STR(VOLT_SEM_VERSION_MINOR) "." STR(VOLT_SEM_VERSION_PATCH);
    CHECK(strcmp(header_version, volt_sem_version()) == 0);
    CHECK(strcmp(header_version, EXPECTED_VERSION) == 0);
#if VOLT_SEM_VERSION_MAJOR < 0 || VOLT_SEM_VERSION_MINOR < 0 || VOLT_SEM_VERSION_PATCH < 0
#error "the version macros must be usable in #if"
#endif
    CHECK(volt_waiter_size() == sizeof(volt_waiter));
    CHECK(volt_waiter_align() == alignof(volt_waiter));
    CHECK(volt_waiter_size() == VOLT_WAITER_SIZE);
    CHECK(strcmp(volt_status_str(VOLT_WOULD_BLOCK), "VOLT_WOULD_BLOCK") == 0);
    CHECK(strcmp(volt_status_str(1234), "unknown") == 0);
}

static void test_try_acquire_and_release(void) {
    const volt_sem *sem = new_sem(3);
    CHECK(volt_sem_available_permits(sem) == 3);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_WOULD_BLOCK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 0);
    CHECK_STATUS(volt_sem_release(sem, 3), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 3);
    /* Releasing beyond the initial count is allowed (up to the maximum). */
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 5);

    /* A clone is another reference to the same semaphore. */
    const volt_sem *other = volt_sem_clone(sem);
    CHECK(other == sem);
    volt_sem_free(sem);
    CHECK_STATUS(volt_sem_try_acquire(other, 5), VOLT_OK);
    CHECK(volt_sem_available_permits(other) == 0);
    volt_sem_free(other);
}

static void test_ready_acquire_leaves_waiter_idle(void) {
    const volt_sem *sem = new_sem(2);
    counter c = {0};
    volt_waiter w;
    init_waiter(&w);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 2, count_wake, &c), VOLT_OK);
    CHECK_STATUS(volt_waiter_status(&w), VOLT_IDLE);
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_IDLE);
    /* The waiter is reusable at once. */
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, count_wake, &c), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(atomic_load(&c.wakes) == 1);
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    volt_sem_free(sem);
}

static void test_weighted_fifo_partial_fill(void) {
    const volt_sem *sem = new_sem(0);
    counter ca = {0}, cb = {0};
    volt_waiter a, b;
    init_waiter(&a);
    init_waiter(&b);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 3, count_wake, &ca), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(sem, &b, 1, count_wake, &cb), VOLT_PENDING);

    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK); /* a: 1 of 3 */
    CHECK(atomic_load(&ca.wakes) == 0 && atomic_load(&cb.wakes) == 0);
    CHECK_STATUS(volt_waiter_status(&a), VOLT_PENDING);
    CHECK_STATUS(volt_waiter_status(&b), VOLT_PENDING); /* b must not overtake a */
    CHECK(volt_sem_available_permits(sem) == 0);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_WOULD_BLOCK); /* no barging */

    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK); /* a: 2 of 3 */
    CHECK(atomic_load(&ca.wakes) == 0 && atomic_load(&cb.wakes) == 0);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK); /* a complete, b complete */
    CHECK(atomic_load(&ca.wakes) == 1 && atomic_load(&cb.wakes) == 1);
    CHECK_STATUS(volt_waiter_status(&a), VOLT_OK);
    CHECK_STATUS(volt_waiter_status(&b), VOLT_OK);
    CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_cancel(sem, &b, NULL), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 0);

    CHECK_STATUS(volt_sem_release(sem, 4), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 4);
    volt_sem_free(sem);
}

/* volt_sem_inspect on a local semaphore: the queue in order with its partial
 * grant, this process as the holder, the counts-first protocol (arrays of
 * capacity 0, then VOLT_TRUNCATED for an array too small), bad arguments. */
static void test_inspect_local(void) {
    const volt_sem *sem = new_sem(3);
    counter ca = {0}, cb = {0};
    volt_waiter a, b;
    volt_inspection in;
    volt_holder holders[2];
    volt_queued_waiter waiters[2];
    char label[64];
    init_waiter(&a);
    init_waiter(&b);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 3, count_wake, &ca), VOLT_PENDING); /* takes 1 */
    CHECK_STATUS(volt_sem_acquire(sem, &b, 1, count_wake, &cb), VOLT_PENDING);

    memset(&in, 0xff, sizeof in);
    CHECK_STATUS(volt_sem_inspect(sem, &in, NULL, 0, NULL, 0), VOLT_TRUNCATED);
    CHECK(in.total == 3 && in.available == 0 && !in.closed);
    CHECK(in.holders == 1 && in.waiters == 2);

    CHECK_STATUS(volt_sem_inspect(sem, &in, holders, 2, waiters, 1), VOLT_TRUNCATED);
    CHECK(in.waiters == 2);
    CHECK(waiters[0].position == 0 && waiters[0].permits == 3 && waiters[0].granted == 1);

    CHECK_STATUS(volt_sem_inspect(sem, &in, holders, 2, waiters, 2), VOLT_OK);
    CHECK(holders[0].permits == 2 && holders[0].pid == (uint32_t)getpid());
    CHECK(holders[0].held_for_ns == -1 && holders[0].lease_remaining_ns == -1);
    CHECK(holders[0].token == 0);
    snprintf(label, sizeof label, ":%ld", (long)getpid());
    CHECK(strlen(holders[0].label) > strlen(label));
    CHECK(strcmp(holders[0].label + strlen(holders[0].label) - strlen(label), label) == 0);
    CHECK(strncmp(holders[0].label, holders[0].host, strlen(holders[0].host)) == 0);
    CHECK(waiters[1].position == 1 && waiters[1].permits == 1 && waiters[1].granted == 0);
    CHECK(waiters[0].waiting_for_ns >= waiters[1].waiting_for_ns);
    CHECK(in.available + holders[0].permits + waiters[0].granted + waiters[1].granted == in.total);

    CHECK_STATUS(volt_sem_inspect(NULL, &in, NULL, 0, NULL, 0), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_inspect(sem, NULL, NULL, 0, NULL, 0), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_inspect(sem, &in, NULL, 1, NULL, 0), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_inspect(sem, &in, NULL, 0, NULL, 1), VOLT_INVALID_ARGUMENT);
    CHECK(strcmp(volt_status_str(VOLT_TRUNCATED), "VOLT_TRUNCATED") == 0);

    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK); /* a complete */
    CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_inspect(sem, &in, holders, 2, waiters, 2), VOLT_OK);
    CHECK(in.waiters == 1 && waiters[0].position == 0 && waiters[0].permits == 1);
    CHECK(in.holders == 1 && holders[0].permits == 3);
    CHECK_STATUS(volt_sem_cancel(sem, &b, NULL), VOLT_CANCELLED);
    CHECK_STATUS(volt_sem_release(sem, 3), VOLT_OK);
    CHECK_STATUS(volt_sem_inspect(sem, &in, holders, 2, waiters, 2), VOLT_OK);
    CHECK(in.holders == 0 && in.waiters == 0 && in.available == 3);
    volt_sem_free(sem);
}

/* volt_sem_stats on a local semaphore: the counters (a failed try is not a
 * grant; a queued grant, a cancel, a timeout), the gauges with a partial grant
 * queued, the wait histogram, the struct_size rule both ways, bad input. */
static uint64_t bucket_total(const volt_stats *st) {
    uint64_t sum = 0;
    for (size_t i = 0; i < VOLT_WAIT_BUCKETS; i++) sum += st->wait_buckets[i];
    return sum;
}

static void test_stats_local(void) {
    const volt_sem *sem = new_sem(3);
    volt_stats st = {.struct_size = sizeof st};
    counter ca = {0}, cb = {0};
    volt_waiter a, b;
    init_waiter(&a);
    init_waiter(&b);

    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_OK);
    CHECK(st.struct_size == sizeof st && st.recording);
    CHECK(st.grants == 0 && st.wait_count == 0 && st.wait_p99_ns == 0);
    CHECK(st.available == 3 && st.held == 0 && st.queued == 0);

    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_WOULD_BLOCK); /* not counted */
    CHECK_STATUS(volt_sem_acquire(sem, &a, 3, count_wake, &ca), VOLT_PENDING); /* takes 1 */
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_OK);
    CHECK(st.grants == 1 && st.permits_granted == 2);
    /* The partial grant is neither held nor available. */
    CHECK(st.available == 0 && st.held == 2 && st.queued == 1);
    CHECK(st.wait_count == 1 && st.wait_buckets[0] == 1 && st.wait_max_ns == 0);

    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK); /* a complete, after a wait */
    CHECK(atomic_load(&ca.wakes) == 1);
    CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_OK);
    CHECK(st.grants == 2 && st.permits_granted == 5 && st.cancels == 0);
    CHECK(st.held == 3 && st.queued == 0 && st.available == 0);
    CHECK(st.wait_count == 2 && bucket_total(&st) == 2);
    /* It queued before the release and was granted by it: it waited. */
    CHECK(st.wait_max_ns > 0 && st.wait_sum_ns >= st.wait_max_ns);
    CHECK(st.wait_p50_ns <= st.wait_p99_ns && st.wait_p99_ns <= st.wait_max_ns);

    /* A cancelled request and a timed-out one (both queued). */
    CHECK_STATUS(volt_sem_acquire(sem, &b, 1, count_wake, &cb), VOLT_PENDING);
    CHECK_STATUS(volt_sem_cancel(sem, &b, NULL), VOLT_CANCELLED);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 1, 1000 * 1000), VOLT_TIMED_OUT);
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_OK);
    CHECK(st.cancels == 2 && st.timeouts == 1 && st.grants == 2);
    CHECK(st.wait_count == 2 && st.queued == 0);

    /* An older caller's smaller struct is refused below the first version;
     * a newer caller's larger one gets its unknown bytes zeroed and
     * struct_size says how much was filled. */
    struct {
        volt_stats s;
        uint64_t newer[2];
    } big;
    memset(&big, 0xff, sizeof big);
    big.s.struct_size = sizeof big;
    CHECK_STATUS(volt_sem_stats(sem, &big.s), VOLT_OK);
    CHECK(big.s.struct_size == sizeof(volt_stats));
    CHECK(big.newer[0] == 0 && big.newer[1] == 0 && big.s.grants == 2);
    memset(&st, 0xff, sizeof st);
    st.struct_size = offsetof(volt_stats, wait_buckets);
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_INVALID_ARGUMENT);
    CHECK(st.grants == UINT64_MAX); /* nothing written */
    st.struct_size = 0;
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_INVALID_ARGUMENT);
    st.struct_size = 1 << 20;
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_INVALID_ARGUMENT);
    st.struct_size = sizeof st;
    CHECK_STATUS(volt_sem_stats(NULL, &st), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_stats(sem, NULL), VOLT_INVALID_ARGUMENT);

    CHECK_STATUS(volt_sem_release(sem, 3), VOLT_OK);
    volt_sem_free(sem);
}

static void test_close_wakes_waiters(void) {
    const volt_sem *sem = new_sem(0);
    counter ca = {0}, cb = {0};
    volt_waiter a, b;
    init_waiter(&a);
    init_waiter(&b);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 2, count_wake, &ca), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(sem, &b, 1, count_wake, &cb), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK); /* a holds a partial grant of 1 */
    CHECK(!volt_sem_is_closed(sem));
    CHECK_STATUS(volt_sem_close(sem), VOLT_OK);
    CHECK(volt_sem_is_closed(sem));
    CHECK(atomic_load(&ca.wakes) == 1 && atomic_load(&cb.wakes) == 1);
    CHECK_STATUS(volt_waiter_status(&a), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_cancel(sem, &b, NULL), VOLT_CLOSED);
    /* a's partial grant went back to the counter. */
    CHECK(volt_sem_available_permits(sem) == 1);

    /* Use after close: every acquire fails, release still works, close is idempotent. */
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 1, count_wake, &ca), VOLT_CLOSED);
    CHECK_STATUS(volt_waiter_status(&a), VOLT_IDLE);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 1, -1), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 1, 1000), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    CHECK_STATUS(volt_sem_close(sem), VOLT_OK);
    CHECK(atomic_load(&ca.wakes) == 1);
    volt_sem_free(sem);
}

static void test_cancel_returns_partial_grant(void) {
    const volt_sem *sem = new_sem(0);
    counter ca = {0}, cb = {0};
    volt_waiter a, b;
    size_t returned = 99;
    init_waiter(&a);
    init_waiter(&b);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 3, count_wake, &ca), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(sem, &b, 1, count_wake, &cb), VOLT_PENDING);
    /* Cancelling before anything arrived returns nothing. */
    volt_waiter c;
    counter cc = {0};
    init_waiter(&c);
    CHECK_STATUS(volt_sem_acquire(sem, &c, 1, count_wake, &cc), VOLT_PENDING);
    CHECK_STATUS(volt_sem_cancel(sem, &c, &returned), VOLT_CANCELLED);
    CHECK(returned == 0);
    CHECK(atomic_load(&cc.wakes) == 0);

    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK); /* a: 2 of 3 */
    CHECK_STATUS(volt_sem_cancel(sem, &a, &returned), VOLT_CANCELLED);
    CHECK(returned == 2);
    CHECK(atomic_load(&ca.wakes) == 0);
    /* The 2 went on: 1 completes b (woken by the canceller), 1 to the counter. */
    CHECK(atomic_load(&cb.wakes) == 1);
    CHECK(volt_sem_available_permits(sem) == 1);
    CHECK_STATUS(volt_sem_cancel(sem, &b, &returned), VOLT_OK);
    CHECK(returned == 0);
    CHECK_STATUS(volt_sem_cancel(sem, &a, &returned), VOLT_IDLE); /* already ended */
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    volt_sem_free(sem);
}

/* The full grant arrives on another thread while the owner cancels: the owner
 * gets either VOLT_OK (and owns the permits; the callback ran exactly once) or
 * VOLT_CANCELLED (the callback never runs, the partial grant went back). */
typedef struct {
    const volt_sem *sem;
    size_t first, second;
    atomic_int started;
} releaser_args;

static void *release_two_steps(void *p) {
    releaser_args *r = p;
    atomic_store(&r->started, 1);
    REQUIRE(volt_sem_release(r->sem, r->first) == VOLT_OK);
    if (r->second > 0) REQUIRE(volt_sem_release(r->sem, r->second) == VOLT_OK);
    return NULL;
}

static void test_full_grant_then_cancel_race(void) {
    const volt_sem *sem = new_sem(0);
    int granted = 0, cancelled = 0, partial_seen = 0;
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        counter c = {0};
        volt_waiter w;
        init_waiter(&w);
        CHECK_STATUS(volt_sem_acquire(sem, &w, 2, count_wake, &c), VOLT_PENDING);
        releaser_args args = {sem, (i % 2) ? 2 : 1, (i % 2) ? 0 : 1, 0};
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, release_two_steps, &args) == 0);
        /* Cancel right as the releaser starts, so both outcomes happen. */
        while (!atomic_load(&args.started)) {
        }
        for (int spin = 0; spin < i % 64; spin++) atomic_signal_fence(memory_order_seq_cst);
        size_t returned = 0;
        volt_status s = volt_sem_cancel(sem, &w, &returned);
        /* After cancel returned, the callback has run or never will. */
        int wakes_at_cancel = atomic_load(&c.wakes);
        REQUIRE(pthread_join(t, NULL) == 0);
        if (s == VOLT_OK) {
            granted++;
            CHECK(wakes_at_cancel == 1);
            CHECK(returned == 0);
            CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_WOULD_BLOCK);
            CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
        } else {
            CHECK_STATUS(s, VOLT_CANCELLED);
            cancelled++;
            CHECK(wakes_at_cancel == 0);
            CHECK(returned <= 1);
            if (returned == 1) partial_seen++;
        }
        CHECK(atomic_load(&c.wakes) == wakes_at_cancel); /* never called late */
        /* Everything is back in the counter: take it out again for the next round. */
        CHECK(volt_sem_available_permits(sem) == 2);
        CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    }
    CHECK(granted + cancelled == STRESS_ROUNDS);
    printf("     race outcomes: %d granted, %d cancelled (%d with a partial grant)\n", granted,
           cancelled, partial_seen);
    volt_sem_free(sem);
}

/* ---------------------------------------------------- cancel under a lock */

/* A waiter whose callback signals a condition variable, as the header suggests,
 * and records that it started before it takes the mutex. */
typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int woken; /* guarded by lock */
    atomic_int entered;
    volt_waiter waiter;
} cv_waiter;

static void cv_wake(void *ctx) {
    cv_waiter *t = ctx;
    atomic_store(&t->entered, 1);
    pthread_mutex_lock(&t->lock);
    t->woken = 1;
    pthread_cond_signal(&t->cond);
    pthread_mutex_unlock(&t->lock);
}

static void cv_waiter_init(cv_waiter *t) {
    REQUIRE(pthread_mutex_init(&t->lock, NULL) == 0);
    REQUIRE(pthread_cond_init(&t->cond, NULL) == 0);
    t->woken = 0;
    atomic_init(&t->entered, 0);
    init_waiter(&t->waiter);
}

static void cv_waiter_destroy(cv_waiter *t) {
    pthread_cond_destroy(&t->cond);
    pthread_mutex_destroy(&t->lock);
}

typedef struct {
    const volt_sem *sem;
    size_t n;
    atomic_int started;
} release_args;

static void *release_n(void *p) {
    release_args *a = p;
    atomic_store(&a->started, 1);
    REQUIRE(volt_sem_release(a->sem, a->n) == VOLT_OK);
    return NULL;
}

/* Issue 13, D3: the owner holds the condvar's mutex (a timed wait just timed
 * out) while the grant arrives on another thread, whose callback now blocks on
 * that mutex. volt_sem_cancel() here would wait for that callback for ever;
 * volt_sem_try_cancel() must return VOLT_PENDING and change nothing, and once
 * the owner lets the callback run (cond_wait drops the mutex) it collects the
 * grant. */
static void test_try_cancel_while_holding_the_callbacks_lock(void) {
    const volt_sem *sem = new_sem(0);
    cv_waiter t;
    cv_waiter_init(&t);
    CHECK_STATUS(volt_sem_acquire(sem, &t.waiter, 1, cv_wake, &t), VOLT_PENDING);
    pthread_mutex_lock(&t.lock);
    release_args a = {sem, 1, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, release_n, &a) == 0);
    while (!atomic_load(&t.entered)) sched_yield(); /* the callback is blocked on t.lock */
    size_t returned = 99;
    CHECK_STATUS(volt_sem_try_cancel(sem, &t.waiter, &returned), VOLT_PENDING);
    CHECK(returned == 0);
    CHECK(volt_waiter_is_busy(&t.waiter));
    CHECK_STATUS(volt_waiter_status(&t.waiter), VOLT_OK); /* granted, callback running */
    CHECK_STATUS(volt_sem_try_cancel(sem, &t.waiter, NULL), VOLT_PENDING);
    while (!t.woken) pthread_cond_wait(&t.cond, &t.lock);
    /* The callback signalled and unlocked; until it has also returned, the
     * answer is still VOLT_PENDING (it does not need the mutex any more: yield).
     * Then the grant is collected without waiting, still under the lock. */
    volt_status s;
    while ((s = volt_sem_try_cancel(sem, &t.waiter, &returned)) == VOLT_PENDING) sched_yield();
    CHECK_STATUS(s, VOLT_OK);
    CHECK(!volt_waiter_is_busy(&t.waiter));
    CHECK_STATUS(volt_sem_try_cancel(sem, &t.waiter, NULL), VOLT_IDLE);
    pthread_mutex_unlock(&t.lock);
    REQUIRE(pthread_join(th, NULL) == 0);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    cv_waiter_destroy(&t);
    volt_sem_free(sem);
}

/* A queued waiter: volt_sem_try_cancel removes it like volt_sem_cancel (the
 * partial grant is handed on, the callback never runs), and checks its
 * arguments the same way. */
static void test_try_cancel_queued_waiter(void) {
    const volt_sem *sem = new_sem(1);
    const volt_sem *other = new_sem(0);
    volt_waiter a, b;
    counter ca = {0}, cb = {0};
    size_t returned = 99;
    init_waiter(&a);
    init_waiter(&b);
    CHECK_STATUS(volt_sem_try_cancel(sem, &a, &returned), VOLT_IDLE);
    CHECK(returned == 0);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 3, count_wake, &ca), VOLT_PENDING); /* has 1 of 3 */
    CHECK_STATUS(volt_sem_acquire(sem, &b, 1, count_wake, &cb), VOLT_PENDING);
    CHECK_STATUS(volt_sem_try_cancel(NULL, &a, NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_try_cancel(sem, NULL, NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_try_cancel(other, &a, NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_try_cancel(sem, &a, &returned), VOLT_CANCELLED);
    CHECK(returned == 1);
    CHECK(atomic_load(&ca.wakes) == 0);
    CHECK(!volt_waiter_is_busy(&a));
    /* a's permit went on to b. */
    CHECK(atomic_load(&cb.wakes) == 1);
    CHECK_STATUS(volt_sem_try_cancel(sem, &b, &returned), VOLT_OK);
    CHECK(returned == 0);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    volt_sem_free(other);
    volt_sem_free(sem);
}

/* The race of volt_sem_try_cancel (under the callback's mutex) with grants
 * arriving on another thread: whichever wins, the owner ends up with exactly
 * the right permits, the callback runs at most once and never after the
 * outcome was returned, and nothing deadlocks. */
static void test_try_cancel_race_under_lock(void) {
    const volt_sem *sem = new_sem(0);
    int granted_woken = 0, granted_silent = 0, cancelled = 0;
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        cv_waiter t;
        cv_waiter_init(&t);
        CHECK_STATUS(volt_sem_acquire(sem, &t.waiter, 1, cv_wake, &t), VOLT_PENDING);
        release_args a = {sem, 1, 0};
        pthread_t th;
        REQUIRE(pthread_create(&th, NULL, release_n, &a) == 0);
        /* Try to cancel right as the release happens, so every outcome occurs. */
        while (!atomic_load(&a.started)) {
        }
        for (int spin = 0; spin < (i % 64) * 4; spin++) atomic_signal_fence(memory_order_seq_cst);
        pthread_mutex_lock(&t.lock);
        volt_status s;
        while ((s = volt_sem_try_cancel(sem, &t.waiter, NULL)) == VOLT_PENDING) {
            if (t.woken) sched_yield(); /* signalled, not yet returned */
            while (!t.woken) pthread_cond_wait(&t.cond, &t.lock);
        }
        int woken = t.woken;
        pthread_mutex_unlock(&t.lock);
        REQUIRE(pthread_join(th, NULL) == 0);
        CHECK(!volt_waiter_is_busy(&t.waiter));
        pthread_mutex_lock(&t.lock);
        CHECK(t.woken == woken); /* never called after the outcome was returned */
        pthread_mutex_unlock(&t.lock);
        if (s == VOLT_OK) {
            if (woken) granted_woken++;
            else granted_silent++; /* the try_cancel took the grant from the callback */
            CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
        } else {
            CHECK_STATUS(s, VOLT_CANCELLED);
            CHECK(!woken);
            cancelled++;
        }
        /* The released permit is back either way. */
        CHECK(volt_sem_available_permits(sem) == 1);
        CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
        cv_waiter_destroy(&t);
    }
    printf("     try_cancel outcomes: %d granted after the wake, %d granted without it, %d cancelled\n",
           granted_woken, granted_silent, cancelled);
    volt_sem_free(sem);
}

/* A chain of waiters, each of whose callback collects its own grant and passes
 * the permits on by releasing them from inside the waker. */
typedef struct {
    const volt_sem *sem;
    volt_waiter waiter;
    size_t n;
    atomic_int wakes;
    volt_status collected;
    volt_status status_inside;
} chained;

static void pass_on(void *ctx) {
    chained *c = ctx;
    atomic_fetch_add(&c->wakes, 1);
    c->status_inside = volt_waiter_status(&c->waiter);
    c->collected = volt_sem_cancel(c->sem, &c->waiter, NULL); /* from inside: at once */
    REQUIRE(volt_sem_release(c->sem, c->n) == VOLT_OK);       /* may wake the next one */
}

static void test_release_from_inside_waker(void) {
    const volt_sem *sem = new_sem(0);
    enum { N = 40 };
    static chained chain[N];
    for (int i = 0; i < N; i++) {
        chain[i].sem = sem;
        chain[i].n = (size_t)(i % 3) + 1;
        atomic_init(&chain[i].wakes, 0);
        chain[i].collected = VOLT_PANIC;
        init_waiter(&chain[i].waiter);
        CHECK_STATUS(volt_sem_acquire(sem, &chain[i].waiter, chain[i].n, pass_on, &chain[i]),
                     VOLT_PENDING);
    }
    /* 3 permits: enough for every weight; they travel down the whole chain. */
    CHECK_STATUS(volt_sem_release(sem, 3), VOLT_OK);
    for (int i = 0; i < N; i++) {
        CHECK(atomic_load(&chain[i].wakes) == 1);
        CHECK_STATUS(chain[i].status_inside, VOLT_OK);
        CHECK_STATUS(chain[i].collected, VOLT_OK);
        /* The outcome was collected inside; the owner's call ends the busy state. */
        CHECK_STATUS(volt_sem_cancel(sem, &chain[i].waiter, NULL), VOLT_IDLE);
        CHECK_STATUS(volt_waiter_status(&chain[i].waiter), VOLT_IDLE);
    }
    CHECK(volt_sem_available_permits(sem) == 3);
    volt_sem_free(sem);
}

/* D1: a chain of waiters whose callbacks each collect their grant and release
 * it to the next. Callbacks never nest (each runs after the previous one
 * returned, from the releasing thread's delivery loop), so a 100,000-long chain
 * runs on a 128 KiB thread stack (musl's default). With nested delivery it
 * overflowed the stack at a few hundred. */
#ifndef CHAIN_LENGTH
#define CHAIN_LENGTH 100000
#endif

typedef struct {
    const volt_sem *sem;
    volt_waiter waiter;
    int wakes;
} link_t;

static void pass_one_on(void *ctx) {
    link_t *l = ctx;
    l->wakes++;
    REQUIRE(volt_sem_cancel(l->sem, &l->waiter, NULL) == VOLT_OK);
    REQUIRE(volt_sem_release(l->sem, 1) == VOLT_OK);
}

static void *release_one(void *p) {
    REQUIRE(volt_sem_release((const volt_sem *)p, 1) == VOLT_OK);
    return NULL;
}

static void test_long_release_chain_on_a_small_stack(void) {
    const volt_sem *sem = new_sem(0);
    link_t *chain = calloc(CHAIN_LENGTH, sizeof *chain);
    REQUIRE(chain != NULL);
    for (size_t i = 0; i < CHAIN_LENGTH; i++) {
        chain[i].sem = sem;
        init_waiter(&chain[i].waiter);
        REQUIRE(volt_sem_acquire(sem, &chain[i].waiter, 1, pass_one_on, &chain[i]) ==
                VOLT_PENDING);
    }
    pthread_attr_t attr;
    REQUIRE(pthread_attr_init(&attr) == 0);
    REQUIRE(pthread_attr_setstacksize(&attr, 128 * 1024) == 0);
    pthread_t t;
    REQUIRE(pthread_create(&t, &attr, release_one, (void *)sem) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    pthread_attr_destroy(&attr);
    size_t woken = 0;
    for (size_t i = 0; i < CHAIN_LENGTH; i++) {
        woken += chain[i].wakes == 1;
        CHECK_STATUS(volt_sem_cancel(sem, &chain[i].waiter, NULL), VOLT_IDLE);
    }
    CHECK(woken == CHAIN_LENGTH);
    CHECK(volt_sem_available_permits(sem) == 1);
    free(chain);
    volt_sem_free(sem);
}

/* D5: one release completes A and B; A's callback cancels B (both belong to the
 * same owner), whose callback was still to run on this very thread. That used
 * to hang; now the cancel returns B's outcome at once and B's callback never
 * runs. */
typedef struct {
    const volt_sem *sem;
    volt_waiter a, b;
    counter b_wakes;
    volt_status b_from_a;
    atomic_int done;
} siblings;

static void cancel_sibling(void *ctx) {
    siblings *s = ctx;
    s->b_from_a = volt_sem_cancel(s->sem, &s->b, NULL);
}

static void *run_siblings(void *p) {
    siblings *s = p;
    REQUIRE(volt_sem_release(s->sem, 3) == VOLT_OK);
    atomic_store(&s->done, 1);
    return NULL;
}

static void test_callback_cancels_a_sibling(void) {
    siblings s;
    s.sem = new_sem(0);
    atomic_init(&s.b_wakes.wakes, 0);
    s.b_from_a = VOLT_PANIC;
    init_waiter(&s.a);
    init_waiter(&s.b);
    CHECK_STATUS(volt_sem_acquire(s.sem, &s.a, 1, cancel_sibling, &s), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(s.sem, &s.b, 2, count_wake, &s.b_wakes), VOLT_PENDING);
    /* On another thread, with a deadline: a hang fails the test instead of CI. */
    atomic_init(&s.done, 0);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, run_siblings, &s) == 0);
    for (int ms = 0; !atomic_load(&s.done); ms++) {
        REQUIRE(ms < 10000); /* not done in 10 s: the sibling cancel hung */
        sleep_ms(1);
    }
    REQUIRE(pthread_join(t, NULL) == 0);
    CHECK_STATUS(s.b_from_a, VOLT_OK); /* A's callback now owns B's 2 permits */
    CHECK(atomic_load(&s.b_wakes.wakes) == 0);
    CHECK(!volt_waiter_is_busy(&s.b));
    CHECK_STATUS(volt_sem_cancel(s.sem, &s.b, NULL), VOLT_IDLE);
    CHECK_STATUS(volt_sem_cancel(s.sem, &s.a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(s.sem, 3), VOLT_OK);
    CHECK(volt_sem_available_permits(s.sem) == 3);
    volt_sem_free(s.sem);
}

/* Issue 33, item 4: the same as above with volt_sem_try_cancel, which used to
 * return VOLT_PENDING there (and let B's callback run afterwards) although
 * nothing has to be waited for: B's callback is still to run on this thread,
 * after A's. It now answers as volt_sem_cancel does. */
static void try_cancel_sibling(void *ctx) {
    siblings *s = ctx;
    s->b_from_a = volt_sem_try_cancel(s->sem, &s->b, NULL);
}

static void test_callback_try_cancels_a_sibling(void) {
    siblings s;
    s.sem = new_sem(0);
    atomic_init(&s.b_wakes.wakes, 0);
    s.b_from_a = VOLT_PANIC;
    init_waiter(&s.a);
    init_waiter(&s.b);
    CHECK_STATUS(volt_sem_acquire(s.sem, &s.a, 1, try_cancel_sibling, &s), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(s.sem, &s.b, 2, count_wake, &s.b_wakes), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(s.sem, 3), VOLT_OK); /* both callbacks run here */
    CHECK_STATUS(s.b_from_a, VOLT_OK); /* A's callback now owns B's 2 permits */
    CHECK(atomic_load(&s.b_wakes.wakes) == 0);
    CHECK(!volt_waiter_is_busy(&s.b));
    CHECK_STATUS(volt_sem_cancel(s.sem, &s.b, NULL), VOLT_IDLE);
    CHECK_STATUS(volt_sem_cancel(s.sem, &s.a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(s.sem, 3), VOLT_OK);
    CHECK(volt_sem_available_permits(s.sem) == 3);
    volt_sem_free(s.sem);
}

/* The owner's cancel of A (queued, holding a partial grant) hands that grant
 * on and completes B, whose callback runs on this very thread before the
 * cancel returns, and cancels A too (a sibling its owner owns: allowed from a
 * callback). The inner call found A still busy and ended it a second time:
 * the outer one then dropped a NULL semaphore reference (SIGSEGV). Now the
 * inner call answers VOLT_IDLE (the outer call has the outcome) and the
 * outer one VOLT_CANCELLED with the partial grant. Found by the fuzzer. */
typedef struct {
    const volt_sem *sem;
    volt_waiter a, b;
    volt_status inner, inner_try;
} nested_cancel;

static void cancel_a_being_cancelled(void *ctx) {
    nested_cancel *n = ctx;
    n->inner_try = volt_sem_try_cancel(n->sem, &n->a, NULL);
    n->inner = volt_sem_cancel(n->sem, &n->a, NULL);
}

static void test_callback_cancels_a_waiter_its_owner_is_cancelling(void) {
    nested_cancel n;
    n.sem = new_sem(1);
    n.inner = n.inner_try = VOLT_PANIC;
    init_waiter(&n.a);
    init_waiter(&n.b);
    counter a_wakes;
    atomic_init(&a_wakes.wakes, 0);
    CHECK_STATUS(volt_sem_acquire(n.sem, &n.a, 2, count_wake, &a_wakes), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(n.sem, &n.b, 1, cancel_a_being_cancelled, &n), VOLT_PENDING);
    size_t returned = 0;
    CHECK_STATUS(volt_sem_cancel(n.sem, &n.a, &returned), VOLT_CANCELLED);
    CHECK(returned == 1);
    CHECK_STATUS(n.inner_try, VOLT_IDLE);
    CHECK_STATUS(n.inner, VOLT_IDLE);
    CHECK(atomic_load(&a_wakes.wakes) == 0);
    CHECK(!volt_waiter_is_busy(&n.a));
    CHECK_STATUS(volt_sem_cancel(n.sem, &n.b, NULL), VOLT_OK); /* B got A's permit */
    CHECK_STATUS(volt_sem_release(n.sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(n.sem) == 1);
    volt_sem_free(n.sem);
}

#ifndef _WIN32
/* fork(): a thread blocked in volt_sem_acquire_blocking(2) on a semaphore with
 * 1 permit (queued, holding it as a partial grant), then fork(). In the child
 * that thread does not exist: its request is closed there, its partial grant
 * comes back, and a release reaches the counter instead of a ghost. The parent
 * is unaffected. */
typedef struct {
    const volt_sem *sem;
    volt_status result;
} fork_blocker;

static void *block_for_two(void *p) {
    fork_blocker *b = p;
    b->result = volt_sem_acquire_blocking(b->sem, 2, -1);
    return NULL;
}

static void test_fork_with_a_blocked_thread(void) {
    fork_blocker b = {new_sem(1), VOLT_PANIC};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, block_for_two, &b) == 0);
    /* Queued: the request drained the one free permit. */
    while (volt_sem_available_permits(b.sem) != 0) sched_yield();
    /* The child reports through a pipe, not its exit status: a checker such
     * as valgrind may change the exit status of a forked child (the parent's
     * other threads' memory counts as leaked there). */
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        harness_child_watchdog(60);
        char code = 0;
        if (volt_sem_release(b.sem, 1) != VOLT_OK) code = 10;
        else if (volt_sem_available_permits(b.sem) != 2) code = 11; /* 1 + the ghost's 1 */
        else if (volt_sem_try_acquire(b.sem, 2) != VOLT_OK) code = 12;
        if (write(fds[1], &code, 1) != 1) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    char code = 99;
    CHECK(read(fds[0], &code, 1) == 1);
    close(fds[0]);
    CHECK(code == 0);
    int status = 0;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    /* In the parent the blocked thread still gets the next permit. */
    CHECK_STATUS(volt_sem_release(b.sem, 1), VOLT_OK);
    REQUIRE(pthread_join(t, NULL) == 0);
    CHECK_STATUS(b.result, VOLT_OK);
    CHECK(volt_sem_available_permits(b.sem) == 0);
    volt_sem_free(b.sem);
}

/* Issue 33, item 3: the FORK section promises that in the child a request the
 * parent queued reads VOLT_CLOSED and its partial grant is back in the counter.
 * Both used to show the parent's state (VOLT_PENDING, 0 available) until some
 * call took the semaphore's lock. Each child asks first with the call under
 * test, before anything else touches the semaphore: one child the waiter's
 * status, the other the available permits. */
static void test_fork_child_reads_queued_request_closed(void) {
    for (int first_status = 0; first_status <= 1; first_status++) {
        const volt_sem *sem = new_sem(1);
        volt_waiter w;
        counter c;
        atomic_init(&c.wakes, 0);
        init_waiter(&w);
        /* Queued with the one free permit as its partial grant. */
        CHECK_STATUS(volt_sem_acquire(sem, &w, 2, count_wake, &c), VOLT_PENDING);
        CHECK(volt_sem_available_permits(sem) == 0);
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            harness_child_watchdog(60);
            char code = 0;
            if (first_status) {
                if (volt_waiter_status(&w) != VOLT_CLOSED) code = 10;
                else if (volt_sem_available_permits(sem) != 1) code = 11;
            } else {
                if (volt_sem_available_permits(sem) != 1) code = 12;
                else if (volt_waiter_status(&w) != VOLT_CLOSED) code = 13;
            }
            /* volt_sem_try_cancel() too: no callback is to come, so never
             * VOLT_PENDING (it used to answer that for ever once a call had
             * purged the parent's requests, as both checks above do). */
            if (code == 0 && (first_status ? volt_sem_cancel(sem, &w, NULL)
                                           : volt_sem_try_cancel(sem, &w, NULL)) != VOLT_CLOSED)
                code = 14;
            if (code == 0 && atomic_load(&c.wakes) != 0) code = 15;
            if (code == 0 && volt_sem_try_acquire(sem, 1) != VOLT_OK) code = 16;
            if (write(fds[1], &code, 1) != 1) _exit(1);
            _exit(0);
        }
        close(fds[1]);
        char code = 99;
        CHECK(read(fds[0], &code, 1) == 1);
        close(fds[0]);
        if (code != 0) fprintf(stderr, "    child (%s first) failed with code %d\n",
                               first_status ? "status" : "available", code);
        CHECK(code == 0);
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        /* The parent's request is untouched: still queued with its partial grant. */
        CHECK_STATUS(volt_waiter_status(&w), VOLT_PENDING);
        size_t returned = 9;
        CHECK_STATUS(volt_sem_cancel(sem, &w, &returned), VOLT_CANCELLED);
        CHECK(returned == 1);
        CHECK(volt_sem_available_permits(sem) == 1);
        volt_sem_free(sem);
    }
}
/* A fork while a wake callback runs on another thread of the parent: the
 * grant (or close) was decided before the fork, but the callback's thread
 * does not exist in the child, so the callback never returns there. The
 * child's volt_sem_cancel() of that waiter used to wait for it for ever
 * (and volt_sem_try_cancel() to answer VOLT_PENDING for ever), as did those
 * of a sibling that the same release completed, whose callback was still to
 * run on the parent's releasing thread. In the child they now end with the
 * outcome their status reads: VOLT_OK (the child's copy owns the permits, as
 * with any permit held at the fork), or VOLT_IDLE when the callback had
 * already collected it from inside. */
typedef struct {
    const volt_sem *sem;
    volt_waiter *w;
    int collect_inside; /* the callback cancels its own waiter first */
    volt_status inside;
    atomic_int entered;
    atomic_int go;
} stalling_wake;

static void stall_in_wake(void *ctx) {
    stalling_wake *s = ctx;
    if (s->collect_inside) s->inside = volt_sem_cancel(s->sem, s->w, NULL);
    atomic_store(&s->entered, 1);
    while (!atomic_load(&s->go)) sched_yield(); /* held open across the fork */
}

static void test_fork_while_a_callback_runs_elsewhere(void) {
    for (int collect_inside = 0; collect_inside <= 1; collect_inside++) {
        const volt_sem *sem = new_sem(0);
        volt_waiter a, b;
        counter cb;
        atomic_init(&cb.wakes, 0);
        stalling_wake s = {sem, &a, collect_inside, VOLT_PANIC, 0, 0};
        init_waiter(&a);
        init_waiter(&b);
        CHECK_STATUS(volt_sem_acquire(sem, &a, 1, stall_in_wake, &s), VOLT_PENDING);
        CHECK_STATUS(volt_sem_acquire(sem, &b, 1, count_wake, &cb), VOLT_PENDING);
        /* One release completes both: a's callback runs on the releaser's
         * thread and stalls there; b's is still to run on that thread. */
        release_args r = {sem, 2, 0};
        pthread_t t;
        REQUIRE(pthread_create(&t, NULL, release_n, &r) == 0);
        while (!atomic_load(&s.entered)) sched_yield();
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            harness_child_watchdog(10); /* a hang dies of SIGALRM: no code written */
            char code = 0;
            volt_status want_a = collect_inside ? VOLT_IDLE : VOLT_OK;
            if (volt_waiter_status(&a) != want_a) code = 20;
            else if (volt_waiter_status(&b) != VOLT_OK) code = 21;
            /* One waiter each way: try_cancel must not answer PENDING for ever. */
            else if ((collect_inside ? volt_sem_cancel(sem, &a, NULL)
                                     : volt_sem_try_cancel(sem, &a, NULL)) != want_a) code = 22;
            else if ((collect_inside ? volt_sem_try_cancel(sem, &b, NULL)
                                     : volt_sem_cancel(sem, &b, NULL)) != VOLT_OK) code = 23;
            else if (volt_waiter_is_busy(&a) || volt_waiter_is_busy(&b)) code = 24;
            else if (atomic_load(&cb.wakes) != 0) code = 25;
            /* The permits are the child's: b's, and a's unless its callback took them. */
            else if (volt_sem_release(sem, collect_inside ? 1 : 2) != VOLT_OK) code = 26;
            else if (volt_sem_available_permits(sem) != (collect_inside ? 1u : 2u)) code = 27;
            /* Both waiters are reusable in the child. */
            else if (volt_sem_acquire(sem, &a, 1, count_wake, &cb) != VOLT_OK) code = 28;
            if (write(fds[1], &code, 1) != 1) _exit(1);
            _exit(0);
        }
        close(fds[1]);
        char code = 99;
        CHECK(read(fds[0], &code, 1) == 1); /* 0 bytes: the child hung and died */
        close(fds[0]);
        if (code != 0) fprintf(stderr, "    child (collect_inside %d) failed with code %d\n",
                               collect_inside, code);
        CHECK(code == 0);
        int status = 0;
        REQUIRE(waitpid(pid, &status, 0) == pid);
        /* The parent is untouched: both grants are collected as usual. */
        atomic_store(&s.go, 1);
        REQUIRE(pthread_join(t, NULL) == 0); /* its release returned VOLT_OK */
        CHECK(atomic_load(&cb.wakes) == 1);
        if (collect_inside) {
            CHECK_STATUS(s.inside, VOLT_OK);
            CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_IDLE);
        } else {
            CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_OK);
        }
        CHECK_STATUS(volt_sem_cancel(sem, &b, NULL), VOLT_OK);
        CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
        CHECK(volt_sem_available_permits(sem) == 2);
        volt_sem_free(sem);
    }
}
#endif /* _WIN32 */

/* A waker may also queue another waiter (not its own: it is still busy). */
typedef struct {
    const volt_sem *sem;
    volt_waiter *self;
    volt_waiter *next;
    counter *next_counter;
    volt_status requeue_self, queue_next;
} requeuer;

static void queue_another(void *ctx) {
    requeuer *r = ctx;
    r->requeue_self = volt_sem_acquire(r->sem, r->self, 1, count_wake, r->next_counter);
    r->queue_next = volt_sem_acquire(r->sem, r->next, 1, count_wake, r->next_counter);
}

static void test_waker_queues_another_waiter(void) {
    const volt_sem *sem = new_sem(0);
    volt_waiter a, b;
    counter cb = {0};
    init_waiter(&a);
    init_waiter(&b);
    requeuer r = {sem, &a, &b, &cb, VOLT_PANIC, VOLT_PANIC};
    CHECK_STATUS(volt_sem_acquire(sem, &a, 1, queue_another, &r), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK_STATUS(r.requeue_self, VOLT_INVALID_ARGUMENT); /* busy until cancelled outside */
    CHECK_STATUS(r.queue_next, VOLT_PENDING);
    CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK); /* a's permit goes to b */
    CHECK(atomic_load(&cb.wakes) == 1);
    CHECK_STATUS(volt_sem_cancel(sem, &b, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    volt_sem_free(sem);
}

/* volt_last_error_message() belongs to the call made just before on the
 * thread. A wake callback that runs inside volt_sem_release() (on the
 * releasing thread) and makes a call that leaves a message: the message is
 * the callback's to read, inside it; after volt_sem_release() returned
 * VOLT_OK (a call with nothing more to say) the thread's message is "". It
 * used to be the callback's call's message, as if volt_sem_release() had
 * failed with those details. */
typedef struct {
    size_t inside; /* the message's length, read inside the callback */
    volt_status open;
} message_in_callback;

static void leave_a_message(void *ctx) {
    message_in_callback *m = ctx;
    volt_open_options opts;
    REQUIRE(volt_open_options_init(&opts, sizeof opts) == VOLT_OK);
    opts.label = "not a label"; /* spaces: refused, with a message */
    const volt_sem *out = NULL;
    m->open = volt_sem_open_with("ctest-never-created", 1, &opts, &out);
    m->inside = volt_last_error_message(NULL, 0);
}

static void test_callback_messages_stay_in_the_callback(void) {
    const volt_sem *sem = new_sem(0);
    message_in_callback m = {0, VOLT_PANIC};
    volt_waiter w;
    init_waiter(&w);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, leave_a_message, &m), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK); /* the callback runs here */
    CHECK(volt_last_error_message(NULL, 0) == 0);
    CHECK_STATUS(m.open, VOLT_INVALID_ARGUMENT);
    CHECK(m.inside > 0);
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    volt_sem_free(sem);
}

/* Blocking acquires on plain threads. */
typedef struct {
    const volt_sem *sem;
    size_t n;
    int64_t timeout_ns;
    volt_status result;
} blocker;

static void *block(void *p) {
    blocker *b = p;
    b->result = volt_sem_acquire_blocking(b->sem, b->n, b->timeout_ns);
    return NULL;
}

static void test_acquire_blocking(void) {
    const volt_sem *sem = new_sem(1);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 1, -1), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 1, 0), VOLT_TIMED_OUT);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    /* A timed-out request hands its partial grant back. */
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 2, 20 * 1000 * 1000), VOLT_TIMED_OUT);
    CHECK(volt_sem_available_permits(sem) == 1);

    /* Forever, woken by a release on this thread. */
    blocker b = {sem, 3, -1, VOLT_PANIC};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, block, &b) == 0);
    sleep_ms(20);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    REQUIRE(pthread_join(t, NULL) == 0);
    CHECK_STATUS(b.result, VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 0);

    /* Woken by close. */
    blocker c = {sem, 1, 5LL * 1000 * 1000 * 1000, VOLT_PANIC};
    REQUIRE(pthread_create(&t, NULL, block, &c) == 0);
    sleep_ms(20);
    CHECK_STATUS(volt_sem_close(sem), VOLT_OK);
    REQUIRE(pthread_join(t, NULL) == 0);
    CHECK_STATUS(c.result, VOLT_CLOSED);
    volt_sem_free(sem);
}

static void test_bad_input(void) {
    const volt_sem *sem = NULL;
    volt_waiter w, other_w;
    counter c = {0};
    size_t returned = 7;
    const size_t max = volt_max_permits();

    /* NULL everywhere. */
    CHECK_STATUS(volt_sem_new(1, NULL), VOLT_INVALID_ARGUMENT);
    CHECK(volt_sem_clone(NULL) == NULL);
    volt_sem_free(NULL);
    CHECK_STATUS(volt_sem_try_acquire(NULL, 1), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_release(NULL, 1), VOLT_INVALID_ARGUMENT);
    CHECK(volt_sem_available_permits(NULL) == 0);
    CHECK_STATUS(volt_sem_close(NULL), VOLT_INVALID_ARGUMENT);
    CHECK(!volt_sem_is_closed(NULL));
    CHECK_STATUS(volt_waiter_init(NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_waiter_status(NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire_blocking(NULL, 1, 0), VOLT_INVALID_ARGUMENT);

    /* Too many permits. */
    CHECK_STATUS(volt_sem_new(max + 1, &sem), VOLT_INVALID_ARGUMENT);
    CHECK(sem == NULL);
    CHECK_STATUS(volt_sem_new(SIZE_MAX, &sem), VOLT_INVALID_ARGUMENT);
    sem = new_sem(2);
    init_waiter(&w);
    CHECK_STATUS(volt_sem_acquire(NULL, &w, 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire(sem, NULL, 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, NULL, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_cancel(NULL, &w, &returned), VOLT_INVALID_ARGUMENT);
    CHECK(returned == 0);
    CHECK_STATUS(volt_sem_cancel(sem, NULL, NULL), VOLT_INVALID_ARGUMENT);

    /* n == 0 and n > max. */
    CHECK_STATUS(volt_sem_try_acquire(sem, 0), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_release(sem, 0), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 0, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 0, -1), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_try_acquire(sem, max + 1), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_release(sem, max + 1), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire(sem, &w, max + 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire(sem, &w, SIZE_MAX, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, max + 1, -1), VOLT_INVALID_ARGUMENT);
    CHECK(volt_sem_available_permits(sem) == 2);

    /* Overflow: releases past the maximum fail and release nothing. */
    CHECK_STATUS(volt_sem_release(sem, max - 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == max);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OVERFLOW);
    CHECK_STATUS(volt_sem_release(sem, max), VOLT_OVERFLOW);
    CHECK(volt_sem_available_permits(sem) == max);
    CHECK_STATUS(volt_sem_try_acquire(sem, max), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);

    /* Uninitialised (zeroed) and misaligned waiters. */
    memset(&other_w, 0, sizeof other_w);
    CHECK_STATUS(volt_sem_acquire(sem, &other_w, 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_waiter_status(&other_w), VOLT_INVALID_ARGUMENT);
    CHECK(!volt_waiter_is_busy(&other_w));
    CHECK(!volt_waiter_is_busy(NULL));
    CHECK_STATUS(volt_sem_cancel(sem, &other_w, NULL), VOLT_INVALID_ARGUMENT);
    static union {
        volt_waiter w;
        unsigned char bytes[sizeof(volt_waiter) + 8];
    } buf;
    volt_waiter *misaligned = (volt_waiter *)(void *)(buf.bytes + 1);
    CHECK_STATUS(volt_waiter_init(misaligned), VOLT_INVALID_ARGUMENT);

    /* A busy waiter cannot be queued again (and says it is busy); a cancel naming
     * another semaphore is refused and leaves it queued. */
    const volt_sem *sem2 = new_sem(0);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, count_wake, &c), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire(sem2, &w, 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    CHECK(volt_waiter_is_busy(&w));
    CHECK_STATUS(volt_sem_cancel(sem2, &w, &returned), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_waiter_status(&w), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(atomic_load(&c.wakes) == 1);
    CHECK_STATUS(volt_sem_cancel(sem, &w, &returned), VOLT_OK);
    CHECK(!volt_waiter_is_busy(&w));
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    /* Idle waiters may be cancelled on any semaphore: nothing happens. */
    CHECK_STATUS(volt_sem_cancel(sem2, &w, NULL), VOLT_IDLE);
    CHECK(volt_sem_available_permits(sem) == 2);
    volt_sem_free(sem2);
    volt_sem_free(sem);
}

/* Every refusal names the entry point and the argument at fault in
 * volt_last_error_message(), the checks of the C layer itself included (they
 * used to leave ""); the everyday statuses keep the semaphore's own text,
 * read as often as asked, and the next call forgets it. */
static void test_refusals_name_their_argument(void) {
    const size_t max = volt_max_permits();
    const volt_sem *sem = new_sem(1), *other = new_sem(0), *out = NULL;
    char msg[512], again[512];
    counter c = {0};
    volt_waiter w, zeroed;
    init_waiter(&w);
    memset(&zeroed, 0, sizeof zeroed);

    CHECK_STATUS(volt_sem_try_acquire(NULL, 1), VOLT_INVALID_ARGUMENT);
    expect_message("try_acquire NULL", "volt_sem_try_acquire: `sem` is NULL");
    CHECK_STATUS(volt_sem_try_acquire(sem, 0), VOLT_INVALID_ARGUMENT);
    expect_message("try_acquire 0", "volt_sem_try_acquire: `n` is 0");
    CHECK_STATUS(volt_sem_release(sem, max + 1), VOLT_INVALID_ARGUMENT);
    expect_message("release max + 1", "volt_sem_release: `n` is above volt_max_permits()");
    CHECK_STATUS(volt_sem_acquire_blocking(NULL, 1, 0), VOLT_INVALID_ARGUMENT);
    expect_message("acquire_blocking NULL", "volt_sem_acquire_blocking: `sem` is NULL");
    CHECK_STATUS(volt_sem_new(1, NULL), VOLT_INVALID_ARGUMENT);
    expect_message("new NULL", "volt_sem_new: `out` is NULL");
    CHECK_STATUS(volt_sem_new(max + 1, &out), VOLT_INVALID_ARGUMENT);
    expect_message("new max + 1", "volt_sem_new: `permits` is above volt_max_permits()");
    CHECK_STATUS(volt_sem_close(NULL), VOLT_INVALID_ARGUMENT);
    expect_message("close NULL", "volt_sem_close: `sem` is NULL");
    CHECK_STATUS(volt_sem_try_acquire_fenced(sem, 1, NULL), VOLT_INVALID_ARGUMENT);
    expect_message("fenced NULL", "volt_sem_try_acquire_fenced: `grant` is NULL");

    /* Waiters. */
    CHECK_STATUS(volt_waiter_init(NULL), VOLT_INVALID_ARGUMENT);
    expect_message("init NULL", "volt_waiter_init: `waiter` is NULL");
    static union {
        volt_waiter w;
        unsigned char bytes[sizeof(volt_waiter) + 8];
    } buf;
    CHECK_STATUS(volt_waiter_init((volt_waiter *)(void *)(buf.bytes + 1)), VOLT_INVALID_ARGUMENT);
    expect_message("init misaligned", "volt_waiter_init: `waiter` is misaligned");
    CHECK_STATUS(volt_waiter_status(&zeroed), VOLT_INVALID_ARGUMENT);
    expect_message("status zeroed", "volt_waiter_status: `waiter` is not initialised");
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, NULL, &c), VOLT_INVALID_ARGUMENT);
    expect_message("acquire no wake", "volt_sem_acquire: `wake` is NULL");
    CHECK_STATUS(volt_sem_acquire(sem, &zeroed, 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    expect_message("acquire zeroed", "volt_sem_acquire: `waiter` is not initialised");
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, count_wake, &c), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, count_wake, &c), VOLT_INVALID_ARGUMENT);
    expect_message("acquire busy", "volt_sem_acquire: `waiter` is busy");
    CHECK_STATUS(volt_sem_cancel(other, &w, NULL), VOLT_INVALID_ARGUMENT);
    expect_message("cancel elsewhere", "volt_sem_cancel: `waiter` is not queued on `sem`");
    CHECK_STATUS(volt_sem_try_cancel(sem, NULL, NULL), VOLT_INVALID_ARGUMENT);
    expect_message("try_cancel NULL", "volt_sem_try_cancel: `waiter` is NULL");
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_CANCELLED);
    CHECK(volt_last_error_message(NULL, 0) == 0);

    /* Versioned structs and Redis-only calls. */
    volt_stats st;
    memset(&st, 0, sizeof st);
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_INVALID_ARGUMENT);
    expect_message("stats size 0", "volt_sem_stats: `out->struct_size` is 0");
    volt_connect_options o;
    CHECK_STATUS(volt_connect_options_init(&o, 1), VOLT_INVALID_ARGUMENT);
    expect_message("connect_options_init 1", "volt_connect_options_init: `struct_size` is 1");
    volt_census k;
    CHECK_STATUS(volt_sem_census(sem, &k), VOLT_UNSUPPORTED);
    expect_message("census local", "volt_sem_census: `sem` is not a Redis semaphore");
    volt_lease_watch *watch = NULL;
    CHECK_STATUS(volt_sem_watch_lease(sem, 1, NULL, NULL, &watch), VOLT_INVALID_ARGUMENT);
    expect_message("watch_lease no callback", "volt_sem_watch_lease: `lost` is NULL");

    /* The semaphore's own statuses: the same text, as often as it is read;
     * gone at the next call. */
    CHECK_STATUS(volt_sem_try_acquire(other, 1), VOLT_WOULD_BLOCK);
    size_t n = volt_last_error_message(msg, sizeof msg);
    CHECK(n == strlen("no permits available") && strcmp(msg, "no permits available") == 0);
    CHECK(volt_last_error_message(again, sizeof again) == n && strcmp(again, msg) == 0);
    CHECK_STATUS(volt_sem_acquire_blocking(other, 1, 0), VOLT_TIMED_OUT);
    CHECK(volt_last_error_message(msg, sizeof msg) > 0 && strcmp(msg, "timed out waiting for permits") == 0);
    CHECK(!volt_sem_is_closed(other));
    CHECK(volt_last_error_message(msg, sizeof msg) == 0 && msg[0] == '\0');
    volt_sem_free(other);
    volt_sem_free(sem);
}

/* The documented allocation: fresh heap memory of volt_waiter_size() bytes,
 * aligned to volt_waiter_align(), never written before volt_waiter_init(). Init
 * must only write it (the valgrind suite fails on any read of the uninitialised
 * bytes); then the waiter goes through a PENDING acquire, is reused without
 * re-initialising, and is freed once idle. */
static void test_init_fresh_heap_memory(void) {
    const volt_sem *sem = new_sem(0);
    counter c = {0};
    volt_waiter *w = test_aligned_alloc(volt_waiter_align(), volt_waiter_size());
    REQUIRE(w != NULL);
    CHECK_STATUS(volt_waiter_init(w), VOLT_OK);
    CHECK(!volt_waiter_is_busy(w));
    CHECK_STATUS(volt_waiter_status(w), VOLT_IDLE);
    for (int round = 0; round < 2; round++) {
        CHECK_STATUS(volt_sem_acquire(sem, w, 1, count_wake, &c), VOLT_PENDING);
        CHECK(volt_waiter_is_busy(w));
        CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
        CHECK_STATUS(volt_sem_cancel(sem, w, NULL), VOLT_OK);
        CHECK(!volt_waiter_is_busy(w));
        CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
        CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    }
    CHECK(atomic_load(&c.wakes) == 2);
    test_aligned_free(w);
    volt_sem_free(sem);
}

/* Dropping every handle while a waiter is queued is memory-safe: the waiter
 * holds its own reference until cancelled. */
static void test_free_handle_with_queued_waiter(void) {
    const volt_sem *sem = new_sem(0);
    const volt_sem *keep = volt_sem_clone(sem);
    volt_waiter w;
    counter c = {0};
    init_waiter(&w);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, count_wake, &c), VOLT_PENDING);
    volt_sem_free(sem);
    CHECK_STATUS(volt_sem_close(keep), VOLT_OK);
    CHECK(atomic_load(&c.wakes) == 1);
    CHECK_STATUS(volt_sem_cancel(keep, &w, NULL), VOLT_CLOSED);
    volt_sem_free(keep);
}

/* volt_waiter_status() from another thread: allowed at any time after the
 * waiter's init is visible to that thread (here: pthread_create orders it) and
 * until the waiter's memory ends (here: after pthread_join), while its owner
 * runs acquire/cancel cycles. TSan checks that it is race-free. */
typedef struct {
    volt_waiter *w;
    atomic_int stop;
    long seen[8];
} status_poller;

static void *poll_status(void *p) {
    status_poller *sp = p;
    while (!atomic_load(&sp->stop)) {
        volt_status s = volt_waiter_status(sp->w);
        sp->seen[(unsigned)s < 8 ? (unsigned)s : 7]++;
    }
    return NULL;
}

static void test_status_from_another_thread(void) {
    const volt_sem *sem = new_sem(0);
    volt_waiter w;
    counter c = {0};
    init_waiter(&w); /* before the poller exists: pthread_create publishes it */
    status_poller sp = {&w, 0, {0}};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, poll_status, &sp) == 0);
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        CHECK_STATUS(volt_sem_acquire(sem, &w, 1, count_wake, &c), VOLT_PENDING);
        if (i % 2) CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
        volt_status s = volt_sem_cancel(sem, &w, NULL);
        if (i % 2) {
            CHECK_STATUS(s, VOLT_OK);
            CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_WOULD_BLOCK);
        } else {
            CHECK_STATUS(s, VOLT_CANCELLED);
        }
    }
    atomic_store(&sp.stop, 1);
    REQUIRE(pthread_join(th, NULL) == 0); /* only now may w go away */
    /* Only these answers are possible; nothing else was ever seen. */
    CHECK(sp.seen[VOLT_INVALID_ARGUMENT] == 0);
    CHECK(sp.seen[VOLT_CLOSED] == 0);
    CHECK(sp.seen[7] == 0 && sp.seen[VOLT_WOULD_BLOCK] == 0 && sp.seen[VOLT_TIMED_OUT] == 0);
    CHECK(atomic_load(&c.wakes) == STRESS_ROUNDS / 2);
    volt_sem_free(sem);
}

/* ------------------------------------------------------------------ stress */

enum { STRESS_THREADS = 8, STRESS_PERMITS = 5 };

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int woken; /* guarded by lock */
} parker;

static void parker_wake(void *ctx) {
    parker *p = ctx;
    pthread_mutex_lock(&p->lock);
    p->woken = 1;
    pthread_cond_signal(&p->cond);
    pthread_mutex_unlock(&p->lock);
}

typedef struct {
    const volt_sem *sem;
    unsigned seed;
    atomic_long *in_use;
    atomic_long *max_in_use;
    long acquired, cancelled;
    int violations;
} stress_args;

static unsigned next_rand(unsigned *s) {
    *s = *s * 1103515245u + 12345u;
    return (*s >> 16) & 0x7fff;
}

/* Holds `n` permits for a moment, checking the limit, then releases them. */
static void hold(stress_args *a, size_t n) {
    long now = atomic_fetch_add(a->in_use, (long)n) + (long)n;
    if (now > STRESS_PERMITS) a->violations++;
    long seen = atomic_load(a->max_in_use);
    while (now > seen && !atomic_compare_exchange_weak(a->max_in_use, &seen, now)) {
    }
    atomic_fetch_sub(a->in_use, (long)n);
    if (volt_sem_release(a->sem, n) != VOLT_OK) a->violations++;
    a->acquired++;
}

static void *stress_worker(void *p) {
    stress_args *a = p;
    parker pk;
    pthread_mutex_init(&pk.lock, NULL);
    pthread_cond_init(&pk.cond, NULL);
    volt_waiter w;
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        size_t n = (size_t)(next_rand(&a->seed) % 3) + 1; /* weights 1..3 */
        unsigned mode = next_rand(&a->seed) % 8;
        if (mode == 0) {
            volt_status s = volt_sem_try_acquire(a->sem, n);
            if (s == VOLT_OK) hold(a, n);
            else if (s != VOLT_WOULD_BLOCK) a->violations++;
            continue;
        }
        if (mode == 1) {
            volt_status s = volt_sem_acquire_blocking(a->sem, n, (int64_t)(next_rand(&a->seed) % 50000));
            if (s == VOLT_OK) hold(a, n);
            else if (s != VOLT_TIMED_OUT) a->violations++;
            continue;
        }
        pthread_mutex_lock(&pk.lock);
        pk.woken = 0;
        pthread_mutex_unlock(&pk.lock);
        volt_status s = volt_sem_acquire(a->sem, &w, n, parker_wake, &pk);
        if (s == VOLT_OK) {
            hold(a, n);
            continue;
        }
        if (s != VOLT_PENDING) {
            a->violations++;
            continue;
        }
        if (mode <= 3) {
            /* Random cancel: races with the grant. */
            volt_status c = volt_sem_cancel(a->sem, &w, NULL);
            if (c == VOLT_OK) hold(a, n);
            else if (c == VOLT_CANCELLED) a->cancelled++;
            else a->violations++;
            continue;
        }
        if (mode == 4) {
            /* Cancel under the lock the callback takes: never waits for it. */
            pthread_mutex_lock(&pk.lock);
            volt_status c;
            while ((c = volt_sem_try_cancel(a->sem, &w, NULL)) == VOLT_PENDING) {
                if (pk.woken) sched_yield();
                while (!pk.woken) pthread_cond_wait(&pk.cond, &pk.lock);
            }
            pthread_mutex_unlock(&pk.lock);
            if (c == VOLT_OK) hold(a, n);
            else if (c == VOLT_CANCELLED) a->cancelled++;
            else a->violations++;
            continue;
        }
        pthread_mutex_lock(&pk.lock);
        while (!pk.woken) pthread_cond_wait(&pk.cond, &pk.lock);
        pthread_mutex_unlock(&pk.lock);
        if (volt_sem_cancel(a->sem, &w, NULL) == VOLT_OK) hold(a, n);
        else a->violations++;
    }
    pthread_cond_destroy(&pk.cond);
    pthread_mutex_destroy(&pk.lock);
    return NULL;
}

static void test_stress_conservation(void) {
    const volt_sem *sem = new_sem(STRESS_PERMITS);
    atomic_long in_use = 0, max_in_use = 0;
    stress_args args[STRESS_THREADS];
    pthread_t threads[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        args[i] = (stress_args){sem, 0x9e3779b9u * (unsigned)(i + 1), &in_use, &max_in_use, 0, 0, 0};
        REQUIRE(pthread_create(&threads[i], NULL, stress_worker, &args[i]) == 0);
    }
    long acquired = 0, cancelled = 0;
    int violations = 0;
    for (int i = 0; i < STRESS_THREADS; i++) {
        REQUIRE(pthread_join(threads[i], NULL) == 0);
        acquired += args[i].acquired;
        cancelled += args[i].cancelled;
        violations += args[i].violations;
    }
    CHECK(violations == 0);
    CHECK(atomic_load(&max_in_use) <= STRESS_PERMITS);
    CHECK(atomic_load(&in_use) == 0);
    /* Conservation: every permit is back. */
    CHECK(volt_sem_available_permits(sem) == STRESS_PERMITS);
    CHECK_STATUS(volt_sem_try_acquire(sem, STRESS_PERMITS), VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_WOULD_BLOCK);
    printf("     stress: %ld acquisitions, %ld cancels, peak %ld of %d permits\n", acquired,
           cancelled, atomic_load(&max_in_use), STRESS_PERMITS);
    volt_sem_free(sem);
}

int main(void) {
    RUN(test_version_and_layout);
    RUN(test_try_acquire_and_release);
    RUN(test_ready_acquire_leaves_waiter_idle);
    RUN(test_weighted_fifo_partial_fill);
    RUN(test_inspect_local);
    RUN(test_stats_local);
    RUN(test_close_wakes_waiters);
    RUN(test_cancel_returns_partial_grant);
    RUN(test_full_grant_then_cancel_race);
    RUN(test_try_cancel_while_holding_the_callbacks_lock);
    RUN(test_try_cancel_queued_waiter);
    RUN(test_try_cancel_race_under_lock);
    RUN(test_release_from_inside_waker);
    RUN(test_long_release_chain_on_a_small_stack);
    RUN(test_callback_cancels_a_sibling);
    RUN(test_callback_try_cancels_a_sibling);
    RUN(test_callback_cancels_a_waiter_its_owner_is_cancelling);
    RUN(test_waker_queues_another_waiter);
    RUN(test_callback_messages_stay_in_the_callback);
    RUN(test_acquire_blocking);
#ifndef _WIN32
    RUN(test_fork_with_a_blocked_thread);
    RUN(test_fork_child_reads_queued_request_closed);
    RUN(test_fork_while_a_callback_runs_elsewhere);
#endif
    RUN(test_bad_input);
    RUN(test_refusals_name_their_argument);
    RUN(test_free_handle_with_queued_waiter);
    RUN(test_init_fresh_heap_memory);
    RUN(test_status_from_another_thread);
    RUN(test_stress_conservation);
    return harness_summary("c");
}
