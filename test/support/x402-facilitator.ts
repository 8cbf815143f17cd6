/**
 * A local x402 facilitator on a real HTTP port, built on the official
 * packages (x402Facilitator of @x402/core, the exact EVM scheme of @x402/evm)
 * over the in-process chain. `mode` lets a test make it slow or unreachable.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { x402Facilitator } from '@x402/core/facilitator';
import { toFacilitatorEvmSigner } from '@x402/evm';
import { registerExactEvmScheme } from '@x402/evm/exact/facilitator';
import { ExactEvmSchemeV1 } from '@x402/evm/exact/v1/facilitator';
import { NETWORK, type TestChain } from './evm-chain.ts';

export interface TestFacilitator {
  url: string;
  facilitator: x402Facilitator;
  /** 'ok' answers; 'hang-settle' never answers /settle (a slow facilitator). */
  mode: 'ok' | 'hang-settle';
  calls: { verify: number; settle: number };
  close(): Promise<void>;
}

/** `authorization`: the Authorization header value the facilitator demands (401 without it). */
export async function startTestFacilitator(c: TestChain, authorization?: string): Promise<TestFacilitator> {
  const w = c.facilitatorClient;
  // viem's wallet client with public actions is what the official signer wraps; `address` names its account.
  const signer = toFacilitatorEvmSigner(
    Object.assign(w, { address: w.account.address }) as unknown as Parameters<typeof toFacilitatorEvmSigner>[0],
  );
  const facilitator = registerExactEvmScheme(new x402Facilitator(), { signer, networks: NETWORK });
  // x402 v1 clients name the network; this chain has Base Sepolia's id.
  facilitator.registerV1('base-sepolia' as typeof NETWORK, new ExactEvmSchemeV1(signer));
  const state: TestFacilitator = {
    url: '',
    facilitator,
    mode: 'ok',
    calls: { verify: 0, settle: 0 },
    close: async () => {},
  };
  const hanging = new Set<import('node:http').ServerResponse>();
  const server: Server = createServer((req, res) => {
    let raw = '';
    req.on('data', (d: Buffer) => (raw += d.toString('utf8')));
    req.on('end', () => {
      void (async () => {
        const send = (status: number, body: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(body, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v)));
        };
        try {
          if (authorization && req.headers.authorization !== authorization) return send(401, { error: 'unauthorized' });
          if (req.method === 'GET' && req.url === '/supported') return send(200, facilitator.getSupported());
          const body = JSON.parse(raw || '{}') as { paymentPayload: never; paymentRequirements: never };
          if (req.url === '/verify') {
            state.calls.verify++;
            return send(200, await facilitator.verify(body.paymentPayload, body.paymentRequirements));
          }
          if (req.url === '/settle') {
            state.calls.settle++;
            if (state.mode === 'hang-settle') return void hanging.add(res);
            return send(200, await facilitator.settle(body.paymentPayload, body.paymentRequirements));
          }
          send(404, { error: 'not found' });
        } catch (e) {
          send(500, { error: String(e) });
        }
      })();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.close = () =>
    new Promise<void>((resolve) => {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return state;
}
