'use strict';
// Issue 28: the addon's Rust modules (src/*.rs) in layers, "no upward imports,
// no cycles". The graph is read from the source (module-graph.js); the layers
// are the numbered list of src/lib.rs's module comment.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { stripCode, references, graph, cycles, witness } = require('./module-graph.js');

const SRC = path.join(__dirname, '..', 'src');

/** The layers of lib.rs's comment: `//! N. Title:` then `//!    * [`module`]: ...`. */
function statedLayers() {
  const layers = [];
  for (const line of fs.readFileSync(path.join(SRC, 'lib.rs'), 'utf8').split('\n')) {
    if (/^\/\/!\s*\d+\.\s/.test(line)) layers.push([]);
    const m = /^\/\/!\s+\*\s+\[`(?:mod@)?([A-Za-z_][A-Za-z0-9_]*)`\]/.exec(line);
    if (m && layers.length) layers[layers.length - 1].push(m[1]);
  }
  return layers;
}

/** A crate of the given files in a temporary directory. */
function crate(files) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'volt-modgraph-'));
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

test('references: use trees with brace groups, paths, super::, not comments or strings', () => {
  const mods = new Set(['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h']);
  const code = stripCode(`
    use crate::a::X;
    use crate::{b, c::{Y, Z}, RawEnv};
    use super::d;
    fn f() { crate::e::go(); let _ = super::f::G; }
    // use crate::g::Nope;
    /* crate::g::Nope, /* nested */ crate::g */
    const S: &str = "crate::h::Nope";
    const R: &str = r#"crate::h::"Nope"#;
    fn lt<'a>(x: &'a str) -> char { 'c' }
  `);
  assert.deepEqual([...references(code, mods)].sort(), ['a', 'b', 'c', 'd', 'e', 'f']);
});

test('references: macros and methods a module adds to another module\'s type', () => {
  const dir = crate({
    'lib.rs': 'mod a; mod b; mod c; mod d;',
    'a.rs': 'pub(crate) struct Ctx;\nmacro_rules! native { () => {} }',
    'b.rs': 'use crate::a::Ctx;\nimpl Ctx {\n    pub(crate) fn settle(&self) {}\n    fn private(&self) {}\n}',
    'c.rs': 'fn f(x: &Ctx) { x.settle(); }',
    'd.rs': 'native!(); fn g(x: &Ctx) { x.private(); }',
  });
  const g = graph(dir);
  assert.deepEqual([...g.b], ['a']);
  assert.deepEqual([...g.c], ['b']);
  assert.deepEqual([...g.d], ['a']);
  fs.rmSync(dir, { recursive: true });
});

test('cycles: found through use, super:: and methods; none in a layered crate', () => {
  const cyclic = crate({
    'lib.rs': 'mod env; mod raw; mod sem; mod wake;',
    'env.rs': 'use crate::{raw::args, sem::Sem};\npub(crate) struct EnvCtx;',
    'raw.rs': 'use super::env::EnvCtx;',
    'sem.rs': 'pub(crate) struct Sem;\nfn f(c: &EnvCtx) { c.settle(); }',
    'wake.rs': 'use crate::env::EnvCtx;\nimpl EnvCtx { pub(crate) fn settle(&self) {} }',
  });
  const g = graph(cyclic);
  const found = cycles(g);
  assert.deepEqual(found, [['env', 'raw', 'sem', 'wake']]);
  const w = witness(g, found[0]);
  assert.equal(w[0], w[w.length - 1]);
  for (let i = 0; i + 1 < w.length; i++) assert.ok(g[w[i]].has(w[i + 1]), `${w[i]} -> ${w[i + 1]}`);
  fs.rmSync(cyclic, { recursive: true });

  const layered = crate({
    'lib.rs': 'mod env; mod raw; mod sem;',
    'env.rs': 'use crate::{raw::args, sem::Sem};',
    'raw.rs': 'pub(crate) fn args() {}',
    'sem.rs': 'use crate::raw::args;',
  });
  assert.deepEqual(cycles(graph(layered)), []);
  fs.rmSync(layered, { recursive: true });
});

test('the addon\'s modules form no cycle', () => {
  const g = graph(SRC);
  const found = cycles(g);
  assert.deepEqual(
    found.map((scc) => witness(g, scc).join(' -> ')),
    [],
    'modules of bindings-node/src that refer to each other in a cycle',
  );
});

test('every module is in one layer of lib.rs, and refers to no higher layer', () => {
  const g = graph(SRC);
  const layers = statedLayers();
  assert.ok(layers.length >= 2, 'lib.rs lists its modules in numbered layers');
  const layerOf = new Map();
  layers.forEach((mods, i) => {
    for (const m of mods) {
      assert.ok(!layerOf.has(m), `${m} is listed twice`);
      layerOf.set(m, i + 1);
    }
  });
  assert.deepEqual([...layerOf.keys()].sort(), Object.keys(g).sort(), 'the layers list exactly the modules of src/');
  const upward = [];
  for (const [m, refs] of Object.entries(g)) {
    for (const r of refs) {
      if (layerOf.get(r) > layerOf.get(m)) upward.push(`${m} (layer ${layerOf.get(m)}) -> ${r} (layer ${layerOf.get(r)})`);
    }
  }
  assert.deepEqual(upward, []);
});
