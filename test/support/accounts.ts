/** Keys of two accounts, as the ownership and management tests need them. */
import type { TestServer } from './server.ts';

export interface TestKey {
  id: string;
  secret: string;
  accountId: string;
}

/** An account with an operator key (`ops`) and an agent key (`bot`), and an operator key of another account (`stranger`). */
export async function twoAccounts(s: TestServer): Promise<{ ops: TestKey; bot: TestKey; stranger: TestKey }> {
  const ops = await s.newKey('ops');
  const bot = await s.newKey('bot', 1000, 'agent', ops.accountId);
  const stranger = await s.newKey('stranger');
  return { ops, bot, stranger };
}
