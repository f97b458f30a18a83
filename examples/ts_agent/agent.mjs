// @ts-check
// An agent on the official MCP TypeScript SDK that will not act on a contract nobody
// approved: it launches a server of its project's .mcp.json through `mcp-lock guard`,
// checks what its own session received against mcp.lock (checkSession), and stops
// before its first call when the check does not pass.
//
//   node agent.mjs [--project DIR] [--server NAME] [--lock PATH] [--no-guard]
//
// --project defaults to ../demo (examples/demo), --server to its only server.
// checkSession is a check at one point in time: the server may change what it offers
// later in the session (a list_changed, a new deployment behind the same process).
// The guard keeps enforcing the lock for the rest of the session (drifted tools are
// hidden and calls to them refused), so it is on unless --no-guard says otherwise.

import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpLockError, checkSession, guarded, observeSession } from 'mcp-lock';

const { values } = parseArgs({
  options: {
    project: { type: 'string', default: resolve(dirname(fileURLToPath(import.meta.url)), '../demo') },
    server: { type: 'string' },
    lock: { type: 'string' },
    'no-guard': { type: 'boolean', default: false },
  },
});
const project = resolve(values.project);

/**
 * `${NAME}` and `${NAME:-default}` as the client config writes them, expanded from
 * this process's environment as a host does when it launches the entry: the values
 * (tokens, keys) end up in the server's command, arguments and environment, and so
 * in the process table (the guard's command line too, where they are arguments).
 */
function expand(/** @type {string} */ text) {
  return text.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_, name, fallback) => process.env[name] ?? fallback ?? '');
}

/** The server's entry in the project's .mcp.json, as StdioServerParameters. */
function serverParams() {
  const config = JSON.parse(readFileSync(resolve(project, '.mcp.json'), 'utf8'));
  const names = Object.keys(config.mcpServers);
  const name = values.server ?? names[0];
  const entry = config.mcpServers[name];
  if (!entry) throw new Error(`no server ${name} in ${project}/.mcp.json (it has ${names.join(', ')})`);
  /** @type {Record<string, string>} */
  const env = { ...getDefaultEnvironment() };
  for (const [key, value] of Object.entries(entry.env ?? {})) env[key] = expand(String(value));
  return {
    name,
    params: {
      // As written: a relative command is found from cwd, the project, as the guard finds it.
      command: expand(entry.command),
      args: (entry.args ?? []).map((/** @type {unknown} */ a) => expand(String(a))),
      env,
      cwd: project,
    },
  };
}

const { name, params } = serverParams();
const client = new Client({ name: 'mcp-lock-ts-agent', version: '1.0.0' });
const guard = !values['no-guard'];
const transport = new StdioClientTransport(guard ? guarded(params, name, { cwd: project, lock: values.lock }) : params);

try {
  // observeSession keeps the initialize answer as sent, for checkSession.
  await client.connect(observeSession(transport));
  const report = await checkSession(client, name, { cwd: project, lock: values.lock });
  const [server] = report.servers;
  if (!report.passed) {
    console.error(`agent: ${name} is ${server.verdict}; not calling anything until a person approves it (mcp-lock update ${name})`);
    if (server.error) console.error(`  ${server.error}`);
    for (const change of server.changes) {
      console.error(`  ${change.change} ${change.kind} ${change.tool}: ${change.class ?? '-'}, ${change.action}`);
      for (const finding of change.findings) console.error(`    ${finding.class} ${finding.pointer} ${finding.reason}`);
    }
    for (const problem of report.listingErrors) console.error(`  listing: ${problem}`);
    process.exitCode = report.exitCode;
  } else {
    const how = guard ? 'through mcp-lock guard' : 'unguarded';
    console.log(`agent: ${name} [${server.profile}] ${server.verdict}: ${server.tools} tools as pinned (${how})`);
    const result = await client.callTool({ name: 'read_ticket', arguments: { id: 'T-42' } });
    console.log(`agent: read_ticket -> ${JSON.stringify(result.structuredContent ?? result.content)}`);
  }
} catch (error) {
  const why = error instanceof McpLockError ? 'mcp-lock could not check it' : 'the session failed';
  console.error(`agent: ${name}: ${why}: ${error instanceof Error ? error.message : error}`);
  process.exitCode = 2;
} finally {
  await client.close();
}
