// ESM entry: the same module instance as the CommonJS one (one per thread).
import volt from './index.js';

export const { Semaphore, Mutex, RwLock, RedisSemaphore, MAX_PERMITS, disconnectOnSignals } = volt;
export default volt;
