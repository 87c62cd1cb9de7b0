//! A Zig project that uses volt-sem the way a user's does: build.zig.zon
//! depends on the volt-sem Zig package (scripts/dist/test-zig.sh adds it with
//! `zig fetch --save`, the README's line), and this file imports its module.
//!
//!   zig build test [-Dtarget=...]   the tests in test_volt_sem.zig
//!   zig build demo                  builds and runs demo.zig (`make demo-zig`
//!                                   builds it with `zig build install`)
const std = @import("std");

pub fn build(b: *std.Build) void {
    const target = b.standardTargetOptions(.{});
    const optimize = b.standardOptimizeOption(.{});
    const volt_sem = b.dependency("volt_sem", .{ .target = target, .optimize = optimize }).module("volt_sem");

    const tests = b.addTest(.{ .root_module = b.createModule(.{
        .root_source_file = b.path("test_volt_sem.zig"),
        .target = target,
        .optimize = optimize,
        .imports = &.{.{ .name = "volt_sem", .module = volt_sem }},
    }) });
    // Installed too, so a cross build's test program can be run by hand.
    b.installArtifact(tests);
    b.step("test", "Run the volt-sem tests").dependOn(&b.addRunArtifact(tests).step);

    const demo = b.addExecutable(.{ .name = "workers-zig", .root_module = b.createModule(.{
        .root_source_file = b.path("demo.zig"),
        .target = target,
        .optimize = optimize,
        .imports = &.{.{ .name = "volt_sem", .module = volt_sem }},
    }) });
    b.installArtifact(demo);
    b.step("demo", "Run the demo").dependOn(&b.addRunArtifact(demo).step);
}
