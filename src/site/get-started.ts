/**
 * Every command of the Get started page, in order: the page renders them and
 * test/get-started.test.ts runs them, as written, against a real server.
 * Commands are bash; `$BASE` is the service URL, and each step may set a
 * variable for the next ones from its JSON output (`sets`).
 */

export interface Step {
  id: string;
  title: string;
  /** What the reader does, in one or two sentences (plain text). */
  intro: string;
  /** The exact command, as shown on the page. */
  command: string;
  /** `lang` of the code block: a shell command or a TypeScript file. */
  lang: 'bash' | 'ts';
  /** For `ts`: the file name the reader saves it as (in a clone of the repository). */
  file?: string;
  /** Variables the reader exports from the JSON answer: name -> dotted path. */
  sets?: Record<string, string>;
  /** A fragment of the answer, shown on the page and checked by the test. */
  expect: string;
}

/** Where /start sends a visitor for a key: the dashboard guide, whose `key=operator` puts the operator choice first (step 2 creates a fuse, which needs one). */
export const OPERATOR_GUIDE = '/dashboard?key=operator';

export const GET_STARTED: readonly Step[] = [
  {
    id: 'key',
    title: 'Get an API key',
    intro:
      'Sign up (or sign in) and, on the dashboard\'s overview, choose "Create an operator key and a fuse"; store the secret, shown once. Until you make a live key, the dashboard is in test mode and makes test keys (fg_test_…): decided and receipted as live ones, logged in the test log, billed nothing (see /docs/test-mode). Running the service yourself? The CLI command below makes a test key too (without --test, a live one). These steps need an operator key: step 2 creates a fuse, which an agent key may not do (it answers 403 operator_key_required).',
    command: 'npm run cli -- keys create --name my-agent --test --json',
    lang: 'bash',
    sets: { KEY: 'key' },
    expect: '"hop_limit"',
  },
  {
    id: 'fuse',
    title: 'Create a fuse for your agent',
    intro: 'A fuse is the switch you can blow to stop an agent. It starts LIVE.',
    command: `curl -s -X POST "$BASE/v1/fuses" \\
  -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \\
  -d '{"label":"my agent"}'`,
    lang: 'bash',
    sets: { FUSE: 'fuse_id' },
    expect: '"state":"LIVE"',
  },
  {
    id: 'hop',
    title: 'Hop before the agent acts',
    intro:
      'Before each action, ask the gate. verdict true means go ahead; anything else means do not act. Every answer carries a signed receipt.',
    command: `curl -s -X POST "$BASE/v1/fuse/hop" \\
  -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \\
  -d '{"fuse_id":"'"$FUSE"'","action":{"kind":"pay"}}'`,
    lang: 'bash',
    sets: { RECEIPT: 'receipt_id' },
    expect: '"verdict":true',
  },
  {
    id: 'client',
    title: 'The same hop from TypeScript',
    intro:
      'The typed client in src/client.ts sends the same request; problems (4xx/5xx) throw, decisions are returned. Save this as first-hop.ts at the root of the repository and run it with Node 24.',
    command: `import { FuseGateClient } from './src/client.ts';

const gate = new FuseGateClient({ baseUrl: process.env.BASE!, apiKey: process.env.KEY });
const hop = await gate.hop({ fuse_id: process.env.FUSE!, action: { kind: 'pay' } });
if (!hop.verdict) throw new Error(\`refused: \${hop.reason}\`);
console.log(JSON.stringify({ verdict: hop.verdict, receipt_id: hop.receipt_id }));`,
    lang: 'ts',
    file: 'first-hop.ts',
    expect: '"verdict":true',
  },
  {
    id: 'blow',
    title: 'Blow the fuse: the agent stops',
    intro: 'Blow the fuse and hop again: a DEAD fuse fails closed, whatever the action.',
    command: `curl -s -X POST "$BASE/v1/fuses/$FUSE/dead" -H "Authorization: Bearer $KEY" >/dev/null
curl -s -X POST "$BASE/v1/fuse/hop" \\
  -H "Authorization: Bearer $KEY" -H 'content-type: application/json' \\
  -d '{"fuse_id":"'"$FUSE"'","action":{"kind":"pay"}}'`,
    lang: 'bash',
    expect: '"verdict":false',
  },
  {
    id: 'verify',
    title: 'Verify the receipt',
    intro:
      'Anyone can check a receipt without a key: its evidence (signature, inclusion proof, signed checkpoint) is public. Paste the receipt id on the Verify page of the site, or check the evidence with the CLI, which trusts only the published keys.',
    command: 'npm run -s cli -- verify receipt "$BASE/v1/receipts/$RECEIPT"',
    lang: 'bash',
    expect: 'verified',
  },
  {
    id: 'mcp',
    title: 'Connect an agent over MCP',
    intro:
      'Agents that speak the Model Context Protocol use the streaming HTTP endpoint at /mcp. Without a key it lists the public and demo tools; with your key as a bearer token it adds the keyed ones, such as fuse_hop.',
    command: `curl -s -X POST "$BASE/mcp" -H "Authorization: Bearer $KEY" \\
  -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \\
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}'`,
    lang: 'bash',
    expect: '"fuse_hop"',
  },
];
