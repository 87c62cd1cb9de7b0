/* Compiled as C99, C11 and C++17 with -Wall -Wextra -Wpedantic -Werror by
 * `make header-compat`: the header alone must be clean in all three. */
#include "volt_sem.h"

int volt_header_compat_probe(void);
int volt_header_compat_probe(void) {
    volt_waiter w;
    volt_status s = VOLT_OK;
    (void)w;
    return (int)s + (int)sizeof(volt_waiter);
}
