// Type-checked by test/types.test.js (tsc --noEmit): the ESM entry.
import volt, { Semaphore, type Releaser } from 'volt-sem';

const s: Semaphore = new volt.Semaphore(1);
const r: Releaser = await s.acquirePermit();
r();
const t: boolean = s.tryAcquire() && volt.MAX_PERMITS > 0 && volt.Semaphore === Semaphore;
void t;
const named: Semaphore = volt.Semaphore.open('usage-mts', 1, { attachOnly: false });
volt.Semaphore.unlink('usage-mts');
void named;
