'use strict';
// Finds and loads the native addon for this platform (the napi-rs layout).
//
// The `volt-sem` package holds only JavaScript and types. Each platform's
// binary is its own package, `volt-sem-<key>` (npm/<key>/ in the repository),
// with `os`/`cpu` (and `libc` on Linux) fields, and every one of them is an
// optionalDependency of `volt-sem` at the same version: npm installs the one
// that matches the machine and skips the others. This file picks the key for
// the running process and loads, in this order:
//
//   1. a development build next to this file, `volt-sem.<key>.node`
//      (`npm run build` / `make build` put it there), so a checkout runs its
//      own build rather than an installed one;
//   2. the platform package `volt-sem-<key>`.
//
// Linux has two keys per CPU, glibc (`-gnu`) and musl (`-musl`, Alpine): a
// binary linked against one C library does not load under the other. The C
// library is detected as napi-rs's generated loaders do: /usr/bin/ldd (a
// shell script on glibc systems, musl's loader on Alpine) names its libc;
// where that file cannot be read, the process report (glibcVersionRuntime in
// its header on glibc, a musl loader among its shared objects on musl; it
// costs ~20 ms, so it is second), and last `ldd --version`.
//
// The binary loaded must be of this package's version (package.json): the
// addon exports its crate's version, and a development build left from an
// older checkout (JavaScript rebuilt, the native part not) or a platform
// package of another release would otherwise run with JavaScript that calls
// it in ways it does not know, failing far from the cause, or not at all.
//
// Every failure is an Error with a `code`: ERR_VOLT_UNSUPPORTED_PLATFORM (no
// binary is published for this platform; the message names it and lists the
// supported ones), ERR_VOLT_BINARY_NOT_FOUND (a supported platform whose
// package is not installed), ERR_VOLT_BINARY_LOAD (a binary was found and
// failed to load; `cause` is the loader's error) or ERR_VOLT_BINARY_VERSION
// (a binary of another version than the package's; the message names both,
// and `expected` and `found` hold them).

const fs = require('node:fs');
const path = require('node:path');

const PACKAGE = 'volt-sem';

/** Every platform a binary package is published for (`volt-sem-<key>`). */
const PLATFORMS = Object.freeze([
  'linux-x64-gnu',
  'linux-x64-musl',
  'linux-arm64-gnu',
  'linux-arm64-musl',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64-gnu',
]);

const isMuslFile = (f) => f.includes('libc.musl-') || f.includes('ld-musl-');

/** musl or not from the text of /usr/bin/ldd; null when it could not be read. */
function muslFromLddFile(text) {
  return typeof text === 'string' ? text.includes('musl') : null;
}

/** musl or not from a process report; null when there is no report. */
function muslFromReport(report) {
  if (!report) return null;
  if (report.header && report.header.glibcVersionRuntime) return false;
  return Array.isArray(report.sharedObjects) && report.sharedObjects.some(isMuslFile);
}

// The probes of this machine, each returning null where it cannot tell.
const systemProbes = {
  lddFile() {
    try {
      return fs.readFileSync('/usr/bin/ldd', 'utf8');
    } catch {
      return null;
    }
  },
  report() {
    if (!process.report || typeof process.report.getReport !== 'function') return null;
    const excluded = process.report.excludeNetwork;
    process.report.excludeNetwork = true; // no DNS lookups for a libc check
    try {
      return process.report.getReport();
    } catch {
      return null;
    } finally {
      process.report.excludeNetwork = excluded;
    }
  },
  lddVersion() {
    // musl's ldd prints its banner on stderr and exits 1: read both streams.
    const { spawnSync } = require('node:child_process');
    const r = spawnSync('ldd', ['--version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return r.error ? null : `${r.stdout}${r.stderr}`;
  },
};

/** Whether this Linux process runs on musl; `probes` are replaceable for tests. */
function isMusl(probes = systemProbes) {
  let musl = muslFromLddFile(probes.lddFile());
  if (musl === null) musl = muslFromReport(probes.report());
  if (musl === null) {
    const out = probes.lddVersion();
    musl = typeof out === 'string' && out.includes('musl');
  }
  return musl;
}

/**
 * The binary key of a platform: `linux-<arch>-gnu|musl`, `win32-<arch>-gnu`
 * (the MinGW build, whose C ABI is what any Windows Node calls), else
 * `<platform>-<arch>`. `musl` is asked only on Linux.
 */
function platformKey(platform, arch, musl = () => isMusl()) {
  if (platform === 'linux') return `linux-${arch}-${musl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-gnu`;
  return `${platform}-${arch}`;
}

function loaderError(code, message, { cause, ...props }) {
  const err = cause === undefined ? new Error(message) : new Error(message, { cause });
  return Object.assign(err, { code }, props);
}

function isMissing(e, id) {
  return e && e.code === 'MODULE_NOT_FOUND' && typeof e.message === 'string' && e.message.includes(`'${id}'`);
}

/**
 * `native`, loaded from `what` (a file or a package name), if it is of
 * version `expected`; else ERR_VOLT_BINARY_VERSION naming both versions.
 */
function checkVersion(native, what, key, expected, remedy) {
  const found = native && typeof native.version === 'string' ? native.version : null;
  if (found === expected) return native;
  throw loaderError(
    'ERR_VOLT_BINARY_VERSION',
    `volt-sem: ${what} (${key}) is version ${found ?? 'unknown (built before binaries recorded their version)'}, ` +
      `but this package is version ${expected}: ${remedy}`,
    { platform: key, expected, found },
  );
}

/**
 * Loads the addon. Options (for tests): platform, arch, musl (a function),
 * dir (where development builds are looked for), require, version (the one
 * the binary must have; package.json's by default).
 */
function loadNative(options = {}) {
  const platform = options.platform ?? process.platform;
  const arch = options.arch ?? process.arch;
  const dir = options.dir ?? __dirname;
  const load = options.require ?? require;
  const version = options.version ?? require('./package.json').version;
  const key = platformKey(platform, arch, options.musl);

  // A development build: ours, or napi's default name for an MSVC build on Windows.
  const local = [key];
  if (platform === 'win32') local.push(`win32-${arch}-msvc`);
  for (const k of local) {
    const file = path.join(dir, `${PACKAGE}.${k}.node`);
    if (!fs.existsSync(file)) continue;
    let native;
    try {
      native = load(file);
    } catch (cause) {
      throw loaderError('ERR_VOLT_BINARY_LOAD', `volt-sem: the development build ${file} (${k}) failed to load: ${cause.message}`, {
        platform: key,
        cause,
      });
    }
    return checkVersion(
      native,
      `the development build ${file}`,
      key,
      version,
      'rebuild it (`npm run build`, or `make -C bindings-node build` in the repository) or delete it to use the installed one.',
    );
  }

  if (!PLATFORMS.includes(key)) {
    throw loaderError(
      'ERR_VOLT_UNSUPPORTED_PLATFORM',
      `volt-sem: no prebuilt binary for this platform (${key}). Supported platforms: ${PLATFORMS.join(', ')}. ` +
        'Elsewhere, build the addon from source with a Rust toolchain: `npm run build` in the package directory.',
      { platform: key, supported: [...PLATFORMS] },
    );
  }

  const pkg = `${PACKAGE}-${key}`;
  let native;
  try {
    native = load(pkg);
  } catch (cause) {
    if (isMissing(cause, pkg)) {
      throw loaderError(
        'ERR_VOLT_BINARY_NOT_FOUND',
        `volt-sem: the binary package for this platform (${key}), ${pkg}, is not installed. It is an ` +
          'optionalDependency of volt-sem: install without --omit=optional / --no-optional; a lockfile made on ' +
          'another platform can leave it out (remove node_modules and the lockfile, then install again).',
        { platform: key, supported: [...PLATFORMS], cause },
      );
    }
    throw loaderError('ERR_VOLT_BINARY_LOAD', `volt-sem: ${pkg} (${key}) failed to load: ${cause.message}`, {
      platform: key,
      cause,
    });
  }
  return checkVersion(
    native,
    `the binary package ${pkg}`,
    key,
    version,
    `install ${pkg} at the version of volt-sem (a lockfile or a manual install can leave another one).`,
  );
}

module.exports = { PLATFORMS, loadNative, platformKey, isMusl, muslFromLddFile, muslFromReport };
