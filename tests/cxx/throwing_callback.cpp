// A wake callback that throws a C++ exception, with a handler around the
// release that runs it. The header promises that the exception does not unwind
// through the library: the process aborts (SIGABRT) inside the release. Run by
// `make cxx-unwind`, which expects exactly that death; reaching the handler, or
// returning normally, is a failure (exit 1 / 2).
#include <cstdio>
#include <stdexcept>

#include "volt_sem.h"

static void throwing_wake(void *) { throw std::runtime_error("thrown out of a wake callback"); }

int main() {
    const volt_sem *sem = nullptr;
    if (volt_sem_new(0, &sem) != VOLT_OK) return 3;
    volt_waiter w;
    if (volt_waiter_init(&w) != VOLT_OK) return 3;
    if (volt_sem_acquire(sem, &w, 1, throwing_wake, nullptr) != VOLT_PENDING) return 3;
    try {
        volt_sem_release(sem, 1);  // runs throwing_wake on this thread
    } catch (const std::exception &e) {
        std::printf("the exception crossed the library: %s\n", e.what());
        return 1;
    }
    std::printf("the release returned normally\n");
    return 2;
}
