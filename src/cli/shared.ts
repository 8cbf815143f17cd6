/** What every CLI command gets: parsed flags, the config, and ways to print. */
import type { Config } from '../config.ts';
import type { Ledger } from '../ledger/db.ts';

export interface CliContext {
  args: string[];
  /** What follows `--` (a command to run), for a command that takes one. */
  command: string[];
  flags: Record<string, string | boolean | undefined>;
  json: boolean;
  config: Config;
  /** Opens the ledger on first use (commands that need no database never open it). */
  ledger(): Promise<Ledger>;
  out(human: string, data?: unknown): void;
}

export class UsageError extends Error {
  override name = 'UsageError';
}

export interface Command {
  /** e.g. "keys create --name NAME [--hop-limit N]" */
  usage: string;
  summary: string;
  /** Takes a command to run after `--` (its words are not parsed as flags). */
  takesCommand?: boolean;
  run(ctx: CliContext): Promise<number | void>;
}

export function requireFlag(ctx: CliContext, name: string): string {
  const v = ctx.flags[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function intFlag(ctx: CliContext, name: string): number | undefined {
  const v = ctx.flags[name];
  if (v === undefined) return undefined;
  const n = Number(v);
  if (typeof v !== 'string' || !Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer`);
  return n;
}

/** A flag that must be one of `choices` (undefined when absent). */
export function enumFlag<T extends string>(ctx: CliContext, name: string, choices: readonly T[]): T | undefined {
  const v = ctx.flags[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string' || !(choices as readonly string[]).includes(v))
    throw new UsageError(`--${name} must be ${choices.join(' or ')}`);
  return v as T;
}
