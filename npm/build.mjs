#!/usr/bin/env node
// Builds the npm packages of mcp-lock from built binaries.
//
//   node npm/build.mjs --out DIR [--binary TARGET=PATH]... [--no-pack]
//   node npm/build.mjs --sync
//
// For each --binary (TARGET a Rust target triple or a platform key of
// npm/mcp-lock/platforms.json, PATH a built mcp-lock), writes the platform package
// DIR/<key>/ (package.json, a short README.md and bin/mcp-lock), then the main
// package DIR/mcp-lock/ (a copy of npm/mcp-lock/ whose version and
// optionalDependencies are set from Cargo.toml's version and the platform table),
// and packs every one into DIR as a tarball (`npm pack`), printing each tarball's
// path. --sync rewrites
// npm/mcp-lock/package.json the same way, for committing.

import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..');
const mainDir = join(here, 'mcp-lock');
const { scope, platforms } = JSON.parse(readFileSync(join(mainDir, 'platforms.json'), 'utf8'));

function fail(message) {
  process.stderr.write(`error: ${message}\n`);
  process.exit(2);
}

/** The crate's version: `version = "…"` of Cargo.toml's [package] table. */
function crateVersion() {
  const text = readFileSync(join(root, 'Cargo.toml'), 'utf8');
  const table = text.split(/^\[/m).find((t) => t.startsWith('package]'));
  const match = table && table.match(/^version\s*=\s*"([^"]+)"/m);
  if (!match) fail('no version in the [package] table of Cargo.toml');
  return match[1];
}

/** The main package's manifest at `version`, depending on every platform package at it. */
function mainManifest(version) {
  const manifest = JSON.parse(readFileSync(join(mainDir, 'package.json'), 'utf8'));
  manifest.version = version;
  manifest.optionalDependencies = Object.fromEntries(platforms.map((p) => [`${scope}/${p.key}`, version]));
  return manifest;
}

/** A platform package's manifest, from its row of the table. */
function platformManifest(platform, version, main) {
  const manifest = {
    name: `${scope}/${platform.key}`,
    version,
    description: `The mcp-lock binary for ${platform.key} (${platform.target}); installed by the mcp-lock package.`,
    license: main.license,
    os: [platform.os],
    cpu: [platform.cpu],
  };
  if (platform.libc) manifest.libc = [platform.libc];
  manifest.files = [`bin/${platform.exe || 'mcp-lock'}`];
  manifest.preferUnplugged = true;
  return manifest;
}

function write(file, manifest) {
  writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
}

function pack(dir, out) {
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], {
    cwd: dir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  return join(out, name.trim().split('\n').pop());
}

const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    binary: { type: 'string', multiple: true, default: [] },
    'no-pack': { type: 'boolean', default: false },
    sync: { type: 'boolean', default: false },
  },
});

const version = crateVersion();

if (values.sync) {
  write(join(mainDir, 'package.json'), mainManifest(version));
  process.exit(0);
}
if (!values.out) fail('--out DIR is required (or --sync)');
const out = resolve(values.out);
mkdirSync(out, { recursive: true });

const staged = [];
for (const spec of values.binary) {
  const at = spec.indexOf('=');
  if (at < 1) fail(`--binary ${spec}: write TARGET=PATH`);
  const [target, binary] = [spec.slice(0, at), resolve(spec.slice(at + 1))];
  const platform = platforms.find((p) => p.target === target || p.key === target);
  if (!platform) {
    fail(`--binary ${spec}: no platform package for ${target}; the table has ${platforms.map((p) => p.target).join(', ')}`);
  }
  const dir = join(out, platform.key);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'bin'), { recursive: true });
  const exe = join(dir, 'bin', platform.exe || 'mcp-lock');
  copyFileSync(binary, exe);
  chmodSync(exe, 0o755);
  write(join(dir, 'package.json'), platformManifest(platform, version, mainManifest(version)));
  writeFileSync(
    join(dir, 'README.md'),
    `# ${scope}/${platform.key}\n\nThe \`mcp-lock\` binary for ${platform.key}. Install \`mcp-lock\` instead: it depends on this package on this platform.\n`,
  );
  staged.push(dir);
}

const main = join(out, 'mcp-lock');
rmSync(main, { recursive: true, force: true });
// Leave out an npm install's node_modules inside the package folder: judged by the path
// below mainDir, so a checkout that itself sits under a node_modules folder is copied.
cpSync(mainDir, main, {
  recursive: true,
  filter: (src) => !relative(mainDir, src).split(sep).includes('node_modules'),
});
write(join(main, 'package.json'), mainManifest(version));
staged.push(main);

for (const dir of staged) {
  process.stdout.write(`${values['no-pack'] ? dir : pack(dir, out)}\n`);
}
