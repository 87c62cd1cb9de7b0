'use strict';
// The module graph of the addon's Rust crate (bindings-node/src), read from
// the source text: which file's code names which other file's module. Used by
// module-graph.test.js (issue 28: no cycles among the modules), and as a
// command: `node test/module-graph.js [src dir]` prints the graph's cycles and
// exits 1 if there is one.
//
// An edge `a -> b` is any of, in `a.rs` outside comments and string literals:
// `crate::b` in a path or a `use` (brace groups included: `use crate::{b,
// c::D}`), `super::b` (the file modules are children of the crate root, so
// `super` is the crate there), a call of a macro that `b.rs` defines with
// `macro_rules!`, or a call (`.m(` or `::m(`) of a `pub(crate)` method that
// `b.rs` adds to a type of another module (`impl EnvCtx { pub(crate) fn m
// ... }` in `b.rs`, `struct EnvCtx` elsewhere: a dependency no path shows).
// `lib.rs` (the crate root, which declares every module) is not a node.
const fs = require('node:fs');
const path = require('node:path');

/** `src` without comments and string/char literals (replaced by spaces). */
function stripCode(src) {
  let out = '';
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      while (i < src.length && src[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      let depth = 1;
      i += 2;
      while (i < src.length && depth > 0) {
        if (src[i] === '/' && src[i + 1] === '*') (depth++, (i += 2));
        else if (src[i] === '*' && src[i + 1] === '/') (depth--, (i += 2));
        else i++;
      }
      out += ' ';
    } else if (c === 'r' && /^r#*"/.test(src.slice(i, i + 8)) && !/[A-Za-z0-9_]/.test(src[i - 1] || '')) {
      // raw string r"..." / r#"..."#
      const hashes = /^r(#*)"/.exec(src.slice(i))[1];
      const end = src.indexOf('"' + hashes, i + 2 + hashes.length);
      i = end < 0 ? src.length : end + 1 + hashes.length;
      out += ' ';
    } else if (c === '"') {
      i++;
      while (i < src.length && src[i] !== '"') i += src[i] === '\\' ? 2 : 1;
      i++;
      out += ' ';
    } else if (c === "'" && /^'(\\.[^']*|[^'\\])'/.test(src.slice(i, i + 12))) {
      // a char literal (a lifetime `'a` has no closing quote)
      i += /^'(\\.[^']*|[^'\\])'/.exec(src.slice(i, i + 12))[0].length;
      out += ' ';
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

/** The module names `code` (already stripped) refers to, among `modules`;
 * `macros` and `methods` map the names of macros and of methods added to
 * other modules' types to the module defining them. */
function references(code, modules, macros = new Map(), methods = new Map()) {
  const found = new Set();
  const add = (name) => {
    if (modules.has(name)) found.add(name);
  };
  // `use crate::...;` and `use super::...;`, with their brace groups.
  const useRe = /\buse\s+(crate|super)\s*::\s*([^;]*);/g;
  for (let m; (m = useRe.exec(code)); ) {
    const tree = m[2].trim();
    if (tree.startsWith('{')) {
      // Top-level items of the group: split at depth-1 commas.
      let depth = 0;
      let item = '';
      for (const ch of tree) {
        if (ch === '{') {
          if (depth++ === 0) continue;
        } else if (ch === '}') {
          if (--depth === 0) break;
        } else if (ch === ',' && depth === 1) {
          add(item.trim().split(/\s*(::|\s)\s*/)[0]);
          item = '';
          continue;
        }
        item += ch;
      }
      add(item.trim().split(/\s*(::|\s)\s*/)[0]);
    } else {
      add(tree.split(/\s*(::|\s)\s*/)[0]);
    }
  }
  // Paths anywhere: `crate::x`, `super::x`.
  const pathRe = /\b(?:crate|super)\s*::\s*([A-Za-z_][A-Za-z0-9_]*)/g;
  for (let m; (m = pathRe.exec(code)); ) add(m[1]);
  // Macros defined by another module.
  for (const [macro, mod] of macros) {
    if (new RegExp(`(^|[^A-Za-z0-9_])${macro}\\s*!`).test(code)) add(mod);
  }
  for (const [method, mod] of methods) {
    if (new RegExp(`(\\.|::)\\s*${method}\\s*(::\\s*<[^(]*>\\s*)?\\(`).test(code)) add(mod);
  }
  return found;
}

/** `{ module: Set(modules it refers to) }` for the `*.rs` files of `dir`. */
function graph(dir) {
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.rs') && f !== 'lib.rs' && f !== 'main.rs');
  const modules = new Set(files.map((f) => f.slice(0, -3)));
  const code = new Map(files.map((f) => [f.slice(0, -3), stripCode(fs.readFileSync(path.join(dir, f), 'utf8'))]));
  const macros = new Map();
  for (const [mod, text] of code) {
    for (const m of text.matchAll(/\bmacro_rules!\s*([A-Za-z_][A-Za-z0-9_]*)/g)) macros.set(m[1], mod);
  }
  // Types by defining module, then the pub(crate) methods of `impl T { }`
  // blocks in other modules than T's.
  const home = new Map();
  for (const [mod, text] of code) {
    for (const m of text.matchAll(/\b(?:struct|enum|union|type)\s+([A-Za-z_][A-Za-z0-9_]*)/g)) home.set(m[1], mod);
  }
  const methods = new Map();
  for (const [mod, text] of code) {
    for (const m of text.matchAll(/\bimpl(?:\s*<[^>{]*>)?\s+([A-Za-z_][A-Za-z0-9_]*)[^{;]*?\{/g)) {
      if (/\bfor\b/.test(m[0]) || !home.has(m[1]) || home.get(m[1]) === mod) continue;
      // The block's body: to the matching brace.
      let depth = 0;
      let end = m.index + m[0].length - 1;
      for (; end < text.length; end++) {
        if (text[end] === '{') depth++;
        else if (text[end] === '}' && --depth === 0) break;
      }
      const body = text.slice(m.index + m[0].length, end);
      for (const f of body.matchAll(/\bpub\s*\(\s*crate\s*\)\s*(?:const\s+|unsafe\s+)*fn\s+([A-Za-z_][A-Za-z0-9_]*)/g)) {
        methods.set(f[1], mod);
      }
    }
  }
  const out = {};
  for (const [mod, text] of code) {
    const refs = references(text, modules, macros, methods);
    refs.delete(mod);
    out[mod] = refs;
  }
  return out;
}

/** The strongly connected components of more than one module (Tarjan), each sorted. */
function cycles(g) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const out = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of g[v] || []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) {
        low.set(v, Math.min(low.get(v), idx.get(w)));
      }
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) out.push(scc.sort());
    }
  };
  for (const v of Object.keys(g).sort()) if (!idx.has(v)) visit(v);
  return out;
}

/** One concrete cycle through the modules of `scc`: [a, b, ..., a]. */
function witness(g, scc) {
  const inScc = new Set(scc);
  const start = scc[0];
  const prev = new Map([[start, null]]);
  const queue = [start];
  while (queue.length) {
    const v = queue.shift();
    for (const w of [...g[v]].sort()) {
      if (!inScc.has(w)) continue;
      if (w === start) {
        const p = [start];
        for (let u = v; u !== null; u = prev.get(u)) p.unshift(u);
        return p;
      }
      if (!prev.has(w)) (prev.set(w, v), queue.push(w));
    }
  }
  return scc;
}

/** The modules in layers, lowest first: each refers only to earlier layers (acyclic graphs). */
function layers(g) {
  const level = {};
  const depth = (v) => {
    if (level[v] === undefined) {
      level[v] = -1;
      level[v] = Math.max(-1, ...[...g[v]].map(depth)) + 1;
    }
    return level[v];
  };
  Object.keys(g).forEach(depth);
  const out = [];
  for (const [v, l] of Object.entries(level)) (out[l] ||= []).push(v);
  return out.map((l) => l.sort());
}

module.exports = { stripCode, references, graph, cycles, witness, layers };

if (require.main === module) {
  const dir = path.resolve(process.argv[2] || path.join(__dirname, '..', 'src'));
  const g = graph(dir);
  const found = cycles(g);
  if (found.length === 0) {
    console.log(`${dir}: no cycles among ${Object.keys(g).length} modules; layers, lowest first:`);
    layers(g).forEach((l, i) => console.log(`  ${i}: ${l.join(' ')}`));
    process.exit(0);
  }
  for (const scc of found) {
    console.log(`cycle of ${scc.length} modules: ${scc.join(', ')}`);
    console.log(`  e.g. ${witness(g, scc).join(' -> ')}`);
    for (const v of scc) console.log(`  ${v} -> ${[...g[v]].filter((w) => scc.includes(w)).sort().join(', ')}`);
  }
  process.exit(1);
}
