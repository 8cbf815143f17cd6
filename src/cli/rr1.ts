/** RR-1 conformance check against any service: manifest, challenge, replay. */
import { checkConformance } from '../rr1/conformance.ts';
import { type Command, UsageError } from './shared.ts';

export const rr1Commands: Record<string, Command> = {
  'rr1 check': {
    usage: 'rr1 check URL [--receipt JWS]',
    summary: 'run the RR-1 conformance steps (manifest, 428 challenge, replay refusals) against a service',
    async run(ctx) {
      const url = ctx.args[0];
      if (!url || !/^https?:\/\//.test(url)) throw new UsageError('the service base URL (http:// or https://) is required');
      const receipt = typeof ctx.flags.receipt === 'string' ? ctx.flags.receipt : undefined;
      const r = await checkConformance(url, receipt ? { receipt } : {});
      const lines = r.steps.map((s) => `  ${s.ok ? 'ok  ' : 'FAIL'} ${s.step}: ${s.detail}`);
      ctx.out([`${r.url}: ${r.conformant ? r.badge : 'not RR-1 conformant'}`, ...lines].join('\n'), r);
      return r.conformant ? 0 : 1;
    },
  },
};
