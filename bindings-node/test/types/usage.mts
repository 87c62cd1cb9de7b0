// Type-checked by test/types.test.js (tsc --noEmit): the ESM entry.
import volt, { Semaphore, RedisSemaphore, disconnectOnSignals, type Releaser } from 'volt-sem';

const s: Semaphore = new volt.Semaphore(1);
const r: Releaser = await s.acquirePermit();
r();
const t: boolean = s.tryAcquire() && volt.MAX_PERMITS > 0 && volt.Semaphore === Semaphore;
void t;
const named: Semaphore = volt.Semaphore.open('usage-mts', 1, { attachOnly: false });
volt.Semaphore.unlink('usage-mts');
void named;
const same: boolean = volt.RedisSemaphore === RedisSemaphore;
const connecting: Promise<RedisSemaphore> = Semaphore.connect('redis://127.0.0.1:6379', 'usage-mts', 1);
void [same, connecting];
const remove: () => void = disconnectOnSignals();
remove();
