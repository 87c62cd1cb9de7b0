/* Compiled as C99, C11 and C++17 with -Wall -Wextra -Wpedantic -Werror by
 * `make header-compat`: the header alone must be clean in all three, also when
 * it is included twice (as happens through other headers),
 * which its include guard must make harmless: C99 rejects a repeated typedef.
 *
 * The same file built with -fpack-struct=4 (a volt_waiter aligned to 4, not 8)
 * must fail to compile in every dialect: the header's layout checks work. */
#include "volt_sem.h"
#include "volt_sem.h"

int volt_header_compat_probe(void);
int volt_header_compat_probe(void) {
    volt_waiter w;
    volt_status s = VOLT_OK;
    (void)w;
    return (int)s + (int)sizeof(volt_waiter);
}
