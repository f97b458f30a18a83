// The launcher, npm/mcp-lock/bin/mcp-lock.js (tests/dist_npm.rs runs each test by
// name): which platform package it asks for, and that the binary it runs gets the
// arguments, stdio and signals, and gives back its exit.

'use strict';
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { test } = require('node:test');

const launcher = path.join(__dirname, '../mcp-lock/bin/mcp-lock.js');
const fake = path.join(__dirname, 'fake_platform.cjs');

/** The launcher as it starts on another platform (FAKE_* read by fake_platform.cjs). */
function onPlatform(platform, arch, libc) {
  const env = { ...process.env, FAKE_PLATFORM: platform, FAKE_ARCH: arch, FAKE_LIBC: libc || '' };
  delete env.MCP_LOCK_BIN;
  return spawnSync(process.execPath, ['--require', fake, launcher, 'verify'], { env, encoding: 'utf8' });
}

test('a missing platform package is named with how to get the binary', () => {
  const run = onPlatform('linux', 'arm64', 'musl');
  assert.equal(run.status, 2);
  assert.equal(run.stdout, '');
  assert.equal(run.stderr, 'mcp-lock: no binary for linux-arm64-musl; install @mcp-lock/linux-arm64-musl or use cargo install mcp-lock\n');
  const glibc = onPlatform('linux', 'x64', 'glibc');
  assert.match(glibc.stderr, /^mcp-lock: no binary for linux-x64-gnu; install @mcp-lock\/linux-x64-gnu /);
  const mac = onPlatform('darwin', 'arm64');
  assert.match(mac.stderr, /^mcp-lock: no binary for darwin-arm64; install @mcp-lock\/darwin-arm64 /);
});

test('a platform with no package says which platforms have one', () => {
  const run = onPlatform('freebsd', 'x64');
  assert.equal(run.status, 2);
  assert.equal(
    run.stderr,
    'mcp-lock: no binary for freebsd-x64; packages exist for linux-x64-gnu, linux-arm64-gnu, linux-x64-musl, linux-arm64-musl, darwin-x64, darwin-arm64, win32-x64; use cargo install mcp-lock\n',
  );
});

test('the binary gets the arguments and stdio and its exit code comes back', () => {
  const env = { ...process.env, MCP_LOCK_BIN: '/bin/sh' };
  const run = spawnSync(process.execPath, [launcher, '-c', 'read line; echo "got $line and $0"; exit 7', 'arg0'], {
    env,
    input: 'hello\n',
    encoding: 'utf8',
  });
  assert.equal(run.stdout, 'got hello and arg0\n');
  assert.equal(run.status, 7);
});

test('a signal to the launcher reaches the binary', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-lock-launcher-'));
  const mark = path.join(dir, 'term');
  // The launcher is held up for a moment right after it starts the binary, as a busy
  // machine may hold it: a signal sent once the binary is running must still be
  // passed on, not end the launcher and leave the binary behind.
  const slow = path.join(dir, 'slow_spawn.cjs');
  fs.writeFileSync(
    slow,
    `const cp = require('node:child_process');
const spawn = cp.spawn;
cp.spawn = (...args) => {
  const child = spawn(...args);
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 500);
  return child;
};
`,
  );
  let pid;
  try {
    const script = `trap 'echo term > "${mark}"; exit 42' TERM; echo "ready $$"; while :; do sleep 0.05; done`;
    const child = spawn(process.execPath, ['--require', slow, launcher, '-c', script], {
      env: { ...process.env, MCP_LOCK_BIN: '/bin/sh' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const ready = await new Promise((resolve) => child.stdout.once('data', resolve));
    pid = Number(/^ready (\d+)/.exec(String(ready))[1]);
    const exited = new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
    child.kill('SIGTERM');
    const [code, signal] = await exited;
    assert.equal(fs.existsSync(mark) && fs.readFileSync(mark, 'utf8'), 'term\n', 'the binary was sent SIGTERM');
    assert.deepEqual([code, signal], [42, null], 'and its exit code came back');
  } finally {
    // A binary the signal never reached would keep the test's stdout open.
    if (pid) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Gone, as it should be.
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a binary ended by a signal ends the launcher by the same signal', () => {
  const env = { ...process.env, MCP_LOCK_BIN: '/bin/sh' };
  const run = spawnSync(process.execPath, [launcher, '-c', 'kill -TERM $$'], { env });
  assert.equal(run.status, null);
  assert.equal(run.signal, 'SIGTERM');
});
