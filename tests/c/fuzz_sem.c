/* A randomized, model-checked fuzzer of the C ABI (issue 33).
 *
 *   fuzz_sem model   [--seed S] [--seeds N] [--ops K] [--seconds T]
 *   fuzz_sem threads [--seed S] [--seeds N] [--seconds T]
 *   fuzz_sem shared  [--seed S] [--runs N] [--seconds T] [--total P] [--max-total M]
 *                    [--procs N] [--threads N] [--no-kill] [--no-fork] [--no-stop]
 *                    [--no-resize]
 *   fuzz_sem redis   [--seed S] [--runs N] [--seconds T] [--total P] [--max-total M]
 *                    [--procs N] [--threads N] [--lease MS] [--url URL] [--no-kill]
 *                    [--no-stop] [--no-client-kill] [--no-resize]
 *
 * model: one thread drives a local semaphore through random operation
 *   sequences (acquire with a wake callback, try_acquire, a blocking acquire
 *   with timeout 0, the fenced forms of those two (token and session 0),
 *   release, cancel, try_cancel, status, available, volt_sem_stats (its
 *   gauges: available, held including grants not yet collected, queued; with
 *   the queued requests' partial grants, the total), close, bad input, and
 *   the calls for named and Redis semaphores only: set_total, reopen, census
 *   and disconnect answer VOLT_UNSUPPORTED, total_permits and held_permits
 *   0; a clone is the same pointer, and a third of the runs go through a
 *   clone whose original was freed) and checks
 *   every return value, every status, the order of
 *   the wake callbacks and the permits against a reference model of the
 *   semaphore (its queue, weights, partial grants, the per-thread
 *   callback trampoline, cancel and close outcomes). The callbacks act too:
 *   they collect their own grant and release it, cancel or try_cancel a
 *   sibling waiter, release a permit. A failing sequence is shrunk (delta
 *   debugging over the operation list) and printed with its seed.
 * threads: several threads on one local semaphore, random operations; the
 *   invariants: never more held than the total, strict weighted FIFO where a
 *   thread can observe it (a later request of its own granted while an
 *   earlier one was still queued), every callback exactly once, none after
 *   the end of its request, a grant collected inside a callback never
 *   reported again by the owner's cancel, all permits back at the end (and
 *   in volt_sem_stats: all available, nothing held or queued); the fenced
 *   forms return no token, disconnect answers VOLT_UNSUPPORTED.
 * shared: the same invariants on a named semaphore across 3-6 processes of
 *   1-3 threads, with random SIGKILL (the victim is stopped first and its
 *   share of the count taken off, so every race pushes the count down),
 *   SIGSTOP/SIGCONT and fork() from a worker thread; the count of permits
 *   the library reported granted lives in shared memory. Unless --no-resize,
 *   the total changes online: workers call volt_sem_set_total (a random
 *   1..M, growing and shrinking; wake callbacks too, on the doorbell
 *   thread), a third of the opens use VOLT_OPEN_RESIZE, workers close the
 *   semaphore and whoever then sees VOLT_CLOSED (a callback too) may
 *   volt_sem_reopen it. Every change of the total is logged in shared memory
 *   (see `arena`), which bounds the totals in force between two moments;
 *   the driver prefers a resizer caught inside its change as the next kill.
 *   Checked, besides the fixed-total invariants: a grant never makes the
 *   count exceed every total in force since its request began (permits held
 *   above a new, smaller total are legal until returned: a shrink's debt);
 *   a request fails as above the total (VOLT_INVALID_ARGUMENT from an
 *   acquire or its cancel, VOLT_CLOSED in its callback) only if some total
 *   since it began was below its size; a request still queued when
 *   cancelled never saw a total below its size; total_permits, available
 *   and volt_sem_inspect's total lie within the logged totals; inspect
 *   conserves the permits (available is the total minus what is held or
 *   granted, 0 in a debt); an open without the flag succeeds with the
 *   total in force (after a resizer was killed inside, with exactly one of
 *   its old and new totals); set_total and reopen on a parent's handle in a
 *   forked child answer VOLT_FORKED. At the end a fresh process must acquire
 *   the whole total: with resizes, it opens with the total in force,
 *   reopens, checks inspect (nothing used, all available; census is for
 *   Redis semaphores: VOLT_UNSUPPORTED here), sets a final total by an open
 *   with VOLT_OPEN_RESIZE, acquires it whole, shrinks by one below what it
 *   holds (inspect: nothing available, one held above the total), pays the
 *   debt with one release and acquires the new total whole.
 *
 *   Every process holds several handles on the name: the first, a clone
 *   of it (the same handle), a second open; the opens go through
 *   volt_sem_open or volt_sem_open_with (a label or none, NULL options; an
 *   invalid label is refused first, nothing opened). About one worker
 *   operation in 3,000 disconnects one of its process's handles at random
 *   (volt_sem_disconnect), while threads on it hold permits, have requests
 *   queued or wait in acquire_blocking (sometimes the disconnecting thread
 *   first queues a request of the whole total on it, or starts a thread
 *   blocked on it). The permits counted through the handle come off the
 *   count before the call (see `hnd`: a grant reported through it after
 *   the disconnect began is not counted, those permits go back with the
 *   handle's), so the conservation checks above stay as they were. Checked:
 *   a second disconnect is VOLT_OK; every call on the handle that returns a
 *   status answers VOLT_DISCONNECTED once the disconnect returned, and
 *   none does before it began; the blocked thread returns (VOLT_DISCONNECTED,
 *   or its grant or failure came first); a request queued on it ends with
 *   VOLT_DISCONNECTED from its cancel (never VOLT_OK or VOLT_CANCELLED);
 *   the threads on it open the name again and go on; a fork child's
 *   disconnect of the parent's handle is VOLT_FORKED; at each process's end
 *   volt_sem_stats (the process's gauges, on every handle, disconnected
 *   ones too) shows nothing held or queued.
 *
 * redis: a Redis semaphore (volt_sem_connect) across 3-4 processes (exec'ed)
 *   of 2-3 threads on 1-2 handles each (a second connect or a clone), on a
 *   redis-server of its own (or --url, FUZZ_REDIS_URL); kills, stops within
 *   and past the lease, CLIENT KILL of random connections; checks permit
 *   conservation (a count in shared memory, censuses), fencing tokens,
 *   disconnects, typed errors, liveness, and the whole total back at the
 *   end. See "redis" below.
 *
 * Every run prints its seed; the same seed replays the same operation
 * choices (the model mode exactly; the concurrent modes up to scheduling).
 * The closing line is "fuzz-MODE: N passed, M failed" (tests/run.sh). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "volt_sem.h"

/* ------------------------------------------------------------------ common */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static unsigned rng_below(uint64_t *s, unsigned n) { return (unsigned)(rng_next(s) % n); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

static const char *st(volt_status s) { return volt_status_str(s); }

typedef struct {
    uint64_t seed;
    long seeds;
    long ops;
    double seconds;
    unsigned total;
    unsigned procs, threads;
    bool kill, fork, stop, resize;
    unsigned max_total;
    bool client_kill;       /* redis mode: CLIENT KILL of random connections */
    unsigned lease_ms;      /* redis mode */
    const char *url;        /* redis mode: a server of the caller's */
} options;

/* ================================================================= model */

enum { MW = 5 };     /* waiters of the model run */
enum { OP_TRY, OP_ACQ, OP_REL, OP_CANCEL, OP_TRYCANCEL, OP_STATUS, OP_AVAIL, OP_CLOSE,
       OP_BLOCK0, OP_BAD, OP_STATS, OP_KINDS };
enum { CB_NOTE, CB_COLLECT, CB_SIBLING, CB_TRY_SIBLING, CB_RELEASE1, CB_KINDS };
static const char *op_names[] = {"try_acquire", "acquire",  "release", "cancel",  "try_cancel",
                                 "status",      "available", "close",  "blocking(0)", "bad_input",
                                 "stats"};
static const char *cb_names[] = {"note", "collect+release", "cancel sibling", "try_cancel sibling",
                                 "release 1"};

typedef struct {
    uint8_t kind, slot, n, cb, sib;
} op;

/* The model's view of a waiter. */
enum { M_IDLE, M_QUEUED, M_NOTIFY_G, M_NOTIFY_C, M_GRANTED, M_CLOSED, M_CONSUMED };

typedef struct model model;
typedef struct {
    model *m;
    int slot;
} cb_ctx;

struct model {
    /* the reference */
    size_t avail;
    bool closed;
    int queue[MW], qlen;      /* slots, oldest first */
    size_t remaining[MW];     /* permits still missing */
    size_t requested[MW];
    int state[MW];
    int cb[MW], sib[MW];      /* what each waiter's callback does */
    int pending[MW * 4], plen; /* callbacks still to run on this thread, in order */
    size_t held;              /* permits the test owns */
    size_t total;             /* the permits the semaphore was made with */
    int ending;               /* the waiter an owner's cancel is ending now, or -1 */
    /* the real thing */
    const volt_sem *sem;
    volt_waiter w[MW];
    cb_ctx ctx[MW];
    /* the first mismatch */
    bool failed;
    char why[512];
    long step;
};

static void mfail(model *m, const char *fmt, ...) {
    if (m->failed) return;
    m->failed = true;
    int k = snprintf(m->why, sizeof m->why, "op %ld: ", m->step);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->why + k, sizeof m->why - (size_t)k, fmt, ap);
    va_end(ap);
}

#define EXPECT(m, got, want, what)                                                     \
    do {                                                                               \
        volt_status g_ = (got), w_ = (want);                                           \
        if (g_ != w_) mfail((m), "%s returned %s, model says %s", (what), st(g_), st(w_)); \
    } while (0)

static volt_status model_status(const model *m, int s) {
    switch (m->state[s]) {
    case M_QUEUED: return VOLT_PENDING;
    case M_NOTIFY_G: case M_GRANTED: return VOLT_OK;
    case M_NOTIFY_C: case M_CLOSED: return VOLT_CLOSED;
    default: return VOLT_IDLE;
    }
}

static void q_remove(model *m, int s) {
    int j = 0;
    for (int i = 0; i < m->qlen; i++)
        if (m->queue[i] != s) m->queue[j++] = m->queue[i];
    m->qlen = j;
}

/* Hands `n` permits to the queue, oldest first (a partial grant stays with the
 * head); what nobody waits for goes to the counter. Completed waiters join the
 * thread's pending callbacks, in grant order. */
static void serve(model *m, size_t n) {
    while (n > 0 && m->qlen > 0) {
        int h = m->queue[0];
        size_t give = n < m->remaining[h] ? n : m->remaining[h];
        m->remaining[h] -= give;
        n -= give;
        if (m->remaining[h] > 0) break;
        q_remove(m, h);
        m->state[h] = M_NOTIFY_G;
        m->pending[m->plen++] = h;
    }
    m->avail += n;
}

static void pending_remove(model *m, int s) {
    int j = 0;
    for (int i = 0; i < m->plen; i++)
        if (m->pending[i] != s) m->pending[j++] = m->pending[i];
    m->plen = j;
}

/* Ending a busy waiter `s` (volt_sem_cancel / try_cancel), from outside its
 * callback, in the model; returns the expected status and sets *ret. */
static volt_status model_end(model *m, int s, size_t *ret) {
    *ret = 0;
    switch (m->state[s]) {
    case M_QUEUED: {
        *ret = m->requested[s] - m->remaining[s];
        q_remove(m, s);
        m->state[s] = M_IDLE;
        serve(m, *ret);
        return VOLT_CANCELLED;
    }
    case M_NOTIFY_G: /* its callback is still to run on this thread: taken out */
        pending_remove(m, s);
        /* fall through */
    case M_GRANTED:
        m->state[s] = M_IDLE;
        m->held += m->requested[s];
        return VOLT_OK;
    case M_NOTIFY_C:
        pending_remove(m, s);
        /* fall through */
    case M_CLOSED:
        m->state[s] = M_IDLE;
        return VOLT_CLOSED;
    default: /* idle, or collected inside its callback */
        m->state[s] = M_IDLE;
        return VOLT_IDLE;
    }
}

/* A fenced acquire of a local semaphore: no token, no session, whatever
 * the status. */
static void model_grant_zero(model *m, const volt_grant *g, const char *what) {
    if (g->token != 0 || g->session != 0)
        mfail(m, "%s: token %llu, session %llu (a local semaphore has neither)", what,
              (unsigned long long)g->token, (unsigned long long)g->session);
}

static void model_release(model *m, size_t n) {
    m->held -= n;
    serve(m, n);
    volt_status s = volt_sem_release(m->sem, n);
    EXPECT(m, s, VOLT_OK, "release");
}

/* The real callback: must be the next one the model expects; then acts. */
static void model_wake(void *p) {
    cb_ctx *c = p;
    model *m = c->m;
    int s = c->slot;
    if (m->plen == 0 || m->pending[0] != s) {
        mfail(m, "callback of waiter %d ran; model expects %s%d", s, m->plen ? "waiter " : "none",
              m->plen ? m->pending[0] : 0);
        return;
    }
    memmove(m->pending, m->pending + 1, (size_t)(m->plen - 1) * sizeof m->pending[0]);
    m->plen--;
    bool granted = m->state[s] == M_NOTIFY_G;
    EXPECT(m, volt_waiter_status(&m->w[s]), granted ? VOLT_OK : VOLT_CLOSED, "status in callback");
    m->state[s] = granted ? M_GRANTED : M_CLOSED;
    switch (m->cb[s]) {
    case CB_COLLECT: {
        size_t r = 99;
        volt_status got = volt_sem_cancel(m->sem, &m->w[s], &r);
        EXPECT(m, got, granted ? VOLT_OK : VOLT_CLOSED, "cancel of its own waiter in callback");
        m->state[s] = M_CONSUMED;
        if (got == VOLT_OK && granted) {
            m->held += m->requested[s];
            model_release(m, m->requested[s]);
        }
        break;
    }
    case CB_SIBLING:
    case CB_TRY_SIBLING: {
        int j = m->sib[s];
        if (j == s) break; /* its own waiter: CB_COLLECT does that */
        size_t r = 99, want_r = 0;
        /* A waiter whose owner's cancel is running below this callback on
         * this very stack (its hand-off completed this waiter): that call
         * has the outcome; this one has nothing to end. */
        volt_status want = j == m->ending ? VOLT_IDLE : model_end(m, j, &want_r);
        volt_status got = m->cb[s] == CB_SIBLING ? volt_sem_cancel(m->sem, &m->w[j], &r)
                                                  : volt_sem_try_cancel(m->sem, &m->w[j], &r);
        EXPECT(m, got, want, m->cb[s] == CB_SIBLING ? "cancel of a sibling in callback"
                                                    : "try_cancel of a sibling in callback");
        if (got == want && r != want_r)
            mfail(m, "sibling cancel handed back %zu, model says %zu", r, want_r);
        break;
    }
    case CB_RELEASE1:
        if (m->held > 0) model_release(m, 1);
        break;
    default:
        break;
    }
}

static bool busy(const model *m, int s) { return m->state[s] != M_IDLE; }

/* One operation, on the model and on the library. */
static void model_step(model *m, const op *o) {
    int s = o->slot % MW;
    size_t n = o->n;
    switch (o->kind) {
    case OP_TRY: {
        volt_status want = m->closed ? VOLT_CLOSED
                           : (m->qlen == 0 && m->avail >= n) ? VOLT_OK
                                                             : VOLT_WOULD_BLOCK;
        if (want == VOLT_OK) m->avail -= n, m->held += n;
        if (o->cb & 1) { /* the fenced form: the same outcome, token and session 0 */
            volt_grant g;
            memset(&g, 0xab, sizeof g);
            EXPECT(m, volt_sem_try_acquire_fenced(m->sem, n, &g), want, "try_acquire_fenced");
            model_grant_zero(m, &g, "try_acquire_fenced");
        } else {
            EXPECT(m, volt_sem_try_acquire(m->sem, n), want, "try_acquire");
        }
        break;
    }
    case OP_BLOCK0: {
        volt_status want = m->closed ? VOLT_CLOSED
                           : (m->qlen == 0 && m->avail >= n) ? VOLT_OK
                                                             : VOLT_TIMED_OUT;
        if (want == VOLT_OK) m->avail -= n, m->held += n;
        if (o->cb & 1) {
            volt_grant g;
            memset(&g, 0xab, sizeof g);
            EXPECT(m, volt_sem_acquire_blocking_fenced(m->sem, n, 0, &g), want,
                   "acquire_blocking_fenced(timeout 0)");
            model_grant_zero(m, &g, "acquire_blocking_fenced");
        } else {
            EXPECT(m, volt_sem_acquire_blocking(m->sem, n, 0), want, "acquire_blocking(timeout 0)");
        }
        break;
    }
    case OP_ACQ: {
        volt_status want;
        if (busy(m, s)) {
            want = VOLT_INVALID_ARGUMENT;
        } else if (m->closed) {
            want = VOLT_CLOSED;
        } else if (m->qlen == 0 && m->avail >= n) {
            want = VOLT_OK;
            m->avail -= n;
            m->held += n;
        } else {
            want = VOLT_PENDING;
            size_t partial = m->qlen == 0 ? m->avail : 0;
            m->avail = 0;
            m->requested[s] = n;
            m->remaining[s] = n - partial;
            m->state[s] = M_QUEUED;
            m->queue[m->qlen++] = s;
            m->cb[s] = o->cb % CB_KINDS;
            m->sib[s] = o->sib % MW;
        }
        EXPECT(m, volt_sem_acquire(m->sem, &m->w[s], n, model_wake, &m->ctx[s]), want, "acquire");
        break;
    }
    case OP_REL:
        if (m->held == 0) break;
        model_release(m, n < m->held ? n : m->held);
        break;
    case OP_CANCEL:
    case OP_TRYCANCEL: {
        size_t r = 99, want_r;
        volt_status want = model_end(m, s, &want_r);
        m->ending = s;
        volt_status got = o->kind == OP_CANCEL ? volt_sem_cancel(m->sem, &m->w[s], &r)
                                               : volt_sem_try_cancel(m->sem, &m->w[s], &r);
        m->ending = -1;
        EXPECT(m, got, want, op_names[o->kind]);
        if (got == want && r != want_r) mfail(m, "cancel handed back %zu, model says %zu", r, want_r);
        break;
    }
    case OP_STATUS:
        EXPECT(m, volt_waiter_status(&m->w[s]), model_status(m, s), "volt_waiter_status");
        EXPECT(m, volt_waiter_is_busy(&m->w[s]) ? VOLT_PENDING : VOLT_IDLE,
               busy(m, s) ? VOLT_PENDING : VOLT_IDLE, "volt_waiter_is_busy (PENDING: busy)");
        break;
    case OP_AVAIL: {
        size_t got = volt_sem_available_permits(m->sem);
        if (got != m->avail) mfail(m, "available_permits %zu, model says %zu", got, m->avail);
        break;
    }
    case OP_CLOSE:
        if (!m->closed) {
            m->closed = true;
            for (int i = 0; i < m->qlen; i++) {
                int q = m->queue[i];
                m->avail += m->requested[q] - m->remaining[q]; /* partial grants banked */
                m->state[q] = M_NOTIFY_C;
                m->pending[m->plen++] = q;
            }
            m->qlen = 0;
        }
        EXPECT(m, volt_sem_close(m->sem), VOLT_OK, "close");
        break;
    case OP_BAD: /* rejected, nothing changes */
        EXPECT(m, volt_sem_try_acquire(m->sem, 0), VOLT_INVALID_ARGUMENT, "try_acquire(0)");
        EXPECT(m, volt_sem_acquire(m->sem, &m->w[s], 0, model_wake, &m->ctx[s]),
               VOLT_INVALID_ARGUMENT, "acquire(0)");
        EXPECT(m, volt_sem_release(m->sem, 0), VOLT_INVALID_ARGUMENT, "release(0)");
        /* The calls for named and Redis semaphores refuse a local one. */
        EXPECT(m, volt_sem_set_total(m->sem, n), VOLT_UNSUPPORTED, "set_total of a local semaphore");
        EXPECT(m, volt_sem_reopen(m->sem), VOLT_UNSUPPORTED, "reopen of a local semaphore");
        {
            volt_census cs;
            EXPECT(m, volt_sem_census(m->sem, &cs), VOLT_UNSUPPORTED, "census of a local semaphore");
        }
        if (volt_sem_total_permits(m->sem) != 0)
            mfail(m, "total_permits of a local semaphore %zu, not 0", volt_sem_total_permits(m->sem));
        /* A local semaphore has no session: nothing changes. */
        EXPECT(m, volt_sem_disconnect(m->sem), VOLT_UNSUPPORTED, "disconnect of a local semaphore");
        if (volt_sem_held_permits(m->sem) != 0)
            mfail(m, "held_permits of a local semaphore %zu, not 0", volt_sem_held_permits(m->sem));
        /* The fenced forms refuse a NULL grant, taking nothing. */
        EXPECT(m, volt_sem_try_acquire_fenced(m->sem, 1, NULL), VOLT_INVALID_ARGUMENT,
               "try_acquire_fenced(grant NULL)");
        EXPECT(m, volt_sem_acquire_blocking_fenced(m->sem, 1, 0, NULL), VOLT_INVALID_ARGUMENT,
               "acquire_blocking_fenced(grant NULL)");
        {
            volt_stats z = {.struct_size = 0};
            EXPECT(m, volt_sem_stats(m->sem, &z), VOLT_INVALID_ARGUMENT, "stats(struct_size 0)");
        }
        /* Another reference: the same pointer; freeing it leaves this one. */
        {
            const volt_sem *c = volt_sem_clone(m->sem);
            if (c != m->sem) mfail(m, "volt_sem_clone returned %p, not the handle %p", (void *)c, (void *)m->sem);
            volt_sem_free(c);
            if (volt_sem_clone(NULL) != NULL) mfail(m, "volt_sem_clone(NULL) is not NULL");
        }
        break;
    case OP_STATS: {
        /* The gauges against the model: the counter, the permits held
         * (the test's, plus grants its waiters have not collected), the
         * queue; with the partial grants of the queued requests, they are
         * the whole total. */
        volt_stats sx;
        memset(&sx, 0x5a, sizeof sx);
        sx.struct_size = sizeof sx;
        EXPECT(m, volt_sem_stats(m->sem, &sx), VOLT_OK, "stats");
        if (m->failed) break;
        size_t held = m->held, partial = 0;
        for (int i = 0; i < MW; i++)
            if (m->state[i] == M_GRANTED || m->state[i] == M_NOTIFY_G) held += m->requested[i];
        for (int i = 0; i < m->qlen; i++) partial += m->requested[m->queue[i]] - m->remaining[m->queue[i]];
        if (sx.struct_size != sizeof sx) mfail(m, "stats filled %zu bytes of %zu", sx.struct_size, sizeof sx);
        else if (sx.available != m->avail || sx.held != held || sx.queued != (size_t)m->qlen)
            mfail(m, "stats: available %zu, held %zu, queued %zu; model says %zu, %zu, %d", sx.available,
                  sx.held, sx.queued, m->avail, held, m->qlen);
        else if (sx.available + sx.held + partial != m->total)
            mfail(m, "stats: available %zu + held %zu + partial grants %zu is not the total %zu",
                  sx.available, sx.held, partial, m->total);
        break;
    }
    }
    if (m->plen != 0) mfail(m, "%d callbacks the model expects did not run", m->plen);
    m->plen = 0;
}

static size_t model_total(uint64_t seed) { return 1 + (size_t)(seed % 5); }

/* Runs `ops` on a fresh semaphore; returns true if everything matched. */
static bool model_run(uint64_t seed, const op *ops, long nops, char *why, size_t whylen) {
    model *m = calloc(1, sizeof *m);
    if (!m) abort();
    size_t total = model_total(seed);
    if (volt_sem_new(total, &m->sem) != VOLT_OK) abort();
    if (seed % 3 == 0) {
        /* The run goes through a clone; the first reference is dropped. */
        const volt_sem *first = m->sem;
        m->sem = volt_sem_clone(first);
        volt_sem_free(first);
    }
    m->avail = total;
    m->total = total;
    m->ending = -1;
    for (int i = 0; i < MW; i++) {
        if (volt_waiter_init(&m->w[i]) != VOLT_OK) abort();
        m->ctx[i] = (cb_ctx){m, i};
    }
    for (long i = 0; i < nops && !m->failed; i++) {
        m->step = i;
        model_step(m, &ops[i]);
    }
    /* The end: every busy waiter ended, everything released, all permits back. */
    m->step = nops;
    for (int i = 0; i < MW && !m->failed; i++) {
        op end = {OP_CANCEL, (uint8_t)i, 1, 0, 0};
        if (busy(m, i)) model_step(m, &end);
    }
    if (!m->failed && m->held > 0) model_release(m, m->held);
    if (!m->failed) {
        size_t got = volt_sem_available_permits(m->sem);
        if (got != total) mfail(m, "at the end %zu permits available of %zu", got, total);
        volt_status t = volt_sem_try_acquire(m->sem, total);
        if (t != (m->closed ? VOLT_CLOSED : VOLT_OK))
            mfail(m, "at the end try_acquire(total) returned %s", st(t));
    }
    /* Whatever happened, leave no waiter busy (its reference would leak). */
    for (int i = 0; i < MW; i++)
        while (volt_waiter_is_busy(&m->w[i])) (void)volt_sem_cancel(m->sem, &m->w[i], NULL);
    bool ok = !m->failed;
    if (!ok && why) snprintf(why, whylen, "%s", m->why);
    volt_sem_free(m->sem);
    free(m);
    return ok;
}

static void gen_ops(uint64_t seed, op *ops, long n) {
    uint64_t r = seed ^ 0x5eed;
    size_t total = model_total(seed);
    static const unsigned weight[OP_KINDS] = {10, 30, 22, 10, 6, 6, 4, 1, 4, 1, 4};
    unsigned sum = 0;
    for (int k = 0; k < OP_KINDS; k++) sum += weight[k];
    for (long i = 0; i < n; i++) {
        unsigned x = rng_below(&r, sum), k = 0;
        while (x >= weight[k]) x -= weight[k++];
        /* Closing ends a sequence's interesting part: rarer late, absent early. */
        if (k == OP_CLOSE && i < n / 2) k = OP_STATUS;
        ops[i].kind = (uint8_t)k;
        ops[i].slot = (uint8_t)rng_below(&r, MW);
        ops[i].n = (uint8_t)(1 + rng_below(&r, (unsigned)total + 1));
        ops[i].cb = (uint8_t)rng_below(&r, CB_KINDS);
        ops[i].sib = (uint8_t)rng_below(&r, MW);
    }
}

static void print_op(FILE *f, long i, const op *o) {
    fprintf(f, "      %3ld: %-12s waiter %d n %d", i, op_names[o->kind], o->slot % MW, o->n);
    if ((o->kind == OP_TRY || o->kind == OP_BLOCK0) && (o->cb & 1)) fprintf(f, " (fenced)");
    if (o->kind == OP_ACQ) {
        fprintf(f, " callback: %s", cb_names[o->cb % CB_KINDS]);
        if (o->cb % CB_KINDS == CB_SIBLING || o->cb % CB_KINDS == CB_TRY_SIBLING)
            fprintf(f, " (waiter %d)", o->sib % MW);
    }
    fputc('\n', f);
}

/* Delta debugging (ddmin) over the operation list: the smallest sequence
 * found that still fails. Every subsequence is a valid run (the model skips
 * what cannot apply). */
static long shrink(uint64_t seed, op *ops, long n) {
    op *cand = malloc((size_t)n * sizeof *ops);
    if (!cand) abort();
    long gran = 2, tries = 0;
    while (n >= 2 && tries < 4000) {
        long chunk = (n + gran - 1) / gran;
        bool reduced = false;
        for (long start = 0; start < n && tries < 4000; start += chunk) {
            long k = 0;
            for (long i = 0; i < n; i++)
                if (i < start || i >= start + chunk) cand[k++] = ops[i];
            tries++;
            if (k > 0 && !model_run(seed, cand, k, NULL, 0)) {
                memcpy(ops, cand, (size_t)k * sizeof *ops);
                n = k;
                gran = gran > 2 ? gran - 1 : 2;
                reduced = true;
                break;
            }
        }
        if (!reduced) {
            if (gran >= n) break;
            gran = gran * 2 < n ? gran * 2 : n;
        }
    }
    free(cand);
    return n;
}

static int run_model(const options *o) {
    long passed = 0, failed = 0, total_ops = 0;
    double end = now_s() + o->seconds;
    long seeds = o->seeds || o->seconds > 0 ? o->seeds : 1000;
    long nops = o->ops > 0 ? o->ops : 60;
    op *ops = malloc((size_t)nops * sizeof *ops);
    if (!ops) abort();
    printf("fuzz-model: seeds %llu.., %ld operations each (replay one: fuzz_sem model --seed S --seeds 1)\n",
           (unsigned long long)o->seed, nops);
    for (long i = 0; seeds ? i < seeds : now_s() < end; i++) {
        uint64_t seed = o->seed + (uint64_t)i;
        gen_ops(seed, ops, nops);
        char why[512];
        total_ops += nops;
        if (model_run(seed, ops, nops, why, sizeof why)) {
            passed++;
            continue;
        }
        failed++;
        printf("FAIL seed %llu (total %zu): %s\n", (unsigned long long)seed, model_total(seed), why);
        long k = shrink(seed, ops, nops);
        model_run(seed, ops, k, why, sizeof why);
        printf("    shrunk to %ld operations (%s):\n", k, why);
        for (long j = 0; j < k; j++) print_op(stdout, j, &ops[j]);
        if (failed >= 5) break;
    }
    free(ops);
    printf("     %ld sequences, %ld operations, every one checked against the model\n",
           passed + failed, total_ops);
    printf("fuzz-model: %ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* ================================================================ threads */

/* One waiter of a concurrent run and what its callback saw. */
typedef struct worker worker;
typedef struct hnd hnd;
typedef struct {
    volt_waiter w;
    worker *owner;
    hnd *h;                 /* the handle it was queued on (shared mode), or NULL */
    size_t n;
    long seq;               /* the owner's enqueue order */
    atomic_int calls;       /* callbacks for this request */
    atomic_int ended;       /* the owner ended this request */
    atomic_int collected;   /* the callback collected the outcome: 1 granted, 2 closed, 3 failed,
                             * 4 disconnected */
    long s0, sa;            /* the resize sequence at the call and once it returned PENDING */
    bool busy;
} twaiter;

enum { KINDS = 5, NST = 10 }; /* the statuses up to VOLT_INVALID_ARGUMENT, VOLT_DISCONNECTED, "other" */

typedef struct {
    atomic_long in_use, peak, violations;
    atomic_long ops, grants, callbacks;
    atomic_long outcome[KINDS][NST]; /* per kind of call, its statuses: coverage */
    long total;
} counts;

/* A handle of a shared-mode process on the run's name (the process holds
 * several: a clone, a second open), and the permits the process's threads
 * counted through it: its disconnect takes them off the count. A grant the
 * library reported through it is counted only under `mu` while `gone` is
 * clear; the disconnecting thread sets `gone` and takes `held` off the
 * count under `mu` before it calls volt_sem_disconnect. So the count never
 * includes permits the disconnect gives back (a call racing the disconnect
 * either completes before it, its permits going back with the handle's,
 * or fails with VOLT_DISCONNECTED). */
struct hnd {
    const volt_sem *sem;
    pthread_mutex_t mu;
    atomic_int gone;    /* a disconnect of it began */
    atomic_int done;    /* its disconnect returned: every later call is VOLT_DISCONNECTED */
    long held;          /* permits counted through it (under mu) */
    int refs;           /* references to free at the end (a clone adds one) */
};

struct worker {
    const volt_sem *sem;
    hnd *h;             /* shared mode: the handle `sem` is, or NULL */
    counts *c;
    uint64_t rng;
    long max_seen_grant; /* the largest seq of this thread's own grant observed */
    twaiter tw[3];
    long next_seq;
    size_t held;
    double until;
    bool may_close;
    bool resize;        /* shared mode: the total changes (set_total, OPEN_RESIZE, close/reopen) */
    long s0;            /* the resize sequence when this operation began */
    atomic_long *share; /* this process's share of the count (shared mode) */
};

static void note_event(int op, long n, long in_use);
static void (*on_violation)(void);

static void cov(counts *c, int kind, volt_status s) {
    atomic_fetch_add(&c->outcome[kind][s >= 0 && s < NST - 2 ? s : s == VOLT_DISCONNECTED ? NST - 2 : NST - 1], 1);
}

/* What the calls returned, so that a run shows which outcomes it reached. */
static void print_cov(counts *c) {
    static const char *kinds[KINDS] = {"try_acquire", "acquire_blocking", "acquire", "cancel",
                                       "set_total"};
    for (int k = 0; k < KINDS; k++) {
        bool any = false;
        for (int s = 0; s < NST; s++) any |= atomic_load(&c->outcome[k][s]) != 0;
        if (!any) continue;
        printf("       %-17s", kinds[k]);
        for (int s = 0; s < NST; s++) {
            long v = atomic_load(&c->outcome[k][s]);
            if (v) printf(" %s %ld", s < NST - 2 ? st(s) + 5 : s == NST - 2 ? "DISCONNECTED" : "other", v);
        }
        printf("\n");
    }
}

static counts coverage; /* every run's outcomes, summed */

static void add_cov(const counts *c) {
    for (int k = 0; k < KINDS; k++)
        for (int s = 0; s < NST; s++) atomic_fetch_add(&coverage.outcome[k][s], atomic_load(&c->outcome[k][s]));
}

static void violation(counts *c, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (atomic_fetch_add(&c->violations, 1) < 5) {
        fprintf(stderr, "    VIOLATION (pid %d): %s\n", (int)getpid(), buf);
        if (on_violation) on_violation();
    }
}

/* The totals that may have been in force since the resize sequence was at
 * `s0` (shared mode with resizes; otherwise the fixed total): the smallest
 * and the largest. Defined with the shared mode's log of totals. */
static void total_bounds(const worker *k, long s0, long *lo, long *hi);
static long rseq_now(const worker *k);
static bool log_entry(long q, long *lo, long *hi);
static void maybe_reopen(worker *k);
static void resize_op(worker *k);
static void close_op(worker *k);
static void inspect_op(worker *k);
static void note_failed_above(void);
static void resize_to(worker *k, hnd *h, const volt_sem *sem, unsigned n, long wait_ms, unsigned pause,
                      long pause_us);
static void reopen_now(worker *k, hnd *h, const volt_sem *sem);
static void switch_handle(worker *k);
static void disconnect_op(worker *k);
static void note_uncounted(void);
static volt_status open_name(uint64_t *r, size_t total, uint32_t flags, const volt_sem **out);
static bool disconnected(worker *k, hnd *h, bool was_done, volt_status s, const char *what);
static void disconnect_in_callback(worker *k, hnd *h);

/* The count: raised after the library reported a grant, lowered before a
 * release. In shared mode the process's share is raised first and lowered
 * last, so a victim stopped anywhere in between has a share at least what it
 * added to the count: taking its share off can only push the count down.
 *
 * So the count never exceeds what the library has in use (held, granted or
 * partly granted). That rises only by a grant from free permits or by a grow
 * (a shrink's debt shuts both until paid), so it never exceeds the total in
 * force at its last rise; and since the grant reported now (made after the
 * call that asked for it began, when the resize sequence was `s0`), the
 * largest total in force since `s0` bounds it. Permits held above a new,
 * smaller total are legal until returned; a grant that makes the count
 * exceed every total in force since its request began is not. */
static void count_grant(worker *k, size_t n, long s0) {
    counts *c = k->c;
    if (k->share) atomic_fetch_add(k->share, (long)n);
    long now = atomic_fetch_add(&c->in_use, (long)n) + (long)n;
    if (k->share) note_event(1, (long)n, now);
    atomic_fetch_add(&c->grants, 1);
    long p = atomic_load(&c->peak);
    while (now > p && !atomic_compare_exchange_weak(&c->peak, &p, now)) {
    }
    long lo, hi;
    total_bounds(k, s0, &lo, &hi);
    if (now > hi)
        violation(c, "over-grant: %ld permits reported held, the total in force since the request "
                     "was at most %ld (pid %d, +%zu)", now, hi, (int)getpid(), n);
    else if ((long)n > hi)
        violation(c, "a grant of %zu, above every total in force since the request (at most %ld)", n, hi);
}

static void count_release(worker *k, size_t n) {
    counts *c = k->c;
    long now = atomic_fetch_sub(&c->in_use, (long)n) - (long)n;
    if (k->share) atomic_fetch_sub(k->share, (long)n), note_event(-1, (long)n, now);
}

/* A request of `n` that failed as above the total (VOLT_INVALID_ARGUMENT from
 * an acquire or a cancel): some total in force since `s0` must have been
 * below `n` (a shrink fails only the requests above the new total). */
static void failed_above(worker *k, size_t n, long s0, const char *what) {
    long lo, hi;
    total_bounds(k, s0, &lo, &hi);
    if (!k->resize) violation(k->c, "%s of %zu returned VOLT_INVALID_ARGUMENT (total %ld)", what, n, hi);
    else if ((long)n <= lo)
        violation(k->c, "%s of %zu failed as above the total, but every total in force since the "
                        "request was at least %ld", what, n, lo);
    else
        note_failed_above();
}

/* A grant that did not queue behind this thread's own requests still queued
 * would be an overtaking: from now on every request it queued earlier must
 * end granted (or closed), never cancelled while still queued. */
static void saw_immediate_grant(worker *k) { k->max_seen_grant = ++k->next_seq; }

/* Counts a grant of `n` the library reported through handle `h` (NULL:
 * threads mode, always counted). Not counted once a disconnect of `h` began:
 * those permits go back with the handle's. Returns whether it counted. */
static bool grant_on(worker *k, hnd *h, size_t n, long s0) {
    if (!h) {
        count_grant(k, n, s0);
        return true;
    }
    pthread_mutex_lock(&h->mu);
    bool live = !atomic_load(&h->gone);
    if (live) count_grant(k, n, s0), h->held += (long)n;
    pthread_mutex_unlock(&h->mu);
    if (!live) note_uncounted();
    return live;
}

/* A status of a call on handle `h`: VOLT_DISCONNECTED only once its
 * disconnect began, and nothing else once it returned (`was_done`, read
 * before the call). Returns whether the status is VOLT_DISCONNECTED. */
static bool disconnected(worker *k, hnd *h, bool was_done, volt_status s, const char *what) {
    if (s == VOLT_DISCONNECTED) {
        if (!h || !atomic_load(&h->gone))
            violation(k->c, "%s returned VOLT_DISCONNECTED on a handle nobody disconnected", what);
        return true;
    }
    if (was_done)
        violation(k->c, "%s on a disconnected handle returned %s, not VOLT_DISCONNECTED", what, st(s));
    return false;
}

/* Gives back `n` permits counted through `h`: off the count first (unless a
 * disconnect took them off already), then released (VOLT_DISCONNECTED once
 * the disconnect began: they went back with the handle's). */
static void release_on(worker *k, hnd *h, size_t n) {
    bool was_done = h && atomic_load(&h->done);
    if (h) {
        pthread_mutex_lock(&h->mu);
        if (!atomic_load(&h->gone)) h->held -= (long)n, count_release(k, n);
        pthread_mutex_unlock(&h->mu);
    } else {
        count_release(k, n);
    }
    volt_status s = volt_sem_release(h ? h->sem : k->sem, n);
    if (disconnected(k, h, was_done, s, "release")) return;
    if (s != VOLT_OK) violation(k->c, "release(%zu) of held permits returned %s", n, st(s));
}

static void release_n(worker *k, size_t n) { release_on(k, k->h, n); }

/* A fenced acquire of a local or named semaphore: no token, no session,
 * whatever the status. */
static void grant_zero(counts *c, const volt_grant *g, const char *what) {
    if (g->token != 0 || g->session != 0)
        violation(c, "%s: token %llu, session %llu (none on a local or named semaphore)", what,
                  (unsigned long long)g->token, (unsigned long long)g->session);
}

static void t_wake(void *p) {
    twaiter *t = p;
    worker *k = t->owner;
    hnd *h = t->h;
    const volt_sem *sem = h ? h->sem : k->sem;
    atomic_fetch_add(&k->c->callbacks, 1);
    if (atomic_load(&t->ended)) violation(k->c, "a callback after its request ended");
    if (atomic_fetch_add(&t->calls, 1) != 0) violation(k->c, "a callback called twice");
    volt_status s = volt_waiter_status(&t->w);
    /* (A request failed as above the total, or by a disconnect of its
     * handle, reads VOLT_CLOSED here.) */
    if (s != VOLT_OK && s != VOLT_CLOSED) violation(k->c, "status %s inside the callback", st(s));
    /* Sometimes the callback changes the total, or reopens (it must not
     * block: no wait for the log's lock; its own random choice, from the
     * request's sequence number, since the owner's generator is the owner's). */
    if (k->resize && t->seq % 16 == 7) {
        if (s == VOLT_CLOSED && t->seq % 32 == 7) reopen_now(k, h, sem);
        else resize_to(k, h, sem, 1 + (unsigned)((t->seq / 16) % (unsigned long)k->c->total), 0, 0, 0);
    }
    /* Rarely the callback disconnects its request's handle (then its own
     * collect below, if any, answers VOLT_DISCONNECTED). */
    if (h && t->seq % 512 == 77) disconnect_in_callback(k, h);
    /* Sometimes the callback collects the grant and passes it on at once. */
    if ((t->seq & 3) == 1) {
        volt_status c = volt_sem_cancel(sem, &t->w, NULL);
        if (c == VOLT_OK || c == VOLT_CLOSED) atomic_store(&t->collected, c == VOLT_OK ? 1 : 2);
        if (c == VOLT_OK) {
            if (s != VOLT_OK) violation(k->c, "status %s in the callback, then its cancel VOLT_OK", st(s));
            grant_on(k, h, t->n, t->s0);
            release_on(k, h, t->n);
        } else if (c == VOLT_INVALID_ARGUMENT && k->resize) {
            atomic_store(&t->collected, 3);
            if (s != VOLT_CLOSED)
                violation(k->c, "a request failed above the total read %s in its callback", st(s));
            failed_above(k, t->n, t->s0, "an acquire (collected in its callback)");
        } else if (c == VOLT_DISCONNECTED) {
            atomic_store(&t->collected, 4);
            disconnected(k, h, false, c, "cancel inside the callback");
        } else if (c != VOLT_CLOSED) {
            violation(k->c, "cancel inside the callback returned %s", st(c));
        }
    }
}

/* Ends request `t` (cancel or try_cancel) and checks its outcome. */
static void end_request(worker *k, twaiter *t, bool try_first) {
    size_t r = 0;
    volt_status s;
    const volt_sem *sem = t->h ? t->h->sem : k->sem;
    bool was_done = t->h && atomic_load(&t->h->done);
    /* The request was queued (or already granted) all the while the resize
     * sequence went from t->sa to sb. */
    long sb = rseq_now(k);
    if (try_first) {
        while ((s = volt_sem_try_cancel(sem, &t->w, &r)) == VOLT_PENDING) sched_yield();
    } else {
        s = volt_sem_cancel(sem, &t->w, &r);
    }
    atomic_store(&t->ended, 1);
    cov(k->c, 3, s);
    int calls = atomic_load(&t->calls);
    t->busy = false;
    if (was_done && (s == VOLT_OK || s == VOLT_CANCELLED))
        violation(k->c, "a request on a disconnected handle: its cancel returned %s (the disconnect fails "
                        "it, and gives back a grant not collected)", st(s));
    switch (s) {
    case VOLT_OK:
        if (atomic_load(&t->collected))
            violation(k->c, "owner's cancel returned VOLT_OK after the callback collected the outcome");
        if (grant_on(k, t->h, t->n, t->s0)) k->held += t->n;
        else release_on(k, t->h, t->n); /* collected before the disconnect: the handle's */
        if (t->seq > k->max_seen_grant) k->max_seen_grant = t->seq;
        break;
    case VOLT_CANCELLED:
        if (calls != 0) violation(k->c, "a cancelled request's callback ran");
        if (t->seq < k->max_seen_grant)
            violation(k->c, "FIFO: request %ld was still queued after a later request %ld of the "
                            "same thread was granted",
                      t->seq, k->max_seen_grant);
        if (k->resize) {
            /* Still queued at the cancel: a total below its size while it
             * was queued should have failed it then. */
            for (long q = t->sa; q <= sb; q++) {
                long lo, hi;
                if (log_entry(q, &lo, &hi) && hi < (long)t->n) {
                    violation(k->c, "a request of %zu stayed queued (then cancelled) although the "
                                    "total was at most %ld while it waited", t->n, hi);
                    break;
                }
            }
        }
        break;
    case VOLT_IDLE:
        if (!atomic_load(&t->collected)) violation(k->c, "cancel returned VOLT_IDLE, nothing collected");
        break;
    case VOLT_CLOSED:
        maybe_reopen(k);
        break;
    case VOLT_INVALID_ARGUMENT:
        if (atomic_load(&t->collected))
            violation(k->c, "owner's cancel returned VOLT_INVALID_ARGUMENT after the callback collected it");
        failed_above(k, t->n, t->s0, "an acquire (its cancel)");
        break;
    case VOLT_DISCONNECTED:
        /* Its handle was disconnected: failed, or its uncollected grant
         * given back with the handle's. */
        if (atomic_load(&t->collected))
            violation(k->c, "owner's cancel returned VOLT_DISCONNECTED after the callback collected it");
        disconnected(k, t->h, false, s, "cancel");
        break;
    default:
        violation(k->c, "cancel returned %s", st(s));
    }
    if (calls > 1) violation(k->c, "%d callbacks for one request", calls);
}

/* Queues (or is granted) request `t` of `n` on the worker's handle. */
static void start_request(worker *k, twaiter *t, size_t n) {
    counts *c = k->c;
    bool was_done = k->h && atomic_load(&k->h->done);
    t->n = n;
    t->h = k->h;
    t->seq = ++k->next_seq;
    t->s0 = k->s0;
    atomic_store(&t->calls, 0);
    atomic_store(&t->ended, 0);
    atomic_store(&t->collected, 0);
    volt_status s = volt_sem_acquire(k->sem, &t->w, n, t_wake, t);
    cov(c, 2, s);
    if (disconnected(k, k->h, was_done, s, "acquire")) {
        if (volt_waiter_is_busy(&t->w)) violation(c, "an acquire refused as VOLT_DISCONNECTED left its waiter busy");
    } else if (s == VOLT_PENDING) {
        t->busy = true, t->sa = rseq_now(k);
    } else if (s == VOLT_OK) {
        if (grant_on(k, k->h, n, k->s0)) k->held += n;
        else release_n(k, n);
        saw_immediate_grant(k);
    } else if (s == VOLT_INVALID_ARGUMENT) {
        failed_above(k, n, k->s0, "acquire");
    } else if (s == VOLT_CLOSED) {
        maybe_reopen(k);
    } else if (s != VOLT_QUEUE_FULL) {
        violation(c, "acquire: %s", st(s));
    }
}

/* An immediate grant of `n` (try_acquire, acquire_blocking) reported VOLT_OK. */
static void took(worker *k, size_t n) {
    if (grant_on(k, k->h, n, k->s0)) k->held += n;
    else release_n(k, n); /* granted before the disconnect: went back with it, or goes now */
    saw_immediate_grant(k);
}

/* One random operation of a worker thread. */
static void worker_step(worker *k) {
    counts *c = k->c;
    atomic_fetch_add(&c->ops, 1);
    unsigned total = (unsigned)c->total;
    size_t n;
    k->s0 = rseq_now(k);
    /* A handle whose disconnect returned: half the time its calls are
     * tried (each must say VOLT_DISCONNECTED), else a new handle. */
    if (k->h && atomic_load(&k->h->done) && rng_below(&k->rng, 2) == 0) {
        switch_handle(k);
        return;
    }
    bool was_done = k->h && atomic_load(&k->h->done);
    if (k->h && rng_below(&k->rng, 3000) == 0) {
        disconnect_op(k);
        return;
    }
    if (k->resize) {
        /* Mostly a request the total in force admits; sometimes any size up
         * to the largest total (failing, or waiting for a grow). */
        unsigned y = rng_below(&k->rng, 6000);
        if (y < 13) {
            if (y < 4) resize_op(k);
            else if (y < 5) close_op(k);
            else inspect_op(k);
            return;
        }
        size_t cur = volt_sem_total_permits(k->sem);
        long lo, hi;
        total_bounds(k, k->s0, &lo, &hi);
        if ((long)cur < lo || (long)cur > hi)
            violation(c, "total_permits %zu, the totals in force were %ld to %ld%s", cur, lo, hi,
                      was_done ? " (a disconnected handle)" : "");
        total = rng_below(&k->rng, 8) == 0 || cur == 0 ? (unsigned)c->total : (unsigned)cur;
    }
    n = 1 + rng_below(&k->rng, total);
    unsigned x = rng_below(&k->rng, 100);
    /* Holders give back often, and a woken request is collected soon, or the
     * others mostly see "would block". */
    if (k->held && rng_below(&k->rng, 2) == 0) x = 80;
    for (int i = 0; i < 3; i++) {
        twaiter *t = &k->tw[i];
        if (t->busy && atomic_load(&t->calls) && rng_below(&k->rng, 4) != 0) {
            /* The grant was seen through the callback: an observed grant (FIFO). */
            if (volt_waiter_status(&t->w) == VOLT_OK && t->seq > k->max_seen_grant)
                k->max_seen_grant = t->seq;
            end_request(k, t, rng_below(&k->rng, 2));
            return;
        }
    }
    if (x < 15) {
        volt_status s;
        if (rng_below(&k->rng, 2)) {
            volt_grant g;
            memset(&g, 0xab, sizeof g);
            s = volt_sem_try_acquire_fenced(k->sem, n, &g);
            grant_zero(c, &g, "try_acquire_fenced");
        } else {
            s = volt_sem_try_acquire(k->sem, n);
        }
        cov(c, 0, s);
        if (disconnected(k, k->h, was_done, s, "try_acquire")) return;
        if (s == VOLT_OK) took(k, n);
        else if (s == VOLT_INVALID_ARGUMENT) failed_above(k, n, k->s0, "try_acquire");
        else if (s == VOLT_CLOSED) maybe_reopen(k);
        else if (s != VOLT_WOULD_BLOCK) violation(c, "try_acquire: %s", st(s));
    } else if (x < 35) {
        int64_t ns = (int64_t)rng_below(&k->rng, 3000) * 1000;
        volt_status s;
        if (rng_below(&k->rng, 2)) {
            volt_grant g;
            memset(&g, 0xab, sizeof g);
            s = volt_sem_acquire_blocking_fenced(k->sem, n, ns, &g);
            grant_zero(c, &g, "acquire_blocking_fenced");
        } else {
            s = volt_sem_acquire_blocking(k->sem, n, ns);
        }
        cov(c, 1, s);
        if (disconnected(k, k->h, was_done, s, "acquire_blocking")) return;
        if (s == VOLT_OK) took(k, n);
        else if (s == VOLT_INVALID_ARGUMENT) failed_above(k, n, k->s0, "acquire_blocking");
        else if (s == VOLT_CLOSED) maybe_reopen(k);
        else if (s != VOLT_TIMED_OUT) violation(c, "acquire_blocking: %s", st(s));
    } else if (x < 60) {
        twaiter *t = &k->tw[rng_below(&k->rng, 3)];
        if (t->busy) end_request(k, t, rng_below(&k->rng, 2));
        else start_request(k, t, n);
    } else if (x < 75) {
        if (rng_below(&k->rng, 4) == 0) sleep_us(rng_below(&k->rng, 200));
        else sched_yield();
    } else if (x < 97) {
        if (k->held) {
            size_t m = 1 + rng_below(&k->rng, (unsigned)k->held);
            k->held -= m;
            release_n(k, m);
        }
    } else if (x < 98 && k->may_close && now_s() > k->until - 0.02) {
        volt_status s = volt_sem_close(k->sem);
        if (s != VOLT_OK) violation(c, "close: %s", st(s));
    } else {
        size_t a = volt_sem_available_permits(k->sem);
        long lo, hi;
        total_bounds(k, k->s0, &lo, &hi);
        if ((long)a > hi) violation(c, "available_permits %zu above the total (at most %ld)", a, hi);
        /* held_permits is a Redis handle's; the gauges answer on every
         * handle, a disconnected one too. */
        if (volt_sem_held_permits(k->sem) != 0)
            violation(c, "held_permits %zu of a local or named handle", volt_sem_held_permits(k->sem));
        volt_stats sx = {.struct_size = sizeof sx};
        volt_status s = volt_sem_stats(k->sem, &sx);
        if (s != VOLT_OK) violation(c, "stats: %s", st(s));
        else if ((long)sx.available > hi)
            violation(c, "stats: available %zu above the total (at most %ld)", sx.available, hi);
        if (!k->h) /* a local semaphore: no session */
            if ((s = volt_sem_disconnect(k->sem)) != VOLT_UNSUPPORTED)
                violation(c, "disconnect of a local semaphore: %s", st(s));
    }
}

static void worker_finish(worker *k) {
    for (int i = 0; i < 3; i++)
        if (k->tw[i].busy) end_request(k, &k->tw[i], false);
    if (k->held) {
        release_n(k, k->held);
        k->held = 0;
    }
}

static void worker_init(worker *k, const volt_sem *sem, counts *c, uint64_t seed) {
    memset(k, 0, sizeof *k);
    k->sem = sem;
    k->c = c;
    k->rng = seed;
    for (int i = 0; i < 3; i++) {
        if (volt_waiter_init(&k->tw[i].w) != VOLT_OK) abort();
        k->tw[i].owner = k;
    }
}

static void *thread_main(void *p) {
    worker *k = p;
    /* Once closed, every call fails at once: nothing more to learn. */
    while (now_s() < k->until && !volt_sem_is_closed(k->sem)) worker_step(k);
    worker_finish(k);
    return NULL;
}

static int run_threads(const options *o) {
    long passed = 0, failed = 0, ops = 0, grants = 0, callbacks = 0;
    double end = now_s() + (o->seconds > 0 ? o->seconds : 2);
    printf("fuzz-threads: seeds %llu.. (replay one: fuzz_sem threads --seed S --seeds 1)\n",
           (unsigned long long)o->seed);
    for (long i = 0; o->seeds ? i < o->seeds : now_s() < end; i++) {
        uint64_t seed = o->seed + (uint64_t)i, r = seed;
        unsigned total = 1 + rng_below(&r, 4), nthreads = 2 + rng_below(&r, 3);
        const volt_sem *sem;
        if (volt_sem_new(total, &sem) != VOLT_OK) abort();
        counts c;
        memset(&c, 0, sizeof c);
        c.total = total;
        worker k[4];
        pthread_t t[4];
        double until = now_s() + 0.05 + rng_below(&r, 100) / 1000.0;
        for (unsigned j = 0; j < nthreads; j++) {
            worker_init(&k[j], sem, &c, rng_next(&r));
            k[j].until = until;
            k[j].may_close = j == 0 && rng_below(&r, 4) == 0;
            if (pthread_create(&t[j], NULL, thread_main, &k[j]) != 0) abort();
        }
        for (unsigned j = 0; j < nthreads; j++) pthread_join(t[j], NULL);
        bool closed = volt_sem_is_closed(sem);
        if (atomic_load(&c.in_use) != 0) violation(&c, "%ld permits still counted", atomic_load(&c.in_use));
        size_t a = volt_sem_available_permits(sem);
        if (a != total) violation(&c, "at the end %zu available of %u", a, total);
        volt_stats sx = {.struct_size = sizeof sx};
        if (volt_sem_stats(sem, &sx) != VOLT_OK || sx.available != total || sx.held != 0 || sx.queued != 0)
            violation(&c, "at the end stats: available %zu, held %zu, queued %zu (total %u)", sx.available,
                      sx.held, sx.queued, total);
        volt_status s = volt_sem_try_acquire(sem, total);
        if (s != (closed ? VOLT_CLOSED : VOLT_OK)) violation(&c, "at the end try_acquire(total): %s", st(s));
        volt_sem_free(sem);
        ops += c.ops, grants += c.grants, callbacks += c.callbacks;
        add_cov(&c);
        if (atomic_load(&c.violations)) {
            failed++;
            printf("FAIL seed %llu (total %u, %u threads)\n", (unsigned long long)seed, total, nthreads);
        } else {
            passed++;
        }
    }
    printf("     %ld runs, %ld operations, %ld grants, %ld callbacks\n", passed + failed, ops, grants,
           callbacks);
    print_cov(&coverage);
    printf("fuzz-threads: %ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* ================================================================= shared */

enum { MAXP = 64, RING = 128 };

typedef struct {
    atomic_int pid;     /* 0: free */
    atomic_int counted; /* its share still in the count */
    atomic_long share;  /* permits it reported held */
    atomic_int depth;   /* 0: a worker the driver started; 1: forked by one */
    atomic_long born_us; /* when it claimed this record */
    atomic_int dumped;  /* its stacks were printed (stuck) */
} proc_rec;

typedef struct {
    atomic_int pid, op;
    atomic_long n, in_use, t_us;
} event;

/* Shared by the driver and every process of a run (MAP_SHARED, inherited by
 * fork): the count, the processes, the last accounting events, and the log of
 * the totals.
 *
 * The log of the totals (resize runs): every change of the total (a worker's
 * volt_sem_set_total, an open with VOLT_OPEN_RESIZE) is made under `rlock`
 * (a robust process-shared mutex: a holder killed inside frees it) in three
 * steps: append an entry {lo, hi} covering the old total and the new one,
 * make the call, append {n, n}. Each entry is written before `rseq` points
 * at it, so while `rseq` is q the total in force is within entry q: the
 * totals in force between two readings of `rseq` are within the entries
 * between them. A resizer killed between its steps leaves its covering entry
 * as the last one; the next opener resolves it (an open without
 * VOLT_OPEN_RESIZE succeeds with exactly one of the two totals). */
enum { RLOG = 4096 };

typedef struct {
    counts c;
    atomic_int stop;
    atomic_long forks, fork_opens;
    proc_rec procs[MAXP];
    atomic_long ring_pos;
    event ring[RING];
    double t0;
    bool resize;
    pthread_mutex_t rlock;
    atomic_long rseq;
    atomic_long rlo[RLOG], rhi[RLOG];
    atomic_long resizes, open_resizes, resolved, rlock_dead, closes, reopens, inspects, debts;
    atomic_long failed_above, max_debt;
    /* disconnects: handles disconnected (with a thread blocked on them: `blocked`, how those
     * returned: `blocked_out[0]` VOLT_DISCONNECTED, [1] granted first, [2] otherwise);
     * uncounted: grants reported through a handle whose disconnect had begun; handles:
     * opened by the workers (clones, second opens, after a disconnect); open_withs;
     * disc_waiters: requests queued on a handle when its disconnect began (its own thread's) */
    atomic_long disconnects, blocked, blocked_out[3], uncounted, handles, open_withs, disc_waiters;
    atomic_long cb_disconnects; /* of those, made inside a wake callback */
    atomic_int resizer; /* the pid of the process between its resize steps, or 0 */
    atomic_int in_call; /* the pid of the process inside volt_sem_set_total, or 0 */
} arena;

static arena *A;
static char shm_name[64];

static long rseq_now(const worker *k) { return k->resize ? atomic_load(&A->rseq) : 0; }

/* Entry q of the log, if the ring still holds it. */
static bool log_entry(long q, long *lo, long *hi) {
    long s = atomic_load(&A->rseq);
    if (q > s || s - q >= RLOG - 8) return false;
    *lo = atomic_load(&A->rlo[q % RLOG]);
    *hi = atomic_load(&A->rhi[q % RLOG]);
    return atomic_load(&A->rseq) - q < RLOG - 8; /* not overwritten meanwhile */
}

static void total_bounds(const worker *k, long s0, long *lo, long *hi) {
    *lo = *hi = k->c->total;
    if (!k->resize) return;
    long s1 = atomic_load(&A->rseq), l = LONG_MAX, h = 0;
    for (long q = s0; q <= s1; q++) {
        long a, b;
        if (!log_entry(q, &a, &b)) {
            *lo = 1, *hi = k->c->total; /* too many resizes since: any total of the run */
            return;
        }
        if (a < l) l = a;
        if (b > h) h = b;
    }
    *lo = l, *hi = h;
}

static void log_append(long lo, long hi) {
    long s = atomic_load(&A->rseq) + 1;
    atomic_store(&A->rlo[s % RLOG], lo);
    atomic_store(&A->rhi[s % RLOG], hi);
    atomic_store(&A->rseq, s);
}

/* The last entry: the total in force now (lo == hi), or the two a killed
 * resizer left possible. Under rlock. */
static void log_last(long *lo, long *hi) {
    long s = atomic_load(&A->rseq);
    *lo = atomic_load(&A->rlo[s % RLOG]);
    *hi = atomic_load(&A->rhi[s % RLOG]);
}

static bool rlock_take(long ms) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    int e = pthread_mutex_timedlock(&A->rlock, &ts);
    if (e == EOWNERDEAD) {
        /* Its holder died between its steps: the log's last entry covers
         * whatever it did. */
        atomic_fetch_add(&A->rlock_dead, 1);
        pthread_mutex_consistent(&A->rlock);
        return true;
    }
    return e == 0;
}

/* Changes the total to `n` through the log; `pause` 1 or 2: a few ms
 * before or after the call, for the driver to kill a resizer there (then the
 * total is the old or the new one). */
static void resize_to(worker *k, hnd *h, const volt_sem *sem, unsigned n, long wait_ms, unsigned pause,
                      long pause_us) {
    bool was_done = h && atomic_load(&h->done);
    if (!rlock_take(wait_ms)) return; /* a resizer stopped: another time */
    atomic_store(&A->resizer, (int)getpid());
    long lo, hi;
    log_last(&lo, &hi);
    log_append(lo < n ? lo : n, hi > n ? hi : n);
    if (pause == 1) sleep_us(pause_us);
    atomic_store(&A->in_call, (int)getpid());
    volt_status s = volt_sem_set_total(sem, n);
    atomic_store(&A->in_call, 0);
    if (pause == 2) sleep_us(pause_us);
    cov(k->c, 4, s);
    if (disconnected(k, h, was_done, s, "set_total")) {
        log_append(lo, hi); /* nothing changed */
    } else if (s == VOLT_OK) {
        log_append(n, n);
        atomic_fetch_add(&A->resizes, 1);
        size_t t = volt_sem_total_permits(sem);
        if (t != n) violation(k->c, "total_permits %zu right after set_total(%u)", t, n);
    } else {
        violation(k->c, "set_total(%u): %s", n, st(s));
    }
    atomic_store(&A->resizer, 0);
    pthread_mutex_unlock(&A->rlock);
}

/* A worker changes the total to a random 1..max total. */
static void resize_op(worker *k) {
    unsigned n = 1 + rng_below(&k->rng, (unsigned)k->c->total);
    unsigned pause = rng_below(&k->rng, 4);
    resize_to(k, k->h, k->sem, n, 100, pause, rng_below(&k->rng, 8000));
}

/* Closes the semaphore for every process; the workers that see VOLT_CLOSED
 * reopen it (a few calls later). */
static void close_op(worker *k) {
    bool was_done = k->h && atomic_load(&k->h->done);
    volt_status s = volt_sem_close(k->sem);
    if (disconnected(k, k->h, was_done, s, "close")) return;
    if (s != VOLT_OK) violation(k->c, "close: %s", st(s));
    else atomic_fetch_add(&A->closes, 1);
}

static void note_failed_above(void) { atomic_fetch_add(&A->failed_above, 1); }
static void note_uncounted(void) {
    if (A) atomic_fetch_add(&A->uncounted, 1);
}

static void reopen_now(worker *k, hnd *h, const volt_sem *sem) {
    bool was_done = h && atomic_load(&h->done);
    volt_status s = volt_sem_reopen(sem);
    if (disconnected(k, h, was_done, s, "reopen")) return;
    if (s != VOLT_OK) violation(k->c, "reopen: %s", st(s));
    else atomic_fetch_add(&A->reopens, 1);
}

static void maybe_reopen(worker *k) {
    if (!k->resize || rng_below(&k->rng, 4) != 0) return;
    reopen_now(k, k->h, k->sem);
}

/* One snapshot of the whole semaphore (volt_sem_inspect, after it reclaimed
 * what dead processes held) must conserve the permits: what is used (held,
 * or granted to waiters) is at most the total plus a shrink's debt, and the
 * debt (what is used beyond the total) leaves nothing available; without
 * one, available is exactly the total minus what is used. */
enum { IH = 96, IW = 256 };
static bool inspect_conserved(const volt_sem *sem, counts *c, long *used_out, volt_inspection *out,
                              volt_status *status) {
    volt_holder *h = malloc(IH * sizeof *h);
    volt_queued_waiter *w = malloc(IW * sizeof *w);
    if (!h || !w) abort();
    volt_inspection in;
    volt_status s = volt_sem_inspect(sem, &in, h, IH, w, IW);
    bool ok = s == VOLT_OK;
    if (status) *status = s;
    else if (s != VOLT_OK && s != VOLT_TRUNCATED) violation(c, "inspect: %s", st(s));
    if (ok) {
        long used = 0;
        for (size_t i = 0; i < in.holders; i++) used += (long)h[i].permits;
        for (size_t i = 0; i < in.waiters; i++) used += (long)w[i].granted;
        long total = (long)in.total, want = total > used ? total - used : 0;
        if ((long)in.available != want)
            violation(c, "inspect: not conserved: total %ld, available %zu, held and granted %ld "
                         "(%zu holders, %zu waiters): available should be %ld",
                      total, in.available, used, in.holders, in.waiters, want);
        if (in.waiters && in.available)
            violation(c, "inspect: %zu permits available with %zu waiters queued", in.available, in.waiters);
        if (used_out) *used_out = used;
        if (out) *out = in;
    }
    free(h);
    free(w);
    return ok;
}

static void inspect_op(worker *k) {
    long used = 0, lo, hi;
    volt_inspection in;
    bool was_done = k->h && atomic_load(&k->h->done);
    volt_status s;
    bool ok = inspect_conserved(k->sem, k->c, &used, &in, &s);
    if (disconnected(k, k->h, was_done, s, "inspect")) return;
    if (s != VOLT_OK && s != VOLT_TRUNCATED) violation(k->c, "inspect: %s", st(s));
    if (!ok) return;
    total_bounds(k, k->s0, &lo, &hi); /* the snapshot's total was in force since s0 */
    long t = (long)in.total;
    if (t < lo || t > hi) violation(k->c, "inspect: total %ld, the totals in force were %ld to %ld", t, lo, hi);
    atomic_fetch_add(&A->inspects, 1);
    /* How far above the total the debt windows reached (coverage). */
    if (used > t) {
        atomic_fetch_add(&A->debts, 1);
        long m = atomic_load(&A->max_debt);
        while (used - t > m && !atomic_compare_exchange_weak(&A->max_debt, &m, used - t)) {
        }
    }
}

static void note_event(int op, long n, long in_use) {
    if (!A) return;
    event *e = &A->ring[atomic_fetch_add(&A->ring_pos, 1) % RING];
    atomic_store(&e->pid, (int)getpid());
    atomic_store(&e->op, op);
    atomic_store(&e->n, n);
    atomic_store(&e->in_use, in_use);
    atomic_store(&e->t_us, (long)((now_s() - A->t0) * 1e6));
}

/* On an over-grant (or any violation): the last accounting events of every
 * process, oldest first (instrumentation for issue 33's item 1). */
static void dump_ring(void) {
    long end = atomic_load(&A->ring_pos);
    fprintf(stderr, "    last accounting events (pid, +grant/-release, n, count after, us):\n");
    for (long i = end > RING ? end - RING : 0; i < end; i++) {
        event *e = &A->ring[i % RING];
        fprintf(stderr, "      %d %c%ld -> %ld at %ld\n", atomic_load(&e->pid),
                atomic_load(&e->op) > 0 ? '+' : '-', atomic_load(&e->n), atomic_load(&e->in_use),
                atomic_load(&e->t_us));
    }
}

static int claim_proc(int pid, int depth) {
    for (int i = 0; i < MAXP; i++) {
        int z = 0;
        if (atomic_compare_exchange_strong(&A->procs[i].pid, &z, pid)) {
            atomic_store(&A->procs[i].depth, depth);
            atomic_store(&A->procs[i].born_us, (long)((now_s() - A->t0) * 1e6));
            atomic_store(&A->procs[i].dumped, 0);
            atomic_store(&A->procs[i].share, 0);
            atomic_store(&A->procs[i].counted, 1);
            return i;
        }
    }
    return -1;
}

static int find_proc(int pid) {
    for (int i = 0; i < MAXP; i++)
        if (atomic_load(&A->procs[i].pid) == pid) return i;
    return -1;
}

/* Takes a dead or stopped process's share off the count (once). */
static void take_off(int i) {
    if (i < 0) return;
    if (atomic_exchange(&A->procs[i].counted, 0)) {
        long sh = atomic_exchange(&A->procs[i].share, 0);
        long now = atomic_fetch_sub(&A->c.in_use, sh) - sh;
        note_event(-2, sh, now);
    }
}

typedef struct {
    worker k;
    bool may_fork;
    int depth;
} sthread;

static void proc_main(int me, uint64_t seed, unsigned threads, double until, bool may_fork, int depth);

static void *shared_thread(void *p) {
    sthread *a = p;
    worker *k = &a->k;
    while (now_s() < k->until && !atomic_load(&A->stop)) {
        worker_step(k);
        if (a->may_fork && a->depth == 0 && rng_below(&k->rng, 3000) == 0) {
            atomic_fetch_add(&A->forks, 1);
            uint64_t cseed = rng_next(&k->rng);
            double cuntil = now_s() + 0.05 + (double)rng_below(&k->rng, 400) / 1000;
            /* Forks race the opens of the other threads (switch_handle):
             * a child forked while its parent holds a name's init lock must
             * not keep it (found by this fuzzer, seed 220077 of the ASan
             * build; fixed, see docs/testing.md). */
            pid_t pid = fork();
            if (pid == 0) {
                /* Another thread may have held a lock at the fork (POSIX then
                 * allows only async-signal-safe calls): a child stuck on one
                 * dies of SIGALRM, the driver counts it and takes its share off. */
                alarm(15);
                int me = claim_proc(getpid(), 1); /* first: a stuck child is told apart */
                /* The parent's handle refuses here; what this thread held is the
                 * parent's (its record's), not the child's. */
                volt_status s = volt_sem_try_acquire(k->sem, 1);
                /* A handle the parent had begun disconnecting fails either
                 * way: the header has both "fails in the child with
                 * VOLT_FORKED" and "every later call returns
                 * VOLT_DISCONNECTED", and does not say which comes first. */
                bool gone = k->h && atomic_load(&k->h->gone);
#define FORK_FAILS(s) ((s) == VOLT_FORKED || (gone && (s) == VOLT_DISCONNECTED))
                if (!FORK_FAILS(s)) violation(k->c, "a parent's handle in a forked child: %s", st(s));
                /* Its session is the parent's: nothing changes. */
                if ((s = volt_sem_disconnect(k->sem)) != VOLT_FORKED)
                    violation(k->c, "disconnect of a parent's handle in a forked child: %s", st(s));
                if (k->resize) {
                    if (!FORK_FAILS(s = volt_sem_set_total(k->sem, 1)))
                        violation(k->c, "set_total on a parent's handle in a forked child: %s", st(s));
                    if (!FORK_FAILS(s = volt_sem_reopen(k->sem)))
                        violation(k->c, "reopen on a parent's handle in a forked child: %s", st(s));
                }
#undef FORK_FAILS
                volt_sem_free(k->sem);
                proc_main(me, cseed, 1 + (unsigned)(cseed % 2), cuntil, false, 1);
                _exit(0);
            }
        }
    }
    worker_finish(k);
    return NULL;
}

/* Opens the run's semaphore. Resize runs: under rlock, either with a new
 * total and VOLT_OPEN_RESIZE (a third of the opens), or with the total in
 * force and no flag, which must succeed: with the last entry's total, or,
 * after a resizer died between its steps, with exactly one of the two. */
static const volt_sem *open_shared(uint64_t *r) {
    const volt_sem *sem = NULL;
    volt_status s;
    if (!A->resize) {
        s = open_name(r, (size_t)A->c.total, 0, &sem);
        if (s != VOLT_OK) violation(&A->c, "volt_sem_open: %s", st(s));
        return sem;
    }
    /* Longer than a forked child stuck inside (its alarm: 15 s) may take. */
    if (!rlock_take(30000)) {
        violation(&A->c, "the fuzzer's resize lock stayed held for 30 s");
        return NULL;
    }
    long lo, hi, want;
    log_last(&lo, &hi);
    if (rng_below(r, 3) == 0) {
        want = 1 + rng_below(r, (unsigned)A->c.total);
        log_append(lo < want ? lo : want, hi > want ? hi : want);
        s = open_name(r, (size_t)want, VOLT_OPEN_RESIZE, &sem);
        if (s == VOLT_OK) log_append(want, want), atomic_fetch_add(&A->open_resizes, 1);
        else violation(&A->c, "volt_sem_open(total %ld, VOLT_OPEN_RESIZE): %s", want, st(s));
    } else {
        want = hi;
        s = open_name(r, (size_t)hi, 0, &sem);
        if (s == VOLT_MISMATCH && lo != hi) want = lo, s = open_name(r, (size_t)lo, 0, &sem);
        if (s != VOLT_OK)
            violation(&A->c, "volt_sem_open with the total in force (%ld, or %ld): %s", hi, lo, st(s));
        else if (lo != hi)
            log_append(want, want), atomic_fetch_add(&A->resolved, 1);
    }
    if (s == VOLT_OK && volt_sem_total_permits(sem) != (size_t)want)
        violation(&A->c, "opened with total %ld, total_permits %zu", want, volt_sem_total_permits(sem));
    pthread_mutex_unlock(&A->rlock);
    return sem;
}

/* volt_sem_open of the run's name, or (half the time) volt_sem_open_with
 * with the same flags, with a label or without, or NULL options: the same
 * outcome. Now and then an invalid label first: refused, nothing opened. */
static volt_status open_name(uint64_t *r, size_t total, uint32_t flags, const volt_sem **out) {
    unsigned x = rng_below(r, 8);
    if (x < 4) return volt_sem_open(shm_name, total, flags, out);
    volt_open_options o;
    if (volt_open_options_init(&o, sizeof o) != VOLT_OK) violation(&A->c, "volt_open_options_init refused");
    o.flags = flags;
    if (x == 7) {
        o.label = "a label with spaces";
        const volt_sem *bad = (const volt_sem *)&o;
        volt_status s = volt_sem_open_with(shm_name, total, &o, &bad);
        if (s != VOLT_INVALID_ARGUMENT || bad != NULL)
            violation(&A->c, "volt_sem_open_with an invalid label: %s, handle %p", st(s), (void *)bad);
    }
    char label[64];
    snprintf(label, sizeof label, "fuzz-%d", (int)getpid());
    o.label = x >= 6 ? label : NULL;
    atomic_fetch_add(&A->open_withs, 1);
    return volt_sem_open_with(shm_name, total, x == 5 && flags == 0 ? NULL : &o, out);
}

/* The process's handles on the run's name (a fork child starts its own). */
enum { MAXH = 24 };
static hnd HS[MAXH];
static int nhs;
static pthread_mutex_t hs_mu = PTHREAD_MUTEX_INITIALIZER;

static hnd *add_handle(const volt_sem *sem) {
    pthread_mutex_lock(&hs_mu);
    hnd *h = nhs < MAXH ? &HS[nhs++] : NULL;
    if (h) {
        h->sem = sem;
        if (pthread_mutex_init(&h->mu, NULL) != 0) abort();
        atomic_store(&h->gone, 0);
        atomic_store(&h->done, 0);
        h->held = 0;
        h->refs = 1;
    }
    pthread_mutex_unlock(&hs_mu);
    if (!h) volt_sem_free(sem);
    return h;
}

/* The worker's handle was disconnected: its requests end (failed by the
 * disconnect, or collected before it), what it held went back with it (off
 * the count already), and it works on through a new open of the name. */
static void switch_handle(worker *k) {
    for (int i = 0; i < 3; i++)
        if (k->tw[i].busy) end_request(k, &k->tw[i], false);
    k->held = 0;
    pthread_mutex_lock(&hs_mu);
    bool room = nhs < MAXH;
    pthread_mutex_unlock(&hs_mu);
    const volt_sem *sem = room ? open_shared(&k->rng) : NULL;
    hnd *h = sem ? add_handle(sem) : NULL;
    if (!h) {
        k->until = 0; /* no handle left: this thread is done */
        return;
    }
    atomic_fetch_add(&A->handles, 1);
    k->h = h;
    k->sem = h->sem;
}

/* Disconnects `h`: what was counted through it comes off the count first
 * (under its lock, with `gone` set: no grant through it is counted after). */
static void disconnect_handle(worker *k, hnd *h) {
    pthread_mutex_lock(&h->mu);
    atomic_store(&h->gone, 1);
    if (h->held) count_release(k, (size_t)h->held);
    h->held = 0;
    pthread_mutex_unlock(&h->mu);
    volt_status s = volt_sem_disconnect(h->sem);
    if (s != VOLT_OK) violation(k->c, "volt_sem_disconnect: %s", st(s));
    atomic_store(&h->done, 1);
    atomic_fetch_add(&A->disconnects, 1);
}

/* A wake callback disconnects its own request's handle (allowed there),
 * if the process has room for the handles its threads then open. */
static void disconnect_in_callback(worker *k, hnd *h) {
    pthread_mutex_lock(&hs_mu);
    bool room = nhs + 3 <= MAXH;
    pthread_mutex_unlock(&hs_mu);
    if (!room || atomic_load(&h->gone)) return;
    disconnect_handle(k, h);
    atomic_fetch_add(&A->cb_disconnects, 1);
}

typedef struct {
    worker *k;
    hnd *h;
    size_t n;
    long s0;
    volt_status s;
} blocker;

/* A thread blocked in volt_sem_acquire_blocking on a handle about to be
 * disconnected: the disconnect must end its wait (VOLT_DISCONNECTED), unless
 * it was granted first (then those permits went back with the handle's, or
 * were released before it). */
static void *blocker_main(void *p) {
    blocker *b = p;
    b->s = volt_sem_acquire_blocking(b->h->sem, b->n, 30LL * 1000000000);
    if (b->s == VOLT_OK) {
        grant_on(b->k, b->h, b->n, b->s0);
        release_on(b->k, b->h, b->n);
    }
    return NULL;
}

#define DISC_CHECK(call, want, what)                                                             \
    do {                                                                                         \
        volt_status g_ = (call);                                                                 \
        if (g_ != (want)) violation(k->c, "after volt_sem_disconnect, %s: %s, not %s", (what), st(g_), \
                                    st(want));                                                   \
    } while (0)

/* Disconnects one of the process's handles at random, while the threads on
 * it (this one, or others) hold permits, have requests queued or wait in a
 * blocking acquire; sometimes this thread first queues a request on it (its
 * own handle) or starts a thread blocked on it. The handle's counted
 * permits come off the count first (see `hnd`). Then: a second disconnect
 * is VOLT_OK, every call that returns a status is VOLT_DISCONNECTED, the
 * queries answer; the blocked thread returned. */
static void disconnect_op(worker *k) {
    hnd *h = NULL;
    pthread_mutex_lock(&hs_mu);
    if (nhs + 3 <= MAXH) {
        hnd *cand[MAXH];
        int m = 0;
        for (int i = 0; i < nhs; i++)
            if (!atomic_load(&HS[i].gone)) cand[m++] = &HS[i];
        if (m) h = cand[rng_below(&k->rng, (unsigned)m)];
    }
    pthread_mutex_unlock(&hs_mu);
    if (!h) return;
    size_t cur = volt_sem_total_permits(h->sem);
    if (cur == 0) cur = 1;
    twaiter *own = NULL;
    if (h == k->h && rng_below(&k->rng, 2) == 0) {
        for (int i = 0; i < 3; i++) {
            if (k->tw[i].busy) continue;
            start_request(k, &k->tw[i], cur); /* the whole total: mostly queued */
            if (k->tw[i].busy) own = &k->tw[i], atomic_fetch_add(&A->disc_waiters, 1);
            break;
        }
    }
    /* The whole total (mostly queued), or one permit (often granted
     * around the disconnect). */
    blocker b = {k, h, rng_below(&k->rng, 2) ? cur : 1, rseq_now(k), VOLT_OK};
    pthread_t bt;
    bool blk = rng_below(&k->rng, 2) == 0;
    if (blk) {
        if (pthread_create(&bt, NULL, blocker_main, &b) != 0) abort();
        sleep_us(rng_below(&k->rng, 3000));
    }
    disconnect_handle(k, h);
    DISC_CHECK(volt_sem_disconnect(h->sem), VOLT_OK, "a second disconnect");
    DISC_CHECK(volt_sem_try_acquire(h->sem, 1), VOLT_DISCONNECTED, "try_acquire");
    DISC_CHECK(volt_sem_release(h->sem, 1), VOLT_DISCONNECTED, "release");
    DISC_CHECK(volt_sem_acquire_blocking(h->sem, 1, 0), VOLT_DISCONNECTED, "acquire_blocking");
    DISC_CHECK(volt_sem_close(h->sem), VOLT_DISCONNECTED, "close");
    DISC_CHECK(volt_sem_reopen(h->sem), VOLT_DISCONNECTED, "reopen");
    /* A set_total to the total in force (harmless if it were taken). */
    if (!k->resize) DISC_CHECK(volt_sem_set_total(h->sem, (size_t)k->c->total), VOLT_DISCONNECTED, "set_total");
    {
        volt_inspection in;
        DISC_CHECK(volt_sem_inspect(h->sem, &in, NULL, 0, NULL, 0), VOLT_DISCONNECTED, "inspect");
        volt_stats sx = {.struct_size = sizeof sx};
        DISC_CHECK(volt_sem_stats(h->sem, &sx), VOLT_OK, "stats");
        volt_waiter w;
        if (volt_waiter_init(&w) != VOLT_OK) abort();
        DISC_CHECK(volt_sem_acquire(h->sem, &w, 1, t_wake, NULL), VOLT_DISCONNECTED, "acquire");
        if (volt_waiter_is_busy(&w)) violation(k->c, "after volt_sem_disconnect, an acquire left its waiter busy");
    }
    if (own) {
        /* Its request is woken (a disconnect fails it; its callback runs on
         * the doorbell thread, shortly after), then its cancel answers
         * VOLT_DISCONNECTED (end_request checks). */
        for (double give_up = now_s() + 20; !atomic_load(&own->calls) && now_s() < give_up;) sleep_us(200);
        if (!atomic_load(&own->calls))
            violation(k->c, "a request queued on a handle was not woken 20 s after its disconnect returned");
        end_request(k, own, false);
    }
    if (blk) {
        pthread_join(bt, NULL);
        atomic_fetch_add(&A->blocked, 1);
        switch (b.s) {
        case VOLT_DISCONNECTED: atomic_fetch_add(&A->blocked_out[0], 1); break;
        case VOLT_OK: atomic_fetch_add(&A->blocked_out[1], 1); break;
        case VOLT_INVALID_ARGUMENT:
            failed_above(k, b.n, b.s0, "a blocked acquire_blocking");
            atomic_fetch_add(&A->blocked_out[2], 1);
            break;
        case VOLT_CLOSED: atomic_fetch_add(&A->blocked_out[2], 1); break;
        default:
            violation(k->c, "a thread blocked in acquire_blocking on a handle being disconnected returned %s",
                      st(b.s));
        }
    }
}

static void proc_main(int me, uint64_t seed, unsigned threads, double until, bool may_fork, int depth) {
    if (me < 0) return;
    uint64_t r = seed;
    /* A fork child's copies of its parent's handles are the parent's (and
     * its copies of the locks may be held by threads it does not have). */
    nhs = 0;
    if (pthread_mutex_init(&hs_mu, NULL) != 0) abort();
    const volt_sem *sem = open_shared(&r);
    if (!sem) return;
    if (depth) atomic_fetch_add(&A->fork_opens, 1);
    /* Several handles on the name: the first, a clone of it (the same
     * handle), a second open. */
    hnd *ha = add_handle(sem), *hb = NULL;
    const volt_sem *cl = volt_sem_clone(sem);
    if (cl != sem) violation(&A->c, "volt_sem_clone returned %p, not the handle %p", (void *)cl, (void *)sem);
    else ha->refs++;
    const volt_sem *sem2 = open_shared(&r);
    if (sem2) hb = add_handle(sem2), atomic_fetch_add(&A->handles, 1);
    if (!hb) hb = ha;
    sthread all[3];
    pthread_t t[3];
    if (threads > 3) threads = 3;
    for (unsigned j = 0; j < threads; j++) {
        hnd *h = j == 0 || (j == 1 && rng_below(&r, 2)) ? ha : hb;
        worker_init(&all[j].k, h == ha && j ? cl : h->sem, &A->c, rng_next(&r));
        all[j].k.h = h;
        all[j].k.until = until;
        all[j].k.share = &A->procs[me].share;
        all[j].k.resize = A->resize;
        all[j].may_fork = may_fork;
        all[j].depth = depth;
    }
    for (unsigned j = 0; j < threads; j++)
        if (pthread_create(&t[j], NULL, shared_thread, &all[j]) != 0) abort();
    for (unsigned j = 0; j < threads; j++) pthread_join(t[j], NULL);
    /* Every thread ended its requests and released what it held: the
     * process holds nothing, through any of its handles (the gauges are the
     * process's for the name; they answer on a disconnected handle too). */
    for (int i = 0; i < nhs; i++) {
        volt_stats sx = {.struct_size = sizeof sx};
        volt_status s = volt_sem_stats(HS[i].sem, &sx);
        if (s != VOLT_OK) violation(&A->c, "at a process's end, stats: %s", st(s));
        else if (sx.held != 0 || sx.queued != 0)
            violation(&A->c, "at a process's end, stats of handle %d%s: %zu held, %zu queued", i,
                      atomic_load(&HS[i].done) ? " (disconnected)" : "", sx.held, sx.queued);
    }
    for (int i = 0; i < nhs; i++)
        while (HS[i].refs-- > 0) volt_sem_free(HS[i].sem);
    /* Ended normally: everything released; its record's slot is free again. */
    atomic_store(&A->procs[me].counted, 0);
    atomic_store(&A->procs[me].pid, 0);
}

static pid_t spawn_proc(uint64_t seed, unsigned threads, double until, bool may_fork) {
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        alarm((unsigned)(until - now_s()) + 60); /* a hung worker ends, its run fails */
        proc_main(claim_proc(getpid(), 0), seed, threads, until, may_fork, 0);
        _exit(0);
    }
    return pid;
}

/* The state letter of `pid` in /proc ('R', 'S', 'T', 'Z', ...), or 0. */
static char proc_state(pid_t pid) {
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' ? p[2] : 0;
}

/* Whether `pid` is stopped (its /proc state is 'T' or 't'); gives up after ~1 s. */
static bool wait_stopped(pid_t pid) {
    for (int i = 0; i < 1000; i++) {
        char c = proc_state(pid);
        if (c == 'T' || c == 't') return true;
        if (c == 0 || c == 'Z' || c == 'X') return false;
        sleep_us(1000);
    }
    return false;
}

typedef struct {
    long kills, stops, hangs, reaped, resizer_kills, killed_in_call;
} driver_stats;

/* Reaps every ended process (the driver is the subreaper of the forked
 * grandchildren too); one that died of a signal the driver did not send
 * (SIGALRM: stuck after fork) has its share taken off. */
static void reap(driver_stats *d, bool block) {
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, block ? 0 : WNOHANG);
        if (pid <= 0) return;
        d->reaped++;
        int i = find_proc(pid);
        if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
            /* A forked child stuck on a lock held at the fork is allowed
             * (counted); a worker that hangs, or any other signal, is not. */
            if (WTERMSIG(status) == SIGALRM && i >= 0 && atomic_load(&A->procs[i].depth) > 0)
                d->hangs++;
            else
                violation(&A->c, "process %d died of signal %d", (int)pid, WTERMSIG(status));
        }
        if (i >= 0) {
            take_off(i);
            atomic_store(&A->procs[i].pid, 0);
        }
    }
}

/* A forked child lives under half a second; one alive after 3 s is stuck.
 * Its threads' stacks (gdb, when installed) say where, before its alarm
 * ends it. */
static void dump_stuck(void) {
    long now_us = (long)((now_s() - A->t0) * 1e6);
    for (int i = 0; i < MAXP; i++) {
        proc_rec *p = &A->procs[i];
        int pid = atomic_load(&p->pid);
        /* Not one the driver killed (a zombie until its parent, a worker
         * that does not wait for it, ends), nor one stopped now. */
        if (pid <= 0 || atomic_load(&p->depth) == 0 || !atomic_load(&p->counted) ||
            now_us - atomic_load(&p->born_us) < 3000000 || atomic_load(&p->dumped))
            continue;
        char state = proc_state(pid);
        if (state == 0 || state == 'Z' || state == 'T' || state == 't') continue;
        atomic_store(&p->dumped, 1);
        fprintf(stderr, "    forked child %d alive %.1f s after its start: its stacks\n", pid,
                (double)(now_us - atomic_load(&p->born_us)) / 1e6);
        char cmd[128];
        snprintf(cmd, sizeof cmd, "timeout 60 gdb -q -p %d -batch -ex 'thread apply all bt' 1>&2", pid);
        if (system("command -v gdb >/dev/null 2>&1") == 0 && system(cmd) != 0)
            fprintf(stderr, "    (gdb failed)\n");
    }
}

static int random_victim(uint64_t *r) {
    int cand[MAXP], k = 0;
    for (int i = 0; i < MAXP; i++)
        if (atomic_load(&A->procs[i].pid) > 0 && atomic_load(&A->procs[i].counted)) cand[k++] = i;
    return k ? cand[rng_below(r, (unsigned)k)] : -1;
}

/* The end of a run without resizes: a fresh process (this one) gets the
 * whole total: the dead ones' permits and requests came back. */
static void final_fixed(unsigned total) {
    const volt_sem *sem = NULL;
    volt_status s = volt_sem_open(shm_name, total, 0, &sem);
    if (s == VOLT_OK) {
        s = volt_sem_acquire_blocking(sem, total, 20LL * 1000000000);
        if (s != VOLT_OK) {
            violation(&A->c, "at the end acquire_blocking(total %u): %s", total, st(s));
        } else {
            if (volt_sem_release(sem, total) != VOLT_OK) violation(&A->c, "final release failed");
            size_t a = volt_sem_available_permits(sem);
            if (a != total) violation(&A->c, "at the end %zu available of %u", a, total);
        }
        volt_sem_free(sem);
    } else {
        violation(&A->c, "at the end volt_sem_open: %s", st(s));
    }
}

#define END_CHECK(call, want, what)                                                         \
    do {                                                                                    \
        volt_status g_ = (call);                                                            \
        if (g_ != (want)) violation(&A->c, "at the end %s: %s, not %s", (what), st(g_), st(want)); \
    } while (0)

/* The end of a resize run, every process gone: a fresh process (this one)
 * opens with the total in force (exactly one of two if a resizer died
 * inside); the semaphore is reopened; inspect conserves; an open with
 * VOLT_OPEN_RESIZE sets a final total, which it acquires whole; a shrink
 * below what it holds leaves a debt (inspect: nothing available, held above
 * the total) that the first release pays, and then the new total is whole
 * again. */
static void final_resized(uint64_t *r) {
    counts *c = &A->c;
    long lo, hi, known;
    log_last(&lo, &hi);
    const volt_sem *sem = NULL, *sem2 = NULL;
    volt_status s = volt_sem_open(shm_name, (size_t)hi, 0, &sem);
    known = hi;
    if (s == VOLT_MISMATCH && lo != hi) known = lo, s = volt_sem_open(shm_name, (size_t)lo, 0, &sem);
    if (s != VOLT_OK) {
        violation(c, "at the end volt_sem_open with the total in force (%ld, or %ld): %s", hi, lo, st(s));
        return;
    }
    if (volt_sem_total_permits(sem) != (size_t)known)
        violation(c, "at the end total_permits %zu, opened with %ld", volt_sem_total_permits(sem), known);
    /* The conservation count of a named semaphore is volt_sem_inspect's:
     * volt_sem_census (with its debt field) is for Redis ones only. */
    volt_census cs;
    END_CHECK(volt_sem_census(sem, &cs), VOLT_UNSUPPORTED, "census of a named semaphore");
    END_CHECK(volt_sem_reopen(sem), VOLT_OK, "reopen");
    if (volt_sem_is_closed(sem)) violation(c, "at the end closed after reopen");
    long used = -1;
    volt_inspection in;
    if (inspect_conserved(sem, c, &used, &in, NULL)) {
        if (used != 0 || in.waiters != 0 || (long)in.total != known || (long)in.available != known)
            violation(c, "at the end, nobody left: inspect says total %zu, available %zu, %ld used, %zu "
                         "waiters (total %ld)", in.total, in.available, used, in.waiters, known);
    }
    /* A final total, set by an open (rolling deploy), at least 2 for the debt. */
    size_t fin = 2 + rng_below(r, (unsigned)c->total);
    END_CHECK(volt_sem_open(shm_name, (size_t)known + 1, 0, &sem2), VOLT_MISMATCH, "open with another total, no flag");
    s = volt_sem_open(shm_name, fin, VOLT_OPEN_RESIZE, &sem2);
    if (s != VOLT_OK) {
        violation(c, "at the end volt_sem_open(%zu, VOLT_OPEN_RESIZE): %s", fin, st(s));
        volt_sem_free(sem);
        return;
    }
    if (volt_sem_total_permits(sem) != fin || volt_sem_total_permits(sem2) != fin)
        violation(c, "at the end total_permits %zu and %zu after an open resized to %zu",
                  volt_sem_total_permits(sem), volt_sem_total_permits(sem2), fin);
    END_CHECK(volt_sem_acquire_blocking(sem, fin + 1, 0), VOLT_INVALID_ARGUMENT, "acquire above the total");
    s = volt_sem_acquire_blocking(sem, fin, 20LL * 1000000000);
    if (s != VOLT_OK) {
        violation(c, "at the end acquire_blocking(total %zu): %s", fin, st(s));
    } else {
        END_CHECK(volt_sem_try_acquire(sem2, 1), VOLT_WOULD_BLOCK, "try_acquire with the total held");
        /* The debt: shrink by one below what is held. */
        END_CHECK(volt_sem_set_total(sem2, fin - 1), VOLT_OK, "set_total below what is held");
        if (inspect_conserved(sem, c, &used, &in, NULL) &&
            (used != (long)fin || in.total != fin - 1 || in.available != 0))
            violation(c, "at the end, in a debt of 1: inspect says total %zu, available %zu, %ld used",
                      in.total, in.available, used);
        END_CHECK(volt_sem_try_acquire(sem2, 1), VOLT_WOULD_BLOCK, "try_acquire in a debt");
        END_CHECK(volt_sem_release(sem, 1), VOLT_OK, "release paying the debt");
        if (volt_sem_available_permits(sem) != 0)
            violation(c, "at the end a release paying a debt made %zu available", volt_sem_available_permits(sem));
        END_CHECK(volt_sem_release(sem, fin - 1), VOLT_OK, "release of the rest");
        fin--;
        if (volt_sem_available_permits(sem) != fin)
            violation(c, "at the end %zu available of %zu", volt_sem_available_permits(sem), fin);
        if (inspect_conserved(sem2, c, &used, &in, NULL) && (used != 0 || in.available != fin))
            violation(c, "at the end inspect: %ld used, %zu available of %zu", used, in.available, fin);
        END_CHECK(volt_sem_acquire_blocking(sem2, fin, 20LL * 1000000000), VOLT_OK, "acquire of the new total");
        END_CHECK(volt_sem_release(sem2, fin), VOLT_OK, "release of the new total");
    }
    volt_sem_free(sem2);
    volt_sem_free(sem);
}

static bool shared_run(const options *o, uint64_t seed, long run, long *ops_out) {
    uint64_t r = seed;
    unsigned total = o->total ? o->total : 1 + rng_below(&r, 2);
    unsigned procs = o->procs ? o->procs : 3 + rng_below(&r, 4);
    unsigned threads = o->threads ? o->threads : 1 + rng_below(&r, 3);
    double seconds = o->seconds > 0 ? o->seconds : 2;
    snprintf(shm_name, sizeof shm_name, "fuzz-%d-%ld", (int)getpid(), run);
    (void)volt_sem_unlink(shm_name);
    memset(A, 0, sizeof *A);
    A->c.total = total;
    A->t0 = now_s();
    A->resize = o->resize;
    if (o->resize) {
        /* The total starts at `total` and moves within 1..max total; the
         * count's bound is the log's (c.total is the largest request). */
        unsigned tmax = o->max_total > total ? o->max_total : total;
        A->c.total = tmax;
        atomic_store(&A->rlo[0], total);
        atomic_store(&A->rhi[0], total);
        pthread_mutexattr_t ma;
        if (pthread_mutexattr_init(&ma) != 0 || pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) != 0 ||
            pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST) != 0 ||
            pthread_mutex_init(&A->rlock, &ma) != 0)
            abort();
        pthread_mutexattr_destroy(&ma);
    }
    double until = now_s() + seconds;
    driver_stats d = {0};
    for (unsigned i = 0; i < procs; i++) spawn_proc(rng_next(&r), threads, until, o->fork);
    while (now_s() < until - 0.05) {
        sleep_us(20000 + rng_below(&r, 130000));
        reap(&d, false);
        dump_stuck();
        unsigned x = rng_below(&r, 100);
        int v = random_victim(&r);
        /* Half the time a resizer caught between its steps is the one. */
        int rp = atomic_load(&A->resizer), rz = o->resize && rp > 0 ? find_proc(rp) : -1;
        if (rz >= 0 && atomic_load(&A->procs[rz].counted) && rng_below(&r, 2) == 0)
            v = rz, x = 0, d.resizer_kills += o->kill;
        if (v < 0) continue;
        pid_t pid = atomic_load(&A->procs[v].pid);
        if (pid <= 0) continue;
        if (o->kill && x < 35) {
            /* Stopped first, so its share is final when taken off: every race
             * pushes the count down, never up. Then a replacement. */
            if (kill(pid, SIGSTOP) != 0) continue;
            if (wait_stopped(pid)) take_off(v);
            if (o->resize && atomic_load(&A->in_call) == pid) d.killed_in_call++;
            kill(pid, SIGKILL);
            d.kills++;
            if (now_s() < until - 0.3) spawn_proc(rng_next(&r), threads, until, o->fork);
        } else if (o->stop && x < 70) {
            if (kill(pid, SIGSTOP) != 0) continue;
            sleep_us(1000 + rng_below(&r, 30000));
            kill(pid, SIGCONT);
            d.stops++;
        }
    }
    atomic_store(&A->stop, 1);
    /* Every process ends (the hung ones by their alarm). */
    for (double give_up = now_s() + 90;;) {
        reap(&d, false);
        int alive = 0;
        for (int i = 0; i < MAXP; i++) alive += atomic_load(&A->procs[i].pid) > 0;
        if (!alive) break;
        if (now_s() > give_up) {
            violation(&A->c, "%d processes still running 90 s after the end of the run", alive);
            break;
        }
        dump_stuck();
        sleep_us(50000);
    }
    reap(&d, true);
    if (o->resize) final_resized(&r);
    else final_fixed(total);
    (void)volt_sem_unlink(shm_name);
    bool ok = atomic_load(&A->c.violations) == 0;
    *ops_out += atomic_load(&A->c.ops);
    add_cov(&A->c);
    printf("     run %ld seed %llu: total %u, %u processes x %u threads, %ld ops, %ld grants, "
           "%ld callbacks, peak %ld, %ld kills, %ld stops, %ld forks (%ld opened, %ld stuck)%s\n",
           run, (unsigned long long)seed, total, procs, threads, atomic_load(&A->c.ops),
           atomic_load(&A->c.grants), atomic_load(&A->c.callbacks), atomic_load(&A->c.peak),
           d.kills, d.stops, atomic_load(&A->forks), atomic_load(&A->fork_opens), d.hangs,
           ok ? "" : "  FAIL");
    if (o->resize)
        printf("       totals 1-%ld: %ld set_total, %ld opens with VOLT_OPEN_RESIZE, %ld resizers killed "
               "between their steps (%ld inside set_total; %ld left the total unknown, %ld of those found by an open), %ld "
               "closes, %ld reopens, %ld requests failed as above the total, %ld inspections (%ld "
               "in a debt, up to %ld)\n",
               A->c.total, atomic_load(&A->resizes), atomic_load(&A->open_resizes), d.resizer_kills,
               d.killed_in_call,
               atomic_load(&A->rlock_dead), atomic_load(&A->resolved), atomic_load(&A->closes),
               atomic_load(&A->reopens), atomic_load(&A->failed_above), atomic_load(&A->inspects),
               atomic_load(&A->debts), atomic_load(&A->max_debt));
    printf("       %ld handles opened besides each process's first (%ld opens with volt_sem_open_with), %ld disconnected (%ld inside a wake callback; %ld "
           "requests of its own queued on one, each woken; %ld with a thread blocked in acquire_blocking: %ld "
           "woken VOLT_DISCONNECTED, %ld granted first, %ld otherwise), %ld grants through a handle "
           "being disconnected (not counted)\n",
           atomic_load(&A->handles), atomic_load(&A->open_withs), atomic_load(&A->disconnects),
           atomic_load(&A->cb_disconnects), atomic_load(&A->disc_waiters), atomic_load(&A->blocked), atomic_load(&A->blocked_out[0]),
           atomic_load(&A->blocked_out[1]), atomic_load(&A->blocked_out[2]), atomic_load(&A->uncounted));
    fflush(stdout);
    return ok;
}

static int run_shared(const options *o) {
    A = mmap(NULL, sizeof *A, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (A == MAP_FAILED) abort();
    on_violation = dump_ring;
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    long passed = 0, failed = 0, ops = 0;
    long runs = o->seeds ? o->seeds : 3;
    printf("fuzz-shared: seeds %llu.. kills %s, stops %s, forks %s, resizes %s (replay one: "
           "fuzz_sem shared --seed S --runs 1)\n",
           (unsigned long long)o->seed, o->kill ? "on" : "off", o->stop ? "on" : "off",
           o->fork ? "on" : "off", o->resize ? "on" : "off");
    fflush(stdout);
    for (long i = 0; i < runs; i++) {
        if (shared_run(o, o->seed + (uint64_t)i, i, &ops)) passed++;
        else failed++;
    }
    printf("     %ld runs, %ld operations\n", passed + failed, ops);
    print_cov(&coverage);
    printf("fuzz-shared: %ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* ================================================================= redis */

/* A Redis semaphore (volt_sem_connect) across 3-4 processes (fork and
 * exec of this program, "redis-worker") of 2-3 threads, each process on 1-2 handles (a second connect, or a clone of the
 * first), against a redis-server this mode starts on a free loopback port
 * (or --url / FUZZ_REDIS_URL). Faults: SIGKILL of a process (its permits
 * come back at its lease's end), SIGSTOP of a process for a moment (well
 * within its lease) or past its lease (the driver reaps it with a census
 * meanwhile, then SIGCONT: it must learn the loss as VOLT_LEASE_EXPIRED),
 * and CLIENT KILL of a random connection of the server.
 *
 * The conservation count: every handle has a slot in shared memory, one
 * atomic word {share, generation, gone, version}: the permits the library
 * reported granted through it and not yet released (raised after the grant,
 * lowered before the release). The driver writes a process's slots off
 * (share 0, next generation) while it is stopped, before a kill or when it
 * stops it past its lease; a disconnecting thread writes its handle's slot
 * off (gone) before the call; a thread that learns of a session loss
 * (VOLT_LEASE_EXPIRED and the like) writes its handle's slot off and logs
 * the generation it ended. A lowering of permits counted under an older
 * generation changes nothing. After each counted grant, a snapshot of all
 * slots (a double collect: two equal reads of every word, whose version
 * changes with every write, are one instant) must sum to at most the
 * largest total ever set. A Redis session may lose its permits before its
 * holders learn it (the header's lease-loss window: a refused release or a
 * failed cancel gives the session up, a CLIENT KILL may cause either), so a
 * snapshot above the total is a candidate, resolved at the end of the run:
 * excused if one of its slots was later written off as lost in the
 * generation the snapshot saw (the lost permits were still counted), a
 * violation otherwise. A driver's write-off (kill, stop past the lease)
 * ends a generation before the process could learn a loss in it: it first
 * asks Redis what the stopped process holds, and logs the loss itself when
 * that is less than its slots count (r_stop_writeoff). Fencing tokens are checked without that allowance:
 * a grant's token is above every token any process had seen reported before
 * the request began (and never 0, nor its session). */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

enum { RMAXH = 256, RMAXP = 8, RSLOTS = 2048, RLOSS = 8192, RCAND = 64, RCSLOTS = 16, RHS = 8, RENT = 32, RWATCH = 256 };

/* A slot word: share (12 bits), generation (12), gone (1), version (39). */
#define RS_SHARE(w) ((long)((w) & 0xfff))
#define RS_GEN(w) ((unsigned)(((w) >> 12) & 0xfff))
#define RS_GONE(w) (((w) >> 24) & 1)
#define RS_VER(w) ((w) >> 25)
#define RS_ANY_GEN 0x1000u /* a loss log entry for every generation of its slot */
#define RS_MAKE(share, gen, gone, ver) \
    ((uint64_t)(share) | ((uint64_t)((gen) & 0xfff) << 12) | ((uint64_t)(gone) << 24) | ((uint64_t)(ver) << 25))

typedef struct {
    long s;                 /* its clock */
    int n;
    int slot[RCSLOTS];
    unsigned gen[RCSLOTS];
    long share[RCSLOTS];
    long sum, bound;
} rcand;

typedef struct {
    atomic_int pid;         /* 0: free */
    atomic_int nslots;
    atomic_int slots[RHS];
    atomic_int longstops;   /* stops past the lease, counted by the driver before SIGCONT */
    atomic_int dead;        /* written off for a kill */
} rproc;

typedef struct {
    counts c;
    atomic_uint_fast64_t slot[RSLOTS];
    atomic_int held_at_longstop[RSLOTS]; /* the slot counted permits when a stop past the lease began */
    atomic_int killed_gen[RSLOTS];       /* the generation a kill ended (+ 1), 0: none */
    atomic_int nslot;
    atomic_long clock;
    atomic_ullong max_token;
    atomic_long tmax, tmin;         /* the largest and smallest total ever set (or about to be) */
    atomic_int nloss;
    struct { atomic_int slot; atomic_uint gen; } loss[RLOSS];
    atomic_int ncand;
    rcand cand[RCAND];
    rproc procs[RMAXP];
    atomic_int stop;
    double t0;
    bool kills, client_kills, resize;
    /* statistics */
    atomic_long connects, clones, disconnects, blocked, blocked_out[3], losses, lost_releases,
        expired_after_stop, watches, watch_calls, census, set_totals, failed_above, conn_failed,
        unstable, tokens, connect_resizes, longstop_holders, ok_after_stop, unwatched, stats_only_losses, unresolved, found_lost;
} rarena;

static rarena *RA;
static int r_arena_fd = -1;
static char r_url[160], r_name[64];
static unsigned r_lease_ms = 1000;

static uint64_t rs_load(int i) { return atomic_load(&RA->slot[i]); }

/* Raises slot i by n unless it is gone; *gen the generation counted under. */
static bool rs_raise(int i, long n, unsigned *gen) {
    uint64_t w = rs_load(i);
    for (;;) {
        if (RS_GONE(w)) return false;
        if (RS_SHARE(w) + n > 0xfff) abort();
        uint64_t nw = RS_MAKE(RS_SHARE(w) + n, RS_GEN(w), 0, RS_VER(w) + 1);
        if (atomic_compare_exchange_weak(&RA->slot[i], &w, nw)) {
            *gen = RS_GEN(w);
            return true;
        }
    }
}

/* Lowers slot i by n if it is still in generation gen. */
static void rs_lower(int i, long n, unsigned gen) {
    uint64_t w = rs_load(i);
    for (;;) {
        if (RS_GEN(w) != (gen & 0xfff) || RS_GONE(w)) return;
        if (RS_SHARE(w) < n) {
            violation(&RA->c, "slot %d: lowering %ld below its share %ld", i, n, RS_SHARE(w));
            return;
        }
        uint64_t nw = RS_MAKE(RS_SHARE(w) - n, RS_GEN(w), 0, RS_VER(w) + 1);
        if (atomic_compare_exchange_weak(&RA->slot[i], &w, nw)) return;
    }
}

/* Writes slot i off: share 0, the next generation (gone if `gone`); returns
 * the generation it ended. */
static unsigned rs_writeoff(int i, bool gone) {
    uint64_t w = rs_load(i);
    for (;;) {
        uint64_t nw = RS_MAKE(0, RS_GEN(w) + 1, gone || RS_GONE(w), RS_VER(w) + 1);
        if (atomic_compare_exchange_weak(&RA->slot[i], &w, nw)) return RS_GEN(w);
    }
}

/* A session loss learned on slot i: its counted permits were not held. */
static void rs_lost(int i) {
    unsigned g = rs_writeoff(i, false);
    int k = atomic_fetch_add(&RA->nloss, 1);
    if (k < RLOSS) {
        atomic_store(&RA->loss[k].gen, g);
        atomic_store(&RA->loss[k].slot, i);
    }
    atomic_fetch_add(&RA->losses, 1);
}

/* The over-grant check: one snapshot of every slot (double collect). */
static void rs_check(void) {
    static _Thread_local uint64_t a[RSLOTS], b[RSLOTS];
    for (int attempt = 0; attempt < 50; attempt++) {
        int n = atomic_load(&RA->nslot);
        if (n > RSLOTS) n = RSLOTS;
        long bound = atomic_load(&RA->tmax);
        for (int i = 0; i < n; i++) a[i] = rs_load(i);
        long s = atomic_fetch_add(&RA->clock, 1);
        for (int i = 0; i < n; i++) b[i] = rs_load(i);
        if (memcmp(a, b, (size_t)n * sizeof a[0]) != 0) continue;
        long sum = 0;
        for (int i = 0; i < n; i++) sum += RS_SHARE(a[i]);
        if (sum > atomic_load(&RA->c.peak)) atomic_store(&RA->c.peak, sum);
        if (sum <= bound) return;
        int k = atomic_fetch_add(&RA->ncand, 1);
        if (k >= RCAND) return;
        rcand *c = &RA->cand[k];
        c->s = s, c->sum = sum, c->bound = bound, c->n = 0;
        for (int i = 0; i < n && c->n < RCSLOTS; i++)
            if (RS_SHARE(a[i]) > 0) c->slot[c->n] = i, c->gen[c->n] = RS_GEN(a[i]), c->share[c->n++] = RS_SHARE(a[i]);
        return;
    }
    atomic_fetch_add(&RA->unstable, 1);
}

/* Resolves the run's candidates (every process gone): excused only by a
 * loss that ended a generation the snapshot counted. */
static long rs_resolve(long *excused) {
    long bad = 0;
    int nc = atomic_load(&RA->ncand), nl = atomic_load(&RA->nloss);
    if (nc > RCAND) nc = RCAND;
    if (nl > RLOSS) nl = RLOSS;
    for (int k = 0; k < nc; k++) {
        rcand *c = &RA->cand[k];
        bool ok = false;
        for (int j = 0; j < c->n && !ok; j++)
            for (int l = 0; l < nl && !ok; l++)
                ok = atomic_load(&RA->loss[l].slot) == c->slot[j] &&
                     (atomic_load(&RA->loss[l].gen) == c->gen[j] || atomic_load(&RA->loss[l].gen) == RS_ANY_GEN);
        if (ok) {
            (*excused)++;
            continue;
        }
        /* A holder killed (by the driver) in the generation the snapshot
         * counted, before it could learn of a loss: unresolved, said so,
         * not failed (the kill ends what could have told). */
        bool killed = false;
        for (int j = 0; j < c->n && !killed; j++) killed = atomic_load(&RA->killed_gen[c->slot[j]]) == (int)c->gen[j] + 1;
        if (killed) {
            atomic_fetch_add(&RA->unresolved, 1);
            fprintf(stderr, "    unresolved: %ld permits counted at once (bound %ld), a holder killed before it could "
                            "learn of a loss\n", c->sum, c->bound);
            continue;
        }
        bad++;
        char buf[512];
        int at = 0;
        for (int j = 0; j < c->n && at < 400; j++) {
            at += snprintf(buf + at, sizeof buf - (size_t)at, " slot %d gen %u: %ld (losses learned in gens", c->slot[j],
                           c->gen[j], c->share[j]);
            for (int l = 0; l < nl && at < 400; l++)
                if (atomic_load(&RA->loss[l].slot) == c->slot[j])
                    at += snprintf(buf + at, sizeof buf - (size_t)at, " %u", atomic_load(&RA->loss[l].gen));
            at += snprintf(buf + at, sizeof buf - (size_t)at, "%s);",
                           atomic_load(&RA->held_at_longstop[c->slot[j]]) ? ", held through a stop past the lease" : "");
        }
        violation(&RA->c, "%ld permits reported held at once, above every total ever set (%ld), no session "
                          "loss to explain it:%s", c->sum, c->bound, buf);
    }
    return bad;
}

static void r_atomic_max(atomic_long *a, long v) {
    long o = atomic_load(a);
    while (o < v && !atomic_compare_exchange_weak(a, &o, v)) {
    }
}
static void r_atomic_min(atomic_long *a, long v) {
    long o = atomic_load(a);
    while (o > v && !atomic_compare_exchange_weak(a, &o, v)) {
    }
}

/* ------------------------------------------------------ a worker process */

typedef struct rhnd {
    const volt_sem *sem;
    int slot;
    int refs;
    atomic_int gone, done;  /* its disconnect began / returned */
    atomic_int lost;        /* a session loss was learned on it */
    atomic_int ok_after_stop; /* a release of permits held through a stop past the lease answered VOLT_OK */
    atomic_int watches;
    volt_lease_watch *watch[RWATCH];
    uint64_t watched;       /* the session watched last (under mu) */
    pthread_mutex_t mu;     /* watch[] */
} rhnd;

typedef struct {
    rhnd *h;
    long n;
    unsigned gen;
    bool counted;
    int longstops;          /* the process's long stops when the grant was reported */
} rentry;

typedef struct rworker rworker;
typedef struct {
    volt_waiter w;
    rworker *k;
    rhnd *h;
    long n;
    uint64_t floor;
    atomic_int calls;
    bool busy;
    bool gone_at_start;     /* its handle's disconnect had begun when it was queued */
} rwait;

struct rworker {
    int me;                 /* the process's index */
    uint64_t rng;
    rentry held[RENT];
    int nheld;
    rwait tw[2];
    double until;
};

static rhnd *RH[2];          /* the handles the threads pick from */
static int nrh;
static rhnd *RALL[RHS];      /* every handle of the process, to free at its end */
static int nrall;
static pthread_mutex_t rh_mu = PTHREAD_MUTEX_INITIALIZER;
static int r_me;

/* Connects to the run's semaphore, which exists: with its total (with
 * resizes a third of the connects pass VOLT_CONNECT_RESIZE with a random
 * total instead; a connect with another total than the one in force is
 * VOLT_MISMATCH, and the next guess is tried). */
static volt_status r_connect_as(const volt_sem **out, uint64_t *r, bool may_resize) {
    volt_connect_options opts;
    volt_connect_options_init(&opts, sizeof opts);
    opts.lease_ms = r_lease_ms;
    opts.flags = VOLT_CONNECT_ATTACH_ONLY;
    long tmax = RA->resize ? RA->c.total : atomic_load(&RA->tmax);
    if (RA->resize && may_resize && rng_below(r, 3) == 0) {
        long n = 1 + rng_below(r, (unsigned)tmax);
        r_atomic_max(&RA->tmax, n);
        r_atomic_min(&RA->tmin, n);
        opts.flags |= VOLT_CONNECT_RESIZE;
        volt_status s = volt_sem_connect(r_url, r_name, (size_t)n, &opts, out);
        if (s == VOLT_OK) atomic_fetch_add(&RA->connect_resizes, 1);
        return s;
    }
    volt_status s = VOLT_MISMATCH;
    for (int round = 0; round < 3 && s == VOLT_MISMATCH; round++)
        for (long n = 1; n <= tmax && (s = volt_sem_connect(r_url, r_name, (size_t)n, &opts, out)) == VOLT_MISMATCH; n++) {
        }
    if (s == VOLT_MISMATCH && !RA->resize) violation(&RA->c, "connect at a fixed total: VOLT_MISMATCH");
    return s;
}

static _Thread_local uint64_t r_connect_rng = 1;
static volt_status r_connect(const volt_sem **out) { return r_connect_as(out, &r_connect_rng, true); }

/* A new handle of this process (or NULL: the connect failed, or no slot). */
static rhnd *r_add(const volt_sem *sem, rhnd *clone_of) {
    rhnd *h = calloc(1, sizeof *h);
    if (!h) abort();
    pthread_mutex_init(&h->mu, NULL);
    h->refs = 1;
    if (clone_of) {
        /* The same handle: shares the slot, one more reference. */
        free(h);
        pthread_mutex_lock(&rh_mu);
        clone_of->refs++;
        pthread_mutex_unlock(&rh_mu);
        atomic_fetch_add(&RA->clones, 1);
        return clone_of;
    }
    h->sem = sem;
    rproc *p = &RA->procs[r_me];
    pthread_mutex_lock(&rh_mu);
    int ns = atomic_load(&p->nslots);
    if (ns >= RHS || nrall >= RHS || atomic_load(&RA->nslot) >= RSLOTS) {
        pthread_mutex_unlock(&rh_mu);
        volt_sem_free(sem);
        free(h);
        return NULL;
    }
    h->slot = atomic_fetch_add(&RA->nslot, 1);
    atomic_store(&p->slots[ns], h->slot);
    atomic_store(&p->nslots, ns + 1);
    /* Killed between those two lines: the slot is 0 and never raised. */
    RALL[nrall++] = h;
    pthread_mutex_unlock(&rh_mu);
    atomic_fetch_add(&RA->connects, 1);
    return h;
}

static rhnd *r_pick(rworker *k) {
    pthread_mutex_lock(&rh_mu);
    rhnd *h = RH[rng_below(&k->rng, (unsigned)nrh)];
    pthread_mutex_unlock(&rh_mu);
    return h;
}

/* The statuses any call that talks to Redis may answer under the faults
 * injected; anything else is a violation. */
static bool r_fault_status(volt_status s) {
    if (s == VOLT_CONNECTION_FAILED) {
        atomic_fetch_add(&RA->conn_failed, 1);
        return RA->client_kills;
    }
    return s == VOLT_LEASE_EXPIRED;
}

/* A status of a call on h: whether it is a disconnect's, and whether that
 * is legal. */
static bool r_disc(rhnd *h, bool was_done, volt_status s, const char *what) {
    if (s == VOLT_DISCONNECTED) {
        if (!atomic_load(&h->gone)) violation(&RA->c, "%s returned VOLT_DISCONNECTED on a handle never disconnected", what);
        return true;
    }
    if (was_done) violation(&RA->c, "%s on a disconnected handle returned %s, not VOLT_DISCONNECTED", what, st(s));
    return false;
}

static void r_lost_on(rhnd *h) {
    atomic_store(&h->lost, 1);
    rs_lost(h->slot);
}

/* A lease watch on every session that holds counted permits: the handle
 * learns a loss (its lease found expired, a refused release, a failed
 * cancel giving the session up) and the watch calls back, whether or not
 * a call of the fuzzer's then answers VOLT_LEASE_EXPIRED: the slot is
 * written off as lost, which excuses a snapshot that counted it. */
static void r_watch_cb(void *ctx, volt_status why) {
    rhnd *h = ctx;
    atomic_fetch_add(&RA->watch_calls, 1);
    if (why != VOLT_LEASE_EXPIRED) violation(&RA->c, "a lease watch called with %s", st(why));
    r_lost_on(h);
}

static void r_watch(rhnd *h, uint64_t session) {
    pthread_mutex_lock(&h->mu);
    bool lost_now = false;
    if (session != h->watched) {
        int i = atomic_load(&h->watches);
        if (i < RWATCH) {
            volt_lease_watch *w = NULL;
            volt_status s = volt_sem_watch_lease(h->sem, session, r_watch_cb, h, &w);
            if (s == VOLT_OK) {
                h->watch[i] = w, h->watched = session;
                atomic_store(&h->watches, i + 1);
                atomic_fetch_add(&RA->watches, 1);
            } else if (s == VOLT_LEASE_EXPIRED) {
                lost_now = true;
            } else if (s != VOLT_DISCONNECTED) {
                violation(&RA->c, "watch_lease returned %s", st(s));
            }
        } else {
            atomic_fetch_add(&RA->unwatched, 1);
        }
    }
    pthread_mutex_unlock(&h->mu);
    if (lost_now) r_lost_on(h);
}

/* A grant of n through h: counted, and for a fenced one (token and session
 * known) its token checked and its session watched. */
static void r_granted(rworker *k, rhnd *h, long n, bool fenced, uint64_t token, uint64_t session,
                      uint64_t floor, const char *what) {
    atomic_fetch_add(&RA->c.grants, 1);
    if (fenced) {
        if (token == 0 || session == 0)
            violation(&RA->c, "%s: a Redis grant with token %llu, session %llu", what, (unsigned long long)token,
                      (unsigned long long)session);
        else if (token <= floor)
            violation(&RA->c, "%s: fencing token %llu not above %llu, a token already reported before the request "
                              "began", what, (unsigned long long)token, (unsigned long long)floor);
        unsigned long long o = atomic_load(&RA->max_token);
        while (o < token && !atomic_compare_exchange_weak(&RA->max_token, &o, token)) {
        }
        atomic_fetch_add(&RA->tokens, 1);
    }
    if (k->nheld >= RENT) abort();
    rentry *e = &k->held[k->nheld++];
    e->h = h, e->n = n;
    /* Only a fenced grant is counted: its session is known, and watched
     * (a loss of an unwatched session that its process never learns, say
     * killed first, would leave a snapshot that counted it unexplained). */
    e->counted = fenced && session && rs_raise(h->slot, n, &e->gen);
    e->longstops = atomic_load(&RA->procs[k->me].longstops);
    if (e->counted) {
        r_watch(h, session);
        rs_check();
    } else {
        atomic_fetch_add(&RA->unwatched, 1);
    }
}

static void r_release(rworker *k, int i) {
    rentry e = k->held[i];
    k->held[i] = k->held[--k->nheld];
    bool was_done = atomic_load(&e.h->done);
    int stops = atomic_load(&RA->procs[k->me].longstops);
    if (e.counted) rs_lower(e.h->slot, e.n, e.gen);
    volt_status s = volt_sem_release(e.h->sem, (size_t)e.n);
    if (r_disc(e.h, was_done, s, "release")) return;
    if (s == VOLT_OK) {
        /* Held across a stop past the lease: a release returns at once, so
         * before the handle has learned the loss it answers VOLT_OK (the
         * door's release is then refused and the session given up, which
         * releases nothing twice: the count and the censuses check that). */
        if (stops != e.longstops) atomic_fetch_add(&RA->ok_after_stop, 1), atomic_store(&e.h->ok_after_stop, 1);
        return;
    }
    if (s == VOLT_LEASE_EXPIRED) {
        atomic_fetch_add(&RA->lost_releases, 1);
        if (stops != e.longstops) atomic_fetch_add(&RA->expired_after_stop, 1);
        r_lost_on(e.h);
        return;
    }
    if (s == VOLT_NOT_HELD && atomic_load(&e.h->lost)) return; /* lost with a session already */
    if (r_fault_status(s)) {
        r_lost_on(e.h);
        return;
    }
    violation(&RA->c, "release(%ld) returned %s", e.n, st(s));
}

static void r_wake(void *p) {
    rwait *t = p;
    atomic_fetch_add(&t->calls, 1);
    atomic_fetch_add(&RA->c.callbacks, 1);
}

static void r_end(rworker *k, rwait *t) {
    size_t ret = 0;
    volt_status s;
    bool was_done = atomic_load(&t->h->done);
    bool try = rng_below(&k->rng, 2);
    if (try) {
        while ((s = volt_sem_try_cancel(t->h->sem, &t->w, &ret)) == VOLT_PENDING) sched_yield();
    } else {
        s = volt_sem_cancel(t->h->sem, &t->w, &ret);
    }
    t->busy = false;
    cov(&RA->c, 3, s);
    int calls = atomic_load(&t->calls);
    if (calls > 1) violation(&RA->c, "%d callbacks for one request", calls);
    if (s == VOLT_DISCONNECTED) {
        if (!atomic_load(&t->h->gone)) violation(&RA->c, "cancel returned VOLT_DISCONNECTED, no disconnect");
        return;
    }
    if (was_done && (s == VOLT_OK || s == VOLT_CANCELLED))
        violation(&RA->c, "a request of %ld queued on a handle %s its disconnect began, cancelled after the "
                          "disconnect returned: %s returned %s (%d callbacks; not VOLT_DISCONNECTED)",
                  t->n, t->gone_at_start ? "after" : "before", try ? "try_cancel" : "cancel", st(s), calls);
    switch (s) {
    case VOLT_OK:
        r_granted(k, t->h, t->n, true, volt_waiter_token(&t->w), volt_waiter_session(&t->w), t->floor, "acquire");
        break;
    case VOLT_CANCELLED:
        if (calls != 0) violation(&RA->c, "a cancelled request's callback ran");
        if (ret != 0) violation(&RA->c, "a cancelled Redis request returned %zu permits", ret);
        break;
    case VOLT_INVALID_ARGUMENT:
        if (t->n <= atomic_load(&RA->tmin)) violation(&RA->c, "a request of %ld failed as above the total", t->n);
        atomic_fetch_add(&RA->failed_above, 1);
        break;
    default:
        if (r_fault_status(s)) r_lost_on(t->h);
        else violation(&RA->c, "cancel returned %s", st(s));
    }
}

static long r_size(rworker *k, rhnd *h) {
    long total = (long)volt_sem_total_permits(h->sem);
    if (total < 1 || total > atomic_load(&RA->tmax)) {
        if (!atomic_load(&h->done))
            violation(&RA->c, "total_permits %ld outside the totals ever set (1..%ld)", total, atomic_load(&RA->tmax));
        total = 1;
    }
    if (RA->resize && rng_below(&k->rng, 8) == 0) return 1 + rng_below(&k->rng, (unsigned)atomic_load(&RA->tmax) + 1);
    return 1 + rng_below(&k->rng, (unsigned)total);
}

/* A disconnected handle's place taken by a new connection (the old one
 * kept for its references). */
static void r_replace(rhnd *h) {
    if (atomic_load(&RA->procs[r_me].nslots) >= RHS - 1) return;
    const volt_sem *sem = NULL;
    volt_status s = r_connect(&sem);
    if (s != VOLT_OK) {
        if (!r_fault_status(s) && s != VOLT_MISMATCH) violation(&RA->c, "connect returned %s", st(s));
        return;
    }
    rhnd *n = r_add(sem, NULL);
    if (!n) return;
    pthread_mutex_lock(&rh_mu);
    for (int i = 0; i < nrh; i++)
        if (RH[i] == h) RH[i] = n;
    pthread_mutex_unlock(&rh_mu);
}

static void r_census_check(const volt_sem *sem, volt_status s, const volt_census *c, const char *who) {
    if (s != VOLT_OK) return;
    atomic_fetch_add(&RA->census, 1);
    if (c->available + c->held + c->partial != c->total + c->debt)
        violation(&RA->c, "%s census: available %llu + held %llu + partial %llu != total %llu + debt %llu", who,
                  (unsigned long long)c->available, (unsigned long long)c->held, (unsigned long long)c->partial,
                  (unsigned long long)c->total, (unsigned long long)c->debt);
    if (c->debt && c->available) violation(&RA->c, "%s census: %llu available in a debt", who, (unsigned long long)c->available);
    if ((long)c->total > atomic_load(&RA->tmax) || c->total < 1)
        violation(&RA->c, "%s census: total %llu outside the totals ever set", who, (unsigned long long)c->total);
    if (c->queued && c->available)
        violation(&RA->c, "%s census: %llu available with %llu queued", who, (unsigned long long)c->available,
                  (unsigned long long)c->queued);
    if (c->closed) violation(&RA->c, "%s census: closed (nobody closes it)", who);
    (void)sem;
}

typedef struct {
    rhnd *h;
    long n;
    volt_status s;
} rblock;

static void *r_blocker(void *p) {
    rblock *b = p;
    b->s = volt_sem_acquire_blocking(b->h->sem, (size_t)b->n, 30000000000LL);
    return NULL;
}

#define R_DISC_CHECK(call, what)                                                                   \
    do {                                                                                           \
        volt_status s_ = (call);                                                                   \
        if (s_ != VOLT_DISCONNECTED) violation(&RA->c, "after disconnect: %s returned %s", what, st(s_)); \
    } while (0)

static void r_disconnect(rworker *k, rhnd *h) {
    if (atomic_exchange(&h->gone, 1)) return;
    rs_writeoff(h->slot, true);
    /* Half the time a thread blocked on it (the whole total, or 1). */
    rblock b = {h, rng_below(&k->rng, 2) ? (long)volt_sem_total_permits(h->sem) : 1, VOLT_OK};
    if (b.n < 1) b.n = 1;
    pthread_t th;
    bool blocker = rng_below(&k->rng, 2) && pthread_create(&th, NULL, r_blocker, &b) == 0;
    if (blocker) sleep_us(rng_below(&k->rng, 3000));
    volt_status s = volt_sem_disconnect(h->sem);
    if (s != VOLT_OK) violation(&RA->c, "disconnect returned %s", st(s));
    atomic_store(&h->done, 1);
    atomic_fetch_add(&RA->disconnects, 1);
    if (blocker) {
        pthread_join(th, NULL); /* must return: a hang is the process's alarm */
        atomic_fetch_add(&RA->blocked, 1);
        if (b.s == VOLT_DISCONNECTED) atomic_fetch_add(&RA->blocked_out[0], 1);
        else if (b.s == VOLT_OK) atomic_fetch_add(&RA->blocked_out[1], 1);
        else atomic_fetch_add(&RA->blocked_out[2], 1);
        if (b.s != VOLT_OK && b.s != VOLT_DISCONNECTED && b.s != VOLT_INVALID_ARGUMENT && !r_fault_status(b.s))
            violation(&RA->c, "a thread blocked on a disconnected handle returned %s", st(b.s));
        /* An OK was granted before the disconnect: its permits went back with the handle's. */
    }
    volt_census c;
    volt_grant g;
    R_DISC_CHECK(volt_sem_disconnect(h->sem) == VOLT_OK ? VOLT_DISCONNECTED : VOLT_OK, "a second disconnect (not OK)");
    R_DISC_CHECK(volt_sem_try_acquire(h->sem, 1), "try_acquire");
    R_DISC_CHECK(volt_sem_try_acquire_fenced(h->sem, 1, &g), "try_acquire_fenced");
    R_DISC_CHECK(volt_sem_acquire_blocking(h->sem, 1, 1000000), "acquire_blocking");
    R_DISC_CHECK(volt_sem_release(h->sem, 1), "release");
    /* census and inspect of a Redis handle still answer once it is
     * disconnected (on a connection for that call): nothing held by it. */
    volt_status cs0 = volt_sem_census(h->sem, &c);
    if (cs0 == VOLT_OK) r_census_check(h->sem, cs0, &c, "a disconnected handle's");
    else if (!r_fault_status(cs0)) violation(&RA->c, "after disconnect: census returned %s", st(cs0));
    R_DISC_CHECK(volt_sem_set_total(h->sem, 1), "set_total");
    volt_waiter w;
    volt_waiter_init(&w);
    R_DISC_CHECK(volt_sem_acquire(h->sem, &w, 1, r_wake, NULL), "acquire");
    if (volt_waiter_is_busy(&w)) violation(&RA->c, "an acquire refused as VOLT_DISCONNECTED left its waiter busy");
    volt_stats sts = {.struct_size = sizeof sts};
    if (volt_sem_stats(h->sem, &sts) != VOLT_OK) violation(&RA->c, "stats of a disconnected handle failed");
    /* Half the time a new handle in its place at once (else later). */
    if (rng_below(&k->rng, 2)) r_replace(h);
}

/* The outcome of an immediate acquire (try_acquire, acquire_blocking;
 * `busy` its "not now" status). */
static void r_outcome(rworker *k, rhnd *h, bool was_done, volt_status s, volt_status busy, long n, bool fenced,
                      const volt_grant *g, uint64_t floor, const char *what) {
    if (r_disc(h, was_done, s, what)) return;
    if (s == VOLT_OK) {
        r_granted(k, h, n, fenced, g->token, g->session, floor, what);
    } else if (s == VOLT_INVALID_ARGUMENT) {
        if (n <= atomic_load(&RA->tmin)) violation(&RA->c, "%s(%ld) refused as above the total", what, n);
    } else if (s != busy) {
        if (r_fault_status(s)) r_lost_on(h);
        else violation(&RA->c, "%s returned %s", what, st(s));
    }
}

static void r_step(rworker *k) {
    unsigned x = rng_below(&k->rng, 1000);
    /* Holders release sooner (more grants go round); a full list releases. */
    if (k->nheld >= RENT - 4 || (k->nheld && rng_below(&k->rng, 3) == 0)) x = 600;
    rhnd *h = r_pick(k);
    bool was_done = atomic_load(&h->done);
    atomic_fetch_add(&RA->c.ops, 1);
    if (was_done && rng_below(&k->rng, 4) == 0) {
        r_replace(h);
        return;
    }
    if (x < 180) {
        long n = r_size(k, h);
        uint64_t floor = atomic_load(&RA->max_token);
        volt_grant g = {0};
        bool fenced = rng_below(&k->rng, 4) != 0;
        volt_status s = fenced ? volt_sem_try_acquire_fenced(h->sem, (size_t)n, &g) : volt_sem_try_acquire(h->sem, (size_t)n);
        cov(&RA->c, 0, s);
        r_outcome(k, h, was_done, s, VOLT_WOULD_BLOCK, n, fenced, &g, floor,
                  fenced ? "try_acquire_fenced" : "try_acquire");
    } else if (x < 330) {
        long n = r_size(k, h);
        uint64_t floor = atomic_load(&RA->max_token);
        volt_grant g = {0};
        bool fenced = rng_below(&k->rng, 4) != 0;
        int64_t to = (int64_t)(1 + rng_below(&k->rng, 20)) * 1000000;
        volt_status s = fenced ? volt_sem_acquire_blocking_fenced(h->sem, (size_t)n, to, &g)
                               : volt_sem_acquire_blocking(h->sem, (size_t)n, to);
        cov(&RA->c, 1, s);
        r_outcome(k, h, was_done, s, VOLT_TIMED_OUT, n, fenced, &g, floor,
                  fenced ? "acquire_blocking_fenced" : "acquire_blocking");
    } else if (x < 480) {
        rwait *t = &k->tw[rng_below(&k->rng, 2)];
        if (t->busy) {
            r_end(k, t);
            return;
        }
        long n = r_size(k, h);
        t->h = h, t->n = n, t->floor = atomic_load(&RA->max_token), t->gone_at_start = atomic_load(&h->gone);
        atomic_store(&t->calls, 0);
        volt_status s = volt_sem_acquire(h->sem, &t->w, (size_t)n, r_wake, t);
        cov(&RA->c, 2, s);
        if (r_disc(h, was_done, s, "acquire")) return;
        if (s == VOLT_PENDING) t->busy = true;
        else if (s == VOLT_INVALID_ARGUMENT) {
            if (n <= atomic_load(&RA->tmin)) violation(&RA->c, "acquire(%ld) refused as above the total", n);
        } else if (r_fault_status(s)) r_lost_on(h);
        else violation(&RA->c, "acquire returned %s (never VOLT_OK at once on Redis)", st(s));
    } else if (x < 560) {
        for (int i = 0; i < 2; i++)
            if (k->tw[i].busy && rng_below(&k->rng, 2)) r_end(k, &k->tw[i]);
    } else if (x < 850) {
        if (k->nheld) r_release(k, (int)rng_below(&k->rng, (unsigned)k->nheld));
    } else if (x < 900) {
        size_t held = volt_sem_held_permits(h->sem);
        if ((long)held > 0xfff) violation(&RA->c, "held_permits %zu", held);
        volt_stats sts = {.struct_size = sizeof sts};
        volt_status s = volt_sem_stats(h->sem, &sts);
        if (s != VOLT_OK) violation(&RA->c, "stats returned %s", st(s));
        else if ((long)sts.available > atomic_load(&RA->tmax))
            violation(&RA->c, "stats: %zu available, above every total", sts.available);
    } else if (x < 960) {
        volt_census c;
        volt_status s = volt_sem_census(h->sem, &c);
        if (s == VOLT_OK) r_census_check(h->sem, s, &c, "a worker's");
        else if (!r_fault_status(s)) violation(&RA->c, "census returned %s", st(s));
    } else if (x < 964 && RA->resize) {
        long n = 1 + rng_below(&k->rng, (unsigned)(RA->c.total));
        r_atomic_max(&RA->tmax, n);
        r_atomic_min(&RA->tmin, n);
        volt_status s = volt_sem_set_total(h->sem, (size_t)n);
        cov(&RA->c, 4, s);
        if (r_disc(h, was_done, s, "set_total")) return;
        if (s == VOLT_OK) atomic_fetch_add(&RA->set_totals, 1);
        else if (!r_fault_status(s)) violation(&RA->c, "set_total(%ld) returned %s", n, st(s));
    } else if (x == 999 && rng_below(&k->rng, 4) == 0) {
        r_disconnect(k, h);
    }
}

typedef struct {
    rworker k;
    pthread_t th;
} rthread;

static void *r_thread(void *p) {
    rworker *k = p;
    while (!atomic_load(&RA->stop) && now_s() < k->until) r_step(k);
    for (int i = 0; i < 2; i++)
        if (k->tw[i].busy) r_end(k, &k->tw[i]);
    while (k->nheld) r_release(k, k->nheld - 1);
    return NULL;
}

static void r_proc(int me, uint64_t seed, unsigned threads, double until) {
    r_me = me;
    alarm((unsigned)(until - now_s()) + 40);
    uint64_t r = seed;
    const volt_sem *sem = NULL;
    volt_status s;
    for (int attempt = 0; (s = r_connect(&sem)) != VOLT_OK; attempt++) {
        if (!r_fault_status(s) || attempt > 20) {
            char why[160] = "";
            volt_last_error_message(why, sizeof why);
            violation(&RA->c, "connect returned %s (attempt %d: %s)", st(s), attempt + 1, why);
            _exit(1);
        }
        /* A connection the driver's CLIENT KILL cut fails at once; a server
         * slowed by a loaded machine needs time: back off, 10 ms a try. */
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000 * (long)(attempt + 1)}, NULL);
    }
    rhnd *h1 = r_add(sem, NULL);
    RH[nrh++] = h1;
    if (rng_below(&r, 2)) {
        RH[nrh++] = r_add(NULL, h1);
        (void)volt_sem_clone(h1->sem);
    } else if (r_connect(&sem) == VOLT_OK) {
        RH[nrh++] = r_add(sem, NULL);
    }
    if (!h1 || !RH[nrh - 1]) abort();
    rthread *t = calloc(threads, sizeof *t);
    for (unsigned i = 0; i < threads; i++) {
        t[i].k.me = me, t[i].k.rng = rng_next(&r), t[i].k.until = until;
        for (int j = 0; j < 2; j++) volt_waiter_init(&t[i].k.tw[j].w), t[i].k.tw[j].k = &t[i].k;
        if (pthread_create(&t[i].th, NULL, r_thread, &t[i].k) != 0) abort();
    }
    for (unsigned i = 0; i < threads; i++) pthread_join(t[i].th, NULL);
    /* A lease for the agents to learn of losses (their watches call
     * back). Then every handle that counted a lease loss in its stats
     * without the fuzzer learning one on it (no status, no watch: a
     * session holding only unfenced grants) excuses every snapshot of its
     * slot. */
    sleep_us((long)r_lease_ms * 1000);
    pthread_mutex_lock(&rh_mu);
    for (int i = 0; i < nrall; i++) {
        rhnd *h = RALL[i];
        volt_stats sts = {.struct_size = sizeof sts};
        if (volt_sem_stats(h->sem, &sts) == VOLT_OK && sts.lease_losses && !atomic_load(&h->lost)) {
            int k = atomic_fetch_add(&RA->nloss, 1);
            if (k < RLOSS) {
                atomic_store(&RA->loss[k].gen, RS_ANY_GEN);
                atomic_store(&RA->loss[k].slot, h->slot);
            }
            atomic_fetch_add(&RA->stats_only_losses, 1);
        }
    }
    /* Everything released or lost: the handles' gauges show nothing held or
     * queued (a handle that lost a session may still count its permits). */
    for (int i = 0; i < nrall; i++) {
        rhnd *h = RALL[i];
        volt_stats sts = {.struct_size = sizeof sts};
        if (volt_sem_stats(h->sem, &sts) == VOLT_OK && (sts.queued || (sts.held && !atomic_load(&h->lost))))
            violation(&RA->c, "at the end: a handle's stats show %zu held, %zu queued", sts.held, sts.queued);
        if (!atomic_load(&h->lost) && !atomic_load(&h->done) && volt_sem_held_permits(h->sem))
            violation(&RA->c, "at the end: held_permits %zu", volt_sem_held_permits(h->sem));
        /* It held permits when a stop past its lease began (its session
         * reaped meanwhile): it must learn the loss (its heartbeat after the
         * SIGCONT finds the session gone), as lease_losses shows; waited
         * for up to three leases (a liveness bound, not a timing check). */
        /* (Unless its threads released those permits, VOLT_OK, before it
         * learned: a session that holds nothing when found lost is no
         * lease loss in the stats.) */
        if (atomic_load(&RA->held_at_longstop[h->slot]) && !atomic_load(&h->gone) && !atomic_load(&h->ok_after_stop)) {
            atomic_fetch_add(&RA->longstop_holders, 1);
            double give_up = now_s() + 3.0 * r_lease_ms / 1000;
            while ((volt_sem_stats(h->sem, &sts) != VOLT_OK || sts.lease_losses == 0) && now_s() < give_up)
                sleep_us(10000);
            if (sts.lease_losses == 0)
                violation(&RA->c, "a handle that held permits through a stop past its lease (its session reaped) "
                                  "never learned the loss: lease_losses 0");
        }
    }
    for (int i = 0; i < nrall; i++) {
        rhnd *h = RALL[i];
        if (!h->sem) continue;
        for (int j = 0; j < atomic_load(&h->watches); j++) volt_lease_watch_free(h->watch[j]);
        atomic_store(&h->watches, 0);
        for (; h->refs > 0; h->refs--) volt_sem_free(h->sem);
        h->sem = NULL;
    }
    pthread_mutex_unlock(&rh_mu);
    _exit(atomic_load(&RA->c.violations) ? 1 : 0);
}

/* -------------------------------------------------------------- the driver */

static pid_t r_server_pid;

static int r_free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0) abort();
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    close(fd);
    return ntohs(a.sin_port);
}

/* One command to the server (inline protocol) on a fresh connection; the
 * reply into buf. */
static bool r_command(const char *cmd, char *buf, size_t cap) {
    const char *at = strrchr(r_url, ':');
    int port = at ? atoi(at + 1) : 6379;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return false;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bool ok = false;
    size_t got = 0;
    buf[0] = 0;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd)) {
        double deadline = now_s() + 2;
        while (got < cap - 1 && now_s() < deadline) {
            struct pollfd p = {fd, POLLIN, 0};
            if (poll(&p, 1, 50) != 1) continue;
            ssize_t n = read(fd, buf + got, cap - 1 - got);
            if (n <= 0) break;
            got += (size_t)n;
            buf[got] = 0;
            /* A bulk string: "$len\r\n...\r\n"; anything else: one line. */
            if (buf[0] == '$') {
                long len = strtol(buf + 1, NULL, 10);
                char *body = strstr(buf, "\r\n");
                if (body && (long)(got - (size_t)(body + 2 - buf)) >= len + 2) { ok = true; break; }
            } else if (strstr(buf, "\r\n")) {
                ok = true;
                break;
            }
        }
    }
    close(fd);
    return ok;
}

static void r_server_start(void) {
    for (int attempt = 0; attempt < 5; attempt++) {
        int port = r_free_port();
        char ps[16];
        snprintf(ps, sizeof ps, "%d", port);
        pid_t pid = fork();
        if (pid < 0) abort();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            int null = open("/dev/null", O_WRONLY);
            if (null >= 0) dup2(null, 1), dup2(null, 2);
            execlp("redis-server", "redis-server", "--port", ps, "--bind", "127.0.0.1", "--save", "",
                   "--appendonly", "no", "--dir", "/tmp", (char *)NULL);
            _exit(127);
        }
        snprintf(r_url, sizeof r_url, "redis://127.0.0.1:%d", port);
        char buf[4096], want[32];
        snprintf(want, sizeof want, "process_id:%d\r", (int)pid);
        for (double deadline = now_s() + 10; now_s() < deadline; sleep_us(10000)) {
            if (waitpid(pid, NULL, WNOHANG) == pid) break;
            if (r_command("INFO server\r\n", buf, sizeof buf) && strstr(buf, want)) {
                r_server_pid = pid;
                return;
            }
        }
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
    }
    fprintf(stderr, "could not start redis-server (is it installed? `make redis-server`)\n");
    exit(2);
}

/* CLIENT KILL of one random connection (the library's: ours is the one
 * running CLIENT LIST, skipped). */
static bool r_client_kill(uint64_t *r) {
    char buf[16384];
    if (!r_command("CLIENT LIST\r\n", buf, sizeof buf)) return false;
    long ids[256];
    int n = 0;
    for (char *l = buf; (l = strstr(l, "id=")) && n < 256; l += 3) {
        char *cmd = strstr(l, " cmd=");
        char *eol = strchr(l, '\n');
        if (cmd && (!eol || cmd < eol) && !strncmp(cmd + 5, "client|list", 11)) continue;
        ids[n++] = strtol(l + 3, NULL, 10);
    }
    if (!n) return false;
    char cmd[64], rep[256];
    snprintf(cmd, sizeof cmd, "CLIENT KILL ID %ld\r\n", ids[rng_below(r, (unsigned)n)]);
    return r_command(cmd, rep, sizeof rep) && rep[0] == ':' && rep[1] == '1';
}

static int r_spawn(uint64_t seed, unsigned threads, double until) {
    for (int i = 0; i < RMAXP; i++) {
        int zero = 0;
        if (!atomic_compare_exchange_strong(&RA->procs[i].pid, &zero, -1)) continue;
        atomic_store(&RA->procs[i].nslots, 0);
        atomic_store(&RA->procs[i].longstops, 0);
        atomic_store(&RA->procs[i].dead, 0);
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) abort();
        if (pid == 0) {
            /* exec'ed afresh (the arena is a memfd it maps again): a fork of
             * a process whose library threads (a handle's agent finishing
             * after volt_sem_free) may hold a lock, such as the sanitizer
             * allocator's, could hang at its first malloc. */
            char a_fd[16], a_me[16], a_seed[32], a_thr[16], a_until[48], a_lease[16];
            snprintf(a_fd, sizeof a_fd, "%d", r_arena_fd);
            snprintf(a_me, sizeof a_me, "%d", i);
            snprintf(a_seed, sizeof a_seed, "%llu", (unsigned long long)seed);
            snprintf(a_thr, sizeof a_thr, "%u", threads);
            snprintf(a_until, sizeof a_until, "%.6f", until);
            snprintf(a_lease, sizeof a_lease, "%u", r_lease_ms);
            execl("/proc/self/exe", "fuzz_sem", "redis-worker", a_fd, a_me, a_seed, a_thr, a_until, a_lease, r_url,
                  r_name, (char *)NULL);
            _exit(127);
        }
        atomic_store(&RA->procs[i].pid, pid);
        return i;
    }
    return -1;
}

static volt_status r_driver_connect(const volt_sem **sem, size_t total);

/* What Redis says process pid holds (volt_sem_inspect, which reaps the
 * expired sessions first), or -1 if it could not be asked. */
static long r_redis_held_by(pid_t pid) {
    const volt_sem *sem = NULL;
    if (r_driver_connect(&sem, 1) != VOLT_OK) return -1;
    volt_holder *h = malloc(RMAXH * sizeof *h);
    if (!h) abort();
    volt_inspection in;
    volt_status s = volt_sem_inspect(sem, &in, h, RMAXH, NULL, 0);
    long held = -1;
    if ((s == VOLT_OK || s == VOLT_TRUNCATED) && in.holders <= RMAXH) { /* truncated: the waiters */
        held = 0;
        for (size_t i = 0; i < in.holders; i++)
            if (h[i].pid == (uint32_t)pid) held += (long)h[i].permits;
    }
    free(h);
    volt_sem_free(sem);
    return held;
}

/* Stops process i and waits until it is stopped; its slots written off.
 * Before the write-off, if its slots count permits, the driver asks Redis
 * what the process holds: the count is at most what its live sessions hold
 * (raised after a grant, lowered before a release, and the process is
 * stopped), so less in Redis means a session of it was already lost (its
 * lease ran out, or it was given up) while the generation being ended was
 * current: the loss the process would have learned in that generation had
 * the write-off not ended it first. Logged as a loss of that generation for
 * every slot that counted permits (it excuses exactly the snapshots a loss
 * learned by the process then would have). */
static bool r_stop_writeoff(int i, bool gone, bool longstop) {
    pid_t pid = atomic_load(&RA->procs[i].pid);
    if (pid <= 0 || kill(pid, SIGSTOP) != 0) return false;
    if (!wait_stopped(pid)) return false;
    int ns = atomic_load(&RA->procs[i].nslots);
    long counted = 0;
    for (int j = 0; j < ns; j++) {
        uint64_t w = rs_load(atomic_load(&RA->procs[i].slots[j]));
        if (!RS_GONE(w)) counted += RS_SHARE(w);
    }
    long in_redis = counted > 0 ? r_redis_held_by(pid) : -1;
    bool short_in_redis = in_redis >= 0 && in_redis < counted;
    if (short_in_redis) atomic_fetch_add(&RA->found_lost, 1);
    if (counted > 0) /* for the diagnosis of an unexplained snapshot (-1: Redis not asked) */
        fprintf(stderr, "    %s process %d: its handles count %ld permits, Redis has %ld for it%s\n",
                gone ? "a kill of" : "a stop past the lease of", (int)pid, counted, in_redis,
                short_in_redis ? " (a session already lost: logged as a loss of the generation the write-off ends)"
                               : "");
    for (int j = 0; j < ns; j++) {
        int sl = atomic_load(&RA->procs[i].slots[j]);
        uint64_t w = rs_load(sl);
        bool held = RS_SHARE(w) > 0 && !RS_GONE(w);
        if (longstop && held) atomic_store(&RA->held_at_longstop[sl], 1);
        unsigned g = rs_writeoff(sl, gone);
        if (gone) atomic_store(&RA->killed_gen[sl], (int)g + 1); /* the generation a kill ended, + 1 */
        if (short_in_redis && held) {
            int k = atomic_fetch_add(&RA->nloss, 1);
            if (k < RLOSS) {
                atomic_store(&RA->loss[k].gen, g);
                atomic_store(&RA->loss[k].slot, sl);
            }
        }
    }
    return true;
}

/* The share a process's slots count now. */
static long r_proc_share(int i) {
    long sum = 0;
    int ns = atomic_load(&RA->procs[i].nslots);
    for (int j = 0; j < ns; j++) sum += RS_SHARE(rs_load(atomic_load(&RA->procs[i].slots[j])));
    return sum;
}

typedef struct {
    long kills, stops, longstops, client_kills, hangs, failed_exits;
} rdriver;

static void r_reap(rdriver *d, bool block) {
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, block ? 0 : WNOHANG)) > 0) {
        for (int i = 0; i < RMAXP; i++) {
            if (atomic_load(&RA->procs[i].pid) != pid) continue;
            if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM) {
                d->hangs++;
                violation(&RA->c, "process %d hung (its alarm ended it)", (int)pid);
            } else if (WIFSIGNALED(status) && WTERMSIG(status) != SIGKILL) {
                violation(&RA->c, "process %d died of signal %d", (int)pid, WTERMSIG(status));
            } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
                d->failed_exits++;
            }
            atomic_store(&RA->procs[i].pid, 0);
        }
        if (!block) continue;
        bool any = false;
        for (int i = 0; i < RMAXP; i++) any |= atomic_load(&RA->procs[i].pid) > 0;
        if (!any) break;
    }
}

static volt_status r_driver_connect(const volt_sem **sem, size_t total) {
    (void)total;
    uint64_t r = 0;
    return r_connect_as(sem, &r, false);
}

/* A stop past the lease: write the process off, wait out its lease, reap it
 * with a census (which must conserve), count the stop, go on. */
static void r_long_stop(int v, rdriver *d, uint64_t *r) {
    /* Caught holding permits if it can be (a few tries). */
    for (int attempt = 0; attempt < 30; attempt++) {
        pid_t p = atomic_load(&RA->procs[v].pid);
        if (p <= 0 || kill(p, SIGSTOP) != 0) return;
        if (wait_stopped(p) && r_proc_share(v) > 0) break;
        kill(p, SIGCONT);
        sleep_us(1000 + rng_below(r, 3000));
    }
    if (!r_stop_writeoff(v, false, true)) return;
    pid_t pid = atomic_load(&RA->procs[v].pid);
    sleep_us((long)r_lease_ms * 1000 + 300000 + rng_below(r, 300000));
    const volt_sem *sem = NULL;
    if (r_driver_connect(&sem, 1) == VOLT_OK) {
        volt_census c;
        volt_status s = volt_sem_census(sem, &c);
        if (s == VOLT_OK) r_census_check(sem, s, &c, "the driver's");
        else violation(&RA->c, "the driver's census returned %s", st(s));
        volt_sem_free(sem);
    }
    atomic_fetch_add(&RA->procs[v].longstops, 1);
    kill(pid, SIGCONT);
    d->longstops++;
}

static bool r_final(unsigned *final_total) {
    const volt_sem *sem = NULL;
    volt_status s = r_driver_connect(&sem, 1);
    if (s != VOLT_OK) {
        violation(&RA->c, "the final connect returned %s", st(s));
        return false;
    }
    volt_census c = {0};
    /* The killed processes' sessions end at their lease; the census reaps. */
    bool back = false;
    for (double give_up = now_s() + 3.0 * r_lease_ms / 1000 + 10; now_s() < give_up; sleep_us(50000)) {
        s = volt_sem_census(sem, &c);
        if (s != VOLT_OK) continue;
        r_census_check(sem, s, &c, "the final");
        if (c.available == c.total && !c.held && !c.partial && !c.queued && !c.debt) {
            back = true;
            break;
        }
    }
    if (!back)
        violation(&RA->c, "at the end, the lease long over: available %llu of %llu, held %llu, partial %llu, queued "
                          "%llu, debt %llu, sessions %llu (%s)", (unsigned long long)c.available,
                  (unsigned long long)c.total, (unsigned long long)c.held, (unsigned long long)c.partial,
                  (unsigned long long)c.queued, (unsigned long long)c.debt, (unsigned long long)c.sessions, st(s));
    *final_total = (unsigned)c.total;
    volt_grant g;
    s = volt_sem_acquire_blocking_fenced(sem, c.total ? c.total : 1, 20000000000LL, &g);
    if (s != VOLT_OK) violation(&RA->c, "at the end, acquiring the whole total %llu: %s", (unsigned long long)c.total, st(s));
    else {
        if (g.token <= atomic_load(&RA->max_token))
            violation(&RA->c, "the final grant's token %llu is not above the last seen %llu",
                      (unsigned long long)g.token, (unsigned long long)atomic_load(&RA->max_token));
        if (volt_sem_release(sem, c.total) != VOLT_OK) violation(&RA->c, "the final release failed");
    }
    volt_sem_free(sem);
    return back;
}

static bool redis_run(const options *o, uint64_t seed, long run, long *ops_out) {
    uint64_t r = seed;
    unsigned total = o->total ? o->total : 1 + rng_below(&r, 2);
    unsigned procs = o->procs ? o->procs : 3 + rng_below(&r, 2);
    unsigned threads = o->threads ? o->threads : 2 + rng_below(&r, 2);
    double seconds = o->seconds > 0 ? o->seconds : 4;
    snprintf(r_name, sizeof r_name, "fuzz-%d-%ld-%llu", (int)getpid(), run, (unsigned long long)seed);
    memset(RA, 0, sizeof *RA);
    RA->c.total = o->resize ? (long)(o->max_total > total ? o->max_total : total) : (long)total;
    atomic_store(&RA->tmax, total);
    atomic_store(&RA->tmin, total);
    RA->kills = o->kill, RA->client_kills = o->client_kill, RA->resize = o->resize;
    RA->t0 = now_s();
    /* The driver creates it, then lets go (its session ends at once). */
    const volt_sem *sem = NULL;
    volt_connect_options copts;
    volt_connect_options_init(&copts, sizeof copts);
    copts.lease_ms = r_lease_ms;
    volt_status s = volt_sem_connect(r_url, r_name, total, &copts, &sem);
    if (s != VOLT_OK) {
        fprintf(stderr, "fuzz-redis: connect to %s: %s\n", r_url, st(s));
        return false;
    }
    volt_sem_free(sem);
    double until = now_s() + seconds;
    rdriver d = {0};
    for (unsigned i = 0; i < procs; i++) r_spawn(rng_next(&r), threads, until);
    while (now_s() < until - 0.1) {
        sleep_us(30000 + rng_below(&r, 150000));
        r_reap(&d, false);
        unsigned x = rng_below(&r, 100);
        int live[RMAXP], nl = 0;
        for (int i = 0; i < RMAXP; i++)
            if (atomic_load(&RA->procs[i].pid) > 0) live[nl++] = i;
        int v = nl ? live[rng_below(&r, (unsigned)nl)] : -1;
        if (o->client_kill && x < 25) {
            d.client_kills += r_client_kill(&r);
        } else if (v >= 0 && o->kill && x < 40) {
            /* A process stopped past its lease is left to learn it. */
            if (atomic_load(&RA->procs[v].longstops)) continue;
            if (!r_stop_writeoff(v, true, false)) continue;
            atomic_store(&RA->procs[v].dead, 1);
            kill(atomic_load(&RA->procs[v].pid), SIGKILL);
            d.kills++;
            if (now_s() < until - 0.5) r_spawn(rng_next(&r), threads, until);
        } else if (v >= 0 && o->stop && x < 70) {
            pid_t pid = atomic_load(&RA->procs[v].pid);
            if (kill(pid, SIGSTOP) != 0) continue;
            sleep_us(1000 + rng_below(&r, r_lease_ms * 150));
            kill(pid, SIGCONT);
            d.stops++;
        } else if (v >= 0 && o->stop && x < 77 && now_s() < until - 1.0 * r_lease_ms / 1000 - 1) {
            /* Preferably a process that holds permits. */
            for (int j = 0; j < nl; j++)
                if (r_proc_share(live[j]) > 0) v = live[j];
            r_long_stop(v, &d, &r);
        }
    }
    atomic_store(&RA->stop, 1);
    bool dumped = false;
    for (double give_up = now_s() + 60, dump_at = now_s() + 15;;) {
        r_reap(&d, false);
        int alive = 0;
        for (int i = 0; i < RMAXP; i++) alive += atomic_load(&RA->procs[i].pid) > 0;
        if (!alive) break;
        if (!dumped && now_s() > dump_at) {
            /* A process alive 15 s after the run's end (they end within a
             * second or two): its stacks, for the violation to come. */
            dumped = true;
            for (int i = 0; i < RMAXP; i++) {
                pid_t pid = atomic_load(&RA->procs[i].pid);
                if (pid <= 0) continue;
                fprintf(stderr, "    process %d alive 15 s after the run's end: its stacks\n", (int)pid);
                char cmd[128];
                snprintf(cmd, sizeof cmd, "timeout 60 gdb -q -p %d -batch -ex 'thread apply all bt' 1>&2", (int)pid);
                if (system("command -v gdb >/dev/null 2>&1") == 0 && system(cmd) != 0)
                    fprintf(stderr, "    (gdb failed)\n");
            }
        }
        if (now_s() > give_up) {
            violation(&RA->c, "%d processes still running 60 s after the end of the run", alive);
            for (int i = 0; i < RMAXP; i++)
                if (atomic_load(&RA->procs[i].pid) > 0) kill(atomic_load(&RA->procs[i].pid), SIGKILL);
            r_reap(&d, true);
            break;
        }
        sleep_us(20000);
    }
    unsigned final_total = 0;
    r_final(&final_total);
    long excused = 0;
    rs_resolve(&excused);
    bool ok = atomic_load(&RA->c.violations) == 0;
    *ops_out += atomic_load(&RA->c.ops);
    add_cov(&RA->c);
    printf("     run %ld seed %llu: total %u (at the end %u), %u processes x %u threads, %ld ops, %ld grants (%ld "
           "fenced), %ld callbacks, peak %ld, %ld kills, %ld stops, %ld stops past the lease, %ld client kills%s\n",
           run, (unsigned long long)seed, total, final_total, procs, threads, atomic_load(&RA->c.ops),
           atomic_load(&RA->c.grants), atomic_load(&RA->tokens), atomic_load(&RA->c.callbacks),
           atomic_load(&RA->c.peak), d.kills, d.stops, d.longstops, d.client_kills, ok ? "" : "  FAIL");
    printf("       %ld connects, %ld clones, %ld disconnects (%ld with a blocked thread: %ld woken "
           "VOLT_DISCONNECTED, %ld granted first, %ld otherwise), %ld session losses learned (%ld releases "
           "answered VOLT_LEASE_EXPIRED, %ld of them after a stop past the lease, %ld VOLT_OK there; %ld handles "
           "held permits through such a stop, each learned it), %ld lease watches (%ld "
           "called), %ld censuses, %ld set_total, %ld requests failed as above the total, %ld "
           "VOLT_CONNECTION_FAILED, %ld snapshots above the total (%ld excused by a loss), %ld snapshots "
           "unstable, %ld grants not counted (unfenced, or no watch left), %ld handles with losses known from their "
           "stats only, %ld snapshots unresolved (a holder killed first), %ld stops that found a session of the process "
           "already lost in Redis\n",
           atomic_load(&RA->connects), atomic_load(&RA->clones), atomic_load(&RA->disconnects),
           atomic_load(&RA->blocked), atomic_load(&RA->blocked_out[0]), atomic_load(&RA->blocked_out[1]),
           atomic_load(&RA->blocked_out[2]), atomic_load(&RA->losses), atomic_load(&RA->lost_releases),
           atomic_load(&RA->expired_after_stop), atomic_load(&RA->ok_after_stop), atomic_load(&RA->longstop_holders),
           atomic_load(&RA->watches), atomic_load(&RA->watch_calls),
           atomic_load(&RA->census), atomic_load(&RA->set_totals), atomic_load(&RA->failed_above),
           atomic_load(&RA->conn_failed), (long)atomic_load(&RA->ncand), excused, atomic_load(&RA->unstable),
           atomic_load(&RA->unwatched), atomic_load(&RA->stats_only_losses), atomic_load(&RA->unresolved),
           atomic_load(&RA->found_lost));
    fflush(stdout);
    return ok;
}

static rarena *r_map(int fd) {
    rarena *a = mmap(NULL, sizeof *a, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (a == MAP_FAILED) abort();
    return a;
}

/* A worker process, exec'ed by the driver: fuzz_sem redis-worker FD ME SEED
 * THREADS UNTIL LEASE URL NAME. */
static int redis_worker(int argc, char **argv) {
    if (argc != 10) return 2;
    r_arena_fd = atoi(argv[2]);
    RA = r_map(r_arena_fd);
    r_lease_ms = (unsigned)strtoul(argv[7], NULL, 10);
    snprintf(r_url, sizeof r_url, "%s", argv[8]);
    snprintf(r_name, sizeof r_name, "%s", argv[9]);
    r_proc(atoi(argv[3]), strtoull(argv[4], NULL, 10), (unsigned)strtoul(argv[5], NULL, 10), strtod(argv[6], NULL));
    return 0;
}

static int run_redis(const options *o) {
    r_arena_fd = memfd_create("fuzz-redis", 0); /* inherited across exec */
    if (r_arena_fd < 0 || ftruncate(r_arena_fd, sizeof *RA) != 0) abort();
    RA = r_map(r_arena_fd);
    r_lease_ms = o->lease_ms ? o->lease_ms : 1000;
    const char *url = o->url ? o->url : getenv("FUZZ_REDIS_URL");
    if (url && *url) snprintf(r_url, sizeof r_url, "%s", url);
    else r_server_start();
    long passed = 0, failed = 0, ops = 0;
    long runs = o->seeds ? o->seeds : 2;
    printf("fuzz-redis: seeds %llu.. on %s, lease %u ms, kills %s, stops %s, client kills %s, resizes %s "
           "(replay one: fuzz_sem redis --seed S --runs 1)\n",
           (unsigned long long)o->seed, r_server_pid ? "a redis-server of its own" : r_url, r_lease_ms,
           o->kill ? "on" : "off", o->stop ? "on" : "off", o->client_kill ? "on" : "off", o->resize ? "on" : "off");
    fflush(stdout);
    for (long i = 0; i < runs; i++) {
        if (redis_run(o, o->seed + (uint64_t)i, i, &ops)) passed++;
        else failed++;
    }
    if (r_server_pid > 0) {
        kill(r_server_pid, SIGKILL);
        waitpid(r_server_pid, NULL, 0);
    }
    printf("     %ld runs, %ld operations\n", passed + failed, ops);
    print_cov(&coverage);
    printf("fuzz-redis: %ld passed, %ld failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* =================================================================== main */

static void usage(void) {
    fprintf(stderr, "usage: fuzz_sem model|threads|shared|redis [--seed S] [--seeds N | --runs N] "
                    "[--ops K] [--seconds T] [--total P] [--max-total M] [--procs N] [--threads N] "
                    "[--no-kill] [--no-fork] [--no-stop] [--no-resize] [--no-client-kill] [--lease MS] "
                    "[--url URL]\n");
    exit(2);
}

int main(int argc, char **argv) {
    if (argc < 2) usage();
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(argv[1], "redis-worker")) return redis_worker(argc, argv);
    options o = {0};
    o.seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
    o.kill = o.fork = o.stop = o.resize = o.client_kill = true;
    o.max_total = 4;
    /* FUZZ_SEED (the Makefile's) sets the first seed; --seed overrides it. */
    const char *env = getenv("FUZZ_SEED");
    if (env && *env) o.seed = strtoull(env, NULL, 0);
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--no-kill")) o.kill = false;
        else if (!strcmp(a, "--no-fork")) o.fork = false;
        else if (!strcmp(a, "--no-stop")) o.stop = false;
        else if (!strcmp(a, "--no-resize")) o.resize = false;
        else if (!strcmp(a, "--no-client-kill")) o.client_kill = false;
        else if (!v) usage();
        else if (!strcmp(a, "--seed")) o.seed = strtoull(v, NULL, 0), i++;
        else if (!strcmp(a, "--seeds") || !strcmp(a, "--runs")) o.seeds = strtol(v, NULL, 0), i++;
        else if (!strcmp(a, "--ops")) o.ops = strtol(v, NULL, 0), i++;
        else if (!strcmp(a, "--seconds")) o.seconds = strtod(v, NULL), i++;
        else if (!strcmp(a, "--total")) o.total = (unsigned)strtoul(v, NULL, 0), i++;
        else if (!strcmp(a, "--procs")) o.procs = (unsigned)strtoul(v, NULL, 0), i++;
        else if (!strcmp(a, "--threads")) o.threads = (unsigned)strtoul(v, NULL, 0), i++;
        else if (!strcmp(a, "--max-total")) o.max_total = (unsigned)strtoul(v, NULL, 0), i++;
        else if (!strcmp(a, "--lease")) o.lease_ms = (unsigned)strtoul(v, NULL, 0), i++;
        else if (!strcmp(a, "--url")) o.url = v, i++;
        else usage();
    }
    if (!strcmp(argv[1], "model")) return run_model(&o);
    if (!strcmp(argv[1], "threads")) return run_threads(&o);
    if (!strcmp(argv[1], "shared")) return run_shared(&o);
    if (!strcmp(argv[1], "redis")) return run_redis(&o);
    usage();
}
