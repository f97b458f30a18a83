'use strict';
// Which mcp-lock binary this machine runs: $MCP_LOCK_BIN, else the one in the
// installed platform package (an optionalDependency npm picked by os, cpu and libc).

const fs = require('node:fs');
const path = require('node:path');
const { scope, platforms } = require('../platforms.json');

/** No binary for this platform is installed (or none is published for it). */
class MissingBinaryError extends Error {
  constructor(message, platform) {
    super(message);
    this.name = 'MissingBinaryError';
    this.platform = platform;
  }
}

/** The C library of this Linux: the report names glibc's version only under glibc. */
function linuxLibc() {
  const report = process.report;
  if (report && typeof report.getReport === 'function') {
    // Leave out the network part where Node allows it: it is slow and not needed.
    const excluded = report.excludeNetwork;
    try {
      if (excluded !== undefined) report.excludeNetwork = true;
      const header = report.getReport().header || {};
      return header.glibcVersionRuntime ? 'gnu' : 'musl';
    } catch {
      // Fall through to the loader check.
    } finally {
      if (excluded !== undefined) report.excludeNetwork = excluded;
    }
  }
  try {
    return fs.readdirSync('/lib').some((name) => name.startsWith('ld-musl-')) ? 'musl' : 'gnu';
  } catch {
    return 'gnu';
  }
}

/** This machine as a platform key of platforms.json: `linux-x64-gnu`, `darwin-arm64`, … */
function platformKey(platform = process.platform, arch = process.arch) {
  const key = `${platform}-${arch}`;
  return platform === 'linux' ? `${key}-${linuxLibc()}` : key;
}

/** The npm package that holds the binary for a platform key. */
function packageName(key) {
  return `${scope}/${key}`;
}

/**
 * The path of the mcp-lock binary to run: `override`, else $MCP_LOCK_BIN (a
 * relative path from the current directory), else the binary of the installed
 * platform package. Throws MissingBinaryError saying which package to install when
 * there is none.
 */
function findBinary(override, env = process.env) {
  const named = override || env.MCP_LOCK_BIN;
  if (named) {
    // A path is this process's, wherever the binary is then started; a bare name is
    // looked up in PATH.
    return /[\\/]/.test(named) ? path.resolve(named) : named;
  }
  const key = platformKey();
  const entry = platforms.find((p) => p.key === key);
  if (!entry) {
    const known = platforms.map((p) => p.key).join(', ');
    throw new MissingBinaryError(
      `mcp-lock: no binary for ${key}; packages exist for ${known}; use cargo install mcp-lock`,
      key,
    );
  }
  const name = packageName(key);
  let manifest;
  try {
    manifest = require.resolve(`${name}/package.json`);
  } catch {
    throw new MissingBinaryError(
      `mcp-lock: no binary for ${key}; install ${name} or use cargo install mcp-lock`,
      key,
    );
  }
  const binary = path.join(path.dirname(manifest), 'bin', entry.exe || 'mcp-lock');
  if (!fs.existsSync(binary)) {
    throw new MissingBinaryError(
      `mcp-lock: ${name} has no ${path.join('bin', entry.exe || 'mcp-lock')}; reinstall it or use cargo install mcp-lock`,
      key,
    );
  }
  return binary;
}

module.exports = { MissingBinaryError, findBinary, platformKey, packageName, platforms, scope };
