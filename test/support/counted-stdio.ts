/**
 * Runs a stdio MCP server (the command after the log file) with its stdin and
 * stdout relayed unchanged, and appends to the log file, before relaying it,
 * one line per JSON-RPC request the client sent: its method, and the tool's
 * name for a tools/call. So a test counts what reached a server it did not write.
 *
 *   node test/support/counted-stdio.ts LOG COMMAND ARGS...
 */
import { spawn } from 'node:child_process';
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const [log, command, ...args] = process.argv.slice(2);
if (!log || !command) throw new Error('usage: counted-stdio.ts LOG COMMAND ARGS...');
const server = spawn(command, args, { stdio: ['pipe', 'inherit', 'inherit'] });
server.once('exit', (code) => process.exit(code ?? 0));

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  try {
    const m = JSON.parse(line) as { id?: unknown; method?: unknown; params?: { name?: unknown } };
    if (m.id !== undefined && typeof m.method === 'string')
      appendFileSync(log, `${m.method}${m.method === 'tools/call' ? ` ${String(m.params?.name)}` : ''}\n`);
  } catch {
    // not JSON: relayed as it is
  }
  server.stdin.write(line + '\n');
}
server.stdin.end();
