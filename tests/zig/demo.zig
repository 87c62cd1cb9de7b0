//! Demo (the Zig part of `make demo`): twelve threads share 3 permits, each
//! asking for 1 to 3 of them (its weight), through the C ABI. While the pool is
//! held they queue one at a time, so the arrival order is known; then the pool
//! opens. Each queues a caller-allocated volt_waiter whose wake callback (run on
//! the releasing thread) records the grant and sets the thread's flag. Prints
//! the arrival order beside the service order, checks FIFO and that the
//! weight-3 request was never overtaken, then runs the same arrivals against
//! the counter one writes with std.atomic (take the permits with a
//! compare-and-swap when enough are free, else sleep and retry), which lets
//! later small requests barge past the big one.
//!
//!   make demo-zig  (or: make -C tests demo-zig)
const std = @import("std");
const c = @import("volt_sem");

extern "c" fn usleep(usec: c_uint) c_int;

const permits = 3;
const big = 3;
const n = 12;
const big_index = 3;

/// Who arrives, in this order; the big request is fourth.
const arrivals = [n]struct { name: []const u8, weight: usize }{
    .{ .name = "z1", .weight = 1 },    .{ .name = "z2", .weight = 2 },  .{ .name = "z3", .weight = 1 },
    .{ .name = "BIG", .weight = big }, .{ .name = "z4", .weight = 1 },  .{ .name = "z5", .weight = 1 },
    .{ .name = "z6", .weight = 2 },    .{ .name = "z7", .weight = 1 },  .{ .name = "z8", .weight = 2 },
    .{ .name = "z9", .weight = 1 },    .{ .name = "z10", .weight = 1 }, .{ .name = "z11", .weight = 1 },
};

/// The service order, appended to by whoever got in (lock-free).
var served: [n]usize = undefined;
var n_served = std.atomic.Value(usize).init(0);
var held = std.atomic.Value(usize).init(0);
var peak = std.atomic.Value(usize).init(0);

fn servedPush(who: usize) void {
    served[n_served.fetchAdd(1, .acq_rel)] = who;
    const now = held.fetchAdd(arrivals[who].weight, .acq_rel) + arrivals[who].weight;
    _ = peak.fetchMax(now, .acq_rel);
}

fn check(what: []const u8, status: c.volt_status, want: c_int) void {
    if (status != want) {
        std.debug.print("{s}: {s}\n", .{ what, std.mem.span(c.volt_status_str(status)) });
        std.process.exit(1);
    }
}

/// How many requests that arrived after `who` were served before it.
fn overtaken(who: usize) usize {
    var count: usize = 0;
    for (served[0..n_served.load(.acquire)]) |s| {
        if (s == who) break;
        if (s > who) count += 1;
    }
    return count;
}

fn printOrder(label: []const u8, order: []const usize) void {
    std.debug.print("{s}", .{label});
    for (order) |i| std.debug.print(" {s}(w{d})", .{ arrivals[i].name, arrivals[i].weight });
    std.debug.print("\n", .{});
}

// ------------------------------------------------------------------ volt-sem

var sem: ?*const c.volt_sem = null;
/// One release at a time: the wake callbacks a release causes run on the
/// releasing thread before it returns, oldest grant first, so the order they
/// record is the order in which the semaphore granted.
var releasing = std.atomic.Value(bool).init(false);

const Request = struct {
    who: usize,
    queued: std.atomic.Value(bool) = std.atomic.Value(bool).init(false),
    woken: std.atomic.Value(bool) = std.atomic.Value(bool).init(false),
};

fn onWake(ctx: ?*anyopaque) callconv(.c) void {
    const r: *Request = @ptrCast(@alignCast(ctx.?));
    servedPush(r.who);
    r.woken.store(true, .release);
}

fn releaseOne() void {
    while (releasing.cmpxchgWeak(false, true, .acquire, .monotonic) != null) _ = usleep(50);
    defer releasing.store(false, .release);
    check("volt_sem_release", c.volt_sem_release(sem, 1), c.VOLT_OK);
}

fn voltWorker(r: *Request) void {
    const weight = arrivals[r.who].weight;
    var waiter: c.volt_waiter = undefined;
    check("volt_waiter_init", c.volt_waiter_init(&waiter), c.VOLT_OK);
    // The pool is held: it must queue.
    check("volt_sem_acquire", c.volt_sem_acquire(sem, &waiter, weight, onWake, r), c.VOLT_PENDING);
    r.queued.store(true, .release); // the next one may arrive
    while (!r.woken.load(.acquire)) _ = usleep(200);
    // Collect the grant; after this, `waiter` may go out of scope.
    check("volt_sem_cancel", c.volt_sem_cancel(sem, &waiter, null), c.VOLT_OK);
    _ = usleep(2_000); // work
    for (0..weight) |_| { // give them back one by one
        _ = held.fetchSub(1, .acq_rel);
        releaseOne();
    }
}

fn runVoltSem() !bool {
    check("volt_sem_new", c.volt_sem_new(permits, &sem), c.VOLT_OK);
    defer c.volt_sem_free(sem);
    check("volt_sem_try_acquire", c.volt_sem_try_acquire(sem, permits), c.VOLT_OK); // hold the pool
    var requests: [n]Request = undefined;
    var threads: [n]std.Thread = undefined;
    for (&requests, &threads, 0..) |*r, *t, i| {
        r.* = .{ .who = i };
        t.* = try std.Thread.spawn(.{}, voltWorker, .{r});
        while (!r.queued.load(.acquire)) _ = usleep(100);
    }
    for (0..permits) |_| releaseOne(); // open the pool
    for (threads) |t| t.join();

    var arrival: [n]usize = undefined;
    for (&arrival, 0..) |*a, i| a.* = i;
    const got = served[0..n_served.load(.acquire)];
    printOrder("arrival order:", &arrival);
    printOrder("service order:", got);
    const fifo = std.mem.eql(usize, got, &arrival);
    const passed_big = overtaken(big_index);
    const back = c.volt_sem_available_permits(sem);
    std.debug.print("FIFO: {s}\n", .{if (fifo) "yes" else "NO"});
    std.debug.print("weight-{d} request overtaken by later arrivals: {d} (never overtaken: {s})\n", .{
        big, passed_big, if (passed_big == 0) "yes" else "NO",
    });
    std.debug.print("peak permits held: {d} of {d}; permits back in the pool: {d}\n", .{
        peak.load(.acquire), permits, back,
    });
    return fifo and passed_big == 0 and peak.load(.acquire) <= permits and back == permits;
}

// ------------------------------------------------- the contrast: a CAS counter

var available = std.atomic.Value(usize).init(0); // the pool is held while they arrive
var waiting = std.atomic.Value(usize).init(0);

fn counterAcquire(weight: usize) void {
    _ = waiting.fetchAdd(1, .acq_rel);
    while (true) {
        const have = available.load(.acquire);
        if (have >= weight and available.cmpxchgWeak(have, have - weight, .acq_rel, .monotonic) == null) return;
        _ = usleep(100);
    }
}

fn counterWorker(who: usize) void {
    const weight = arrivals[who].weight;
    counterAcquire(weight);
    servedPush(who);
    _ = usleep(2_000);
    for (0..weight) |_| {
        _ = held.fetchSub(1, .acq_rel);
        _ = available.fetchAdd(1, .acq_rel);
        _ = usleep(3_000);
    }
}

fn runCounter() !usize {
    n_served.store(0, .release);
    held.store(0, .release);
    var threads: [n]std.Thread = undefined;
    for (&threads, 0..) |*t, i| {
        t.* = try std.Thread.spawn(.{}, counterWorker, .{i});
        while (waiting.load(.acquire) < i + 1) _ = usleep(100);
    }
    for (0..permits) |_| {
        _ = available.fetchAdd(1, .acq_rel);
        _ = usleep(3_000);
    }
    for (threads) |t| t.join();
    return overtaken(big_index);
}

pub fn main() !void {
    std.debug.print("volt-sem {s} from Zig: {d} threads share {d} permits, weights 1-{d}\n", .{
        std.mem.span(c.volt_sem_version()), n, permits, big,
    });
    const ok = try runVoltSem();
    const barged = try runCounter();
    std.debug.print(
        "contrast: a compare-and-swap counter on std.atomic, same arrivals: the weight-{d} request was overtaken by {d} of the {d} later arrivals\n",
        .{ big, barged, n - big_index - 1 },
    );
    if (!ok) std.process.exit(1);
}
