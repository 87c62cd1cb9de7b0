//! Zig uses the C ABI through the volt-sem Zig package, whose build.zig
//! translates include/volt_sem.h at build time (Zig 0.17 has no @cImport);
//! `make -C tests zig` packs the package for this machine and runs these
//! tests with `zig build test` (scripts/dist/test-zig.sh).
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

/// The label (or host) a C array holds, up to its NUL.
fn text(a: []const u8) []const u8 {
    return std.mem.sliceTo(a, 0);
}

test "inspect and stats of a local semaphore, through the translated structs" {
    const sem = try newSem(3);
    defer c.volt_sem_free(sem);
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_try_acquire(sem, 2));

    // Arrays too small (none): the full counts, VOLT_TRUNCATED.
    var seen = std.mem.zeroes(c.volt_inspection);
    try std.testing.expectEqual(c.VOLT_TRUNCATED, c.volt_sem_inspect(sem, &seen, null, 0, null, 0));
    try std.testing.expectEqual(@as(usize, 1), seen.holders);

    var holders: [4]c.volt_holder = undefined;
    var waiters: [4]c.volt_queued_waiter = undefined;
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_inspect(sem, &seen, &holders, holders.len, &waiters, waiters.len));
    try std.testing.expectEqual(@as(usize, 3), seen.total);
    try std.testing.expectEqual(@as(usize, 1), seen.available);
    try std.testing.expect(!seen.closed);
    try std.testing.expectEqual(@as(usize, 0), seen.waiters);
    const h = holders[0];
    try std.testing.expectEqual(@as(usize, 2), h.permits);
    // The default label, "<hostname>:<pid>", NUL-terminated in its array.
    try std.testing.expect(std.mem.indexOfScalar(u8, text(&h.label), ':') != null);
    try std.testing.expect(text(&h.host).len > 0);
    try std.testing.expect(h.pid != 0);
    // Not measured on a local semaphore: -1 and token 0.
    try std.testing.expectEqual(@as(i64, -1), h.held_for_ns);
    try std.testing.expectEqual(@as(i64, -1), h.lease_remaining_ns);
    try std.testing.expectEqual(@as(u64, 0), h.token);
    try std.testing.expectEqual(seen.total, seen.available + h.permits);

    var st = std.mem.zeroes(c.volt_stats);
    st.struct_size = @sizeOf(c.volt_stats);
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_stats(sem, &st));
    try std.testing.expectEqual(@as(usize, @sizeOf(c.volt_stats)), st.struct_size);
    try std.testing.expect(st.recording);
    try std.testing.expectEqual(@as(u64, 1), st.grants);
    try std.testing.expectEqual(@as(u64, 2), st.permits_granted);
    try std.testing.expectEqual(@as(usize, 1), st.available);
    try std.testing.expectEqual(@as(usize, 2), st.held);
    try std.testing.expectEqual(@as(u64, 1), st.wait_count);
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_release(sem, 2));
}

/// Whether the message of this thread's last volt-sem call contains `part`.
fn lastErrorHas(part: []const u8) bool {
    var buf: [256]u8 = undefined;
    const n = c.volt_last_error_message(&buf, buf.len);
    return std.mem.indexOf(u8, buf[0..@min(n, buf.len - 1)], part) != null;
}

test "a named semaphore's holder is listed with its label" {
    if (@import("builtin").os.tag != .linux) return error.SkipZigTest;
    const name = "zig-test-inspect";
    _ = c.volt_sem_unlink(name);
    defer _ = c.volt_sem_unlink(name);
    var opts = std.mem.zeroes(c.volt_open_options);
    opts.struct_size = @sizeOf(c.volt_open_options);
    opts.label = "zig-holder";
    var sem: ?*const c.volt_sem = null;
    const opened = c.volt_sem_open_with(name, 4, &opts, &sem);
    // qemu-user implements no get_robust_list, which musl's
    // pthread_mutexattr_setrobust asks for (glibc does not): there, as on a
    // kernel without robust futexes, a named semaphore cannot be made.
    if (opened == c.VOLT_OS_ERROR and lastErrorHas("(os error 38)")) return error.SkipZigTest;
    try std.testing.expectEqual(c.VOLT_OK, opened);
    defer c.volt_sem_free(sem.?);
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_try_acquire(sem.?, 3));

    var seen = std.mem.zeroes(c.volt_inspection);
    var holders: [2]c.volt_holder = undefined;
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_inspect(sem.?, &seen, &holders, holders.len, null, 0));
    try std.testing.expectEqual(@as(usize, 4), seen.total);
    try std.testing.expectEqual(@as(usize, 1), seen.holders);
    try std.testing.expectEqualStrings("zig-holder", text(&holders[0].label));
    try std.testing.expectEqual(@as(usize, 3), holders[0].permits);
    // A named semaphore times its holders.
    try std.testing.expect(holders[0].held_for_ns >= 0);
    try std.testing.expectEqual(seen.total, seen.available + holders[0].permits);
    try std.testing.expectEqual(c.VOLT_OK, c.volt_sem_release(sem.?, 3));
}
