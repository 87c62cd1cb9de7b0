/* C tests of the named, cross-process semaphore (volt_sem_open): real
 * processes (this program runs itself again with `child ROLE ...`, through
 * fork + exec, so each child is a fresh process with its own attachment),
 * kill -9, foreign files in /dev/shm, every bad input. Linux only.
 *
 * Children report through pipes, never through their exit status (a checker
 * such as valgrind may change it). Every name is unique to this run (it holds
 * the pid) and is unlinked by the test that made it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

static const char *self_path; /* argv[0]: how a child runs this program */

/* ------------------------------------------------------------------ helpers */

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {
    }
}

/* A name unique to this process and test. */
static void make_name(char *buf, size_t len, const char *tag) {
    snprintf(buf, len, "ctest-%ld-%s", (long)getpid(), tag);
    (void)volt_sem_unlink(buf); /* a leftover of a crashed earlier run */
}

static const volt_sem *open_sem(const char *name, size_t permits, uint32_t flags) {
    const volt_sem *sem = NULL;
    volt_status s = volt_sem_open(name, permits, flags, &sem);
    if (s != VOLT_OK) {
        fprintf(stderr, "    volt_sem_open(%s, %zu, %u): %s\n", name, permits, flags,
                volt_status_str(s));
        abort();
    }
    return sem;
}

/* A wake callback that signals a condition variable (the callback of a shared
 * semaphore runs on the process's doorbell thread). */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int woken;
} signal_ctx;

static void signal_init(signal_ctx *s) {
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    s->woken = 0;
}

static void signal_destroy(signal_ctx *s) {
    pthread_cond_destroy(&s->cv);
    pthread_mutex_destroy(&s->mu);
}

static void signal_wake(void *ctx) {
    signal_ctx *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->woken++;
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void signal_wait(signal_ctx *s) {
    pthread_mutex_lock(&s->mu);
    while (s->woken == 0) pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
}

/* ------------------------------------------------------------ child process */

typedef struct {
    pid_t pid;
    int rd; /* reads what the child writes */
    int wr; /* writes to the child */
} child;

/* Runs this program again as `child ROLE NAME ARG RFD WFD`. */
static child spawn(const char *role, const char *name, const char *arg) {
    int to_child[2], from_child[2];
    REQUIRE(pipe(to_child) == 0 && pipe(from_child) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        harness_child_watchdog(120); /* kept across exec */
        char rfd[16], wfd[16];
        snprintf(rfd, sizeof rfd, "%d", to_child[0]);
        snprintf(wfd, sizeof wfd, "%d", from_child[1]);
        close(to_child[1]);
        close(from_child[0]);
        char *args[] = {(char *)self_path, "child", (char *)role, (char *)name,
                        (char *)arg,       rfd,     wfd,          NULL};
        execv(self_path, args);
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    child c = {pid, from_child[0], to_child[1]};
    return c;
}

/* One byte from the child; -1 if it exited without writing one. */
static int child_read(const child *c) {
    unsigned char b;
    ssize_t k;
    do k = read(c->rd, &b, 1);
    while (k < 0 && errno == EINTR);
    return k == 1 ? b : -1;
}

static void child_send(const child *c, char b) { REQUIRE(write(c->wr, &b, 1) == 1); }

static void child_reap(child *c) {
    int status = 0;
    REQUIRE(waitpid(c->pid, &status, 0) == c->pid);
    close(c->rd);
    close(c->wr);
}

static void child_kill9(child *c) {
    REQUIRE(kill(c->pid, SIGKILL) == 0);
    child_reap(c);
}

/* Child side: each step that fails reports its own code (1..), 0 is success. */
static int child_main(int argc, char **argv) {
    if (argc != 7) return 2;
    const char *role = argv[2], *name = argv[3];
    size_t arg = (size_t)strtoul(argv[4], NULL, 10);
    int rd = atoi(argv[5]), wr = atoi(argv[6]);
#define SAY(b)                                   \
    do {                                         \
        char b_ = (char)(b);                     \
        if (write(wr, &b_, 1) != 1) _exit(3);    \
    } while (0)
#define STEP(code, cond) \
    if (!(cond)) {       \
        SAY(code);       \
        _exit(0);        \
    }
    const volt_sem *sem = NULL;
    if (strcmp(role, "attach") == 0) {
        /* The parent created `name` with `arg` permits and holds all but one. */
        STEP(10, volt_sem_open(name, arg, VOLT_OPEN_ATTACH_ONLY, &sem) == VOLT_OK);
        STEP(11, volt_sem_total_permits(sem) == arg);
        STEP(12, volt_sem_available_permits(sem) == 1);
        STEP(13, volt_sem_try_acquire(sem, 2) == VOLT_WOULD_BLOCK);
        STEP(14, volt_sem_acquire_blocking(sem, 1, 10LL * 1000000000) == VOLT_OK);
        STEP(15, volt_sem_available_permits(sem) == 0);
        /* Each process returns its own permits only. */
        STEP(16, volt_sem_release(sem, 2) == VOLT_NOT_HELD);
        STEP(17, volt_sem_release(sem, 1) == VOLT_OK);
        const volt_sem *other = NULL;
        STEP(18, volt_sem_open(name, arg + 1, 0, &other) == VOLT_MISMATCH && other == NULL);
        STEP(19, volt_sem_open(name, arg, VOLT_OPEN_CREATE_ONLY, &other) == VOLT_EXISTS);
        volt_sem_free(sem);
        SAY(0);
    } else if (strcmp(role, "queue1") == 0) {
        /* Queues acquire(1), says 'Q', then answers 'S' (its waiter's status)
         * until told 'W': wait for the grant, collect it, release, say 0. */
        STEP(20, volt_sem_open(name, arg, VOLT_OPEN_ATTACH_ONLY, &sem) == VOLT_OK);
        volt_waiter w;
        signal_ctx sig;
        signal_init(&sig);
        STEP(21, volt_waiter_init(&w) == VOLT_OK);
        STEP(22, volt_sem_acquire(sem, &w, 1, signal_wake, &sig) == VOLT_PENDING);
        SAY('Q');
        for (;;) {
            char cmd;
            if (read(rd, &cmd, 1) != 1) _exit(4);
            if (cmd == 'S') {
                SAY(volt_waiter_status(&w));
            } else {
                break;
            }
        }
        signal_wait(&sig);
        STEP(23, volt_sem_cancel(sem, &w, NULL) == VOLT_OK);
        STEP(24, volt_sem_release(sem, 1) == VOLT_OK);
        signal_destroy(&sig);
        volt_sem_free(sem);
        SAY(0);
    } else if (strcmp(role, "hold") == 0) {
        /* Takes `arg` permits, says 'H', and waits to be killed. */
        STEP(30, volt_sem_open(name, 2, VOLT_OPEN_ATTACH_ONLY, &sem) == VOLT_OK);
        STEP(31, volt_sem_try_acquire(sem, arg) == VOLT_OK);
        SAY('H');
        for (;;) pause();
    } else if (strcmp(role, "hold-labelled") == 0) {
        /* Opens with the label "c-child-holder" (volt_sem_open_with), takes
         * `arg` permits, says 'H', and waits to be killed. */
        volt_open_options o = {sizeof o, VOLT_OPEN_ATTACH_ONLY, "c-child-holder"};
        STEP(35, volt_sem_open_with(name, 2, &o, &sem) == VOLT_OK);
        STEP(36, volt_sem_try_acquire(sem, arg) == VOLT_OK);
        SAY('H');
        for (;;) pause();
    } else if (strcmp(role, "wait") == 0) {
        /* Queues acquire(arg) (with a waiter: no thread blocked in the
         * library), says 'Q', and waits to be killed. */
        STEP(40, volt_sem_open(name, 2, VOLT_OPEN_ATTACH_ONLY, &sem) == VOLT_OK);
        static volt_waiter w;
        static signal_ctx sig;
        signal_init(&sig);
        STEP(41, volt_waiter_init(&w) == VOLT_OK);
        STEP(42, volt_sem_acquire(sem, &w, arg, signal_wake, &sig) == VOLT_PENDING);
        SAY('Q');
        for (;;) pause();
    } else if (strcmp(role, "blocked") == 0) {
        /* Queues a waiter, says 'Q', then blocks in acquire_blocking(1) (behind
         * it, or failing at once if the close came first) until the parent
         * closes the semaphore: the queued waiter is woken with VOLT_CLOSED. */
        STEP(50, volt_sem_open(name, arg, VOLT_OPEN_ATTACH_ONLY, &sem) == VOLT_OK);
        volt_waiter w;
        signal_ctx sig;
        signal_init(&sig);
        STEP(51, volt_waiter_init(&w) == VOLT_OK);
        STEP(52, volt_sem_acquire(sem, &w, 1, signal_wake, &sig) == VOLT_PENDING);
        SAY('Q');
        STEP(53, volt_sem_acquire_blocking(sem, 1, -1) == VOLT_CLOSED);
        signal_wait(&sig);
        STEP(54, volt_waiter_status(&w) == VOLT_CLOSED);
        STEP(55, volt_sem_cancel(sem, &w, NULL) == VOLT_CLOSED);
        STEP(56, volt_sem_is_closed(sem));
        STEP(57, volt_sem_try_acquire(sem, 1) == VOLT_CLOSED);
        signal_destroy(&sig);
        volt_sem_free(sem);
        SAY(0);
    } else {
        return 5;
    }
    return 0;
#undef SAY
#undef STEP
}

/* ---------------------------------------------------------------- the tests */

static void test_open_and_attach_from_another_process(void) {
    char name[64];
    make_name(name, sizeof name, "attach");
    const volt_sem *sem = NULL;
    CHECK_STATUS(volt_sem_open(name, 3, VOLT_OPEN_CREATE_ONLY, &sem), VOLT_OK);
    REQUIRE(sem != NULL);
    CHECK(volt_sem_total_permits(sem) == 3);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    child c = spawn("attach", name, "3");
    int code = child_read(&c);
    CHECK(code == 0);
    if (code != 0) fprintf(stderr, "    child step %d failed\n", code);
    child_reap(&c);
    /* The child took 1 and gave it back; it also left nothing behind. */
    CHECK(volt_sem_available_permits(sem) == 1);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 3);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* A queued acquire(3) in this process is not overtaken by a later acquire(1)
 * in another process, even when 1 permit is free for a moment. */
static void test_fifo_across_processes(void) {
    char name[64];
    make_name(name, sizeof name, "fifo");
    const volt_sem *sem = open_sem(name, 3, VOLT_OPEN_CREATE_ONLY);
    CHECK_STATUS(volt_sem_try_acquire(sem, 3), VOLT_OK);
    volt_waiter w;
    signal_ctx sig;
    signal_init(&sig);
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 3, signal_wake, &sig), VOLT_PENDING);
    child b = spawn("queue1", name, "3");
    CHECK(child_read(&b) == 'Q'); /* B's acquire(1) is queued behind ours */
    /* One permit back: it goes to our head request (partial), not to B. */
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 0);
    CHECK_STATUS(volt_waiter_status(&w), VOLT_PENDING);
    child_send(&b, 'S');
    CHECK(child_read(&b) == VOLT_PENDING);
    /* Two more complete our acquire(3): all three permits are ours. */
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    signal_wait(&sig);
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_OK);
    child_send(&b, 'S');
    CHECK(child_read(&b) == VOLT_PENDING);
    /* Now B is served. */
    CHECK_STATUS(volt_sem_release(sem, 3), VOLT_OK);
    child_send(&b, 'W');
    CHECK(child_read(&b) == 0);
    child_reap(&b);
    CHECK(volt_sem_available_permits(sem) == 3);
    signal_destroy(&sig);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* kill -9 of a process holding permits gives them back; kill -9 of a queued
 * process leaves no ghost in the queue. */
static void test_kill9_holder_and_waiter(void) {
    char name[64];
    make_name(name, sizeof name, "kill9");
    const volt_sem *sem = open_sem(name, 2, VOLT_OPEN_CREATE_ONLY);
    child holder = spawn("hold", name, "2");
    CHECK(child_read(&holder) == 'H');
    CHECK(volt_sem_available_permits(sem) == 0);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_WOULD_BLOCK);
    child_kill9(&holder);
    /* Reaped: the kernel dropped its liveness lock; the next slow path
     * reclaims its permits (a blocking acquire that must wait is one). */
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 2, 30LL * 1000000000), VOLT_OK);
    /* Now a waiter that dies while queued behind us. */
    child waiter = spawn("wait", name, "2");
    CHECK(child_read(&waiter) == 'Q');
    child_kill9(&waiter);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    /* No ghost: the permits come back to the counter, not to a dead slot
     * (at once if the release's hand-off already swept, else at the next
     * slow path: try_acquire failing is one). */
    volt_status s = VOLT_WOULD_BLOCK;
    for (int i = 0; i < 3000 && s == VOLT_WOULD_BLOCK; i++) {
        s = volt_sem_try_acquire(sem, 2);
        if (s == VOLT_WOULD_BLOCK) sleep_ms(10);
    }
    CHECK_STATUS(s, VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* volt_sem_inspect shows a holder in another process under the label it
 * opened with (volt_sem_open_with), with its pid and how long it has held,
 * and this process queued at position 0 under its default label
 * "<hostname>:<pid>"; once the holder is killed with SIGKILL, it is gone. */
static void test_inspect_shows_labels_across_processes(void) {
    char name[64];
    make_name(name, sizeof name, "label");
    volt_open_options o;
    CHECK_STATUS(volt_open_options_init(&o, sizeof o), VOLT_OK);
    CHECK(o.struct_size == sizeof o && o.flags == 0 && o.label == NULL);
    o.flags = VOLT_OPEN_CREATE_ONLY;
    const volt_sem *sem = NULL;
    CHECK_STATUS(volt_sem_open_with(name, 2, &o, &sem), VOLT_OK);
    REQUIRE(sem != NULL);
    child holder = spawn("hold-labelled", name, "2");
    CHECK(child_read(&holder) == 'H');
    volt_waiter w;
    signal_ctx sig;
    signal_init(&sig);
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, signal_wake, &sig), VOLT_PENDING);

    char host[256] = {0}, own_label[300];
    REQUIRE(gethostname(host, sizeof host - 1) == 0);
    snprintf(own_label, sizeof own_label, "%s:%ld", host, (long)getpid());
    volt_inspection in;
    volt_holder h[4];
    volt_queued_waiter q[4];
    CHECK_STATUS(volt_sem_inspect(sem, &in, h, 4, q, 4), VOLT_OK);
    CHECK(in.total == 2 && in.available == 0 && !in.closed);
    CHECK(in.holders == 1 && in.waiters == 1);
    CHECK(strcmp(h[0].label, "c-child-holder") == 0);
    CHECK(strcmp(h[0].host, host) == 0);
    CHECK(h[0].pid == (uint32_t)holder.pid);
    CHECK(h[0].permits == 2);
    CHECK(h[0].held_for_ns >= 0); /* timed: not the -1 of "not measured" */
    CHECK(h[0].lease_remaining_ns == -1 && h[0].token == 0);
    CHECK(strcmp(q[0].label, own_label) == 0);
    CHECK(q[0].pid == (uint32_t)getpid());
    CHECK(q[0].position == 0 && q[0].permits == 1 && q[0].granted == 0);

    child_kill9(&holder);
    /* inspect reclaims what the dead process held (its permits go to our
     * queued request), so the killed holder is no longer listed. */
    CHECK_STATUS(volt_sem_inspect(sem, &in, h, 4, q, 4), VOLT_OK);
    for (size_t i = 0; i < in.holders && i < 4; i++) {
        CHECK(h[i].pid != (uint32_t)holder.pid);
        CHECK(strcmp(h[i].label, "c-child-holder") != 0);
    }
    signal_wait(&sig);
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    signal_destroy(&sig);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* volt_sem_open_with's bad options: an invalid label (a space, 200 bytes,
 * not UTF-8) is VOLT_INVALID_ARGUMENT with a message, and nothing is created;
 * a bad struct_size or a newer header's unknown option is refused too. */
static void test_open_with_refuses_bad_options(void) {
    char name[64];
    make_name(name, sizeof name, "badopt");
    char long_label[201];
    memset(long_label, 'x', 200);
    long_label[200] = '\0';
    const char *bad[] = {"has space", long_label, "", "caf\xc3\xa9", "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        volt_open_options o = {sizeof o, 0, bad[i]};
        const volt_sem *sem = (const volt_sem *)&sem; /* must become NULL */
        CHECK_STATUS(volt_sem_open_with(name, 1, &o, &sem), VOLT_INVALID_ARGUMENT);
        CHECK(sem == NULL);
        char msg[256];
        CHECK(volt_last_error_message(msg, sizeof msg) > 0);
        CHECK(strstr(msg, "label") != NULL);
        CHECK_STATUS(volt_sem_unlink(name), VOLT_NOT_FOUND); /* nothing created */
    }
    const volt_sem *sem = NULL;
    volt_open_options o = {sizeof o, 0, NULL};
    o.struct_size = 8; /* below the first version */
    CHECK_STATUS(volt_sem_open_with(name, 1, &o, &sem), VOLT_INVALID_ARGUMENT);
    o.struct_size = sizeof o;
    o.flags = 1ull << 40; /* not a flag */
    CHECK_STATUS(volt_sem_open_with(name, 1, &o, &sem), VOLT_INVALID_ARGUMENT);
    o.flags = VOLT_OPEN_CREATE_ONLY | VOLT_OPEN_ATTACH_ONLY;
    CHECK_STATUS(volt_sem_open_with(name, 1, &o, &sem), VOLT_INVALID_ARGUMENT);
    struct {
        volt_open_options o;
        uint64_t newer;
    } n = {{sizeof n, 0, NULL}, 1}; /* an option this library does not know */
    CHECK_STATUS(volt_sem_open_with(name, 1, &n.o, &sem), VOLT_INVALID_OPTION);
    CHECK(sem == NULL);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_NOT_FOUND);
    n.newer = 0; /* left at its default: fine */
    CHECK_STATUS(volt_sem_open_with(name, 1, &n.o, &sem), VOLT_OK);
    volt_sem_free(sem);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    /* NULL options: volt_sem_open(name, permits, 0, out). */
    CHECK_STATUS(volt_sem_open_with(name, 1, NULL, &sem), VOLT_OK);
    CHECK(volt_sem_total_permits(sem) == 1);
    volt_sem_free(sem);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    CHECK_STATUS(volt_sem_open_with(NULL, 1, NULL, &sem), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_open_with(name, 1, NULL, NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_open_options_init(NULL, sizeof o), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_open_options_init(&o, 8), VOLT_INVALID_ARGUMENT);
}

/* close() closes the semaphore for every process. */
static void test_close_reaches_other_processes(void) {
    char name[64];
    make_name(name, sizeof name, "close");
    const volt_sem *sem = open_sem(name, 1, VOLT_OPEN_CREATE_ONLY);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    child c = spawn("blocked", name, "1");
    CHECK(child_read(&c) == 'Q');
    CHECK_STATUS(volt_sem_close(sem), VOLT_OK);
    CHECK(volt_sem_is_closed(sem));
    int code = child_read(&c);
    CHECK(code == 0);
    if (code != 0) fprintf(stderr, "    child step %d failed\n", code);
    child_reap(&c);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK); /* releases still work */
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* Every existing function works on a shared handle: waiters with callbacks,
 * cancel of a partial grant, try_cancel, is_busy, clone, free. */
static void test_existing_functions_on_a_shared_handle(void) {
    char name[64];
    make_name(name, sizeof name, "api");
    const volt_sem *sem = open_sem(name, 3, 0);
    const volt_sem *clone = volt_sem_clone(sem);
    CHECK(clone == sem);
    CHECK_STATUS(volt_sem_try_acquire(sem, 3), VOLT_OK);
    volt_waiter big, small;
    signal_ctx s_big, s_small;
    signal_init(&s_big);
    signal_init(&s_small);
    REQUIRE(volt_waiter_init(&big) == VOLT_OK && volt_waiter_init(&small) == VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &big, 3, signal_wake, &s_big), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(clone, &small, 1, signal_wake, &s_small), VOLT_PENDING);
    CHECK(volt_waiter_is_busy(&big) && volt_waiter_is_busy(&small));
    CHECK_STATUS(volt_sem_acquire(sem, &big, 1, signal_wake, &s_big), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK); /* a partial grant to big */
    /* try_cancel of a queued waiter takes it out without its callback; its
     * partial grant of 2 completes small and leaves 1 over. */
    size_t returned = 99;
    CHECK_STATUS(volt_sem_try_cancel(sem, &big, &returned), VOLT_CANCELLED);
    CHECK(returned == 2);
    CHECK(!volt_waiter_is_busy(&big));
    signal_wait(&s_small);
    CHECK_STATUS(volt_waiter_status(&small), VOLT_OK);
    CHECK_STATUS(volt_sem_cancel(clone, &small, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_cancel(clone, &small, NULL), VOLT_IDLE);
    CHECK(s_big.woken == 0);
    CHECK(volt_sem_available_permits(sem) == 1);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 3);
    /* A waiter used on a shared semaphore is reused on a local one. */
    const volt_sem *local = NULL;
    REQUIRE(volt_sem_new(0, &local) == VOLT_OK);
    {
        signal_ctx s;
        signal_init(&s);
        CHECK_STATUS(volt_sem_acquire(local, &big, 1, signal_wake, &s), VOLT_PENDING);
        CHECK_STATUS(volt_sem_cancel(sem, &big, NULL), VOLT_INVALID_ARGUMENT); /* wrong sem */
        CHECK_STATUS(volt_sem_release(local, 1), VOLT_OK);
        CHECK(s.woken == 1); /* local callbacks run on the releaser */
        CHECK_STATUS(volt_sem_cancel(local, &big, NULL), VOLT_OK);
        signal_destroy(&s);
    }
    volt_sem_free(local);
    /* Closing wakes a queued shared waiter with VOLT_CLOSED. */
    CHECK_STATUS(volt_sem_try_acquire(sem, 3), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &small, 2, signal_wake, &s_small), VOLT_PENDING);
    s_small.woken = 0;
    CHECK_STATUS(volt_sem_close(clone), VOLT_OK);
    signal_wait(&s_small);
    CHECK_STATUS(volt_sem_cancel(sem, &small, NULL), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_acquire(sem, &small, 1, signal_wake, &s_small), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_release(sem, 3), VOLT_OK);
    signal_destroy(&s_big);
    signal_destroy(&s_small);
    volt_sem_free(clone);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* volt_sem_cancel() takes "a handle to the semaphore the waiter was queued
 * on": another volt_sem_open() of the same name in this process is one (the
 * process has one attachment per name). It used to be refused with
 * VOLT_INVALID_ARGUMENT, so a program that kept that handle and freed the one
 * it queued through (which OWNERSHIP allows: the waiter keeps its own
 * reference) could never end the waiter: its request stayed queued, ahead of
 * every process's, and its grant held, until the process exited. A handle on
 * a new semaphore under the same name (after an unlink) is still refused. */
static void test_cancel_through_another_open_of_the_name(void) {
    char name[64];
    make_name(name, sizeof name, "other-open");
    const volt_sem *first = open_sem(name, 1, 0);
    const volt_sem *second = open_sem(name, 1, 0);
    CHECK(first != second);
    volt_waiter w;
    signal_ctx s;
    signal_init(&s);
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(first, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(first, &w, 1, signal_wake, &s), VOLT_PENDING);
    volt_sem_free(first); /* the waiter keeps its own reference */
    size_t returned = 99;
    CHECK_STATUS(volt_sem_cancel(second, &w, &returned), VOLT_CANCELLED);
    CHECK(returned == 0);
    CHECK(!volt_waiter_is_busy(&w));
    /* Granted, then collected through the other handle. */
    CHECK_STATUS(volt_sem_acquire(second, &w, 1, signal_wake, &s), VOLT_PENDING);
    const volt_sem *third = open_sem(name, 1, 0);
    CHECK_STATUS(volt_sem_release(third, 1), VOLT_OK);
    signal_wait(&s);
    CHECK_STATUS(volt_sem_cancel(third, &w, NULL), VOLT_OK);
    /* Another semaphore under the same name is not this one. */
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    const volt_sem *renewed = open_sem(name, 1, 0);
    CHECK_STATUS(volt_sem_acquire(second, &w, 1, signal_wake, &s), VOLT_PENDING);
    CHECK_STATUS(volt_sem_cancel(renewed, &w, NULL), VOLT_INVALID_ARGUMENT);
    CHECK(volt_waiter_is_busy(&w));
    CHECK_STATUS(volt_sem_cancel(second, &w, &returned), VOLT_CANCELLED);
    CHECK_STATUS(volt_sem_release(third, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(second) == 1);
    signal_destroy(&s);
    volt_sem_free(third);
    volt_sem_free(second);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(renewed);
}

/* A named semaphore's callbacks all run on the process's doorbell thread.
 * One release completes A and B; A's callback try_cancels B, whose callback
 * is still to run on that same thread. The header used to say this answers
 * VOLT_PENDING on a shared semaphore; it answers as volt_sem_cancel does
 * there (and as on a local semaphore): B's outcome at once, B's callback
 * never called. The header now says so; this pins it. */
typedef struct {
    const volt_sem *sem;
    volt_waiter a, b;
    volt_status b_from_a;
    signal_ctx a_done, b_woken;
} shared_siblings;

static void try_cancel_shared_sibling(void *ctx) {
    shared_siblings *s = ctx;
    s->b_from_a = volt_sem_try_cancel(s->sem, &s->b, NULL);
    signal_wake(&s->a_done);
}

static void test_callback_try_cancels_a_sibling_on_the_doorbell(void) {
    char name[64];
    make_name(name, sizeof name, "sibling");
    shared_siblings s;
    s.sem = open_sem(name, 3, 0);
    s.b_from_a = VOLT_PANIC;
    signal_init(&s.a_done);
    signal_init(&s.b_woken);
    REQUIRE(volt_waiter_init(&s.a) == VOLT_OK && volt_waiter_init(&s.b) == VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(s.sem, 3), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(s.sem, &s.a, 1, try_cancel_shared_sibling, &s), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(s.sem, &s.b, 2, signal_wake, &s.b_woken), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(s.sem, 3), VOLT_OK); /* grants both at once */
    signal_wait(&s.a_done);
    CHECK_STATUS(volt_sem_cancel(s.sem, &s.a, NULL), VOLT_OK); /* A's callback has returned */
    CHECK_STATUS(s.b_from_a, VOLT_OK); /* A's callback took B's 2 permits */
    CHECK(s.b_woken.woken == 0);
    CHECK(!volt_waiter_is_busy(&s.b));
    CHECK_STATUS(volt_sem_cancel(s.sem, &s.b, NULL), VOLT_IDLE);
    CHECK_STATUS(volt_sem_release(s.sem, 3), VOLT_OK);
    CHECK(volt_sem_available_permits(s.sem) == 3);
    signal_destroy(&s.a_done);
    signal_destroy(&s.b_woken);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(s.sem);
}

/* volt_sem_stats on a named handle: the call and the gauges the named
 * backend reports (its counters come with its recording). */
static void test_stats_on_a_shared_handle(void) {
    char name[64];
    make_name(name, sizeof name, "stats");
    const volt_sem *sem = open_sem(name, 3, 0);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    volt_stats st = {.struct_size = sizeof st};
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_OK);
    CHECK(st.struct_size == sizeof st);
    CHECK(st.available == 1 && st.available == volt_sem_available_permits(sem));
    CHECK(st.recording && st.grants == 1 && st.permits_granted == 2 && st.held == 2);
    CHECK(st.queued == 0 && st.timeouts == 0 && st.cancels == 0);
    CHECK(st.wait_count == st.grants);
    /* A request that waits, then gives up: a timeout and a cancel. */
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 2, 20000000), VOLT_TIMED_OUT); /* 20 ms */
    CHECK_STATUS(volt_sem_stats(sem, &st), VOLT_OK);
    CHECK(st.grants == 1 && st.timeouts == 1 && st.cancels == 1 && st.queued == 0);
    CHECK_STATUS(volt_sem_stats(NULL, &st), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_stats(sem, NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* A blocking acquire inside a shared wake callback (the doorbell thread)
 * would wait for itself: VOLT_IN_CALLBACK. */
typedef struct {
    const volt_sem *sem;
    volt_status inside;
    signal_ctx sig;
} in_cb;

static void block_inside(void *ctx) {
    in_cb *c = ctx;
    c->inside = volt_sem_acquire_blocking(c->sem, 1, -1);
    signal_wake(&c->sig);
}

static void test_blocking_inside_a_callback(void) {
    char name[64];
    make_name(name, sizeof name, "incb");
    const volt_sem *sem = open_sem(name, 1, 0);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    in_cb c;
    c.sem = sem;
    c.inside = VOLT_PANIC;
    signal_init(&c.sig);
    volt_waiter w;
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 1, block_inside, &c), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    signal_wait(&c.sig);
    CHECK_STATUS(c.inside, VOLT_IN_CALLBACK);
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    signal_destroy(&c.sig);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* A handle opened before fork() fails in the child (without exec) with
 * VOLT_FORKED; the child opens the name again. */
static void test_forked_handle(void) {
    char name[64];
    make_name(name, sizeof name, "fork");
    const volt_sem *sem = open_sem(name, 2, 0);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        harness_child_watchdog(60);
        char code = 0;
        const volt_sem *mine = NULL;
        if (volt_sem_try_acquire(sem, 1) != VOLT_FORKED) code = 1;
        else if (volt_sem_release(sem, 1) != VOLT_FORKED) code = 2;
        else if (volt_last_error_message(NULL, 0) == 0) code = 6; /* with its message */
        else if (volt_sem_open(name, 2, VOLT_OPEN_ATTACH_ONLY, &mine) != VOLT_OK) code = 3;
        else if (volt_sem_try_acquire(mine, 1) != VOLT_OK) code = 4;
        else if (volt_sem_release(mine, 1) != VOLT_OK) code = 5;
        if (write(fds[1], &code, 1) != 1) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    char code = 99;
    CHECK(read(fds[0], &code, 1) == 1);
    close(fds[0]);
    CHECK(code == 0);
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK(volt_sem_available_permits(sem) == 1);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* A fork while the doorbell thread runs a wake callback (and a sibling's,
 * granted by the same release, is still to run there): the child has no
 * doorbell thread, so neither callback returns in it. Its volt_sem_cancel()
 * of those waiters used to wait for ever (volt_sem_try_cancel(): VOLT_PENDING
 * for ever). They now end at once with VOLT_CLOSED: the grants are the
 * parent's record's, which the child's copy of the handle may not touch (as
 * a request the parent had queued, which the child's cancel also ends
 * VOLT_CLOSED). */
typedef struct {
    atomic_int entered;
    atomic_int go;
} doorbell_stall;

static void stall_on_doorbell(void *ctx) {
    doorbell_stall *d = ctx;
    atomic_store(&d->entered, 1);
    while (!atomic_load(&d->go)) sched_yield(); /* held open across the fork */
}

static void test_fork_while_the_doorbell_runs_a_callback(void) {
    char name[64];
    make_name(name, sizeof name, "fork-bell");
    const volt_sem *sem = open_sem(name, 2, 0);
    doorbell_stall d;
    atomic_init(&d.entered, 0);
    atomic_init(&d.go, 0);
    signal_ctx sb;
    signal_init(&sb);
    volt_waiter a, b;
    REQUIRE(volt_waiter_init(&a) == VOLT_OK && volt_waiter_init(&b) == VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 1, stall_on_doorbell, &d), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(sem, &b, 1, signal_wake, &sb), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    while (!atomic_load(&d.entered)) sched_yield();
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        harness_child_watchdog(10); /* a hang dies of SIGALRM: no code written */
        char code = 0;
        if (volt_sem_try_cancel(sem, &a, NULL) != VOLT_CLOSED) code = 1;
        else if (volt_sem_cancel(sem, &b, NULL) != VOLT_CLOSED) code = 2;
        else if (volt_waiter_is_busy(&a) || volt_waiter_is_busy(&b)) code = 3;
        else if (sb.woken != 0) code = 4;
        if (write(fds[1], &code, 1) != 1) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    char code = 99;
    CHECK(read(fds[0], &code, 1) == 1); /* 0 bytes: the child hung and died */
    close(fds[0]);
    if (code != 0) fprintf(stderr, "    child failed with code %d\n", code);
    CHECK(code == 0);
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    /* The parent's waiters are served as usual. */
    atomic_store(&d.go, 1);
    CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_cancel(sem, &b, NULL), VOLT_OK);
    CHECK(sb.woken == 1);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    signal_destroy(&sb);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* fork() from inside a wake callback on the doorbell thread, the child
 * returning from the callback (no exec, no _exit there). The child's only
 * thread is then its copy of the doorbell thread: it finishes the batch it
 * was delivering, as FORK says, and must then stop. It used to go on
 * serving the parent's queue in the child: a request the parent queued
 * before the fork and that the parent's release granted later (C here) had
 * its callback called in the child too (the header: "its callback is never
 * called in the child"), and the thread then waited for ever, so the child
 * never exited. */
typedef struct {
    pid_t parent;
    atomic_int child; /* the child's pid, once forked */
    int report[2];    /* the child writes 'C' if C's callback runs there */
} fork_in_callback;

static void fork_on_doorbell(void *ctx) {
    fork_in_callback *f = ctx;
    pid_t pid = harness_fork_and_return_in_child(f->report[0]);
    if (pid == 0) return; /* back to the doorbell thread, in the child */
    atomic_store(&f->child, (int)pid);
}

static void report_wake_in_child(void *ctx) {
    fork_in_callback *f = ctx;
    if (getpid() != f->parent) {
        if (write(f->report[1], "C", 1) != 1) _exit(3);
    }
}

static void test_fork_inside_a_doorbell_callback(void) {
    char name[64];
    make_name(name, sizeof name, "fork-in-cb");
    const volt_sem *sem = open_sem(name, 2, 0);
    fork_in_callback f;
    f.parent = getpid();
    atomic_init(&f.child, 0);
    REQUIRE(pipe(f.report) == 0);
    volt_waiter a, c;
    REQUIRE(volt_waiter_init(&a) == VOLT_OK && volt_waiter_init(&c) == VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &a, 1, fork_on_doorbell, &f), VOLT_PENDING);
    CHECK_STATUS(volt_sem_acquire(sem, &c, 2, report_wake_in_child, &f), VOLT_PENDING);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK); /* A: its callback forks */
    while (atomic_load(&f.child) == 0) sched_yield();
    pid_t pid = (pid_t)atomic_load(&f.child);
    CHECK_STATUS(volt_sem_cancel(sem, &a, NULL), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK); /* C's grant: the parent's */
    CHECK_STATUS(volt_sem_cancel(sem, &c, NULL), VOLT_OK);
    harness_check_fork_child_ended_quietly(pid, f.report); /* C's callback never ran there */
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* Writes `len` bytes to /dev/shm/volt-sem.<name> (a file another program
 * could have left there). */
static void plant_file(const char *name, const void *bytes, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "/dev/shm/volt-sem.%s", name);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, bytes, len) == (ssize_t)len);
    close(fd);
}

static void test_bad_input(void) {
    char name[300];
    make_name(name, sizeof name, "bad");
    const volt_sem *sem = (const volt_sem *)&sem; /* must be overwritten with NULL */
    CHECK_STATUS(volt_sem_open(NULL, 1, 0, &sem), VOLT_INVALID_ARGUMENT);
    CHECK(sem == NULL);
    CHECK_STATUS(volt_sem_open(name, 1, 0, NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_open("", 1, 0, &sem), VOLT_INVALID_NAME);
    CHECK_STATUS(volt_sem_open("a/b", 1, 0, &sem), VOLT_INVALID_NAME);
    /* The message states the rule (it was "": the status alone). */
    char msg[512];
    CHECK(volt_last_error_message(msg, sizeof msg) > 0 && strstr(msg, "'/' or NUL") != NULL);
    CHECK_STATUS(volt_sem_open("\xff\xfe", 1, 0, &sem), VOLT_INVALID_NAME);
    char long_name[400];
    size_t max = volt_sem_max_name_len();
    REQUIRE(max > 0 && max + 1 < sizeof long_name);
    memset(long_name, 'x', max + 1);
    long_name[max + 1] = '\0';
    CHECK_STATUS(volt_sem_open(long_name, 1, 0, &sem), VOLT_INVALID_NAME);
    CHECK_STATUS(volt_sem_unlink(long_name), VOLT_INVALID_NAME);
    long_name[max] = '\0'; /* exactly the longest name: fine */
    (void)volt_sem_unlink(long_name);
    CHECK_STATUS(volt_sem_open(long_name, 1, VOLT_OPEN_CREATE_ONLY, &sem), VOLT_OK);
    volt_sem_free(sem);
    CHECK_STATUS(volt_sem_unlink(long_name), VOLT_OK);
    CHECK_STATUS(volt_sem_open(name, 0, 0, &sem), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_open(name, volt_sem_max_shared_permits() + 1, 0, &sem),
                 VOLT_INVALID_ARGUMENT);
    /* VOLT_INVALID_ARGUMENT has many causes: the message names this one. */
    CHECK(volt_last_error_message(msg, sizeof msg) > 0 && strstr(msg, "permits must be between 1 and") != NULL);
    CHECK_STATUS(volt_sem_open(name, 1, VOLT_OPEN_CREATE_ONLY | VOLT_OPEN_ATTACH_ONLY, &sem),
                 VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_open(name, 1, 1u << 8, &sem), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_open(name, 1, VOLT_OPEN_ATTACH_ONLY, &sem), VOLT_NOT_FOUND);
    CHECK(sem == NULL);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_NOT_FOUND);
    CHECK_STATUS(volt_sem_unlink(NULL), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_unlink(""), VOLT_INVALID_NAME);

    /* Create-only, then every way of opening it wrongly changes nothing. */
    sem = open_sem(name, 2, VOLT_OPEN_CREATE_ONLY | VOLT_OPEN_SHARE_GROUP);
    const volt_sem *other = NULL;
    CHECK_STATUS(volt_sem_open(name, 2, VOLT_OPEN_CREATE_ONLY, &other), VOLT_EXISTS);
    CHECK_STATUS(volt_sem_open(name, 3, 0, &other), VOLT_MISMATCH);
    CHECK(other == NULL);
    char path[512];
    snprintf(path, sizeof path, "/dev/shm/volt-sem.%s", name);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0660);
    /* Requests above the total could never be granted. */
    CHECK_STATUS(volt_sem_try_acquire(sem, 3), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 3, 0), VOLT_INVALID_ARGUMENT);
    volt_waiter w;
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 3, signal_wake, NULL), VOLT_INVALID_ARGUMENT);
    CHECK(!volt_waiter_is_busy(&w));
    /* Release of more than this process holds. */
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_NOT_HELD);
    CHECK(volt_sem_available_permits(sem) == 1);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_NOT_HELD);
    CHECK(volt_sem_available_permits(sem) == 2);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 2, 0), VOLT_OK);
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 1, 1000000), VOLT_TIMED_OUT);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    /* Unlink: the name goes, the attached handle keeps working, and the next
     * open makes a new semaphore (another total is fine then). */
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_NOT_FOUND);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    other = open_sem(name, 5, VOLT_OPEN_CREATE_ONLY);
    CHECK(volt_sem_total_permits(other) == 5 && volt_sem_available_permits(other) == 5);
    CHECK(volt_sem_available_permits(sem) == 2);
    volt_sem_free(other);
    volt_sem_free(sem);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);

    /* Foreign, truncated and other-version files are refused, untouched. */
    const char foreign[] = "this is not a volt-sem segment, just a file in /dev/shm";
    plant_file(name, foreign, sizeof foreign);
    CHECK_STATUS(volt_sem_open(name, 1, 0, &sem), VOLT_NOT_A_SEGMENT);
    CHECK(stat(path, &st) == 0 && st.st_size == (off_t)sizeof foreign);
    unsigned char head[32] = {'V', 'O', 'L', 'T', 'S', 'H', 'M', 1};
    plant_file(name, head, 12); /* the magic and a version, then nothing */
    CHECK_STATUS(volt_sem_open(name, 1, 0, &sem), VOLT_NOT_A_SEGMENT);
    head[8] = 99; /* layout version 99, little-endian */
    plant_file(name, head, sizeof head);
    CHECK_STATUS(volt_sem_open(name, 1, 0, &sem), VOLT_VERSION_MISMATCH);
    CHECK_STATUS(volt_sem_open(name, 1, VOLT_OPEN_ATTACH_ONLY, &sem), VOLT_VERSION_MISMATCH);
    CHECK(sem == NULL);
    char why[512];
    CHECK(volt_last_error_message(why, sizeof why) > 0 && strstr(why, "version 99; this release's:") != NULL);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK); /* unlink removes any file */

    /* A real segment whose lock is the other C library's (byte 12: 1 glibc,
     * 2 musl): a glibc build and a musl build cannot share it. */
    volt_sem_free(open_sem(name, 1, 0));
    int fd = open(path, O_RDWR);
    REQUIRE(fd >= 0);
    uint32_t abi = 0;
    REQUIRE(pread(fd, &abi, 4, 12) == 4);
    CHECK(abi == 1 || abi == 2);
    abi = 3 - abi;
    REQUIRE(pwrite(fd, &abi, 4, 12) == 4);
    close(fd);
    CHECK_STATUS(volt_sem_open(name, 1, 0, &sem), VOLT_LIBC_MISMATCH);
    CHECK(sem == NULL);
    CHECK(volt_last_error_message(why, sizeof why) > 0 && strstr(why, "glibc") != NULL && strstr(why, "musl") != NULL);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);

    /* NULL handles. */
    CHECK(volt_sem_total_permits(NULL) == 0);
}

/* Permission denied: a 0600 segment opened by another user. As root (who
 * passes every mode check) the check runs in a child that became `nobody`;
 * otherwise on a segment whose mode was taken away. */
static void test_permission_denied(void) {
    char name[64], path[512];
    make_name(name, sizeof name, "perm");
    snprintf(path, sizeof path, "/dev/shm/volt-sem.%s", name);
    const volt_sem *sem = open_sem(name, 1, VOLT_OPEN_CREATE_ONLY);
    if (geteuid() == 0) {
        struct passwd *nobody = getpwnam("nobody");
        uid_t uid = nobody ? nobody->pw_uid : 65534;
        gid_t gid = nobody ? nobody->pw_gid : 65534;
        int fds[2];
        REQUIRE(pipe(fds) == 0);
        pid_t pid = fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            harness_child_watchdog(60);
            char code = 0;
            const volt_sem *s = NULL;
            if (setgid(gid) != 0 || setuid(uid) != 0) code = 1;
            else if (volt_sem_open(name, 1, 0, &s) != VOLT_PERMISSION) code = 2;
            else if (volt_sem_unlink(name) != VOLT_PERMISSION) code = 3;
            if (write(fds[1], &code, 1) != 1) _exit(1);
            _exit(0);
        }
        close(fds[1]);
        char code = 99;
        CHECK(read(fds[0], &code, 1) == 1);
        close(fds[0]);
        CHECK(code == 0);
        int status;
        REQUIRE(waitpid(pid, &status, 0) == pid);
    } else {
        REQUIRE(chmod(path, 0) == 0);
        const volt_sem *s = NULL;
        CHECK_STATUS(volt_sem_open(name, 1, 0, &s), VOLT_PERMISSION);
        REQUIRE(chmod(path, 0600) == 0);
    }
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK); /* nothing changed */
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* Issue 26, item 10: a segment another user owns (here root's, mode 0666, as
 * a squatter would leave it for its victims) is refused by a default open of
 * another user, who gets VOLT_PERMISSION and changes nothing; with
 * VOLT_OPEN_ACCEPT_FOREIGN_OWNER it attaches. Needs root (to become `nobody`
 * in a child); skipped otherwise. */
static void test_foreign_owner_is_refused_unless_accepted(void) {
    if (geteuid() != 0) {
        printf("SKIPPED: test_foreign_owner_is_refused_unless_accepted (needs root)\n");
        return;
    }
    char name[64];
    make_name(name, sizeof name, "foreign-owner");
    const volt_sem *sem = open_sem(name, 2, VOLT_OPEN_CREATE_ONLY | VOLT_OPEN_SHARE_ALL);
    char path[512];
    snprintf(path, sizeof path, "/dev/shm/volt-sem.%s", name);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0666);
    struct passwd *nobody = getpwnam("nobody");
    uid_t uid = nobody ? nobody->pw_uid : 65534;
    gid_t gid = nobody ? nobody->pw_gid : 65534;
    int fds[2];
    REQUIRE(pipe(fds) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        harness_child_watchdog(60);
        char code = 0;
        const volt_sem *s = (const volt_sem *)&s;
        if (setgid(gid) != 0 || setuid(uid) != 0) code = 1;
        else if (volt_sem_open(name, 2, 0, &s) != VOLT_PERMISSION || s != NULL) code = 2;
        else if (volt_sem_open(name, 2, VOLT_OPEN_ATTACH_ONLY, &s) != VOLT_PERMISSION) code = 3;
        else if (volt_sem_open(name, 2, VOLT_OPEN_ACCEPT_FOREIGN_OWNER, &s) != VOLT_OK) code = 4;
        else if (volt_sem_try_acquire(s, 1) != VOLT_OK || volt_sem_release(s, 1) != VOLT_OK) code = 5;
        if (write(fds[1], &code, 1) != 1) _exit(1);
        _exit(0);
    }
    close(fds[1]);
    char code = 99;
    CHECK(read(fds[0], &code, 1) == 1);
    close(fds[0]);
    CHECK(code == 0);
    if (code != 0) fprintf(stderr, "    child step %d failed\n", code);
    int status;
    REQUIRE(waitpid(pid, &status, 0) == pid);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK); /* nothing changed */
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* A full waiter table is a clear error; the request is not queued and the
 * FIFO goes on. */
static void test_queue_full(void) {
    char name[64];
    make_name(name, sizeof name, "full");
    const volt_sem *sem = open_sem(name, 1, 0);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    size_t n = volt_sem_max_waiters();
    REQUIRE(n > 0);
    volt_waiter *ws = aligned_alloc(VOLT_WAITER_ALIGN, (n + 1) * sizeof(volt_waiter));
    REQUIRE(ws != NULL);
    signal_ctx sig;
    signal_init(&sig);
    size_t queued = 0;
    for (size_t i = 0; i <= n; i++) REQUIRE(volt_waiter_init(&ws[i]) == VOLT_OK);
    for (size_t i = 0; i < n; i++) {
        if (volt_sem_acquire(sem, &ws[i], 1, signal_wake, &sig) == VOLT_PENDING) queued++;
    }
    CHECK(queued == n);
    CHECK_STATUS(volt_sem_acquire(sem, &ws[n], 1, signal_wake, &sig), VOLT_QUEUE_FULL);
    CHECK(!volt_waiter_is_busy(&ws[n]));
    CHECK_STATUS(volt_sem_acquire_blocking(sem, 1, 0), VOLT_QUEUE_FULL);
    /* The FIFO still works: the head gets the permit. */
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    signal_wait(&sig);
    CHECK_STATUS(volt_sem_cancel(sem, &ws[0], NULL), VOLT_OK);
    for (size_t i = 1; i < n; i++) CHECK_STATUS(volt_sem_cancel(sem, &ws[i], NULL), VOLT_CANCELLED);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    free(ws);
    signal_destroy(&sig);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* Status names of the new codes. */
/* Changing the total online: a growth serves a waiter queued in another
 * process at once (no release), a shrink fails the queued request above the
 * new total and revokes nothing (a debt paid by the next release), reopen
 * undoes a close, and an open with another total is refused unless
 * VOLT_OPEN_RESIZE. A local semaphore refuses both calls. */
static void test_set_total_and_reopen(void) {
    char name[64];
    make_name(name, sizeof name, "total");
    const volt_sem *sem = open_sem(name, 1, VOLT_OPEN_CREATE_ONLY);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    child b = spawn("queue1", name, "1");
    CHECK(child_read(&b) == 'Q');
    child_send(&b, 'S');
    CHECK(child_read(&b) == VOLT_PENDING);
    /* The growth alone serves B (this process still holds its permit). */
    CHECK_STATUS(volt_sem_set_total(sem, 2), VOLT_OK);
    CHECK(volt_sem_total_permits(sem) == 2);
    child_send(&b, 'W');
    CHECK(child_read(&b) == 0);
    child_reap(&b);
    CHECK(volt_sem_available_permits(sem) == 1);

    /* A queued acquire(2) holds a partial grant of 1; the shrink to 1 fails
     * it (its waiter is woken as by a close, and collected it tells its own
     * error: above the total) and its permit pays the debt. */
    volt_waiter w;
    signal_ctx sig;
    signal_init(&sig);
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(sem, &w, 2, signal_wake, &sig), VOLT_PENDING);
    CHECK_STATUS(volt_sem_set_total(sem, 1), VOLT_OK);
    signal_wait(&sig);
    CHECK_STATUS(volt_waiter_status(&w), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_cancel(sem, &w, NULL), VOLT_INVALID_ARGUMENT);
    CHECK(!volt_sem_is_closed(sem));
    CHECK(volt_sem_total_permits(sem) == 1);
    CHECK(volt_sem_available_permits(sem) == 0); /* our permit stays held */

    /* Hold 2 of 2, shrink to 1: nothing revoked, the first release pays. */
    CHECK_STATUS(volt_sem_set_total(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_set_total(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 0);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    /* A release is bounded by what this process holds, not by the total
     * (the header used to say n above the total is VOLT_INVALID_ARGUMENT,
     * which would refuse a holder's release after a shrink): hold 2 of 2,
     * shrink to 1, release 2 at once. */
    CHECK_STATUS(volt_sem_set_total(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_set_total(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 3), VOLT_NOT_HELD);
    CHECK_STATUS(volt_sem_release(sem, 2), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 1);
    CHECK_STATUS(volt_sem_try_acquire(sem, 2), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_set_total(sem, 0), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_set_total(NULL, 1), VOLT_INVALID_ARGUMENT);
    CHECK_STATUS(volt_sem_reopen(NULL), VOLT_INVALID_ARGUMENT);

    /* Reopen undoes the close. */
    CHECK_STATUS(volt_sem_reopen(sem), VOLT_OK); /* not closed: a no-op */
    CHECK_STATUS(volt_sem_close(sem), VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_reopen(sem), VOLT_OK);
    CHECK(!volt_sem_is_closed(sem));
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);

    /* Another total: refused, then accepted with VOLT_OPEN_RESIZE (both
     * flag paths), which changes the total for every handle. */
    const volt_sem *other = NULL;
    CHECK_STATUS(volt_sem_open(name, 3, VOLT_OPEN_ATTACH_ONLY, &other), VOLT_MISMATCH);
    CHECK(other == NULL && volt_sem_total_permits(sem) == 1);
    CHECK_STATUS(volt_sem_open(name, 3, VOLT_OPEN_ATTACH_ONLY | VOLT_OPEN_RESIZE, &other),
                 VOLT_OK);
    CHECK(volt_sem_total_permits(sem) == 3 && volt_sem_available_permits(sem) == 3);
    volt_sem_free(other);
    other = NULL;
    volt_open_options o = {sizeof o, VOLT_OPEN_RESIZE, NULL};
    CHECK_STATUS(volt_sem_open_with(name, 2, &o, &other), VOLT_OK);
    CHECK(volt_sem_total_permits(sem) == 2);
    volt_sem_free(other);

    /* A local semaphore has no total to change; its close is final. */
    const volt_sem *local = NULL;
    REQUIRE(volt_sem_new(1, &local) == VOLT_OK);
    CHECK_STATUS(volt_sem_set_total(local, 2), VOLT_UNSUPPORTED);
    char msg[128];
    CHECK(volt_last_error_message(msg, sizeof msg) > 0 && strstr(msg, "named and Redis"));
    CHECK_STATUS(volt_sem_reopen(local), VOLT_UNSUPPORTED);
    volt_sem_free(local);

    signal_destroy(&sig);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* How many requests are queued on the name, in every process. */
static size_t queued_on(const volt_sem *sem) {
    volt_inspection in;
    volt_status s = volt_sem_inspect(sem, &in, NULL, 0, NULL, 0);
    REQUIRE(s == VOLT_OK || s == VOLT_TRUNCATED);
    return in.waiters;
}

/* A thread blocked in acquire_blocking(3) (all the permits, no timeout). */
static void *block_three(void *arg) {
    blocked_acquire *b = arg;
    b->got = volt_sem_acquire_blocking(b->sem, 3, -1);
    return NULL;
}

/* volt_sem_disconnect ends one handle (every reference to it): its queued
 * volt_waiter and its blocked thread fail with VOLT_DISCONNECTED (the
 * thread's request is out of the queue when the disconnect returns: failed
 * by it, not left to a check of the thread's), what it held goes to the next
 * waiter (another process's), every later call on it is refused; another
 * handle of the name in this process, and the other process, go on, and
 * every permit is accounted for. */
static void test_disconnect_ends_one_handle(void) {
    char name[64];
    make_name(name, sizeof name, "disconnect");
    const volt_sem *a = open_sem(name, 3, VOLT_OPEN_CREATE_ONLY);
    const volt_sem *b = open_sem(name, 3, VOLT_OPEN_ATTACH_ONLY);
    const volt_sem *a2 = volt_sem_clone(a);
    CHECK_STATUS(volt_sem_try_acquire(a, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_try_acquire(b, 1), VOLT_OK);
    /* Queued, in this order: a volt_waiter on `a`, another process's
     * acquire(1), a thread blocked on `a` for all 3 permits (which `a`'s
     * two given back cannot satisfy: it would stay queued, with a partial
     * grant of 1, until something ended its wait). */
    volt_waiter w;
    signal_ctx sig;
    signal_init(&sig);
    REQUIRE(volt_waiter_init(&w) == VOLT_OK);
    CHECK_STATUS(volt_sem_acquire(a, &w, 1, signal_wake, &sig), VOLT_PENDING);
    child c = spawn("queue1", name, "3");
    CHECK(child_read(&c) == 'Q');
    blocked_acquire bl = {a, VOLT_PANIC};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, block_three, &bl) == 0);
    while (queued_on(b) < 3) sleep_ms(5);

    CHECK_STATUS(volt_sem_disconnect(a2), VOLT_OK); /* through another reference */
    /* The disconnect failed the blocked thread's request itself: nothing of
     * `a`'s is queued any more (the other process's request was granted). */
    CHECK(queued_on(b) == 0);
    signal_wait(&sig);
    CHECK_STATUS(volt_waiter_status(&w), VOLT_CLOSED);
    CHECK_STATUS(volt_sem_cancel(a, &w, NULL), VOLT_DISCONNECTED);
    CHECK(!volt_waiter_is_busy(&w));
    REQUIRE(pthread_join(t, NULL) == 0);
    CHECK_STATUS(bl.got, VOLT_DISCONNECTED);
    /* `a`'s two permits went back: the other process's request was next. */
    child_send(&c, 'W');
    CHECK(child_read(&c) == 0); /* granted, collected, released */
    child_reap(&c);
    CHECK(volt_sem_available_permits(b) == 2); /* 3, less `b`'s one */

    /* Every later call on `a` (any reference) is refused; queries answer. */
    CHECK_STATUS(volt_sem_try_acquire(a, 1), VOLT_DISCONNECTED);
    CHECK_STATUS(volt_sem_acquire_blocking(a2, 1, 0), VOLT_DISCONNECTED);
    CHECK_STATUS(volt_sem_acquire(a, &w, 1, signal_wake, &sig), VOLT_DISCONNECTED);
    CHECK_STATUS(volt_waiter_status(&w), VOLT_IDLE);
    CHECK_STATUS(volt_sem_release(a, 1), VOLT_DISCONNECTED);
    CHECK_STATUS(volt_sem_close(a), VOLT_DISCONNECTED);
    CHECK_STATUS(volt_sem_set_total(a, 4), VOLT_DISCONNECTED);
    CHECK_STATUS(volt_sem_reopen(a), VOLT_DISCONNECTED);
    volt_inspection in;
    CHECK_STATUS(volt_sem_inspect(a, &in, NULL, 0, NULL, 0), VOLT_DISCONNECTED);
    expect_message("volt_sem_inspect", "disconnected");
    CHECK(volt_sem_total_permits(a) == 3 && !volt_sem_is_closed(a));
    CHECK_STATUS(volt_sem_disconnect(a), VOLT_OK); /* idempotent */

    /* `b` and the semaphore go on. */
    CHECK_STATUS(volt_sem_try_acquire(b, 2), VOLT_OK);
    CHECK_STATUS(volt_sem_release(b, 3), VOLT_OK);
    CHECK(volt_sem_available_permits(b) == 3 && !volt_sem_is_closed(b));

    /* NULL; a local semaphore has no session. */
    CHECK_STATUS(volt_sem_disconnect(NULL), VOLT_INVALID_ARGUMENT);
    const volt_sem *local = NULL;
    REQUIRE(volt_sem_new(1, &local) == VOLT_OK);
    CHECK_STATUS(volt_sem_disconnect(local), VOLT_UNSUPPORTED);
    expect_message("volt_sem_disconnect(local)", "named and Redis");
    CHECK_STATUS(volt_sem_try_acquire(local, 1), VOLT_OK);
    volt_sem_free(local);

    signal_destroy(&sig);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(a2);
    volt_sem_free(a);
    volt_sem_free(b);
}

/* In a fork() child, a named handle of the parent: VOLT_FORKED, nothing
 * changed (the parent's handle goes on). */
static void test_disconnect_in_a_forked_child(void) {
    char name[64];
    make_name(name, sizeof name, "disconnect-fork");
    const volt_sem *sem = open_sem(name, 2, VOLT_OPEN_CREATE_ONLY);
    CHECK_STATUS(volt_sem_try_acquire(sem, 1), VOLT_OK);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) _exit(volt_sem_disconnect(sem) == VOLT_FORKED ? 0 : 1);
    int st = 0;
    REQUIRE(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    CHECK_STATUS(volt_sem_release(sem, 1), VOLT_OK);
    CHECK(volt_sem_available_permits(sem) == 2);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(sem);
}

/* One thread of the race below: takes and gives back a permit through `a`
 * until the disconnect refuses it. */
typedef struct {
    const volt_sem *a;
    pthread_barrier_t *go;
    volt_status end;
} churn_ctx;

static void *churn(void *arg) {
    churn_ctx *c = arg;
    pthread_barrier_wait(c->go);
    for (;;) {
        volt_status s = volt_sem_try_acquire(c->a, 1);
        if (s == VOLT_WOULD_BLOCK) continue;
        if (s != VOLT_OK) {
            c->end = s;
            return NULL;
        }
        s = volt_sem_release(c->a, 1);
        if (s != VOLT_OK) {
            c->end = s;
            return NULL;
        }
    }
}

/* volt_sem_disconnect racing acquires and releases of the handle on three
 * threads: every permit the handle took goes back once, by its release or by
 * the disconnect, never both (the old code could release a permit twice: the
 * second time one that another handle of the process held), and every
 * racing call either completes or fails with VOLT_DISCONNECTED. */
static void test_disconnect_racing_acquires_and_releases(void) {
    char name[64];
    make_name(name, sizeof name, "disconnect-race");
    const volt_sem *b = open_sem(name, 6, VOLT_OPEN_CREATE_ONLY);
    CHECK_STATUS(volt_sem_try_acquire(b, 3), VOLT_OK);
    enum { THREADS = 3 };
    for (int round = 0; round < 300; round++) {
        const volt_sem *a = open_sem(name, 6, VOLT_OPEN_ATTACH_ONLY);
        pthread_barrier_t go;
        REQUIRE(pthread_barrier_init(&go, NULL, THREADS + 1) == 0);
        churn_ctx c[THREADS];
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++) {
            c[i] = (churn_ctx){a, &go, VOLT_PANIC};
            REQUIRE(pthread_create(&t[i], NULL, churn, &c[i]) == 0);
        }
        pthread_barrier_wait(&go);
        sleep_ms(round % 3); /* 0 to 2 ms of churn first */
        CHECK_STATUS(volt_sem_disconnect(a), VOLT_OK);
        for (int i = 0; i < THREADS; i++) {
            REQUIRE(pthread_join(t[i], NULL) == 0);
            CHECK_STATUS(c[i].end, VOLT_DISCONNECTED);
        }
        pthread_barrier_destroy(&go);
        volt_sem_free(a);
        /* `b`'s 3 are still held, and nothing else (`b`'s release below
         * says the process holds them). */
        if (volt_sem_available_permits(b) != 3) {
            fprintf(stderr, "    round %d: available %zu, not 3\n", round,
                    volt_sem_available_permits(b));
            CHECK(false);
            break;
        }
    }
    CHECK_STATUS(volt_sem_release(b, 3), VOLT_OK);
    CHECK(volt_sem_available_permits(b) == 6);
    CHECK_STATUS(volt_sem_unlink(name), VOLT_OK);
    volt_sem_free(b);
}

static void test_status_names(void) {
    CHECK(strcmp(volt_status_str(VOLT_MISMATCH), "VOLT_MISMATCH") == 0);
    CHECK(strcmp(volt_status_str(VOLT_NOT_HELD), "VOLT_NOT_HELD") == 0);
    CHECK(strcmp(volt_status_str(VOLT_OS_ERROR), "VOLT_OS_ERROR") == 0);
    CHECK(strcmp(volt_status_str(VOLT_DISCONNECTED), "VOLT_DISCONNECTED") == 0);
    CHECK(VOLT_OPEN_MODE(0660) == VOLT_OPEN_SHARE_GROUP);
}

int main(int argc, char **argv) {
    if (argc >= 2 && strcmp(argv[1], "child") == 0) return child_main(argc, argv);
    self_path = argv[0];
    RUN(test_status_names);
    RUN(test_open_and_attach_from_another_process);
    RUN(test_fifo_across_processes);
    RUN(test_kill9_holder_and_waiter);
    RUN(test_inspect_shows_labels_across_processes);
    RUN(test_open_with_refuses_bad_options);
    RUN(test_close_reaches_other_processes);
    RUN(test_existing_functions_on_a_shared_handle);
    RUN(test_cancel_through_another_open_of_the_name);
    RUN(test_callback_try_cancels_a_sibling_on_the_doorbell);
    RUN(test_stats_on_a_shared_handle);
    RUN(test_blocking_inside_a_callback);
    RUN(test_forked_handle);
    RUN(test_fork_while_the_doorbell_runs_a_callback);
    RUN(test_fork_inside_a_doorbell_callback);
    RUN(test_bad_input);
    RUN(test_permission_denied);
    RUN(test_foreign_owner_is_refused_unless_accepted);
    RUN(test_queue_full);
    RUN(test_set_total_and_reopen);
    RUN(test_disconnect_ends_one_handle);
    RUN(test_disconnect_in_a_forked_child);
    RUN(test_disconnect_racing_acquires_and_releases);
    return harness_summary("c-open");
}
