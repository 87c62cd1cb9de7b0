/* One limit across machines: worker processes (here on one machine; on
 * several hosts it is the same code with a reachable Redis URL) share the
 * 4 slots of the semaphore "example-slots-<pid>" stored in Redis, taking 1 to
 * 3 slots per job by weight, strictly in arrival order. The example checks
 * that the slots in use never exceed 4.
 *
 * Each job then appends to a ledger (a record in shared memory standing in
 * for a database row or a storage service) under a Redis lock: a second
 * semaphore with 1 permit. The write carries the lock grant's fencing token,
 * and the ledger rejects any token not larger than the largest it accepted:
 * a holder whose lease expired while it was paused (its lock given to the
 * next worker meanwhile) would be rejected there instead of overwriting the
 * newer holder's entry. The check is sound because one holder at a time owns
 * the ledger; the slots' tokens, of holders running side by side, only
 * identify and order the grants.
 *
 *   redis_slots URL      e.g. redis://127.0.0.1:6379 or unix:///path/redis.sock
 *   make -C tests example-redis   (starts a private redis-server on a Unix
 *                                  socket, runs this with ASan+UBSan) */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "volt_sem.h"

enum { SLOTS = 4, WORKERS = 3, JOBS = 8 };

#define TIMEOUT_NS (30LL * 1000000000) /* a lost grant fails the example, never hangs it */

/* What the processes share: the slot accounting and the fenced ledger. */
typedef struct {
    pthread_mutex_t mu; /* process-shared */
    int in_use, peak;   /* slots in use now, and at most */
    uint64_t max_token; /* the ledger: the largest lock token accepted */
    int accepted, rejected;
} board;

static void slots_taken(board *b, int weight) {
    pthread_mutex_lock(&b->mu);
    b->in_use += weight;
    if (b->in_use > b->peak) b->peak = b->in_use;
    pthread_mutex_unlock(&b->mu);
}

static void slots_given_back(board *b, int weight) {
    pthread_mutex_lock(&b->mu);
    b->in_use -= weight;
    pthread_mutex_unlock(&b->mu);
}

/* A fenced write: accepted only with a token newer than every one before. */
static int ledger_append(board *b, uint64_t token) {
    pthread_mutex_lock(&b->mu);
    int ok = token > b->max_token;
    if (ok) {
        b->max_token = token;
        b->accepted++;
    } else {
        b->rejected++;
    }
    pthread_mutex_unlock(&b->mu);
    return ok;
}

static int fail(const char *what, volt_status s) {
    fprintf(stderr, "%s: %s\n", what, volt_status_str(s));
    return 1;
}

/* A worker process: its own connections (sessions of its own), then its jobs. */
static int worker(const char *url, const char *name, const char *lock_name, board *b, int id) {
    volt_connect_options opts;
    volt_connect_options_init(&opts, sizeof opts);
    opts.lease_ms = 5000; /* a crashed worker's permits come back within ~7 s */
    const volt_sem *slots = NULL, *lock = NULL;
    volt_status s = volt_sem_connect(url, name, SLOTS, &opts, &slots);
    if (s != VOLT_OK) return fail("volt_sem_connect", s);
    if ((s = volt_sem_connect(url, lock_name, 1, &opts, &lock)) != VOLT_OK)
        return fail("volt_sem_connect", s);
    for (int j = 0; j < JOBS; j++) {
        int weight = 1 + (id + j) % 3;
        volt_grant grant;
        s = volt_sem_acquire_blocking_fenced(slots, (size_t)weight, TIMEOUT_NS, &grant);
        if (s != VOLT_OK) return fail("acquire slots", s);
        slots_taken(b, weight);
        struct timespec ts = {0, 2000000}; /* the job: 2 ms */
        nanosleep(&ts, NULL);
        /* Its result goes to the ledger, under the lock, fenced. */
        volt_grant held;
        if ((s = volt_sem_acquire_blocking_fenced(lock, 1, TIMEOUT_NS, &held)) != VOLT_OK)
            return fail("acquire lock", s);
        if (!ledger_append(b, held.token)) {
            fprintf(stderr, "worker %d: ledger rejected token %llu\n", id,
                    (unsigned long long)held.token);
            return 1;
        }
        /* VOLT_LEASE_EXPIRED here would mean the lock was reclaimed while
         * held: the ledger has already seen a newer token by then. */
        if ((s = volt_sem_release(lock, 1)) != VOLT_OK) return fail("release lock", s);
        slots_given_back(b, weight);
        if ((s = volt_sem_release(slots, (size_t)weight)) != VOLT_OK)
            return fail("release slots", s);
    }
    volt_sem_free(lock);
    volt_sem_free(slots); /* ends the session */
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s REDIS_URL\n", argv[0]);
        return 2;
    }
    const char *url = argv[1];
    char name[64], lock_name[64];
    snprintf(name, sizeof name, "example-slots-%ld", (long)getpid());
    snprintf(lock_name, sizeof lock_name, "example-ledger-lock-%ld", (long)getpid());

    board *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (r == MAP_FAILED) return 1;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
    pthread_mutex_init(&r->mu, &attr);

    /* The first worker to connect creates the semaphore. No connection is
     * made before fork(): a handle, with its agent thread, is not inherited. */
    pid_t pids[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) return 1;
        if (pids[i] == 0) _exit(worker(url, name, lock_name, r, i));
    }
    int failed = 0;
    for (int i = 0; i < WORKERS; i++) {
        int status = 0;
        waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;
    }

    /* Every slot is back, and the accounting in Redis adds up. */
    const volt_sem *slots = NULL;
    volt_status s = volt_sem_connect(url, name, SLOTS, NULL, &slots);
    if (s != VOLT_OK) return fail("volt_sem_connect", s);
    volt_census c;
    if ((s = volt_sem_census(slots, &c)) != VOLT_OK) return fail("census", s);
    volt_sem_close(slots); /* the example's semaphore is done with */
    volt_sem_free(slots);

    printf("%d ledger entries accepted, %d rejected, at most %d of %d slots in use, last token %llu\n",
           r->accepted, r->rejected, r->peak, SLOTS, (unsigned long long)r->max_token);
    printf("census: %llu available of %llu, %llu held, %llu queued\n",
           (unsigned long long)c.available, (unsigned long long)c.total,
           (unsigned long long)c.held, (unsigned long long)c.queued);
    int ok = failed == 0 && r->accepted == WORKERS * JOBS && r->rejected == 0 &&
             r->peak <= SLOTS && c.available == SLOTS && c.held == 0 && c.queued == 0;
    pthread_mutex_destroy(&r->mu);
    pthread_mutexattr_destroy(&attr);
    munmap(r, sizeof *r);
    if (!ok) fprintf(stderr, "redis_slots: FAILED\n");
    return ok ? 0 : 1;
}
