// Types of the mcp-lock API (index.js). The report members are those of
// `mcp-lock verify --format json` (docs/json-report.md), in camelCase; `raw` keeps the
// report as mcp-lock wrote it.

/** A server's verdict for one client profile. */
export type Verdict = 'converged' | 'stale' | 'incomplete' | 'unverifiable';
/** How serious a change is (docs/policy.md, the change classes). */
export type ChangeClass = 'authority' | 'breaking' | 'semantic' | 'additive' | 'cosmetic';
/** What the policy does with a change. */
export type Action = 'fail' | 'warn' | 'allow';
export type Transport = 'stdio' | 'streamable-http' | 'sse';
export type DefinitionKind = 'tool' | 'prompt' | 'resource_template' | 'resource';
/** A class, or a policy rule such as `tool-added` or `package-changed`. */
export type PolicyClass = ChangeClass | (string & {});

export interface Summary {
  converged: number;
  stale: number;
  incomplete: number;
  unverifiable: number;
  fail: number;
  warn: number;
  allow: number;
}

/** One reason a definition changed. */
export interface Finding {
  class: ChangeClass;
  /** RFC 6901 pointer into the definition; `""` for the whole definition. */
  pointer: string;
  before: unknown;
  after: unknown;
  reason: string;
  /** The description newly tells the model what to do. */
  instructsModel: boolean;
}

/** A definition added, removed, changed or renamed since the pin. */
export interface Change {
  kind: DefinitionKind;
  /** The definition's key: a tool's or prompt's name, a template's uriTemplate, a resource's uri. */
  tool: string;
  change: 'added' | 'removed' | 'changed' | 'renamed';
  /** The worst class among the findings. */
  class: ChangeClass | null;
  action: Action;
  /** For `changed`: which of description, inputSchema, outputSchema, annotations, other differ. */
  parts: string[];
  /** Worst first. */
  findings: Finding[];
  pinnedHash: string | null;
  liveHash: string | null;
  /** Why the live definition can never match a pin, else null. */
  problem: string | null;
  /** For `renamed`: the old key. */
  renamedFrom: string | null;
}

/** What a ServerChange is about (docs/json-report.md); other names may be added. */
export type ServerField =
  | 'instructions'
  | 'server_identity'
  | 'server_info'
  | 'protocol_version'
  | 'list_changed'
  | 'client_capabilities'
  | 'client_info'
  | 'launch'
  | 'server'
  | 'profile'
  | (string & {});

/** A difference in what the server says about itself (instructions, identity, …). */
export interface ServerChange {
  field: ServerField;
  /**
   * The pinned side, always as text, or null where there is none: for `instructions`
   * a SHA-256 hex hash of the text (null: no instructions), for `server_identity`
   * serverInfo.name, for `server_info`, `client_capabilities` and `client_info` the
   * canonical JSON text of the object, for `list_changed` `"true"` or `"false"`, for
   * `launch` the launch in one line, for `server` and `profile` the name.
   */
  pinned: string | null;
  /** The live side, as `pinned` says; null for `server` and `profile` (gone). */
  live: string | null;
  /** True when it makes the server stale; false for a note. */
  drift: boolean;
  class: ChangeClass | null;
  action: Action | null;
  rule: string | null;
}

/** What a stdio server's entry launches, against the lock's package pin (verify only). */
export interface PackageCheck {
  status: 'pinned' | 'changed' | 'floating' | 'not_pinned_yet' | 'unrecognised' | 'skipped' | 'unverifiable';
  kind: string;
  launcher: string | null;
  pinned: string | null;
  live: string | null;
  message: string | null;
  action: Action;
}

/** A declared handshake no pinned profile matches: how far it is, and what pins it. */
export interface MissingProfile {
  /** The pinned profile with the fewest differences. */
  closest: string;
  /** JSON pointers from its capabilities to the declared ones: `+/sampling`, `-/roots`, `~/roots/listChanged`. */
  difference: string[];
  /** A known profile (built in, or in mcp-lock.toml) with the declared capabilities. */
  profile: string | null;
  /** The command that pins the client, or what to define first. */
  pinWith: string;
}

/** What a client sends at initialize (the params of its `initialize` request). */
export interface Handshake {
  protocolVersion?: string;
  capabilities: Record<string, unknown>;
  clientInfo?: Record<string, unknown>;
  [member: string]: unknown;
}

/** One server under one client profile. */
/** A definition the tool rules (docs/tool-rules.md) deny to the report's host. */
export interface Denied {
  kind: 'tool' | 'prompt' | 'resource_template';
  /** Its key, as the lock keys it (a template's uriTemplate). */
  name: string;
  /** The rule as its file says it, e.g. `[tools] deny "github/delete_*"`. */
  rule: string;
  /** The file that holds the rule. */
  source: string;
  /** What the policy's tool-denied rule does with it (allow: a note). */
  action: Action;
}

export interface ServerResult {
  name: string;
  profile: string;
  profilePinned: boolean;
  transport: Transport;
  verdict: Verdict;
  pinned: boolean;
  action: Action;
  /** Why the server is not converged, when there is one line to say. */
  error: string | null;
  tools: number | null;
  prompts: number | null;
  resourceTemplates: number | null;
  resources: number | null;
  notPinnedYet: string[];
  /** Kinds the server declares but answers -32601 (method not found) for: pinned as none. */
  notImplemented: string[];
  changes: Change[];
  serverChanges: ServerChange[];
  rejected: Array<{ name: string; reason: string }>;
  package: PackageCheck | null;
  /**
   * The client's declared handshake (checkSession, checkListing's `handshake`) matches
   * no profile the lock pins the server under: the listing was judged against every
   * approved definition and the server is stale (exit 1).
   */
  missingProfile: MissingProfile | null;
  /** Definitions the tool rules deny to this host: pinned, never to be used. */
  denied: Denied[];
  stderr: string[];
  elapsedMs: number | null;
  /** This server's entry as mcp-lock wrote it. */
  raw: Record<string, unknown>;
}

export interface Report {
  /** 0: nothing the policy fails; 1: a change the policy fails; 3: incomplete or unverifiable. */
  exitCode: 0 | 1 | 3;
  /** exitCode is 0. */
  passed: boolean;
  reportVersion: number;
  lock: string;
  summary: Summary;
  servers: ServerResult[];
  /** The JSON report as mcp-lock wrote it. */
  raw: Record<string, unknown>;
}

/**
 * The tools checkSession judged, as the session received them, without those the tool
 * rules deny to this host: what the agent should plan with once `report.passed`.
 */
export function judgedTools(report: SessionReport): Array<Record<string, unknown>>;

/** What checkSession sent to check-listing, and what went wrong while listing. */
export interface SessionReport extends Report {
  /**
   * One line per kind whose listing stopped early: a request that failed, timed out
   * or was aborted, a repeated cursor, more than maxPages pages (the kind is then
   * judged incomplete).
   */
  listingErrors: string[];
  /** The documents judged: the session, then every page as received. */
  listing: Array<Record<string, unknown>>;
}

/**
 * mcp-lock could not judge: exit 2 (usage, config, lock or input error), any other
 * code, no report, a report whose `exit_code` is not the process's, or a call aborted
 * by its `signal` (exitCode null, `cause` the AbortError or the signal's reason).
 */
export class McpLockError extends Error {
  constructor(message: string, details?: { exitCode?: number | null; stderr?: string; cause?: unknown });
  /** The one-line error, without `error: `. */
  message: string;
  /** The process's exit code; null when it did not run, was aborted, or a signal ended it. */
  exitCode: number | null;
  /** Everything mcp-lock wrote on stderr. */
  stderr: string;
}

/** No mcp-lock binary is installed for this platform. */
export class MissingBinaryError extends Error {
  /** The platform key, e.g. `linux-arm64-musl`. */
  platform: string;
}

export interface RunOptions {
  /** The project directory (where the client config and mcp.lock are found). */
  cwd?: string;
  /** Variables added to this process's environment. */
  env?: Record<string, string>;
  /** The mcp-lock binary to run (else $MCP_LOCK_BIN, else the platform package's). */
  binary?: string;
  /** Aborting ends the run (the binary is sent SIGTERM) and rejects with McpLockError. */
  signal?: AbortSignal;
}

export interface JudgeOptions extends RunOptions {
  /** A client config to read instead of discovering one. */
  config?: string;
  /** A client's user-level config (`claude-code`, `vscode`, …). */
  user?: string;
  lock?: string;
  policy?: string;
  /** The client profile to judge under. */
  client?: string;
  fail?: PolicyClass[] | string;
  warn?: PolicyClass[] | string;
  allow?: PolicyClass[] | string;
  /** Fail every difference, whatever the classes' actions. */
  exact?: boolean;
  /** More arguments for the command. */
  args?: string[];
}

export interface VerifyOptions extends JudgeOptions {
  /** Only these servers (by config name); a string is one name. */
  servers?: string | readonly string[];
  /** Skip registry look-ups of package pins. */
  offline?: boolean;
  /** Seconds, per server. */
  timeout?: number;
  requestTimeout?: number;
  jobs?: number;
}

/**
 * JSON text (sent as it is), bytes, or JSON values: a list page
 * (`{tools, nextCursor?}`, prompts, resourceTemplates), a JSON-RPC answer holding one,
 * the session (`{protocolVersion, serverInfo, instructions, capabilities}`), or an
 * array of these in order.
 */
export type Listing = string | Uint8Array | Record<string, unknown> | ReadonlyArray<unknown>;

/** `mcp-lock verify --format json`. Rejects with McpLockError on exit 2 or no report. */
export function verify(options?: VerifyOptions): Promise<Report>;

export interface CheckListingOptions extends JudgeOptions {
  /**
   * What the client declared when it connected (`--handshake`): the listing is judged
   * under the pinned profile whose capabilities equal these (`client` wins when
   * given); none: judged against every approved definition, as the guard judges
   * such a client, with `missingProfile` set.
   */
  handshake?: Handshake | null;
}

/** `mcp-lock check-listing SERVER --format json`, the listing on stdin. */
export function checkListing(server: string, listing: Listing, options?: CheckListingOptions): Promise<Report>;

/**
 * What checkSession needs of an `@modelcontextprotocol/sdk` Client (1.x), connected.
 */
export interface SessionClient {
  request(request: { method: string; params?: Record<string, unknown> }, resultSchema: any, options?: any): Promise<unknown>;
  getServerCapabilities(): object | undefined;
  getServerVersion(): object | undefined;
  getInstructions(): string | undefined;
  readonly transport?: unknown;
}

export interface SessionOptions extends CheckListingOptions {
  /**
   * Passed to each list request (the SDK's RequestOptions: `timeout` in milliseconds,
   * default 30000 as verify's `--request-timeout`; `signal`, which fails the requests
   * it aborts, so the listing is incomplete; …).
   */
  requestOptions?: { timeout?: number; signal?: AbortSignal; [option: string]: unknown };
  /**
   * Seconds for the whole listing, default 120 as verify's `--timeout`: when it runs
   * out, the request waiting is cancelled, the kinds still to list end with a cursor
   * (incomplete) and `listingErrors` says so.
   */
  timeout?: number;
  /** Stop a kind after this many pages (judged incomplete). Default 500, as verify's. */
  maxPages?: number;
}

/** Any SDK transport (StdioClientTransport, StreamableHTTPClientTransport, …). */
export interface ObservableTransport {
  send(message: any, ...rest: any[]): Promise<void>;
  onmessage?: (message: any, ...rest: any[]) => void;
}

/**
 * Keeps the initialize answer exactly as it arrives on this transport, so checkSession
 * sends the server's serverInfo and capabilities whole (the SDK keeps only the members
 * it models) and the negotiated protocol version. Call before `client.connect`.
 */
export function observeSession<T extends ObservableTransport>(transport: T): T;

/**
 * Lists every page of tools (always) and of prompts and resource templates (when
 * declared) in this session, exactly as the server sends them, and judges them with
 * the session's serverInfo, instructions (null when the server sent none),
 * capabilities and protocol version by check-listing. A point-in-time check: launch
 * the server with guarded() to have the lock enforced for the rest of the session.
 */
export function checkSession(client: SessionClient, server: string, options?: SessionOptions): Promise<SessionReport>;

/**
 * What a connected SDK Client declared, as initialize params: the capabilities and
 * clientInfo it sent (as observeSession saw them, else as the Client keeps them) and
 * the protocol version negotiated. checkSession passes it to check-listing unless
 * `handshake` is given (`null`: none).
 */
export function declaredHandshake(client: SessionClient): Handshake | undefined;

/** The members of the SDK's StdioServerParameters guarded() reads. */
export interface StdioParams {
  command: string;
  args?: string[];
  cwd?: string;
}

export interface GuardOptions {
  /** The project directory, where the guard runs and finds mcp.lock. */
  cwd?: string;
  config?: string;
  lock?: string;
  policy?: string;
  auditLog?: string;
  onDrift?: 'hide' | 'fail';
  exact?: boolean;
  binary?: string;
}

/** The same parameters, launching the server through `mcp-lock guard SERVER -- COMMAND…`. */
export function guarded<P extends StdioParams>(params: P, server: string, options?: GuardOptions): P;

/** The mcp-lock binary this package would run (see RunOptions.binary). */
export function findBinary(override?: string): string;

/** This machine's platform key: `linux-x64-gnu`, `darwin-arm64`, `win32-x64`, … */
export function platformKey(): string;
