/* A stand-in for Windows' bcryptprimitives.dll, for running tests under Wine
 * only (never shipped). Rust's std on Windows takes its random seeds (HashMap
 * keys) from ProcessPrng, exported by bcryptprimitives.dll since Windows 10;
 * Debian's Wine 8 has no such DLL, so a test program linked against the Rust
 * library would not start. This DLL provides ProcessPrng on top of
 * RtlGenRandom (advapi32's SystemFunction036), which Wine implements. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
