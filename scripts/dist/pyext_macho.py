#!/usr/bin/env python3
"""Structural check of the Python extension of a macOS wheel (macOS cannot be
run here):

    pyext_macho.py FILE ARCH MIN_MACOS

ARCH is x86_64 or arm64. Checks the magic and CPU type, that the minimum
macOS version (LC_BUILD_VERSION or LC_VERSION_MIN_MACOSX) is at most
MIN_MACOS, that `PyInit__volt_sem` is exported, and that the only libraries
loaded are macOS's own (/usr/lib/, /System/): no libpython (an abi3 extension
takes the Python symbols from the interpreter that loads it). Unlike
macho.py (the C library's check), an extension has no install name to check
and exports nothing but its init function. Exit 1 on any mismatch."""
import struct
import sys

CPU = {"x86_64": 0x01000007, "arm64": 0x0100000C}
LC_SYMTAB, LC_VERSION_MIN_MACOSX, LC_BUILD_VERSION = 0x2, 0x24, 0x32
LOAD_DYLIB = {0xC: "load", 0x80000018: "weak", 0x8000001F: "reexport", 0x80000023: "lazy"}
N_EXT, N_TYPE, N_SECT = 0x01, 0x0E, 0x0E


def version(v):
    return f"{v >> 16}.{(v >> 8) & 0xFF}.{v & 0xFF}"


def as_tuple(v):
    return tuple(int(x) for x in (v.split(".") + ["0", "0"])[:3])


def main(path, arch, min_macos):
    data = open(path, "rb").read()
    magic, cputype, _sub, _ftype, ncmds, _size, _flags, _res = struct.unpack_from("<IiiIIIII", data, 0)
    if magic != 0xFEEDFACF:
        print(f"{path}: not a 64-bit little-endian Mach-O (magic {magic:#x})")
        return 1
    errors = []
    if cputype != CPU[arch]:
        errors.append(f"CPU type {cputype:#x}, expected {arch}")
    off, minos, dylibs, exported = 32, None, [], set()
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, off)
        if cmd in LOAD_DYLIB:
            name_off = struct.unpack_from("<I", data, off + 8)[0]
            dylibs.append(data[off + name_off:off + cmdsize].split(b"\0", 1)[0].decode())
        elif cmd == LC_BUILD_VERSION:
            minos = version(struct.unpack_from("<I", data, off + 12)[0])
        elif cmd == LC_VERSION_MIN_MACOSX:
            minos = version(struct.unpack_from("<I", data, off + 8)[0])
        elif cmd == LC_SYMTAB:
            symoff, nsyms, stroff, _strsize = struct.unpack_from("<IIII", data, off + 8)
            for i in range(nsyms):
                strx, ntype, _sect, _desc, _value = struct.unpack_from("<IBBHQ", data, symoff + 16 * i)
                if ntype & N_EXT and ntype & N_TYPE == N_SECT:
                    exported.add(data[stroff + strx:].split(b"\0", 1)[0].decode())
        off += cmdsize
    if minos is None or as_tuple(minos) > as_tuple(min_macos):
        errors.append(f"minimum macOS {minos}, expected at most {min_macos}")
    if "_PyInit__volt_sem" not in exported:
        errors.append(f"PyInit__volt_sem is not exported (exports: {sorted(exported)[:10]})")
    foreign = [d for d in dylibs if not d.startswith(("/usr/lib/", "/System/"))]
    if foreign:
        errors.append(f"loads libraries that are not part of macOS: {foreign}")
    if errors:
        print(f"{path}:\n  " + "\n  ".join(errors))
        return 1
    print(f"{path}: {arch}, minimum macOS {minos}, exports PyInit__volt_sem, loads only {', '.join(dylibs)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
