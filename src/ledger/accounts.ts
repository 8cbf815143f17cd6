/**
 * Accounts: an account owns its keys and everything they make (fuses, licence
 * parents, tickets, grants, triggers, webhooks; receipts through the key that
 * acted). `ownerId` is the one rule that says whose an object is: every route
 * stores and looks objects up under it, so the ownership model changes here.
 */
import type { Client, Transaction } from '@libsql/client';
import { newId, nowIso } from '../ids.ts';

export interface Account {
  id: string;
  name: string;
  created_at: string;
}

/** The owner id objects of this key are stored and found under: its account. */
export function ownerId(key: { account_id: string }): string {
  return key.account_id;
}

export async function insertAccount(tx: Transaction, input: { id?: string; name: string; now?: string }): Promise<Account> {
  const account = { id: input.id ?? newId('acct'), name: input.name, created_at: input.now ?? nowIso() };
  await tx.execute({ sql: 'INSERT INTO accounts (id, name, created_at) VALUES (?, ?, ?)', args: [account.id, account.name, account.created_at] });
  return account;
}

export async function getAccount(db: Client | Transaction, id: string): Promise<Account | undefined> {
  const r = (await db.execute({ sql: 'SELECT id, name, created_at FROM accounts WHERE id = ?', args: [id] })).rows[0];
  return r ? { id: String(r.id), name: String(r.name), created_at: String(r.created_at) } : undefined;
}

/** The account a key belongs to (undefined for no such key): decides whose a receipt is. */
export async function accountOfKey(db: Client | Transaction, keyId: string): Promise<string | undefined> {
  const r = (await db.execute({ sql: 'SELECT account_id FROM api_keys WHERE id = ?', args: [keyId] })).rows[0];
  return r ? String(r.account_id) : undefined;
}

/** Whether a receipt made by key `receiptKeyId` belongs to the caller's account. */
export async function receiptVisibleTo(db: Client | Transaction, receiptKeyId: string | undefined, caller: { account_id: string }): Promise<boolean> {
  return receiptKeyId !== undefined && (await accountOfKey(db, receiptKeyId)) === ownerId(caller);
}
