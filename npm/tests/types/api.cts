// The same declarations from a CommonJS consumer.
import mcpLock = require('mcp-lock');

export async function gate(): Promise<boolean> {
  const report = await mcpLock.verify({ cwd: '.' });
  const bin: string = mcpLock.findBinary();
  const key: string = mcpLock.platformKey();
  return report.passed && bin.length > 0 && key.length > 0;
}
