/* One limit for several processes: a parent and four forked worker processes
 * share the 2 slots of the named semaphore "example-slots-<pid>" (Linux).
 *
 * The first worker takes both slots and dies with SIGKILL while holding them;
 * the kernel-backed crash recovery gives them back, and the three other
 * workers still run every job. Each worker opens the name itself (a handle
 * does not survive fork(): the child's copy fails with VOLT_FORKED), and
 * records how many jobs run at once in a counter in shared memory; the parent
 * checks that it never exceeded 2 and that both slots are free at the end.
 *
 *   make -C tests examples   (built with ASan+UBSan and run) */
#define _GNU_SOURCE
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "volt_sem.h"

enum { SLOTS = 2, WORKERS = 4, JOBS = 10 };

typedef struct {
    atomic_int running; /* jobs running now, across the processes */
    atomic_int peak;    /* the most ever running at once */
    atomic_int done;    /* jobs completed */
} board;

static int fail(const char *what, volt_status s) {
    fprintf(stderr, "%s: %s\n", what, volt_status_str(s));
    return 1;
}

/* A worker process: opens the name, then runs its jobs one slot each. */
static int worker(const char *name, board *b, int id) {
    const volt_sem *slots = NULL;
    volt_status s = volt_sem_open(name, SLOTS, VOLT_OPEN_ATTACH_ONLY, &slots);
    if (s != VOLT_OK) return fail("volt_sem_open", s);
    if (id == 0) {
        /* Takes both slots and dies holding them. */
        if ((s = volt_sem_acquire_blocking(slots, SLOTS, -1)) != VOLT_OK)
            return fail("acquire", s);
        raise(SIGKILL);
    }
    for (int j = 0; j < JOBS; j++) {
        /* A bound, so that a lost slot fails the example instead of hanging it. */
        if ((s = volt_sem_acquire_blocking(slots, 1, 30LL * 1000000000)) != VOLT_OK)
            return fail("acquire", s);
        int now = atomic_fetch_add(&b->running, 1) + 1;
        int peak = atomic_load(&b->peak);
        while (now > peak && !atomic_compare_exchange_weak(&b->peak, &peak, now)) {
        }
        struct timespec ts = {0, 200000}; /* the job: 0.2 ms */
        nanosleep(&ts, NULL);
        atomic_fetch_sub(&b->running, 1);
        atomic_fetch_add(&b->done, 1);
        if ((s = volt_sem_release(slots, 1)) != VOLT_OK) return fail("release", s);
    }
    volt_sem_free(slots);
    return 0;
}

int main(void) {
    char name[64];
    snprintf(name, sizeof name, "example-slots-%ld", (long)getpid());
    const volt_sem *slots = NULL;
    volt_status s = volt_sem_open(name, SLOTS, VOLT_OPEN_CREATE_ONLY, &slots);
    if (s == VOLT_UNSUPPORTED) {
        printf("named semaphores are not supported on this platform\n");
        return 0;
    }
    if (s != VOLT_OK) return fail("volt_sem_open", s);
    board *b = mmap(NULL, sizeof *b, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED) return 1;
    atomic_init(&b->running, 0);
    atomic_init(&b->peak, 0);
    atomic_init(&b->done, 0);

    pid_t pids[WORKERS];
    for (int i = 0; i < WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) return 1;
        if (pids[i] == 0) _exit(worker(name, b, i));
        if (i == 0) {
            /* Let the first worker take both slots and die before the others start. */
            int st;
            waitpid(pids[0], &st, 0);
            if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL) return fail("worker 0", VOLT_PANIC);
            printf("worker 0 was killed holding both slots\n");
        }
    }
    int failed = 0;
    for (int i = 1; i < WORKERS; i++) {
        int st;
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) failed = 1;
    }
    int done = atomic_load(&b->done), peak = atomic_load(&b->peak);
    printf("%d jobs done by %d workers, at most %d at once, %zu of %d slots free\n", done,
           WORKERS - 1, peak, volt_sem_available_permits(slots), SLOTS);
    if (failed || done != (WORKERS - 1) * JOBS || peak < 1 || peak > SLOTS) failed = 1;
    /* Both slots back, even the dead worker's (it held them until it died). */
    if ((s = volt_sem_acquire_blocking(slots, SLOTS, 10LL * 1000000000)) != VOLT_OK) {
        fail("acquire all", s);
        failed = 1;
    } else {
        volt_sem_release(slots, SLOTS);
    }
    volt_sem_unlink(name);
    volt_sem_free(slots);
    munmap(b, sizeof *b);
    return failed;
}
