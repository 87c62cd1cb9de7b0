#!/usr/bin/env python3
"""Structural check of a Mach-O dylib (macOS cannot be run here):

    macho.py FILE ARCH INSTALL_NAME HEADER MIN_MACOS

ARCH is x86_64 or arm64. Checks the magic and CPU type, the install name
(LC_ID_DYLIB; `-`: not checked), that the minimum macOS version (LC_BUILD_VERSION or
LC_VERSION_MIN_MACOSX) is MIN_MACOS, and that every function declared in HEADER is an
exported symbol (HEADER not ending in .h: a comma-separated list of the symbols, as
for the Node addon). Exit 1 on any mismatch."""
import re
import struct
import sys

CPU = {"x86_64": 0x01000007, "arm64": 0x0100000C}
LC_SYMTAB, LC_ID_DYLIB, LC_VERSION_MIN_MACOSX, LC_BUILD_VERSION = 0x2, 0xD, 0x24, 0x32
N_EXT, N_TYPE, N_SECT = 0x01, 0x0E, 0x0E


def version(v):
    return f"{v >> 16}.{(v >> 8) & 0xFF}.{v & 0xFF}"


def main(path, arch, install_name, header, min_macos):
    data = open(path, "rb").read()
    magic, cputype, _sub, _ftype, ncmds, _size, _flags, _res = struct.unpack_from("<IiiIIIII", data, 0)
    errors = []
    if magic != 0xFEEDFACF:
        errors.append(f"not a 64-bit little-endian Mach-O (magic {magic:#x})")
        print("\n".join(errors))
        return 1
    if cputype != CPU[arch]:
        errors.append(f"CPU type {cputype:#x}, expected {arch}")
    off, ident, minos, symbols = 32, None, None, set()
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, off)
        if cmd == LC_ID_DYLIB:
            name_off = struct.unpack_from("<I", data, off + 8)[0]
            ident = data[off + name_off:off + cmdsize].split(b"\0", 1)[0].decode()
        elif cmd == LC_BUILD_VERSION:
            minos = version(struct.unpack_from("<I", data, off + 12)[0])
        elif cmd == LC_VERSION_MIN_MACOSX:
            minos = version(struct.unpack_from("<I", data, off + 8)[0])
        elif cmd == LC_SYMTAB:
            symoff, nsyms, stroff, _strsize = struct.unpack_from("<IIII", data, off + 8)
            for i in range(nsyms):
                strx, ntype, _sect, _desc, _value = struct.unpack_from("<IBBHQ", data, symoff + 16 * i)
                if ntype & N_EXT and ntype & N_TYPE == N_SECT:
                    name = data[stroff + strx:].split(b"\0", 1)[0].decode()
                    symbols.add(name[1:] if name.startswith("_") else name)
        off += cmdsize
    if minos is None or tuple(map(int, minos.split("."))) > tuple(map(int, (min_macos + ".0").split(".")[:3])):
        errors.append(f"minimum macOS {minos}, expected {min_macos}")
    if install_name != "-" and ident != install_name:
        errors.append(f"install name {ident!r}, expected {install_name!r}")
    if header.endswith(".h"):
        wanted = set(re.findall(r"\b(volt_[a-z_]+)\s*\(", open(header).read()))
    else:
        wanted = set(header.split(","))
    missing = sorted(wanted - symbols)
    if missing:
        errors.append(f"not exported: {', '.join(missing)}")
    print(f"{path}: {arch}, install name {ident}, minimum macOS {minos}, "
          f"{len(wanted)} {'header functions' if header.endswith('.h') else 'symbols'} exported" if not errors else "\n".join(errors))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
