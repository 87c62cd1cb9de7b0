//! Zig uses the C ABI through bindings generated from include/volt_sem.h with
//! `zig translate-c` (Zig 0.17 has no @cImport); `make -C tests zig` regenerates
//! volt_sem.zig and runs `zig test` against the static library.
const std = @import("std");
const c = @import("volt_sem");

fn newSem(permits: usize) !*const c.volt_sem {
    var sem: ?*const c.volt_sem = null;
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_new(permits, &sem));
    return sem.?;
}

/// The wake context: set by the callback on the releasing thread.
const Flag = struct {
    woken: std.atomic.Value(u32) = std.atomic.Value(u32).init(0),
};

fn onWake(ctx: ?*anyopaque) callconv(.c) void {
    const flag: *Flag = @ptrCast(@alignCast(ctx.?));
    _ = flag.woken.fetchAdd(1, .release);
}

fn releaseFromThread(sem: *const c.volt_sem, n: usize) void {
    std.debug.assert(c.volt_sem_release(sem, n) == c.VOLT_OK);
}

test "acquire, woken from another thread, collect with cancel, release" {
    const sem = try newSem(0);
    defer c.volt_sem_free(sem);
    var waiter: c.volt_waiter = undefined;
    try std.testing.expectEqual(c.VOLT_OK, c.volt_waiter_init(&waiter));
    var flag = Flag{};

    try std.testing.expectEqual(c.VOLT_PENDING, c.volt_sem_acquire(sem, &waiter, 2, onWake, &flag));
    try std.testing.expectEqual(c.VOLT_PENDING, c.volt_waiter_status(&waiter));

    const thread = try std.Thread.spawn(.{}, releaseFromThread, .{ sem, 2 });
    while (flag.woken.load(.acquire) == 0) std.Thread.yield() catch {};
    thread.join();

    try std.testing.expectEqual(@as(u32, 1), flag.woken.load(.acquire));
    try std.testing.expectEqual(c.VOLT_OK, c.volt_waiter_status(&waiter));
    var returned: usize = 99;
    // The grant had arrived: cancel collects it and the permits are ours.
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_cancel(sem, &waiter, &returned));
    try std.testing.expectEqual(@as(usize, 0), returned);
    try std.testing.expectEqual(@as(usize, 0), c.volt_sem_available_permits(sem));
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_release(sem, 2));
    try std.testing.expectEqual(@as(usize, 2), c.volt_sem_available_permits(sem));
}

test "cancel hands back a partial grant and the callback never runs" {
    const sem = try newSem(0);
    defer c.volt_sem_free(sem);
    var waiter: c.volt_waiter = undefined;
    try std.testing.expectEqual(c.VOLT_OK, c.volt_waiter_init(&waiter));
    var flag = Flag{};

    try std.testing.expectEqual(c.VOLT_PENDING, c.volt_sem_acquire(sem, &waiter, 3, onWake, &flag));
    const thread = try std.Thread.spawn(.{}, releaseFromThread, .{ sem, 2 });
    thread.join();
    try std.testing.expectEqual(c.VOLT_PENDING, c.volt_waiter_status(&waiter));

    var returned: usize = 0;
    try std.testing.expectEqual(c.VOLT_CANCELLED, c.volt_sem_cancel(sem, &waiter, &returned));
    try std.testing.expectEqual(@as(usize, 2), returned);
    try std.testing.expectEqual(@as(u32, 0), flag.woken.load(.acquire));
    try std.testing.expectEqual(@as(usize, 2), c.volt_sem_available_permits(sem));
    // Idle again: reusable at once.
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_acquire(sem, &waiter, 2, onWake, &flag));
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_release(sem, 2));
}

test "bad input is reported, never a crash" {
    const sem = try newSem(1);
    defer c.volt_sem_free(sem);
    var waiter: c.volt_waiter = std.mem.zeroes(c.volt_waiter);
    try std.testing.expectEqual(c.VOLT_INVALID_ARGUMENT, c.volt_sem_try_acquire(null, 1));
    try std.testing.expectEqual(c.VOLT_INVALID_ARGUMENT, c.volt_sem_try_acquire(sem, 0));
    try std.testing.expectEqual(c.VOLT_INVALID_ARGUMENT, c.volt_sem_acquire(sem, &waiter, 1, onWake, null));
    try std.testing.expectEqual(c.VOLT_INVALID_ARGUMENT, c.volt_sem_release(sem, c.volt_max_permits() + 1));
    try std.testing.expectEqual(@as(usize, c.VOLT_WAITER_SIZE), c.volt_waiter_size());
    try std.testing.expectEqual(@as(usize, @sizeOf(c.volt_waiter)), c.volt_waiter_size());
    try std.testing.expectEqual(@as(usize, @alignOf(c.volt_waiter)), c.volt_waiter_align());
    try std.testing.expect(std.mem.span(c.volt_sem_version()).len > 0);
}
