/* libuv integration: waiters owned by a uv loop, woken from other threads.
 *
 * The wake callback runs on the releasing (or closing) thread, so it only marks
 * its waiter and calls uv_async_send(). Sends coalesce (several wakes may give one
 * async callback), so the async callback checks every waiter it has not finished
 * yet, and collects each woken one with volt_sem_cancel() on the loop thread.
 * Built with -std=gnu11 and ASan+UBSan. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <uv.h>

#include "../c/harness.h"

enum { WAITERS = 48, RELEASERS = 2 };

typedef struct entry {
    volt_waiter waiter; /* must not move while queued: lives in a static array */
    size_t n;
    atomic_int woken;   /* set by the wake callback, on another thread */
    volt_status outcome;
    int done;           /* loop thread only */
    struct loop_state *loop;
} entry;

typedef struct loop_state {
    uv_loop_t loop;
    uv_async_t async;
    const volt_sem *sem;
    entry entries[WAITERS];
    int finished;
    int async_calls;
    int fifo_violations;
    atomic_int wakes;
} loop_state;

static void on_wake(void *ctx) {
    entry *e = ctx;
    atomic_store(&e->woken, 1);
    atomic_fetch_add(&e->loop->wakes, 1);
    uv_async_send(&e->loop->async); /* thread-safe, never blocks */
}

static void on_async(uv_async_t *handle) {
    loop_state *s = handle->data;
    s->async_calls++;
    for (int i = 0; i < WAITERS; i++) {
        entry *e = &s->entries[i];
        if (e->done || !atomic_load(&e->woken)) continue;
        /* FIFO: nobody queued earlier may still be waiting. */
        for (int j = 0; j < i; j++) {
            if (volt_waiter_status(&s->entries[j].waiter) == VOLT_PENDING) s->fifo_violations++;
        }
        e->outcome = volt_sem_cancel(s->sem, &e->waiter, NULL);
        e->done = 1;
        s->finished++;
    }
    if (s->finished == WAITERS) uv_close((uv_handle_t *)&s->async, NULL);
}

static void setup(loop_state *s, const volt_sem *sem) {
    memset(s, 0, sizeof *s);
    s->sem = sem;
    REQUIRE(uv_loop_init(&s->loop) == 0);
    REQUIRE(uv_async_init(&s->loop, &s->async, on_async) == 0);
    s->async.data = s;
    for (int i = 0; i < WAITERS; i++) {
        entry *e = &s->entries[i];
        e->n = (size_t)(3 - i % 3); /* 3, 2, 1, ... */
        e->loop = s;
        atomic_init(&e->woken, 0);
        REQUIRE(volt_waiter_init(&e->waiter) == VOLT_OK);
        CHECK_STATUS(volt_sem_acquire(sem, &e->waiter, e->n, on_wake, e), VOLT_PENDING);
    }
}

typedef struct {
    const volt_sem *sem;
    size_t permits;
} releaser;

static void *release_one_by_one(void *p) {
    releaser *r = p;
    for (size_t i = 0; i < r->permits; i++) {
        REQUIRE(volt_sem_release(r->sem, 1) == VOLT_OK);
        if (i % 4 == 0) sched_yield();
    }
    return NULL;
}

static void *close_it(void *p) {
    REQUIRE(volt_sem_close(p) == VOLT_OK);
    return NULL;
}

static loop_state state; /* large: keep it off the stack */

static void test_grants_through_uv_async(void) {
    const volt_sem *sem = NULL;
    REQUIRE(volt_sem_new(0, &sem) == VOLT_OK);
    setup(&state, sem);
    size_t total = 0;
    for (int i = 0; i < WAITERS; i++) total += state.entries[i].n;

    pthread_t threads[RELEASERS];
    releaser rel[RELEASERS];
    for (int t = 0; t < RELEASERS; t++) {
        rel[t].sem = sem;
        rel[t].permits = total / RELEASERS + (t == 0 ? total % RELEASERS : 0);
        REQUIRE(pthread_create(&threads[t], NULL, release_one_by_one, &rel[t]) == 0);
    }
    CHECK(uv_run(&state.loop, UV_RUN_DEFAULT) == 0);
    for (int t = 0; t < RELEASERS; t++) REQUIRE(pthread_join(threads[t], NULL) == 0);

    CHECK(state.finished == WAITERS);
    CHECK(atomic_load(&state.wakes) == WAITERS);
    CHECK(state.fifo_violations == 0);
    size_t held = 0;
    for (int i = 0; i < WAITERS; i++) {
        CHECK_STATUS(state.entries[i].outcome, VOLT_OK);
        held += state.entries[i].n;
    }
    CHECK(held == total);
    CHECK(volt_sem_available_permits(sem) == 0);
    CHECK_STATUS(volt_sem_release(sem, held), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == total);
    printf("     %d wakes delivered by %d async callbacks\n", atomic_load(&state.wakes),
           state.async_calls);
    CHECK(uv_loop_close(&state.loop) == 0);
    volt_sem_free(sem);
}

static void test_close_from_another_thread(void) {
    const volt_sem *sem = NULL;
    REQUIRE(volt_sem_new(1, &sem) == VOLT_OK);
    /* The first waiter (3 > 1) drains the permit: it holds a partial grant. */
    setup(&state, sem);
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, close_it, (void *)sem) == 0);
    CHECK(uv_run(&state.loop, UV_RUN_DEFAULT) == 0);
    REQUIRE(pthread_join(t, NULL) == 0);
    CHECK(state.finished == WAITERS);
    for (int i = 0; i < WAITERS; i++) CHECK_STATUS(state.entries[i].outcome, VOLT_CLOSED);
    CHECK(volt_sem_available_permits(sem) == 1); /* the partial grant came back */
    CHECK(uv_loop_close(&state.loop) == 0);
    volt_sem_free(sem);
}

int main(void) {
    RUN(test_grants_through_uv_async);
    RUN(test_close_from_another_thread);
    return harness_summary("libuv");
}
