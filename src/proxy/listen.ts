/**
 * `fusegate proxy --listen PORT`: the proxy as a streamable HTTP MCP server at
 * http://127.0.0.1:PORT/mcp, one session (and its own upstream connection)
 * per client, from its `initialize` to its DELETE or the proxy's end. It
 * listens on loopback only and answers only requests whose Host names it
 * there (DNS rebinding): put it beside the agent, not on a network.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { serveSession, type SessionOptions } from './session.ts';

/** The largest JSON-RPC body the proxy reads: a tool's arguments may carry a file, but not an unbounded one. */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

export interface Listening {
  url: string;
  close(): Promise<void>;
}

function rpcError(res: ServerResponse, status: number, code: number, message: string): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new RangeError(`the body is larger than ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

export async function listen(port: number, opts: SessionOptions): Promise<Listening> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let hosts: Set<string>;

  const http = createServer(async (req, res) => {
    try {
      if (!hosts.has(req.headers.host ?? '')) return rpcError(res, 403, -32000, 'the Host header does not name this proxy');
      if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') return rpcError(res, 404, -32000, 'the MCP endpoint is /mcp');
      const id = req.headers['mcp-session-id'];
      if (typeof id === 'string') {
        const transport = sessions.get(id);
        if (!transport) return rpcError(res, 404, -32001, 'no such session: initialize a new one');
        return await transport.handleRequest(req, res);
      }
      if (req.method !== 'POST') return rpcError(res, 400, -32000, 'no session: POST an initialize request first');
      let body: unknown;
      try {
        body = await readJson(req);
      } catch (e) {
        return rpcError(res, 400, -32700, `the body is not JSON: ${(e as Error).message}`);
      }
      if (!isInitializeRequest(body)) return rpcError(res, 400, -32000, 'no session: POST an initialize request first');
      const transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (sid) => void sessions.set(sid, transport),
      });
      void serveSession(transport, opts)
        .catch((e: Error) => opts.log(`fusegate proxy: a session failed: ${e.message}`))
        .finally(() => transport.sessionId && sessions.delete(transport.sessionId));
      await transport.handleRequest(req, res, body);
    } catch (e) {
      opts.log(`fusegate proxy: ${(e as Error).message}`);
      if (!res.headersSent) rpcError(res, 500, -32603, 'the proxy failed to handle the request');
    }
  });

  await new Promise<void>((resolve, reject) => http.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  const bound = (http.address() as AddressInfo).port;
  hosts = new Set([`127.0.0.1:${bound}`, `localhost:${bound}`]);
  return {
    url: `http://127.0.0.1:${bound}/mcp`,
    async close() {
      await Promise.all([...sessions.values()].map((t) => t.close().catch(() => undefined)));
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
