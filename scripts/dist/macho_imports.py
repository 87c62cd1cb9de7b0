#!/usr/bin/env python3
"""What a Mach-O dylib imports, read from the loader's own tables (the bind
opcodes of LC_DYLD_INFO, or the imports of LC_DYLD_CHAINED_FIXUPS), checked
against what every macOS provides (macOS cannot be run here):

    macho_imports.py FILE [FLAT_PREFIX...]

Fails (exit 1) when FILE imports a symbol

  * from Security.framework or CoreFoundation.framework: the cross builds
    link against name-only stubs of those two (redis/build.rs) and rely on
    LTO to drop the dead code of the Redis TLS dependencies that names them
    (scripts/dist/toolchain.sh, MACOS_LTO): an import from them means that
    code is back; or
  * through flat "dynamic lookup" (found in whatever the process has
    loaded, or a load failure on the user's machine), unless its name starts
    with one of the FLAT_PREFIXes. The Node addon is linked with
    `-undefined dynamic_lookup` (napi-build: the Node-API functions come from
    the node binary), so no missing library ever fails its link: this is the
    check that does. The C library takes no FLAT_PREFIX.

Prints the number of symbols bound to each library."""
import struct
import sys

LC_SYMTAB, LC_DYLD_INFO, LC_DYLD_INFO_ONLY, LC_DYLD_CHAINED_FIXUPS = 0x2, 0x22, 0x80000022, 0x80000034
LOAD_DYLIB = (0xC, 0x80000018, 0x8000001F, 0x20, 0x80000023)  # load, weak, reexport, lazy, upward
FLAT, WEAK_LOOKUP, MAIN, SELF = -2, -3, -1, 0
STUBBED = ("/System/Library/Frameworks/Security.framework/", "/System/Library/Frameworks/CoreFoundation.framework/")


def uleb(data, i):
    value = shift = 0
    while True:
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, i


def bind_opcodes(data, start, size):
    """(symbol, library ordinal) of every bind of one opcode stream."""
    i, end, ordinal, name, out = start, start + size, 0, None, []
    while i < end:
        op, imm = data[i] & 0xF0, data[i] & 0x0F
        i += 1
        if op == 0x00:  # DONE (the lazy stream has one after each entry)
            continue
        if op == 0x10:
            ordinal = imm
        elif op == 0x20:
            ordinal, i = uleb(data, i)
        elif op == 0x30:
            ordinal = imm - 16 if imm else 0  # sign-extended: -1 main, -2 flat, -3 weak
        elif op == 0x40:
            j = data.index(b"\0", i)
            name, i = data[i:j].decode(), j + 1
        elif op == 0x50:
            pass  # SET_TYPE_IMM
        elif op in (0x60, 0x70, 0x80, 0xA0):  # SET_ADDEND_SLEB, SET_SEGMENT_AND_OFFSET_ULEB, ADD_ADDR_ULEB, DO_BIND_ADD_ADDR_ULEB
            _, i = uleb(data, i)
            if op == 0xA0:
                out.append((name, ordinal))
        elif op in (0x90, 0xB0):  # DO_BIND, DO_BIND_ADD_ADDR_IMM_SCALED
            out.append((name, ordinal))
        elif op == 0xC0:  # DO_BIND_ULEB_TIMES_SKIPPING_ULEB
            _, i = uleb(data, i)
            _, i = uleb(data, i)
            out.append((name, ordinal))
        elif op == 0xD0:  # THREADED: SET_BIND_ORDINAL_TABLE_SIZE_ULEB (imm 0) or APPLY (imm 1)
            if imm == 0:
                _, i = uleb(data, i)
        else:
            raise ValueError(f"unknown bind opcode {op:#x}")
    return out


def chained_imports(data, off):
    """(symbol, library ordinal) of each import of LC_DYLD_CHAINED_FIXUPS."""
    _ver, _starts, imports_off, symbols_off, count, fmt, _sfmt = struct.unpack_from("<IIIIIII", data, off)
    out = []
    for k in range(count):
        if fmt == 1:  # DYLD_CHAINED_IMPORT
            v = struct.unpack_from("<I", data, off + imports_off + 4 * k)[0]
            ordinal, name_off = v & 0xFF, v >> 9
            ordinal = ordinal - 256 if ordinal >= 0xF0 else ordinal
        elif fmt == 2:  # DYLD_CHAINED_IMPORT_ADDEND
            v = struct.unpack_from("<I", data, off + imports_off + 8 * k)[0]
            ordinal, name_off = v & 0xFF, v >> 9
            ordinal = ordinal - 256 if ordinal >= 0xF0 else ordinal
        elif fmt == 3:  # DYLD_CHAINED_IMPORT_ADDEND64
            v = struct.unpack_from("<Q", data, off + imports_off + 16 * k)[0]
            ordinal, name_off = v & 0xFFFF, v >> 32
            ordinal = ordinal - 65536 if ordinal >= 0xFFF0 else ordinal
        else:
            raise ValueError(f"unknown chained import format {fmt}")
        j = data.index(b"\0", off + symbols_off + name_off)
        out.append((data[off + symbols_off + name_off:j].decode(), ordinal))
    return out


def main(path, *flat_prefixes):
    data = open(path, "rb").read()
    magic, _cpu, _sub, _ftype, ncmds, _size, _flags, _res = struct.unpack_from("<IiiIIIII", data, 0)
    if magic != 0xFEEDFACF:
        print(f"{path}: not a 64-bit little-endian Mach-O (magic {magic:#x})")
        return 1
    off, dylibs, imports, tables = 32, [], [], 0
    for _ in range(ncmds):
        cmd, cmdsize = struct.unpack_from("<II", data, off)
        if cmd in LOAD_DYLIB:
            name_off = struct.unpack_from("<I", data, off + 8)[0]
            dylibs.append(data[off + name_off:off + cmdsize].split(b"\0", 1)[0].decode())
        elif cmd in (LC_DYLD_INFO, LC_DYLD_INFO_ONLY):
            tables += 1
            _ro, _rs, bind_off, bind_size, _wo, _ws, lazy_off, lazy_size = struct.unpack_from("<8I", data, off + 8)
            imports += bind_opcodes(data, bind_off, bind_size) + bind_opcodes(data, lazy_off, lazy_size)
        elif cmd == LC_DYLD_CHAINED_FIXUPS:
            tables += 1
            dataoff, _datasize = struct.unpack_from("<II", data, off + 8)
            imports += chained_imports(data, dataoff)
        off += cmdsize
    if not tables:
        print(f"{path}: no LC_DYLD_INFO or LC_DYLD_CHAINED_FIXUPS: cannot read its imports")
        return 1
    errors, count = [], {}
    for name, ordinal in sorted(set(imports)):
        if ordinal == FLAT:
            lib = "(dynamic lookup)"
            if not name.lstrip("_").startswith(tuple(flat_prefixes)):
                errors.append(f"{name}: dynamic lookup (no library provided it at link time)")
        elif 1 <= ordinal <= len(dylibs):
            lib = dylibs[ordinal - 1]
            if lib.startswith(STUBBED):
                errors.append(f"{name}: from {lib} (linked against a name-only stub)")
        elif ordinal in (SELF, MAIN, WEAK_LOOKUP):
            lib = {SELF: "(itself)", MAIN: "(the executable)", WEAK_LOOKUP: "(weak definition)"}[ordinal]
        else:
            lib = f"(ordinal {ordinal})"
            errors.append(f"{name}: library ordinal {ordinal}, not one of the {len(dylibs)} loaded")
        count[lib] = count.get(lib, 0) + 1
    summary = ", ".join(f"{lib.rsplit('/', 1)[-1]}: {n}" for lib, n in sorted(count.items()))
    if errors:
        shown = "\n  ".join(errors[:20]) + (f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else "")
        print(f"{path}: {len(errors)} import(s) not provided by every macOS:\n  {shown}")
        return 1
    print(f"{path}: imports {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
