// An MCP server on the official TypeScript SDK's low-level Server, whose definitions
// carry members the SDK's client-side schemas do not model: an unknown tool member, an
// unknown annotation, an unknown prompt member, and extras in serverInfo and the
// capabilities. Tools come two to a page.
//
//   node sdk_server.mjs SDK_DIR [--undeclared-tools]
//
// SDK_DIR is the @modelcontextprotocol/sdk package folder. With --undeclared-tools the
// server answers tools/list but leaves `tools` out of its capabilities, as some do.

import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [sdk, ...options] = process.argv.slice(2);
const undeclaredTools = options.includes('--undeclared-tools');
const load = (file) => import(pathToFileURL(join(sdk, 'dist/esm', file)).href);
const { Server } = await load('server/index.js');
const { StdioServerTransport } = await load('server/stdio.js');
const { ListToolsRequestSchema, ListPromptsRequestSchema } = await load('types.js');

const tools = [
  {
    name: 'lookup',
    description: 'Look a word up.',
    inputSchema: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    annotations: { readOnlyHint: true, 'x-costHint': 'cheap' },
    'x-vendor': { tier: 'gold' },
  },
  {
    name: 'translate',
    inputSchema: { type: 'object', properties: { text: { type: 'string' }, to: { type: 'string', enum: ['de', 'fr'] } } },
    execution: { taskSupport: 'optional', 'x-queue': 'slow' },
  },
  {
    name: 'define',
    title: 'Define',
    inputSchema: { type: 'object' },
    icons: [{ src: 'https://example.invalid/i.png', 'x-dark': true }],
  },
];
const pageSize = 2;

const server = new Server(
  { name: 'sdk-extras', version: '1.0.0', 'x-build': '2026-01-01' },
  {
    capabilities: { tools: { listChanged: false }, prompts: {}, experimental: { 'x-trace': {} } },
    instructions: 'Use lookup before define.',
  },
);
server.setRequestHandler(ListToolsRequestSchema, (request) => {
  const start = Number(request.params?.cursor ?? 0);
  const page = { tools: tools.slice(start, start + pageSize) };
  if (start + pageSize < tools.length) page.nextCursor = String(start + pageSize);
  return page;
});
server.setRequestHandler(ListPromptsRequestSchema, () => ({
  prompts: [{ name: 'explain', arguments: [{ name: 'topic', required: true, 'x-hint': 'one word' }], 'x-audience': 'kids' }],
}));
if (undeclaredTools) {
  // The SDK refuses a tools/list handler without the capability, and offers no way to
  // withdraw one: take it out of what initialize will declare.
  delete server._capabilities.tools;
}
await server.connect(new StdioServerTransport());
