/**
 * The running gate, for the commands that change what the service must
 * record itself (reviews, members): FUSEGATE_URL with the operator key in
 * FUSEGATE_KEY, through the typed client.
 */
import { FuseGateClient, FuseGateError, type OperationInput, type OperationName } from '../client.ts';
import { type CliContext, UsageError } from './shared.ts';

export function gateClient(): FuseGateClient {
  if (!process.env.FUSEGATE_URL) throw new UsageError('set FUSEGATE_URL to the gate, e.g. http://localhost:4321');
  if (!process.env.FUSEGATE_KEY) throw new UsageError('set FUSEGATE_KEY to an operator API key of the account');
  return new FuseGateClient({ baseUrl: process.env.FUSEGATE_URL, apiKey: process.env.FUSEGATE_KEY });
}

/** Calls `name`; a problem answered is printed as `what: code: detail` and exits 1. */
export async function callGate<N extends OperationName>(
  ctx: CliContext,
  what: string,
  name: N,
  input: OperationInput[N],
): Promise<Record<string, unknown> | undefined> {
  try {
    return (await gateClient().call(name, input)) as Record<string, unknown>;
  } catch (e) {
    if (!(e instanceof FuseGateError)) throw e;
    ctx.out(`${what}: ${e.problem.code}: ${e.problem.detail ?? e.problem.title}`, e.problem);
    return undefined;
  }
}
