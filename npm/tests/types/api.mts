// Type-checked with `tsc --noEmit --strict` (tests/dist_npm.rs): the declarations in
// npm/mcp-lock/index.d.ts, as an ESM consumer uses them. The @ts-expect-error lines
// are misuses the declarations must refuse.
import {
  McpLockError,
  checkListing,
  checkSession,
  guarded,
  observeSession,
  verify,
  type Change,
  type Finding,
  type Report,
  type ServerResult,
  type SessionClient,
} from 'mcp-lock';

async function gate(): Promise<number> {
  const report: Report = await verify({ cwd: '.', servers: ['github'], warn: ['additive'], offline: true });
  const server: ServerResult = report.servers[0];
  if (server.verdict === 'stale') {
    const change: Change = server.changes[0];
    const finding: Finding = change.findings[0];
    const worst: 'authority' | 'breaking' | 'semantic' | 'additive' | 'cosmetic' | null = change.class;
    console.log(change.tool, change.pinnedHash?.slice(0, 12), finding.pointer, finding.instructsModel, worst);
  }
  // @ts-expect-error not a verdict
  if (server.verdict === 'drifted') return 9;
  // @ts-expect-error exit 2 rejects, it never comes with a report
  const two: Report['exitCode'] = 2;
  void two;
  for (const change of server.serverChanges) {
    if (change.field === 'instructions' && change.live === null) console.log('instructions removed', change.pinned);
  }
  const one = await verify({ servers: 'github' });
  return report.exitCode + one.exitCode;
}

async function listing(): Promise<void> {
  const page = { tools: [{ name: 'x', inputSchema: { type: 'object' } }], nextCursor: 'p2' };
  const report = await checkListing('github', [page], { client: 'claude-code', exact: true });
  console.log(report.summary.incomplete, report.raw['report_version']);
  await checkListing('github', '{"tools": []}');
  await checkListing('github', new TextEncoder().encode('{"tools": []}'));
  // @ts-expect-error the server name comes first
  await checkListing([page]);
  try {
    await verify({ lock: 'missing.lock' });
  } catch (error) {
    if (error instanceof McpLockError) console.log(error.exitCode, error.stderr, error.message);
  }
}

declare const client: SessionClient;
async function session(): Promise<boolean> {
  const report = await checkSession(client, 'github', { requestOptions: { timeout: 5000 }, timeout: 60, maxPages: 10 });
  // @ts-expect-error the whole listing's timeout is a number of seconds
  await checkSession(client, 'github', { timeout: '60s' });
  await checkSession(client, 'github', { signal: AbortSignal.timeout(1000) });
  console.log(report.listingErrors.join('\n'), report.listing.length);
  return report.passed;
}

const params = guarded({ command: 'npx', args: ['-y', 'server'], env: { A: 'b' } }, 'github', { cwd: '/p', onDrift: 'fail' });
const env: Record<string, string> = params.env;
// @ts-expect-error onDrift is hide or fail
guarded({ command: 'x' }, 's', { onDrift: 'drop' });
const transport = observeSession({ send: async (_message: unknown) => {}, extra: 1 });
const kept: number = transport.extra;

void gate;
void listing;
void session;
void env;
void kept;
