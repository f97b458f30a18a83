// The mcp-lock API through the official TypeScript SDK (tests/dist_npm.rs runs each
// test by name). The environment names what to run:
//   MCP_LOCK_BIN         the mcp-lock binary
//   MCP_LOCK_TEST_FIXTURE   examples/fixture_server, built
//   MCP_LOCK_TEST_SDK       the @modelcontextprotocol/sdk package folder (1.32.2)
//   MCP_LOCK_TEST_EVERYTHING  server-everything's dist/index.js (lists tools by the
//                           capabilities a client declares)

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import * as api from '../mcp-lock/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const binary = process.env.MCP_LOCK_BIN;
const fixture = process.env.MCP_LOCK_TEST_FIXTURE;
const sdk = process.env.MCP_LOCK_TEST_SDK;
const everything = process.env.MCP_LOCK_TEST_EVERYTHING;
assert.ok(binary && fixture && sdk, 'MCP_LOCK_BIN, MCP_LOCK_TEST_FIXTURE and MCP_LOCK_TEST_SDK are set');

const load = (file) => import(pathToFileURL(join(sdk, 'dist/esm', file)).href);
const { Client } = await load('client/index.js');
const { StdioClientTransport } = await load('client/stdio.js');

/** A project whose `.mcp.json` runs `fx` as `command args`, pinned under the bare profile. */
function project(t, args, command = fixture) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-lock-npm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { fx: { command, args } } }));
  // The SDK client declares no capabilities: the bare profile is what it sends.
  writeFileSync(join(dir, 'mcp-lock.toml'), '[profiles]\npin = ["bare"]\n');
  execFileSync(binary, ['update', '--yes', '--quiet'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return dir;
}

/** An SDK client connected to `command args` (observed, unless told otherwise). */
async function connect(t, params, { observe = true } = {}) {
  const client = new Client({ name: 'mcp-lock-npm-test', version: '1.0.0' });
  const transport = new StdioClientTransport({ stderr: 'pipe', ...params });
  await client.connect(observe ? api.observeSession(transport) : transport);
  t.after(() => client.close());
  return client;
}

test('a converged session comes out converged', async (t) => {
  const args = ['--revision', 'a', '--surface', '--page-size', '2'];
  const dir = project(t, args);
  for (const observe of [true, false]) {
    const client = await connect(t, { command: fixture, args }, { observe });
    const report = await api.checkSession(client, 'fx', { cwd: dir });
    assert.equal(report.exitCode, 0, JSON.stringify(report.raw));
    assert.equal(report.passed, true);
    const [server] = report.servers;
    assert.equal(server.verdict, 'converged');
    assert.equal(server.profile, 'bare');
    assert.deepEqual([server.tools, server.prompts, server.resourceTemplates], [3, 3, 2]);
    assert.deepEqual(server.changes, []);
    assert.deepEqual(server.serverChanges, [], 'session members as pinned');
    assert.deepEqual(report.listingErrors, []);
    // Every page of every kind was listed: tools 2+1, prompts 2+1, templates 2.
    assert.equal(report.listing.length, 1 + 2 + 2 + 1);
    // Over stdio the SDK keeps the negotiated version to itself; observeSession has it.
    assert.equal(report.listing[0].protocolVersion, observe ? '2025-11-25' : undefined);
  }
});

test('members the sdk does not model reach the lock as the server sent them', async (t) => {
  const command = process.execPath;
  const args = [join(here, 'sdk_server.mjs'), sdk];
  const dir = project(t, args, command);
  const lock = readFileSync(join(dir, 'mcp.lock'), 'utf8');
  assert.match(lock, /x-vendor/, 'mcp-lock pinned the unknown member');

  const client = await connect(t, { command, args });
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.servers[0].verdict, 'converged', JSON.stringify(report.raw));
  assert.deepEqual(report.servers[0].serverChanges, [], 'serverInfo and capabilities as sent');
  assert.equal(report.servers[0].tools, 3);

  // What the SDK's own listTools() gives (every page) is not what was sent: judged
  // from it, the same session would be stale. checkSession does not read it.
  const parsed = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor });
    parsed.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  assert.equal(parsed[0]['x-vendor'], undefined, 'the SDK drops unknown tool members');
  const fromSdk = await api.checkListing('fx', { tools: parsed }, { cwd: dir });
  assert.equal(fromSdk.servers[0].verdict, 'stale');
  assert.deepEqual(fromSdk.servers[0].changes.map((c) => c.tool).sort(), ['define', 'lookup', 'translate']);

  // Without observeSession the session members come from the SDK's parsed copy: its
  // serverInfo lost a member, which is a note, not drift.
  const plain = await connect(t, { command, args }, { observe: false });
  const noted = await api.checkSession(plain, 'fx', { cwd: dir });
  assert.equal(noted.servers[0].verdict, 'converged');
  assert.deepEqual(noted.servers[0].serverChanges.map((c) => [c.field, c.drift]), [['server_info', false]]);
});

test('a drifted session is caught from the listing it received', async (t) => {
  const dir = project(t, ['--revision', 'a']);
  const client = await connect(t, { command: fixture, args: ['--revision', 'b'] });
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.exitCode, 1);
  assert.equal(report.passed, false);
  const [server] = report.servers;
  assert.equal(server.verdict, 'stale');
  const deploy = server.changes.find((c) => c.tool === 'deploy_preview');
  assert.equal(deploy.change, 'changed');
  assert.equal(deploy.class, 'authority');
  assert.equal(deploy.action, 'fail');
  assert.deepEqual(deploy.parts, ['inputSchema']);
  assert.match(deploy.pinnedHash, /^[0-9a-f]{64}$/);
  assert.ok(deploy.findings.some((f) => f.pointer === '/inputSchema/properties/region' && f.class === 'breaking'));
  assert.ok(server.changes.some((c) => c.tool === 'rollback' && c.change === 'added'));
  assert.equal(report.summary.stale, 1);
});

test('a session whose last page is missing is incomplete', async (t) => {
  const dir = project(t, ['--revision', 'a', '--page-size', '2']);
  // The server dies when asked for the second page: the session has the first.
  const client = await connect(t, { command: fixture, args: ['--revision', 'a', '--page-size', '2', '--misbehave', 'crash-listing'] });
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.exitCode, 3, JSON.stringify(report.raw));
  assert.equal(report.servers[0].verdict, 'incomplete');
  assert.deepEqual(report.servers[0].changes, [], 'nothing is concluded, nothing reported removed');
  assert.match(report.servers[0].error, /nextCursor "page-2"/);
  assert.equal(report.listingErrors.length, 1);
  assert.match(report.listingErrors[0], /^tools\/list \(cursor "page-2"\): /);
});

test('a kind whose first page fails is incomplete', async (t) => {
  const dir = project(t, ['--revision', 'a', '--surface']);
  // resources/templates/list answers an error: no template was received at all.
  const client = await connect(t, { command: fixture, args: ['--revision', 'a', '--surface', '--misbehave', 'templates-fail'] });
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.exitCode, 3, JSON.stringify(report.raw));
  assert.equal(report.servers[0].verdict, 'incomplete');
  assert.deepEqual(report.listingErrors, ['resources/templates/list: MCP error -32603: templates unavailable']);
});

test('a declared kind whose list method is not found is none, as verify pins it', async (t) => {
  const args = ['--revision', 'templates-unimplemented', '--surface'];
  const dir = project(t, args);
  const client = await connect(t, { command: fixture, args });
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.exitCode, 0, JSON.stringify(report.raw));
  assert.equal(report.servers[0].verdict, 'converged');
  assert.equal(report.raw.servers[0].resource_templates, 0);
  assert.deepEqual(report.listingErrors, []);
  // verify says why there are none.
  const verified = await api.verify({ cwd: dir, offline: true });
  assert.equal(verified.exitCode, 0, JSON.stringify(verified.raw));
  assert.deepEqual(verified.servers[0].notImplemented, ['resource_template']);
});

test('an unknown server is an McpLockError', async (t) => {
  const dir = project(t, ['--revision', 'a']);
  const client = await connect(t, { command: fixture, args: ['--revision', 'a'] });
  await assert.rejects(api.checkSession(client, 'nope', { cwd: dir }), (error) => {
    assert.ok(error instanceof api.McpLockError);
    assert.equal(error.exitCode, 2);
    assert.equal(error.message, 'unknown server "nope"; the config defines: fx');
    assert.match(error.stderr, /^error: unknown server "nope"/m);
    return true;
  });
});

test('guarded params launch the server through the guard', async (t) => {
  const dir = project(t, ['--revision', 'a']);
  const params = api.guarded({ command: fixture, args: ['--revision', 'a'] }, 'fx', { cwd: dir });
  assert.equal(params.command, binary);
  assert.deepEqual(params.args, ['guard', 'fx', '--', fixture, '--revision', 'a']);
  assert.equal(params.cwd, dir);

  const client = await connect(t, params);
  const transport = client.transport;
  const cmdline = readFileSync(`/proc/${transport.pid}/cmdline`, 'utf8').split('\0');
  assert.deepEqual(cmdline.slice(0, 3), [binary, 'guard', 'fx']);
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.servers[0].verdict, 'converged', JSON.stringify(report.raw));
  const call = await client.callTool({ name: 'read_ticket', arguments: { id: 'T-1' } });
  assert.notEqual(call.isError, true, JSON.stringify(call));

  // The same server drifted: the guard leaves the changed and added tools out.
  const drifted = await connect(t, api.guarded({ command: fixture, args: ['--revision', 'b'] }, 'fx', { cwd: dir }));
  const { tools } = await drifted.listTools();
  assert.deepEqual(tools.map((tool) => tool.name), ['read_ticket']);
});

test('verify resolves with the report and rejects a missing lock', async (t) => {
  const dir = project(t, ['--revision', 'a']);
  const report = await api.verify({ cwd: dir, offline: true });
  assert.equal(report.exitCode, 0);
  assert.equal(report.servers[0].verdict, 'converged');
  assert.equal(report.servers[0].package.status, 'pinned');

  writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { fx: { command: fixture, args: ['--revision', 'b'] } } }));
  const drifted = await api.verify({ cwd: dir, servers: ['fx'], warn: ['authority', 'breaking', 'semantic', 'tool-added'] });
  assert.equal(drifted.exitCode, 0, 'the policy flags only warn');
  assert.equal(drifted.servers[0].verdict, 'stale');
  assert.ok(drifted.servers[0].changes.every((c) => c.action === 'warn'));

  await assert.rejects(api.verify({ cwd: dir, lock: 'missing.lock' }), (error) => {
    assert.ok(error instanceof api.McpLockError);
    assert.equal(error.exitCode, 2);
    assert.match(error.message, /missing\.lock/);
    assert.doesNotMatch(error.message, /^error:/);
    return true;
  });
});

test('a server that does not declare tools still has its tools listed and judged', async (t) => {
  const command = process.execPath;
  const args = [join(here, 'sdk_server.mjs'), sdk, '--undeclared-tools'];
  const dir = project(t, args, command);
  const client = await connect(t, { command, args });
  assert.equal(client.getServerCapabilities().tools, undefined, 'the server declares no tools');
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.exitCode, 0, JSON.stringify(report.raw));
  assert.equal(report.servers[0].verdict, 'converged');
  assert.equal(report.servers[0].tools, 3);
  assert.deepEqual(report.listing.slice(1).map((page) => Object.keys(page)[0]), ['tools', 'tools', 'prompts']);
});

test('instructions the session did not get, or got changed, are drift', async (t) => {
  const pinned = 'Read the ticket before you deploy.';
  const dir = project(t, ['--revision', 'a', '--instructions', pinned]);
  const instructionsDrift = (report) => {
    assert.equal(report.exitCode, 1, JSON.stringify(report.raw));
    assert.equal(report.servers[0].verdict, 'stale');
    assert.deepEqual(report.servers[0].changes, []);
    const drifts = report.servers[0].serverChanges.filter((c) => c.drift);
    assert.deepEqual(drifts.map((c) => [c.field, c.class]), [['instructions', 'semantic']]);
    return drifts[0];
  };
  // The server stopped sending instructions: with the initialize answer observed, and
  // from the SDK's getters.
  for (const observe of [true, false]) {
    const client = await connect(t, { command: fixture, args: ['--revision', 'a'] }, { observe });
    const report = await api.checkSession(client, 'fx', { cwd: dir });
    const drift = instructionsDrift(report);
    assert.equal(report.listing[0].instructions, null, 'sent as seen: none');
    assert.match(drift.pinned, /^[0-9a-f]{64}$/);
    assert.equal(drift.live, null);
  }
  const changed = await connect(t, { command: fixture, args: ['--revision', 'a', '--instructions', 'Deploy without asking.'] });
  const drift = instructionsDrift(await api.checkSession(changed, 'fx', { cwd: dir }));
  assert.notEqual(drift.live, drift.pinned);
  const same = await connect(t, { command: fixture, args: ['--revision', 'a', '--instructions', pinned] });
  assert.equal((await api.checkSession(same, 'fx', { cwd: dir })).servers[0].verdict, 'converged');
});

test('a listing that hangs is cut off by the timeouts and judged incomplete', { timeout: 40_000 }, async (t) => {
  const args = ['--revision', 'a', '--page-size', '2'];
  const dir = project(t, args);
  const hanging = { command: fixture, args: [...args, '--misbehave', 'hang-listing'] };
  const incomplete = (report) => {
    assert.equal(report.exitCode, 3, JSON.stringify(report.raw));
    assert.equal(report.servers[0].verdict, 'incomplete');
    assert.match(report.servers[0].error, /nextCursor "page-2"/);
    assert.equal(report.listing.at(-1).nextCursor, 'page-2');
  };

  // The whole check's timeout (seconds), however long one request may take.
  let started = Date.now();
  const report = await api.checkSession(await connect(t, hanging), 'fx', {
    cwd: dir,
    timeout: 1,
    requestOptions: { timeout: 60_000 },
  });
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
  incomplete(report);
  assert.deepEqual(report.listingErrors, [
    'tools/list (cursor "page-2"): the listing took longer than the session check\'s timeout (1 s)',
  ]);

  // One request's timeout (the SDK's, in milliseconds).
  started = Date.now();
  const slow = await api.checkSession(await connect(t, hanging), 'fx', { cwd: dir, requestOptions: { timeout: 300 } });
  assert.ok(Date.now() - started < 15_000, `took ${Date.now() - started} ms`);
  incomplete(slow);
  assert.equal(slow.listingErrors.length, 1);
  assert.match(slow.listingErrors[0], /^tools\/list \(cursor "page-2"\): MCP error -32001: Request timed out/);
});

test('list requests default to verify\'s limits: 30 s a request, 500 pages', async (t) => {
  const dir = project(t, ['--revision', 'a']);
  /** A client whose server pages forever, keeping the options of every request. */
  const endless = () => {
    const options = [];
    return {
      options,
      transport: undefined,
      getServerCapabilities: () => ({ tools: {} }),
      getServerVersion: () => ({ name: 'mcp-lock-fixture', version: '1.0.0' }),
      getInstructions: () => undefined,
      async request(_request, _schema, given) {
        options.push(given);
        return { tools: [], nextCursor: `page-${options.length}` };
      },
    };
  };
  const client = endless();
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(client.options.length, 500);
  assert.equal(client.options[0].timeout, 30_000);
  assert.ok(client.options[0].signal instanceof AbortSignal);
  assert.deepEqual(report.listingErrors, ['tools/list: more than 500 pages']);
  assert.equal(report.exitCode, 3);

  const given = endless();
  await api.checkSession(given, 'fx', { cwd: dir, maxPages: 3, requestOptions: { timeout: 5, resetTimeoutOnProgress: true } });
  assert.equal(given.options.length, 3);
  assert.equal(given.options[0].timeout, 5);
  assert.equal(given.options[0].resetTimeoutOnProgress, true);
});

test('verify takes one server name as a string', async (t) => {
  const dir = project(t, ['--revision', 'a']);
  const report = await api.verify({ cwd: dir, servers: 'fx', offline: true });
  assert.equal(report.exitCode, 0, JSON.stringify(report.raw));
  assert.deepEqual(report.servers.map((s) => s.name), ['fx']);
});

test('a report whose exit_code is not the process\'s is an McpLockError', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-lock-npm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const liar = join(dir, 'mcp-lock');
  const report = { report_version: 2, lock: 'mcp.lock', exit_code: 0, summary: {}, servers: [] };
  writeFileSync(liar, `#!/bin/sh\ncat >/dev/null\nprintf '%s' '${JSON.stringify(report)}'\nexit 1\n`, { mode: 0o755 });
  for (const call of [() => api.verify({ cwd: dir, binary: liar }), () => api.checkListing('fx', { tools: [] }, { cwd: dir, binary: liar })]) {
    await assert.rejects(call(), (error) => {
      assert.ok(error instanceof api.McpLockError);
      assert.equal(error.exitCode, 1);
      assert.match(error.message, /^mcp-lock (verify|check-listing) exited 1 but its report says 0$/);
      return true;
    });
  }
});

test('an aborted call rejects with McpLockError', { timeout: 40_000 }, async (t) => {
  // verify waiting on a server slow to start.
  const dir = project(t, ['--revision', 'a']);
  writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { fx: { command: fixture, args: ['--revision', 'a', '--delay-initialize', '20000'] } } }));
  let started = Date.now();
  await assert.rejects(api.verify({ cwd: dir, offline: true, signal: AbortSignal.timeout(300) }), (error) => {
    assert.ok(error instanceof api.McpLockError, String(error));
    assert.equal(error.exitCode, null);
    assert.equal(error.message, 'mcp-lock verify was aborted');
    assert.equal(error.cause.name, 'AbortError');
    return true;
  });
  assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
  await assert.rejects(api.verify({ cwd: dir, signal: AbortSignal.abort() }), api.McpLockError);

  // checkSession waiting on a page that never comes.
  const args = ['--revision', 'a', '--page-size', '2'];
  const listed = project(t, args);
  const client = await connect(t, { command: fixture, args: [...args, '--misbehave', 'hang-listing'] });
  const controller = new AbortController();
  setTimeout(() => controller.abort(), 300);
  started = Date.now();
  await assert.rejects(api.checkSession(client, 'fx', { cwd: listed, signal: controller.signal }), (error) => {
    assert.ok(error instanceof api.McpLockError, String(error));
    assert.equal(error.exitCode, null);
    assert.equal(error.message, 'checkSession was aborted');
    return true;
  });
  assert.ok(Date.now() - started < 10_000, `took ${Date.now() - started} ms`);
});

/**
 * server-everything (which lists tools by the capabilities a client declares) pinned
 * under two profiles defined in mcp-lock.toml: `plain` declares nothing, `ts-agent` roots
 * and elicitation, as an SDK Client constructed with those capabilities sends them.
 */
function everythingProject(t) {
  const dir = mkdtempSync(join(tmpdir(), 'mcp-lock-npm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  assert.ok(everything, 'MCP_LOCK_TEST_EVERYTHING is set');
  const main = everything;
  writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { everything: { command: process.execPath, args: [main] } } }));
  writeFileSync(
    join(dir, 'mcp-lock.toml'),
    [
      '[profiles]',
      'pin = ["plain", "ts-agent"]',
      '',
      '[profile.plain]',
      'protocol-version = "2025-11-25"',
      'capabilities = {}',
      'client-info = { name = "plain-agent", version = "1" }',
      '',
      '[profile.ts-agent]',
      'protocol-version = "2025-11-25"',
      'capabilities = { roots = { listChanged = true }, elicitation = { form = {}, url = {} } }',
      'client-info = { name = "ts-agent", version = "1" }',
      '',
    ].join('\n'),
  );
  execFileSync(binary, ['update', '--yes', '--quiet'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  return { dir, params: { command: process.execPath, args: [main] } };
}

test('a session that declares roots and elicitation is judged under the profile with them', async (t) => {
  const { dir, params } = everythingProject(t);
  const roots = { roots: { listChanged: true }, elicitation: { form: {}, url: {} } };
  const tools = {};
  for (const [capabilities, profile, observe] of [
    [{}, 'plain', true],
    [roots, 'ts-agent', true],
    [roots, 'ts-agent', false],
  ]) {
    const client = new Client({ name: 'mcp-lock-npm-test', version: '1.0.0' }, { capabilities });
    const transport = new StdioClientTransport({ stderr: 'pipe', ...params });
    await client.connect(observe ? api.observeSession(transport) : transport);
    t.after(() => client.close());
    assert.deepEqual(api.declaredHandshake(client).capabilities, capabilities);
    const report = await api.checkSession(client, 'everything', { cwd: dir });
    assert.equal(report.exitCode, 0, JSON.stringify(report.raw));
    const [server] = report.servers;
    assert.equal(server.profile, profile);
    assert.equal(server.verdict, 'converged');
    assert.equal(server.missingProfile, null);
    tools[profile] = server.tools;
  }
  assert.ok(tools['ts-agent'] > tools.plain, JSON.stringify(tools));

  // Sampling too: no pinned profile has it. Judged against every approved definition,
  // as the guard judges it: the sampling tool none approves is added (stale, not
  // passed), and missingProfile says what pins the agent.
  const client = new Client({ name: 'mcp-lock-npm-test', version: '1.0.0' }, { capabilities: { ...roots, sampling: {} } });
  await client.connect(api.observeSession(new StdioClientTransport({ stderr: 'pipe', ...params })));
  t.after(() => client.close());
  const report = await api.checkSession(client, 'everything', { cwd: dir });
  assert.equal(report.exitCode, 1, JSON.stringify(report.raw));
  assert.equal(report.passed, false);
  const [server] = report.servers;
  assert.equal(server.verdict, 'stale');
  assert.equal(server.profile, '(unmatched)');
  assert.deepEqual(
    server.changes.map((c) => [c.tool, c.change]),
    [['trigger-sampling-request', 'added']],
    JSON.stringify(report.raw),
  );
  assert.equal(server.missingProfile.closest, 'ts-agent');
  assert.deepEqual(server.missingProfile.difference, ['+/sampling']);
  assert.equal(server.missingProfile.profile, null);
  assert.match(server.missingProfile.pinWith, /mcp-lock update everything --client NAME/);
  // `client` still wins over what the session declared.
  const named = await api.checkSession(client, 'everything', { cwd: dir, client: 'ts-agent' });
  assert.equal(named.servers[0].profile, 'ts-agent');
  assert.equal(named.servers[0].missingProfile, null);
  assert.ok(named.servers[0].changes.some((c) => c.change === 'added'), JSON.stringify(named.raw));
});

test('a session plans without the tools the rules deny to its host', async (t) => {
  const args = ['--revision', 'a'];
  const dir = mkdtempSync(join(tmpdir(), 'mcp-lock-npm-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, '.mcp.json'), JSON.stringify({ mcpServers: { fx: { command: fixture, args } } }));
  writeFileSync(join(dir, 'mcp-lock.toml'), '[profiles]\npin = ["bare"]\n[tools]\ndeny = ["fx/deploy_preview"]\n');
  execFileSync(binary, ['update', '--yes', '--quiet'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
  const client = await connect(t, { command: fixture, args });
  const report = await api.checkSession(client, 'fx', { cwd: dir });
  assert.equal(report.exitCode, 0, JSON.stringify(report.raw));
  const [server] = report.servers;
  assert.deepEqual(server.denied.map((d) => [d.kind, d.name, d.rule]), [['tool', 'deploy_preview', '[tools] deny "fx/deploy_preview"']]);
  assert.deepEqual(api.judgedTools(report).map((tool) => tool.name), ['read_ticket', 'search_docs']);
});
