'use strict';
// A child process for test/named.test.js (started with child_process.fork):
// it opens a named semaphore and runs the parent's commands, reporting back
// through IPC. Run without an IPC channel (e.g. picked up by `node --test`),
// it does nothing.
if (typeof process.send !== 'function') return;

const { Semaphore } = require('..');

let sem;
const held = new Map(); // request id -> permits it holds

function send(m) {
  process.send(m);
}

function fail(id, e) {
  send({ ev: 'error', id, code: e && e.code, message: String(e && e.message) });
}

process.on('message', (m) => {
  try {
    switch (m.op) {
      case 'open':
        sem = Semaphore.open(m.name, m.total, m.options);
        send({ ev: 'opened', available: sem.availablePermits });
        break;
      case 'acquire': {
        // By the time acquire() returns, the request is in the segment's FIFO
        // (or served): 'queued' is sent after that.
        const p = sem.acquire(m.n);
        send({ ev: 'queued', id: m.id });
        p.then(
          () => {
            held.set(m.id, m.n);
            send({ ev: 'granted', id: m.id });
          },
          (e) => fail(m.id, e),
        );
        break;
      }
      case 'tryAcquire':
        send({ ev: 'try', id: m.id, ok: sem.tryAcquire(m.n) });
        break;
      case 'release':
        sem.release(m.n);
        send({ ev: 'released', id: m.id });
        break;
      case 'state':
        send({ ev: 'state', id: m.id, available: sem.availablePermits, held: sem.heldPermits, closed: sem.closed });
        break;
      case 'close':
        sem.closeForEveryone();
        send({ ev: 'closed', id: m.id });
        break;
      case 'exit':
        process.exit(0);
    }
  } catch (e) {
    fail(m.id, e);
  }
});
send({ ev: 'ready' });
