// Preload for running third-party MCP HTTP servers in tests:
//
//   MCP_LOCK_PORT_FILE=/tmp/x/port node --require loopback-listen.cjs server.js ...
//
// Real servers (e.g. @modelcontextprotocol/server-everything) call
// `app.listen(PORT)` with no host, which binds every interface, and a fixed
// port, which collides when tests run in parallel. We patch
// net.Server.prototype.listen (http/https servers inherit it) so every TCP
// listen goes to 127.0.0.1 on an OS-chosen free port, whatever was asked.
// The real port is published through MCP_LOCK_PORT_FILE, written to a temp
// file and renamed into place so a polling reader never sees a partial file.
'use strict';
const fs = require('fs');
const net = require('net');

const origListen = net.Server.prototype.listen;

net.Server.prototype.listen = function listen(...args) {
  // Node's accepted forms: (port?, host?, backlog?, cb?), (options, cb?),
  // (path, backlog?, cb?), (handle, backlog?, cb?). The callback is always last.
  const cb = typeof args[args.length - 1] === 'function' ? args.pop() : undefined;
  const first = args[0];
  const isObj = first !== null && typeof first === 'object';
  // Unix sockets / named pipes and inherited handles are not network-reachable
  // and have no port: leave them alone. (A non-numeric string is a pipe path.)
  if ((typeof first === 'string' && !/^\s*\d*\s*$/.test(first)) ||
      (isObj && (first.path != null || first.fd != null || first._handle || first.handle))) {
    return origListen.apply(this, cb ? [...args, cb] : args);
  }
  const opts = { ...(isObj ? first : {}), host: '127.0.0.1', port: 0 };
  // Keep a positional backlog (port, host, backlog) if one was given.
  const backlog = args.find((a, i) => i > 0 && typeof a === 'number');
  if (!isObj && backlog !== undefined) opts.backlog = backlog;
  delete opts.ipv6Only; // meaningless for an IPv4 host

  // Registered before the caller's callback, so the port file exists by the
  // time the program logs "listening".
  this.once('listening', () => writePortFile(this.address().port));
  return cb ? origListen.call(this, opts, cb) : origListen.call(this, opts);
};

let written = false;
function writePortFile(port) {
  const file = process.env.MCP_LOCK_PORT_FILE;
  // Only the first listening server is published; test servers have one.
  if (!file || written) return;
  written = true;
  const tmp = `${file}.${process.pid}.tmp`; // same dir => rename is atomic
  fs.writeFileSync(tmp, `${port}\n`);
  fs.renameSync(tmp, file);
}
