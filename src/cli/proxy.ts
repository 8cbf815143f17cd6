/**
 * `fusegate proxy`: an MCP server in front of another MCP server whose every
 * `tools/call` asks the gate first (src/proxy/, docs/agents-behind-a-fuse.md).
 * An agent's MCP configuration launches it in place of the server it fronts.
 * It writes to stderr only: in stdio mode stdout carries the protocol. The
 * proxy itself (src/proxy/main.ts) is loaded only when it runs, so that the
 * other commands do not load the MCP SDK.
 */
import { type CliContext, type Command, intFlag, requireFlag, UsageError } from './shared.ts';

/** --listen: a TCP port; 0 takes a free one (the log line says which). */
function portFlag(ctx: CliContext): number | undefined {
  const v = ctx.flags.listen;
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n < 0 || n > 65535)
    throw new UsageError('--listen must be a port number (0 takes a free one)');
  return n;
}

function upstreamOf(ctx: CliContext): { url: URL } | { command: string[] } {
  const url = ctx.flags.upstream;
  if (typeof url === 'string' && ctx.command.length > 0) throw new UsageError('give either --upstream URL or -- COMMAND ARGS..., not both');
  if (typeof url === 'string') {
    const parsed = URL.canParse(url) ? new URL(url) : undefined;
    if (!parsed || !/^https?:$/.test(parsed.protocol)) throw new UsageError(`--upstream must be an http(s) URL, not ${url}`);
    return { url: parsed };
  }
  if (ctx.command.length === 0) throw new UsageError('the upstream is required: --upstream URL, or -- COMMAND ARGS... to run it');
  return { command: ctx.command };
}

export const proxyCommands: Record<string, Command> = {
  proxy: {
    usage:
      'proxy --fuse FUSE_ID [--kinds FILE] [--listen PORT] [--gate-timeout SECONDS] [--hold-wait SECONDS] (--upstream URL | -- COMMAND ARGS...)',
    summary: 'an MCP server fronting another, whose every tools/call asks the gate first (FUSEGATE_URL, FUSEGATE_KEY)',
    takesCommand: true,
    async run(ctx) {
      const fuse = requireFlag(ctx, 'fuse');
      const upstream = upstreamOf(ctx);
      const port = portFlag(ctx);
      const timeoutSeconds = intFlag(ctx, 'gate-timeout');
      const gateTimeoutMs = timeoutSeconds !== undefined ? timeoutSeconds * 1000 : undefined;
      const holdWaitSeconds = intFlag(ctx, 'hold-wait');
      if (!process.env.FUSEGATE_URL) throw new UsageError('set FUSEGATE_URL to the gate, e.g. http://localhost:4321');
      if (!process.env.FUSEGATE_KEY) throw new UsageError("set FUSEGATE_KEY to the agent's API key");
      const { runProxy, KindsFileError } = await import('../proxy/main.ts');
      const kindsFile = typeof ctx.flags.kinds === 'string' ? ctx.flags.kinds : undefined;
      try {
        await runProxy({
          fuse,
          upstream,
          kindsFile,
          port,
          gateTimeoutMs,
          holdWaitSeconds,
          env: process.env,
          log: (line) => void process.stderr.write(line + '\n'),
        });
      } catch (e) {
        if (e instanceof KindsFileError) throw new UsageError(e.message);
        throw e;
      }
      return 0;
    },
  },
};
