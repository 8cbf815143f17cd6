/**
 * The admin command line: `npm run --silent cli -- <command> [flags]`, or the
 * `fusegate` bin. Exit codes: 0 done, 1 the command failed, 2 bad usage or config.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadConfig, type Config } from './config.ts';
import { accountCommands } from './cli/accounts.ts';
import { clearingCommands } from './cli/clearing.ts';
import { databaseCommands } from './cli/database.ts';
import { fuseCommands } from './cli/fuses.ts';
import { keyCommands } from './cli/keys.ts';
import { memberCommands } from './cli/members.ts';
import { pasCommands } from './cli/pas.ts';
import { verifyCommands } from './cli/verify.ts';
import { rr1Commands } from './cli/rr1.ts';
import { proxyCommands } from './cli/proxy.ts';
import { reviewCommands } from './cli/reviews.ts';
import { type CliContext, type Command, UsageError } from './cli/shared.ts';
import { NODE } from './crypto/node.ts';
import { usePlatform } from './crypto/platform.ts';
import { describeDatabase, openLedger, type Ledger } from './ledger/db.ts';
import { StartupError, startupStep } from './startup-error.ts';
import { VERSION } from './version.ts';

const COMMANDS: Record<string, Command> = {
  ...keyCommands,
  ...fuseCommands,
  ...pasCommands,
  ...clearingCommands,
  ...rr1Commands,
  ...verifyCommands,
  ...accountCommands,
  ...proxyCommands,
  ...databaseCommands,
  ...reviewCommands,
  ...memberCommands,
};

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

/** Flags that never take a value; every other `--flag` takes one (`--flag value` or `--flag=value`). */
const BOOLEAN_FLAGS = new Set(['json', 'help', 'default', 'require-quorum', 'test']);
const GLOBAL_FLAGS = ['json', 'help'];

/** The flags a command accepts: the `--name`s of its usage line, and --json, --help. */
function flagsOf(command: Command | undefined): string[] {
  const named = command ? [...command.usage.matchAll(/--([a-z0-9-]+)/g)].map((m) => m[1]!) : [];
  return [...new Set([...named, ...GLOBAL_FLAGS])];
}

/**
 * Strict parsing (util.parseArgs, strict: true): an unknown or misspelled flag,
 * or a value flag without its value, is a usage error, never silently ignored.
 */
export function parseFlags(argv: string[], command?: Command): { flags: Record<string, string | boolean>; positionals: string[] } {
  const options = Object.fromEntries(
    flagsOf(command).map((name) => [name, { type: BOOLEAN_FLAGS.has(name) ? ('boolean' as const) : ('string' as const) }]),
  );
  try {
    const { values, positionals } = parseArgs({ args: argv, options, strict: true, allowPositionals: true });
    return { flags: values as Record<string, string | boolean>, positionals };
  } catch (e) {
    throw new UsageError(String((e as Error).message).split('\n')[0]!);
  }
}

export async function runCli(argv: string[]): Promise<number> {
  // The command is its first two words (or its first, for a one-word command); its usage line then says which flags it takes.
  const words = argv.slice(0, 2).filter((w) => !w.startsWith('-'));
  const name = words.join(' ') in COMMANDS ? words.join(' ') : words[0];
  const command = name === undefined ? undefined : COMMANDS[name];
  // A command that runs another takes everything after `--` as it is.
  const dashes = command?.takesCommand ? argv.indexOf('--') : -1;
  const own = dashes < 0 ? argv : argv.slice(0, dashes);
  let parsed: ReturnType<typeof parseFlags>;
  try {
    parsed = parseFlags(own, command);
  } catch (e) {
    process.stderr.write(`fusegate: ${(e as Error).message}\n${command ? `usage: ${command.usage}` : help()}\n`);
    return 2;
  }
  const { flags, positionals } = parsed;
  if (!command || flags.help) {
    process[command || flags.help || argv.length === 0 ? 'stdout' : 'stderr'].write(help() + '\n');
    return command || flags.help || argv.length === 0 ? 0 : 2;
  }
  usePlatform(NODE);
  let ledger: Ledger | undefined;
  try {
    // Read when first used: a command that needs no configuration (the proxy) is not stopped by a variable it never reads.
    let config: Config | undefined;
    const configOf = () => (config ??= loadConfig());
    const json = flags.json === true;
    const ctx: CliContext = {
      args: positionals.slice(name!.split(' ').length),
      command: dashes < 0 ? [] : argv.slice(dashes + 1),
      flags,
      json,
      get config() {
        return configOf();
      },
      ledger: async () =>
        (ledger ??= await startupStep(`cannot open the database ${describeDatabase(configOf().DATABASE_URL)}`, () =>
          openLedger(configOf()),
        )),
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
