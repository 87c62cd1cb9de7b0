// Type-checked by test/types.test.js (tsc --noEmit): the CommonJS entry.
import volt = require('volt-sem');
import {
  Semaphore,
  Mutex,
  RwLock,
  MAX_PERMITS,
  type Releaser,
  type SharedHandle,
  type OpenOptions,
  type NamedError,
  RedisSemaphore,
  type ConnectOptions,
  type RedisError,
  type RedisCensus,
  type Inspection,
  type Holder,
  type QueuedWaiter,
  type Stats,
  type WaitStats,
  type WaitBucket,
  disconnectOnSignals,
} from 'volt-sem';

async function main(): Promise<void> {
  const s = new Semaphore(MAX_PERMITS > 4 ? 4 : 1);
  await s.acquire(2, { signal: AbortSignal.timeout(1000) });
  await s.acquire(1, { timeout: 1000 });
  // @ts-expect-error: an option name an acquire does not take
  await s.acquire(1, { timout: 1000 });
  s.release(2);
  const r: Releaser = await s.acquirePermit(2);
  const n: number = r.permits;
  r();
  {
    using p = await s.acquirePermit();
    void p;
  }
  const locked: boolean = s.isLocked();
  await s.waitForUnlock(1);
  s.addPermits(1);
  s.removePermits(1);
  const pending: number = s.pendingCount + n + s.pendingRemoval + s.heldPermits;
  const cancelled: number = s.cancel(new Error('x'));
  const shared: SharedHandle = s.unref().ref().share();
  const again: Semaphore = Semaphore.attach(shared);
  const v: number = await again.runExclusive(() => 1, 1);
  const m = new Mutex();
  const mr = await m.acquire();
  mr[Symbol.dispose]();
  await m.waitForUnlock();
  const l = new RwLock();
  (await l.acquireRead())();
  void [locked, pending, cancelled, v, m.cancel(), l.pendingCount, volt.Semaphore === Semaphore];
  const options: OpenOptions = { createOnly: false, attachOnly: false, mode: 0o660, acceptForeignOwner: false, label: 'gpu-worker-1' };
  const named: Semaphore = Semaphore.open('usage-cts', 2, options);
  const grown: Semaphore = Semaphore.open('usage-cts', 3, { attachOnly: true, resize: true });
  const changed: void = await grown.setTotal(4);
  const reopened: void = await grown.reopen();
  void [changed, reopened];
  // @ts-expect-error: resize is a boolean
  Semaphore.open('x', 2, { resize: 1 });
  // @ts-expect-error: setTotal takes a count
  void grown.setTotal('4');
  const about: [string | null, number | null] = [named.name, named.totalPermits];
  void about;
  await named.runExclusive(async () => named.availablePermits, 2, { signal: AbortSignal.timeout(100) });
  try {
    Semaphore.unlink('usage-cts');
  } catch (e) {
    const err = e as NamedError;
    const why: string = err.code === 'ERR_VOLT_NOT_FOUND' ? 'gone' : err.message;
    void [why, err.existing];
  }
  // @ts-expect-error: the name is a string
  Semaphore.open(1, 2);
  // @ts-expect-error: no such option
  Semaphore.open('x', 2, { create: true });
  // @ts-expect-error: a label is a string
  Semaphore.open('x', 2, { label: 7 });
  const copts: ConnectOptions = { lease: 1500, prefix: 'app', connectTimeout: 1000, commandTimeout: 500, cluster: false, label: 'api-7' };
  const remote: Semaphore = await Semaphore.connect('redis://127.0.0.1:6379', 'usage', 4, copts);
  const old: RedisSemaphore = remote; // the deprecated name of the same class
  const nothing: void = await remote.acquire(2, { signal: remote.leaseSignal, timeout: 1000 });
  const maybe: Releaser | null = await remote.tryAcquirePermit(1);
  const census: RedisCensus = await remote.census();
  const debt: number = census.debt;
  await remote.setTotal(5);
  await remote.reopen();
  const resized: Semaphore = await Semaphore.connect('redis://127.0.0.1:6379', 'usage', 5, { resize: true });
  const joined: Semaphore = await Semaphore.connect('redis://127.0.0.1:6379', 'usage', 5, { attachOnly: true });
  // @ts-expect-error: attachOnly is a boolean
  Semaphore.connect('redis://127.0.0.1:6379', 'usage', 5, { attachOnly: 1 });
  void [debt, resized, joined];
  const seen: Inspection = await remote.inspect();
  const h: Holder | undefined = seen.holders[0];
  const w: QueuedWaiter | undefined = seen.waiters[0];
  const held: number | null = h?.heldFor ?? null;
  void [h?.label, h?.leaseRemaining, h?.token, w?.position, w?.waitingFor, w?.granted, held, seen.total];
  const st: Stats = remote.stats(); // synchronous
  const wait: WaitStats = st.wait;
  const last: WaitBucket | undefined = wait.buckets[wait.buckets.length - 1];
  const p90: number = wait.quantile(0.9);
  const recording: boolean = st.recording;
  void [st.grants, st.permitsGranted, st.timeouts, st.cancels, st.leaseLosses, st.reclaimsSeen];
  void [st.available, st.held, st.queued, wait.count, wait.sum, wait.max, wait.p50, wait.p99, last?.le, last?.count, p90, recording];
  // @ts-expect-error frozen: the fields are readonly
  st.grants = 1;
  // @ts-expect-error stats() is not a promise
  await remote.stats().then;
  {
    using p = await remote.acquirePermit(1);
    const t: number | null = p.token;
    void [t, p.signal?.aborted, p.permits];
  }
  try {
    remote.release(2);
  } catch (e) {
    const err = e as RedisError;
    const lost: boolean = err.code === 'ERR_VOLT_LEASE_EXPIRED';
    void [lost, err.held];
  }
  await remote.runExclusive(async (t: number | null) => (t ?? 0) + 1, 1);
  const lostNow: boolean = remote.isLeaseLost();
  const why: Promise<RedisError> = remote.leaseLost();
  void [old, nothing, maybe?.token, census.lastToken, remote.totalPermits, remote.heldPermits, remote.closed, lostNow, why];
  await Semaphore.deleteRedis('redis://127.0.0.1:6379', 'usage', { prefix: 'app' });
  await RedisSemaphore.delete('redis://127.0.0.1:6379', 'usage');
  await remote.closeForEveryone();
  await remote.disconnect();
  const undo: () => void = disconnectOnSignals({ timeout: 2000 });
  undo();
  // @ts-expect-error: no such option
  disconnectOnSignals({ timout: 1 });
  const n2 = Semaphore.open('usage-cts-2', 1);
  n2.closeForEveryone();
  await n2.disconnect();
  await n2[Symbol.asyncDispose]();
  // @ts-expect-error: connect() resolves, it does not return the object
  const wrong: Semaphore = Semaphore.connect('redis://x', 'n', 1);
  void wrong;
  // @ts-expect-error: no such option
  void RedisSemaphore.connect('redis://x', 'n', 1, { leaseMs: 1 });
  // @ts-expect-error: CommonJS has no default export
  void volt.default;
}
void main;
