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
} from 'volt-sem';

async function main(): Promise<void> {
  const s = new Semaphore(MAX_PERMITS > 4 ? 4 : 1);
  await s.acquire(2, { signal: AbortSignal.timeout(1000) });
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
  const options: OpenOptions = { createOnly: false, attachOnly: false, mode: 0o660 };
  const named: Semaphore = Semaphore.open('usage-cts', 2, options);
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
  // @ts-expect-error: CommonJS has no default export
  void volt.default;
}
void main;
