// Type definitions for volt-sem (Node binding), ESM entry (index.mjs): the
// same classes as the CommonJS entry, plus the default export Node gives an
// ESM import of a CommonJS module (its `module.exports` object).
import * as volt from './index.js';

export * from './index.js';
export default volt;
