//! Demo (Zig): six workers share 3 permits, each job weighing 1 to 3 permits.
//! Each worker queues a caller-allocated volt_waiter whose wake callback (run on
//! the releasing thread) sets a flag; the worker waits for it, collects the grant
//! with volt_sem_cancel, works, and releases. The output shows the limit holds.
//!
//!   make -C tests demo-zig
const std = @import("std");
const c = @import("volt_sem.zig");

extern "c" fn usleep(usec: c_uint) c_int;

const workers = 6;
const permits = 3;
const jobs = 3;

var in_use = std.atomic.Value(i32).init(0);
var peak = std.atomic.Value(i32).init(0);

const Flag = struct {
    woken: std.atomic.Value(u32) = std.atomic.Value(u32).init(0),
};

fn onWake(ctx: ?*anyopaque) callconv(.c) void {
    const flag: *Flag = @ptrCast(@alignCast(ctx.?));
    flag.woken.store(1, .release);
}

fn check(what: []const u8, status: c.volt_status, want: c_int) void {
    if (status != want) {
        std.debug.print("{s}: {s}\n", .{ what, std.mem.span(c.volt_status_str(status)) });
        std.process.exit(1);
    }
}

fn worker(sem: *const c.volt_sem, id: usize) void {
    const weight: usize = id % permits + 1;
    var waiter: c.volt_waiter = undefined;
    check("volt_waiter_init", c.volt_waiter_init(&waiter), c.VOLT_OK);
    for (0..jobs) |job| {
        var flag = Flag{};
        const status = c.volt_sem_acquire(sem, &waiter, weight, onWake, &flag);
        if (status == c.VOLT_PENDING) {
            while (flag.woken.load(.acquire) == 0) _ = usleep(200);
            // Collect the grant; after this, `waiter` and `flag` may be reused.
            check("volt_sem_cancel", c.volt_sem_cancel(sem, &waiter, null), c.VOLT_OK);
        } else check("volt_sem_acquire", status, c.VOLT_OK);

        const w: i32 = @intCast(weight);
        const now = in_use.fetchAdd(w, .acq_rel) + w;
        _ = peak.fetchMax(now, .acq_rel);
        std.debug.print("zig worker {d} (weight {d}) job {d}: {d}/{d} permits in use{s}\n", .{
            id, weight, job + 1, now, permits, if (now > permits) " <-- LIMIT BROKEN" else "",
        });
        _ = usleep(15_000);
        _ = in_use.fetchSub(w, .acq_rel);
        check("volt_sem_release", c.volt_sem_release(sem, weight), c.VOLT_OK);
    }
}

pub fn main() !void {
    var sem: ?*const c.volt_sem = null;
    check("volt_sem_new", c.volt_sem_new(permits, &sem), c.VOLT_OK);
    defer c.volt_sem_free(sem);
    std.debug.print("volt-sem {s} from Zig: {d} workers share {d} permits (weights 1-3)\n", .{
        std.mem.span(c.volt_sem_version()), workers, permits,
    });
    var threads: [workers]std.Thread = undefined;
    for (&threads, 0..) |*t, i| t.* = try std.Thread.spawn(.{}, worker, .{ sem.?, i });
    for (threads) |t| t.join();
    const back = c.volt_sem_available_permits(sem);
    const ok = peak.load(.acquire) <= permits and back == permits;
    std.debug.print("peak: {d} of {d} permits in use; {d} of {d} back at the end: {s}\n", .{
        peak.load(.acquire), permits, back, permits, if (ok) "the limit held" else "LIMIT BROKEN",
    });
    if (!ok) std.process.exit(1);
}
