#!/usr/bin/env node
'use strict';
// Runs the platform binary with this process's arguments and stdio (so `mcp-lock
// guard` talks to its agent directly), passes signals on, and exits as it exited.

const { spawn } = require('node:child_process');
const os = require('node:os');
const { MissingBinaryError, findBinary } = require('../lib/binary.js');

// mcp-lock's own exit code for a usage or setup error.
const SETUP_ERROR = 2;

let binary;
try {
  binary = findBinary();
} catch (error) {
  if (!(error instanceof MissingBinaryError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(SETUP_ERROR);
}

// A host that stops its server with SIGTERM stops this process: the binary (a guard
// and its server, say) must hear it too, or it would be left running. The handlers
// are in place before the binary starts: a signal sent once the binary is running
// (after it printed something, say) finds them, where it would otherwise end this
// process and leave the binary behind. A signal is handled from the event loop,
// after the spawn below.
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGBREAK', 'SIGUSR2', 'SIGWINCH'].filter(
  (name) => name in os.constants.signals,
);
let child;
const forward = (signal) => {
  if (child && child.exitCode === null && child.signalCode === null) child.kill(signal);
};
for (const signal of forwarded) process.on(signal, forward);

child = spawn(binary, process.argv.slice(2), { stdio: 'inherit' });

child.on('error', (error) => {
  process.stderr.write(`mcp-lock: cannot run ${binary}: ${error.message}\n`);
  process.exit(SETUP_ERROR);
});

child.on('exit', (code, signal) => {
  if (signal === null) {
    process.exit(code ?? 1);
  }
  // Die of the same signal, so whoever started us sees what the binary saw.
  for (const name of forwarded) process.removeListener(name, forward);
  const fallback = () => process.exit(128 + (os.constants.signals[signal] || 1));
  try {
    process.kill(process.pid, signal);
  } catch {
    fallback(); // Not a signal this platform can raise.
  }
  setTimeout(fallback, 500);
});
