//! The volt-sem Zig package: the C API as a Zig module, linked to the prebuilt
//! static library for the target being built.
//!
//! A project depends on it in its build.zig.zon (`zig fetch --save URL` of the
//! release tarball that `make dist-zig` packs) and imports the module:
//!
//!     const volt = b.dependency("volt_sem", .{ .target = target, .optimize = optimize });
//!     exe.root_module.addImport("volt_sem", volt.module("volt_sem"));
//!
//! The module's source is include/volt_sem.h translated by `b.addTranslateC`
//! at build time (Zig 0.17 has no @cImport), so the bindings always match the
//! header they ship with. Its link objects are lib/<target>/libvolt_sem.a, the
//! library `make dist-c` built for that target (one folder per supported
//! target, named like the Zig triple), plus libc: the Rust runtime inside the
//! archive needs the C library and an unwinder, both of which Zig provides for
//! every target here, cross builds included. No Rust toolchain is needed.
//!
//! Building for a target the package has no library for fails with an error
//! that names the target and lists the supported ones, at the first step that
//! compiles against the module (a project that only configures still builds).
//!
//! This file lives in the repository's zig/ folder, not at its root: the
//! package is the release tarball (`make dist-zig` assembles zig/, the header
//! and the libraries), because the libraries are build outputs that a
//! checkout does not contain.
const std = @import("std");

/// A target this package carries a static library for.
const Prebuilt = struct {
    arch: std.Target.Cpu.Arch,
    os: std.Target.Os.Tag,
    /// null: any ABI (macOS has one).
    abi: ?std.Target.Abi,
    /// The folder under lib/, also the `-Dtarget` spelling that selects it.
    dir: []const u8,
};

/// Every target `make dist-zig` packs (scripts/dist/zig.sh: from which C
/// archive each comes). Windows is the GNU ABI, Zig's default there: the
/// library is built by Rust's x86_64-pc-windows-gnu target.
const prebuilt = [_]Prebuilt{
    .{ .arch = .x86_64, .os = .linux, .abi = .gnu, .dir = "x86_64-linux-gnu" },
    .{ .arch = .aarch64, .os = .linux, .abi = .gnu, .dir = "aarch64-linux-gnu" },
    .{ .arch = .x86_64, .os = .linux, .abi = .musl, .dir = "x86_64-linux-musl" },
    .{ .arch = .aarch64, .os = .linux, .abi = .musl, .dir = "aarch64-linux-musl" },
    .{ .arch = .x86_64, .os = .macos, .abi = null, .dir = "x86_64-macos" },
    .{ .arch = .aarch64, .os = .macos, .abi = null, .dir = "aarch64-macos" },
    .{ .arch = .x86_64, .os = .windows, .abi = .gnu, .dir = "x86_64-windows-gnu" },
};

fn libFolder(t: std.Target) ?[]const u8 {
    for (prebuilt) |p| {
        if (p.arch == t.cpu.arch and p.os == t.os.tag and (p.abi == null or p.abi.? == t.abi)) return p.dir;
    }
    return null;
}

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});

    const translate = b.addTranslateC(.{
        .root_source_file = b.path("include/volt_sem.h"),
        .target = target,
        .optimize = optimize,
        .link_libc = true,
    });
    const module = translate.addModule("volt_sem");

    const t = target.result;
    const folder = libFolder(t);
    const lib = if (folder) |f| b.fmt("lib/{s}/libvolt_sem.a", .{f}) else null;
    // A supported target whose library this copy lacks (a package assembled
    // for fewer targets, as `make test` does for this machine only) gets the
    // same error as an unsupported one, with the list of what it does carry.
    const present = if (lib) |l| if (b.root.access(b.graph.io, l, .{})) true else |_| false else false;
    if (!present) {
        var list: std.ArrayList(u8) = .empty;
        for (prebuilt) |p| {
            const have = b.root.access(b.graph.io, b.fmt("lib/{s}/libvolt_sem.a", .{p.dir}), .{});
            if (have) |_| list.appendSlice(b.allocator, b.fmt(" {s}", .{p.dir})) catch @panic("OOM") else |_| {}
        }
        const fail = b.addFail(b.fmt(
            "volt-sem has no prebuilt library for {s}-{s}-{s}; this package supports:{s}",
            .{ @tagName(t.cpu.arch), @tagName(t.os.tag), @tagName(t.abi), list.items },
        ));
        translate.step.dependOn(&fail.step);
        return;
    }
    module.addObjectFile(b.path(lib.?));
    // What rustc reports the library needs (`--print native-static-libs`),
    // as Zig provides it: libc, libm, pthread, dl come with link_libc; Rust's
    // panic machinery needs an unwinder (libgcc_s on glibc, libunwind on musl,
    // libgcc_eh on MinGW),
    // for which Zig builds LLVM's libunwind; macOS has its own in libSystem.
    switch (t.os.tag) {
        .linux => module.linkSystemLibrary("unwind", .{}),
        .windows => for ([_][]const u8{ "unwind", "kernel32", "ntdll", "userenv", "ws2_32", "dbghelp" }) |name|
            module.linkSystemLibrary(name, .{}),
        else => {},
    }
    module.link_libc = true;
}
