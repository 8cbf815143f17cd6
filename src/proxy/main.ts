/**
 * Runs the proxy until its client goes away (stdio) or it is stopped (HTTP):
 * `fusegate proxy` (src/cli/proxy.ts) checks its flags, then loads this.
 */
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { gateFromEnv } from '../guard/guard.ts';
import { keptAliveFetch } from './gate-fetch.ts';
import { readKindsFile } from './kinds-file.ts';
import { listen } from './listen.ts';
import { serveSession, type SessionOptions } from './session.ts';
import { ToolGate } from './tool-gate.ts';

export { KindsFileError } from './kinds-file.ts';

/** Sent as the Authorization header to an HTTP upstream; never passed to a stdio upstream, nor is the gate's key. */
export const UPSTREAM_AUTHORIZATION = 'FUSEGATE_UPSTREAM_AUTHORIZATION';
const WITHHELD_FROM_UPSTREAM = ['FUSEGATE_KEY', UPSTREAM_AUTHORIZATION];

export interface ProxyPlan {
  fuse: string;
  /** An HTTP upstream's URL, or the command that runs a stdio upstream. */
  upstream: { url: URL } | { command: string[] };
  kindsFile?: string | undefined;
  /** Serve streamable HTTP on this loopback port (0: a free one); else stdio. */
  port?: number | undefined;
  /** How long a call waits for the gate (default: the guards', DEFAULT_GATE_TIMEOUT_MS). */
  gateTimeoutMs?: number | undefined;
  /** How long a held payment call waits for its review to be answered (default 0: answered at once). */
  holdWaitSeconds?: number | undefined;
  env: Record<string, string | undefined>;
  log: (line: string) => void;
}

function upstreamTransport(plan: ProxyPlan): () => Transport {
  const up = plan.upstream;
  if ('url' in up) {
    const authorization = plan.env[UPSTREAM_AUTHORIZATION];
    return () => new StreamableHTTPClientTransport(up.url, authorization ? { requestInit: { headers: { authorization } } } : {});
  }
  const [command, ...args] = up.command as [string, ...string[]];
  // The upstream runs with the proxy's environment, as it would if launched directly, less the gate's secrets.
  const env = Object.fromEntries(
    Object.entries(plan.env).filter((e): e is [string, string] => e[1] !== undefined && !WITHHELD_FROM_UPSTREAM.includes(e[0])),
  );
  return () => new StdioClientTransport({ command, args, env, stderr: 'inherit' });
}

/** Resolves on SIGINT or SIGTERM. */
const stopSignal = () =>
  new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop).off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop).on('SIGTERM', stop);
  });

export async function runProxy(plan: ProxyPlan): Promise<void> {
  const rules = plan.kindsFile !== undefined ? readKindsFile(plan.kindsFile) : undefined;
  const gate = new ToolGate(gateFromEnv(plan.env, plan.gateTimeoutMs, keptAliveFetch()), plan.fuse, rules, {
    holdWaitSeconds: plan.holdWaitSeconds,
  });
  const opts: SessionOptions = {
    upstream: upstreamTransport(plan),
    check: (tool, args, description) => gate.check(tool, args, description),
    log: plan.log,
  };
  const label = 'url' in plan.upstream ? plan.upstream.url.origin + plan.upstream.url.pathname : plan.upstream.command.join(' ');
  const gating = `gating ${label} on fuse ${plan.fuse} (gate ${plan.env.FUSEGATE_URL})`;

  if (plan.port !== undefined) {
    const server = await listen(plan.port, opts);
    plan.log(`fusegate proxy: listening on ${server.url}, ${gating}`);
    await stopSignal();
    await server.close();
    return;
  }
  const stdio = new StdioServerTransport();
  // The client closing stdin, or stopping the proxy, ends the session, and the upstream with it.
  const end = () => void stdio.close();
  process.stdin.once('end', end);
  void stopSignal().then(end);
  plan.log(`fusegate proxy: serving on stdio, ${gating}`);
  try {
    await serveSession(stdio, opts);
  } catch (e) {
    plan.log(`fusegate proxy: ${(e as Error).message}`);
  } finally {
    process.stdin.off('end', end);
  }
}
