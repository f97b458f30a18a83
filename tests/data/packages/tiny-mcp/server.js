#!/usr/bin/env node
// A tiny stdio MCP server: one tool, and its own package version in serverInfo and
// in the tool's answer, so a test can tell which release runs. The tool definitions
// do not depend on the version. Published as tiny-mcp-deps (with a dependency on
// tiny-dep), the answer also names the tiny-dep version it loaded, so a test can tell
// which dependency closure runs.
"use strict";
const { name, version } = require("./package.json");
let dep = null;
try {
  dep = require("tiny-dep");
} catch {
  // tiny-mcp itself has no dependency.
}
const readline = require("readline");

const tools = [
  {
    name: "version",
    description: "Says which release of this server is running",
    inputSchema: { type: "object", properties: {} },
  },
];

function send(message) {
  process.stdout.write(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n");
}

readline.createInterface({ input: process.stdin }).on("line", (line) => {
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    return;
  }
  if (msg.id === undefined || msg.id === null) return;
  const { id, method, params } = msg;
  if (method === "initialize") {
    send({
      id,
      result: {
        protocolVersion: (params && params.protocolVersion) || "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "tiny-mcp", version },
      },
    });
  } else if (method === "tools/list") {
    send({ id, result: { tools } });
  } else if (method === "tools/call" && params && params.name === "version") {
    send({ id, result: { content: [{ type: "text", text: dep ? `${name} ${version} tiny-dep ${dep.version}` : `tiny-mcp ${version}` }] } });
  } else if (method === "ping") {
    send({ id, result: {} });
  } else {
    send({ id, error: { code: -32601, message: `method not found: ${method}` } });
  }
});
