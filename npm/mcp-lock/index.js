'use strict';
// The mcp-lock API for Node: run `verify` or `check-listing` and read their JSON
// report (docs/json-report.md) into typed objects; check what an MCP SDK client
// session received; launch a server through `mcp-lock guard`. Types: index.d.ts.

const { spawn } = require('node:child_process');
const path = require('node:path');
const { MissingBinaryError, findBinary, platformKey } = require('./lib/binary.js');

/**
 * mcp-lock could not judge: a usage, config, lock or input error (exit 2), no report,
 * a report that disagrees with the exit code, or a call aborted by its signal.
 */
class McpLockError extends Error {
  constructor(message, { exitCode = null, stderr = '', cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'McpLockError';
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

// The exit codes that come with a report: pass, drift the policy fails, not judged.
const REPORTED = new Set([0, 1, 3]);

/** Runs the binary; resolves with its exit code and output, whatever the code. An
 * abort by `signal` (which ends the binary) rejects with McpLockError. */
function run(args, { input, cwd, env, binary, signal } = {}) {
  let program;
  try {
    program = findBinary(binary);
  } catch (error) {
    const exitCode = error instanceof MissingBinaryError ? 2 : null;
    return Promise.reject(new McpLockError(error.message, { exitCode }));
  }
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, {
      cwd,
      env: env ? { ...process.env, ...env } : process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
      signal,
      windowsHide: true,
    });
    const stdout = [];
    const stderr = [];
    child.stdout.on('data', (chunk) => stdout.push(chunk));
    child.stderr.on('data', (chunk) => stderr.push(chunk));
    child.on('error', (error) => {
      if (error.name === 'AbortError') {
        return reject(new McpLockError(`mcp-lock ${args[0]} was aborted`, { stderr: Buffer.concat(stderr).toString('utf8'), cause: error }));
      }
      reject(new McpLockError(`mcp-lock: cannot run ${program}: ${error.message}`, { stderr: Buffer.concat(stderr).toString('utf8') }));
    });
    child.on('close', (code, killedBy) => {
      resolve({
        command: args[0],
        code,
        signal: killedBy,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
      });
    });
    // A binary that exits before reading all of its input closes the pipe: its exit
    // code says why, so the write error itself is not the news.
    child.stdin.on('error', () => {});
    child.stdin.end(input === undefined ? '' : input);
  });
}

/** The line mcp-lock printed as its error, without the `error: ` mark. */
function errorLine(stderr) {
  const lines = stderr.split(/\r?\n/).map((l) => l.trim()).filter(Boolean);
  const error = lines.find((l) => l.startsWith('error:'));
  const line = error || lines[lines.length - 1] || '';
  return line.replace(/^error:\s*/, '');
}

/** A finished run as a Report, or the McpLockError it is. */
function reportOf(result) {
  const { command, code, signal, stdout, stderr } = result;
  let raw;
  try {
    raw = JSON.parse(stdout);
  } catch {
    raw = undefined;
  }
  if (code === null || !REPORTED.has(code) || !raw || typeof raw !== 'object' || !Array.isArray(raw.servers)) {
    const what = errorLine(stderr) || (signal ? `mcp-lock was ended by ${signal}` : `mcp-lock exited with ${code} and no report`);
    throw new McpLockError(what, { exitCode: code, stderr });
  }
  // The process's code is what the run means; a report that says otherwise is not
  // one to act on (a report without exit_code is taken as saying 0).
  const said = raw.exit_code === undefined ? 0 : raw.exit_code;
  if (said !== code) {
    throw new McpLockError(`mcp-lock ${command} exited ${code} but its report says ${JSON.stringify(said)}`, { exitCode: code, stderr });
  }
  return toReport(raw, code);
}

function toReport(raw, exitCode) {
  const summary = raw.summary || {};
  return {
    exitCode,
    passed: exitCode === 0,
    reportVersion: raw.report_version,
    lock: raw.lock,
    summary: {
      converged: summary.converged || 0,
      stale: summary.stale || 0,
      incomplete: summary.incomplete || 0,
      unverifiable: summary.unverifiable || 0,
      fail: summary.fail || 0,
      warn: summary.warn || 0,
      allow: summary.allow || 0,
    },
    servers: raw.servers.map(toServer),
    raw,
  };
}

function toServer(s) {
  return {
    name: s.name,
    profile: s.profile,
    profilePinned: s.profile_pinned,
    transport: s.transport,
    verdict: s.verdict,
    pinned: s.pinned,
    action: s.action,
    error: s.error ?? null,
    tools: s.tools ?? null,
    prompts: s.prompts ?? null,
    resourceTemplates: s.resource_templates ?? null,
    resources: s.resources ?? null,
    notPinnedYet: s.not_pinned_yet ?? [],
    notImplemented: s.not_implemented ?? [],
    changes: (s.changes || []).map(toChange),
    serverChanges: (s.server_changes || []).map(toServerChange),
    rejected: s.rejected ?? [],
    package: s.package ? toPackage(s.package) : null,
    missingProfile: s.missing_profile ? toMissingProfile(s.missing_profile) : null,
    denied: (s.denied || []).map((d) => ({
      kind: d.kind,
      name: d.name,
      rule: d.rule,
      source: d.source,
      action: d.action ?? 'allow',
    })),
    stderr: s.stderr ?? [],
    elapsedMs: s.elapsed_ms ?? null,
    raw: s,
  };
}

function toChange(c) {
  return {
    kind: c.kind,
    tool: c.tool,
    change: c.change,
    class: c.class ?? null,
    action: c.action,
    parts: c.parts ?? [],
    findings: (c.findings || []).map(toFinding),
    pinnedHash: c.pinned_hash ?? null,
    liveHash: c.live_hash ?? null,
    problem: c.problem ?? null,
    renamedFrom: c.renamed_from ?? null,
  };
}

function toFinding(f) {
  return {
    class: f.class,
    pointer: f.pointer,
    before: f.before ?? null,
    after: f.after ?? null,
    reason: f.reason,
    instructsModel: f.instructs_model === true,
  };
}

function toServerChange(c) {
  return {
    field: c.field,
    pinned: c.pinned ?? null,
    live: c.live ?? null,
    drift: c.drift === true,
    class: c.class ?? null,
    action: c.action ?? null,
    rule: c.rule ?? null,
  };
}

function toMissingProfile(m) {
  return {
    closest: m.closest,
    difference: m.difference ?? [],
    profile: m.profile ?? null,
    pinWith: m.pin_with,
  };
}

function toPackage(p) {
  return {
    status: p.status,
    kind: p.kind,
    launcher: p.launcher ?? null,
    pinned: p.pinned ?? null,
    live: p.live ?? null,
    message: p.message ?? null,
    action: p.action,
  };
}

/** A list of classes as the flags take them: `["additive", "cosmetic"]` or `"additive,cosmetic"`. */
function classes(value) {
  return Array.isArray(value) ? value.join(',') : String(value);
}

/** The flags both commands share, in the order the options name them. */
function commonArgs(options) {
  const args = [];
  for (const [option, flag] of [
    ['config', '--config'],
    ['user', '--user'],
    ['lock', '--lock'],
    ['policy', '--policy'],
    ['client', '--client'],
  ]) {
    if (options[option] !== undefined) args.push(flag, String(options[option]));
  }
  for (const action of ['fail', 'warn', 'allow']) {
    if (options[action] !== undefined) args.push(`--${action}`, classes(options[action]));
  }
  if (options.exact) args.push('--exact');
  return args;
}

function runOptions(options) {
  return { cwd: options.cwd, env: options.env, binary: options.binary, signal: options.signal };
}

/**
 * `mcp-lock verify --format json`: every server of the project (or `options.servers`)
 * against the lock. Resolves with the Report for exit codes 0, 1 and 3; rejects with
 * McpLockError otherwise.
 */
async function verify(options = {}) {
  const args = ['verify', '--format', 'json', '--quiet', '--color', 'never', ...commonArgs(options)];
  if (options.offline) args.push('--offline');
  for (const [option, flag] of [
    ['timeout', '--timeout'],
    ['requestTimeout', '--request-timeout'],
    ['jobs', '--jobs'],
  ]) {
    if (options[option] !== undefined) args.push(flag, String(options[option]));
  }
  args.push(...(options.args || []));
  // One name may be given as a string (not spread into its letters).
  const servers = typeof options.servers === 'string' ? [options.servers] : Array.from(options.servers || [], String);
  if (servers.length) args.push('--', ...servers);
  return reportOf(await run(args, runOptions(options)));
}

/**
 * `mcp-lock check-listing SERVER --format json`: what a client received, judged
 * against the lock without connecting. `listing` is JSON text (sent as it is), bytes,
 * or a JSON value (one document or an array of documents: list pages, JSON-RPC
 * answers, the session's initialize result).
 */
async function checkListing(server, listing, options = {}) {
  if (typeof server !== 'string' || server === '') {
    throw new TypeError('checkListing: server must be the server name of the client config');
  }
  const input = typeof listing === 'string' || listing instanceof Uint8Array ? listing : JSON.stringify(listing);
  const args = ['check-listing', '--format', 'json', '--quiet', '--color', 'never', ...commonArgs(options)];
  if (options.handshake != null) {
    if (typeof options.handshake !== 'object' || Array.isArray(options.handshake)) {
      throw new TypeError('checkListing: handshake is the initialize params object the client sent');
    }
    args.push('--handshake', JSON.stringify(options.handshake));
  }
  args.push(...(options.args || []), '--', server);
  return reportOf(await run(args, { ...runOptions(options), input }));
}

// ---- @modelcontextprotocol/sdk ------------------------------------------------------

// A result "schema" that hands back the answer exactly as the transport read it. The
// SDK's own result schemas drop members they do not model (a tool's or annotation's
// unknown fields, serverInfo's extras), and the lock hashes the definitions as sent.
// Zod 3 callers use parse, the SDK's zod-compat layer (1.23+) safeParse.
const AS_RECEIVED = Object.freeze({
  parse: (data) => data,
  safeParse: (data) => ({ success: true, data }),
});

// The kinds a session lists: tools always (as verify lists them, whatever the
// capabilities say), the others when the server declared their capability.
const KINDS = [
  { method: 'tools/list', member: 'tools', capability: null },
  { method: 'prompts/list', member: 'prompts', capability: 'prompts' },
  { method: 'resources/templates/list', member: 'resourceTemplates', capability: 'resources' },
];

const observed = new WeakMap();

/**
 * Remembers the initialize answer exactly as it arrives on `transport`, for
 * checkSession. Call it before `client.connect(transport)`; returns the transport.
 */
function observeSession(transport) {
  const record = { id: undefined, params: undefined, result: undefined };
  const send = transport.send.bind(transport);
  transport.send = (message, ...rest) => {
    if (message && message.method === 'initialize' && 'id' in message) {
      record.id = message.id;
      record.params = message.params;
    }
    return send(message, ...rest);
  };
  // The SDK chains an onmessage set before connect, calling it first.
  const previous = transport.onmessage;
  transport.onmessage = (message, ...rest) => {
    if (record.id !== undefined && record.result === undefined && message && message.id === record.id && message.result) {
      record.result = message.result;
    }
    if (previous) previous(message, ...rest);
  };
  observed.set(transport, record);
  return transport;
}

/**
 * The session document: what the initialize answer said, as this client has it.
 * Once the session is initialized, `instructions` is always given, `null` when the
 * server sent none: check-listing takes a member that is not given as pinned, so
 * leaving it out would let removed instructions pass unjudged.
 */
function sessionDocument(client) {
  const record = client.transport ? observed.get(client.transport) : undefined;
  const initialize = record && record.result;
  if (initialize) {
    const session = {};
    for (const member of ['protocolVersion', 'serverInfo', 'capabilities']) {
      if (initialize[member] !== undefined) session[member] = initialize[member];
    }
    // The answer was seen: no instructions in it means the server sent none.
    session.instructions = initialize.instructions === undefined ? null : initialize.instructions;
    return session;
  }
  const session = {};
  const protocolVersion = client.transport && client.transport.protocolVersion;
  if (typeof protocolVersion === 'string') session.protocolVersion = protocolVersion;
  const serverInfo = client.getServerVersion();
  if (serverInfo !== undefined) session.serverInfo = serverInfo;
  const capabilities = client.getServerCapabilities();
  // The SDK keeps the capabilities once initialize was answered; before that the
  // session saw nothing (and every list request fails, so the verdict is incomplete).
  if (capabilities !== undefined || serverInfo !== undefined) {
    const instructions = client.getInstructions();
    session.instructions = instructions === undefined ? null : instructions;
  }
  session.capabilities = capabilities || {};
  return session;
}

/**
 * What this client declared when it connected, as initialize params: the capabilities
 * and clientInfo it sent (as observeSession saw them, else as the SDK Client keeps
 * them), and the protocol version negotiated (else the one asked for). Undefined when
 * the client does not say (an object that is not an SDK Client).
 */
function declaredHandshake(client) {
  const record = client.transport ? observed.get(client.transport) : undefined;
  const sent = record && record.params;
  const capabilities = sent && sent.capabilities !== undefined ? sent.capabilities : client._capabilities;
  if (capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities)) return undefined;
  const handshake = { capabilities };
  const negotiated = record && record.result ? record.result.protocolVersion : client.transport && client.transport.protocolVersion;
  const version = typeof negotiated === 'string' ? negotiated : sent && sent.protocolVersion;
  if (typeof version === 'string') handshake.protocolVersion = version;
  const clientInfo = sent && sent.clientInfo !== undefined ? sent.clientInfo : client._clientInfo;
  if (clientInfo !== undefined) handshake.clientInfo = clientInfo;
  return handshake;
}

function message(error) {
  return error && error.message ? error.message : String(error);
}

/** The defaults of verify: its --request-timeout, --timeout and --max-pages. */
const REQUEST_TIMEOUT_MS = 30_000;
const SESSION_TIMEOUT_S = 120;
const MAX_PAGES = 500;
// setTimeout's longest delay; a longer timeout is no timeout.
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * One signal that aborts when any of `signals` does, or when `seconds` have passed
 * (its reason then says so). `release()` stops the timer and unhooks it from the
 * given signals, so it never aborts (nor cancels a finished request) afterwards.
 */
function boundedSignal(signals, seconds) {
  const controller = new AbortController();
  const undo = [];
  for (const signal of signals) {
    if (!signal) continue;
    if (signal.aborted) {
      controller.abort(signal.reason);
      break;
    }
    const abort = () => controller.abort(signal.reason);
    signal.addEventListener('abort', abort, { once: true });
    undo.push(() => signal.removeEventListener('abort', abort));
  }
  let timer;
  const ms = seconds * 1000;
  if (!controller.signal.aborted && ms <= LONGEST_TIMER_MS) {
    timer = setTimeout(() => {
      controller.abort(new Error(`the listing took longer than the session check's timeout (${seconds} s)`));
    }, ms);
  }
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      for (const u of undo) u();
    },
  };
}

/**
 * Lists every page of one kind; a page that fails (or times out, or a cursor seen
 * before, or more than maxPages) ends it with the last page's nextCursor kept, so
 * the kind is judged incomplete. A kind whose first page fails gets an empty page
 * naming the cursor "" (a page is missing), except a declared kind whose first page
 * is answered -32601 (method not found): that is an empty listing, as verify reads it.
 */
async function listAll(client, kind, requestOptions, maxPages, problems) {
  const pages = [];
  const seen = new Set();
  const { signal } = requestOptions;
  let cursor;
  for (;;) {
    let result;
    try {
      const request = cursor === undefined ? { method: kind.method } : { method: kind.method, params: { cursor } };
      // A signal of the request's own: the SDK leaves its abort listener on the signal
      // it is given, which would otherwise pile up on the session's, and cancel every
      // finished request when that one aborts.
      const own = boundedSignal([signal], Infinity);
      try {
        result = await client.request(request, AS_RECEIVED, { ...requestOptions, signal: own.signal });
      } finally {
        own.release();
      }
      if (!result || !Array.isArray(result[kind.member])) {
        throw new Error(`the answer has no ${kind.member} array`);
      }
    } catch (error) {
      // A kind the server declares but has no list method for (-32601 on the first
      // page): none of it, as verify reads it. Tools keep their meaning.
      if (error && error.code === -32601 && pages.length === 0 && kind.capability !== null && !(signal && signal.aborted)) {
        pages.push({ [kind.member]: [] });
        return pages;
      }
      // Aborted (the timeout, or a signal): the reason says why, not the SDK's wrapper.
      const why = signal && signal.aborted ? message(signal.reason) : message(error);
      problems.push(`${kind.method}${cursor === undefined ? '' : ` (cursor ${JSON.stringify(cursor)})`}: ${why}`);
      if (pages.length === 0) pages.push({ [kind.member]: [], nextCursor: '' });
      return pages;
    }
    const page = { [kind.member]: result[kind.member] };
    if (result.nextCursor !== undefined) page.nextCursor = result.nextCursor;
    pages.push(page);
    if (typeof result.nextCursor !== 'string') return pages;
    if (seen.has(result.nextCursor)) {
      problems.push(`${kind.method}: the server repeated the cursor ${JSON.stringify(result.nextCursor)}`);
      return pages;
    }
    if (pages.length >= maxPages) {
      problems.push(`${kind.method}: more than ${maxPages} pages`);
      return pages;
    }
    seen.add(result.nextCursor);
    cursor = result.nextCursor;
  }
}

/**
 * Checks what a connected `@modelcontextprotocol/sdk` Client session received against
 * the lock: every page of tools (always, as verify lists them), and of prompts and
 * resource templates when the server declared them, listed in this session exactly
 * as the server sent them, with the session's serverInfo, instructions (null when
 * none were sent), capabilities and protocol version, judged by `mcp-lock
 * check-listing`. A listing that failed part-way, or ran past a timeout, is judged
 * incomplete. An abort by `options.signal` rejects with McpLockError.
 */
async function checkSession(client, server, options = {}) {
  const { requestOptions = {}, maxPages = MAX_PAGES, timeout = SESSION_TIMEOUT_S, ...rest } = options;
  if (typeof timeout !== 'number' || !(timeout > 0)) {
    throw new TypeError('checkSession: timeout is a number of seconds above 0');
  }
  if (!Number.isInteger(maxPages) || maxPages < 1) {
    throw new TypeError('checkSession: maxPages is a whole number, at least 1');
  }
  const session = sessionDocument(client);
  const documents = [session];
  const problems = [];
  const capabilities = session.capabilities || {};
  const bound = boundedSignal([rest.signal, requestOptions.signal], timeout);
  const perRequest = {
    ...requestOptions,
    timeout: requestOptions.timeout ?? REQUEST_TIMEOUT_MS,
    signal: bound.signal,
  };
  try {
    for (const kind of KINDS) {
      if (kind.capability && capabilities[kind.capability] == null) continue;
      documents.push(...(await listAll(client, kind, perRequest, maxPages, problems)));
    }
  } finally {
    bound.release();
  }
  if (rest.signal && rest.signal.aborted) {
    throw new McpLockError('checkSession was aborted', { cause: rest.signal.reason });
  }
  // What this client declared picks the pinned profile it is judged under (a given
  // `client` still wins); `handshake: null` sends none.
  const handshake = rest.handshake === undefined ? declaredHandshake(client) : rest.handshake;
  const report = await checkListing(server, documents, { ...rest, handshake });
  report.listingErrors = problems;
  report.listing = documents;
  return report;
}

/**
 * StdioServerParameters that launch the same server through `mcp-lock guard SERVER`,
 * in the project directory (`options.cwd`, else the params' cwd, else this process's),
 * so the lock is enforced on everything the session does.
 */
function guarded(params, server, options = {}) {
  if (!params || typeof params.command !== 'string') {
    throw new TypeError('guarded: params must be StdioServerParameters with a command');
  }
  if (typeof server !== 'string' || server === '') {
    throw new TypeError('guarded: server must be the server name of the client config');
  }
  const cwd = path.resolve(options.cwd || params.cwd || process.cwd());
  const args = ['guard', server];
  for (const [option, flag] of [
    ['config', '--config'],
    ['lock', '--lock'],
    ['policy', '--policy'],
    ['auditLog', '--audit-log'],
  ]) {
    if (options[option] !== undefined) args.push(flag, path.resolve(cwd, String(options[option])));
  }
  if (options.onDrift !== undefined) args.push('--on-drift', String(options.onDrift));
  if (options.exact) args.push('--exact');
  args.push('--', params.command, ...(params.args || []));
  return { ...params, command: findBinary(options.binary), args, cwd };
}

/**
 * The tools checkSession judged, as the session received them: what the agent should
 * plan with once `report.passed`. Tools the tool rules deny to this host are left
 * out, as the guard hides them.
 */
function judgedTools(report) {
  const denied = new Set();
  for (const server of report.servers) {
    for (const d of server.denied) if (d.kind === 'tool') denied.add(d.name);
  }
  const tools = [];
  for (const document of report.listing || []) {
    if (!Array.isArray(document.tools)) continue;
    for (const tool of document.tools) if (!denied.has(tool && tool.name)) tools.push(tool);
  }
  return tools;
}

module.exports = {
  McpLockError,
  judgedTools,
  MissingBinaryError,
  verify,
  checkListing,
  checkSession,
  declaredHandshake,
  observeSession,
  guarded,
  findBinary,
  platformKey,
};
