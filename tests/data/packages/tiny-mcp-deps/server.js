#!/usr/bin/env node
// tiny-mcp with one dependency, tiny-dep: the tool answers with its own version and
// the version of tiny-dep it loaded, so a test can tell which closure runs. The tool
// definitions depend on neither.
"use strict";
const { version } = require("./package.json");
const dep = require("tiny-dep");
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
        serverInfo: { name: "tiny-mcp-deps", version },
      },
    });
  } else if (method === "tools/list") {
    send({ id, result: { tools } });
  } else if (method === "tools/call" && params && params.name === "version") {
    send({ id, result: { content: [{ type: "text", text: `tiny-mcp-deps ${version} tiny-dep ${dep.version}` }] } });
  } else if (method === "ping") {
    send({ id, result: {} });
  } else {
    send({ id, error: { code: -32601, message: `method not found: ${method}` } });
  }
});
