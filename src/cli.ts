/**
 * The admin command line: `npm run --silent cli -- <command> [flags]`, or the
 * `fusegate` bin. Exit codes: 0 done, 1 the command failed, 2 bad usage or config.
 */
import { ConfigError, loadConfig } from './config.ts';
import { clearingCommands } from './cli/clearing.ts';
import { fuseCommands } from './cli/fuses.ts';
import { keyCommands } from './cli/keys.ts';
import { pasCommands } from './cli/pas.ts';
import { verifyCommands } from './cli/verify.ts';
import { rr1Commands } from './cli/rr1.ts';
import { type CliContext, type Command, UsageError } from './cli/shared.ts';
import { openLedger, type Ledger } from './ledger/db.ts';
import { StartupError, startupStep } from './startup-error.ts';
import { VERSION } from './version.ts';

const COMMANDS: Record<string, Command> = { ...keyCommands, ...fuseCommands, ...pasCommands, ...clearingCommands, ...rr1Commands, ...verifyCommands };

function help(): string {
  const rows = Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(44)} ${c.summary}`);
  return [
    `fusegate ${VERSION} — admin command line`,
    '',
    'usage: npm run --silent cli -- <command> [flags] [--json]',
    '',
    'commands:',
    ...rows,
    '',
    'The database and key file come from the same environment as the server (DATABASE_URL, SIGNING_KEY_FILE...).',
  ].join('\n');
}

/** Flags that never take a value; every other `--flag` takes the next word (or `--flag=value`). */
const BOOLEAN_FLAGS = new Set(['json', 'help', 'offline', 'default']);

export function parseFlags(argv: string[]): { flags: Record<string, string | boolean>; positionals: string[] } {
  const flags: Record<string, string | boolean> = {};
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const word = argv[i]!;
    const m = /^--([a-z0-9-]+)(?:=(.*))?$/.exec(word);
    if (!m) {
      positionals.push(word);
    } else if (m[2] !== undefined) {
      flags[m[1]!] = m[2];
    } else if (!BOOLEAN_FLAGS.has(m[1]!) && i + 1 < argv.length && !argv[i + 1]!.startsWith('--')) {
      flags[m[1]!] = argv[++i]!;
    } else {
      flags[m[1]!] = true;
    }
  }
  return { flags, positionals };
}

export async function runCli(argv: string[]): Promise<number> {
  const { flags, positionals } = parseFlags(argv);
  const name = [positionals[0], positionals[1]].filter(Boolean).join(' ');
  const command = COMMANDS[name];
  if (!command || flags.help) {
    process[command || flags.help || argv.length === 0 ? 'stdout' : 'stderr'].write(help() + '\n');
    return command || flags.help || argv.length === 0 ? 0 : 2;
  }
  let ledger: Ledger | undefined;
  try {
    const config = loadConfig();
    const json = flags.json === true;
    const ctx: CliContext = {
      args: positionals.slice(2),
      flags,
      json,
      config,
      ledger: async () => (ledger ??= await startupStep(`cannot open the database ${config.DATABASE_URL}`, () => openLedger(config))),
      out: (human, data) => process.stdout.write((json && data !== undefined ? JSON.stringify(data) : human) + '\n'),
    };
    return (await command.run(ctx)) ?? 0;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`fusegate: ${e.message}\nusage: ${command.usage}\n`);
      return 2;
    }
    if (e instanceof ConfigError || e instanceof StartupError) {
      process.stderr.write(`fusegate: ${e.message}\n`);
      return 2;
    }
    process.stderr.write(`fusegate: ${(e as Error).message}\n`);
    return 1;
  } finally {
    await ledger?.close();
  }
}

if (import.meta.main) process.exitCode = await runCli(process.argv.slice(2));
