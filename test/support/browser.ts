/**
 * The one place browser tests get their headless Chromium (playwright-core never
 * downloads a browser). Resolution order:
 *   1. CHROMIUM_PATH, when set (it must exist: a wrong path is an error, not a fallback);
 *   2. Debian's /usr/bin/chromium, when present;
 *   3. the headless shell carried inside the @sparticuz/chromium dev dependency, which
 *      installs from the npm registry like any package. Its brotli archives are unpacked
 *      once into node_modules/.cache/ with the NSS libraries and fonts it ships, so it
 *      needs nothing from the machine but glibc (x64 Linux only).
 * FUSEGATE_CHROMIUM=packaged skips 1 and 2 (to prove the packaged browser on a machine
 * that has another one). No browser found is a failure that says what to do, never a skip.
 */
import { spawn } from 'node:child_process';
import {
  createReadStream,
  createWriteStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { arch, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, createBrotliDecompress } from 'node:zlib';
import { chromium, type Browser } from 'playwright-core';

export const SYSTEM_CHROMIUM = '/usr/bin/chromium';
const PACKAGE = '@sparticuz/chromium';

export interface FoundChromium {
  source: 'CHROMIUM_PATH' | 'system' | 'package';
  executablePath: string;
  /** Extra environment the browser process needs (the packaged one's libraries and fonts). */
  env: Record<string, string>;
}

export class NoBrowser extends Error {}

const HOW_TO =
  'Run `npm install` (the @sparticuz/chromium dev dependency carries a headless Chromium for x64 Linux), ' +
  `or install Debian's chromium (${SYSTEM_CHROMIUM}), or set CHROMIUM_PATH to a Chromium or chrome-headless-shell binary.`;

/** Which browser the tests will use, given the environment (unpacks the packaged one if it is chosen). */
export async function findChromium(
  env: NodeJS.ProcessEnv = process.env,
  exists: (p: string) => boolean = existsSync,
): Promise<FoundChromium> {
  const packagedOnly = env.FUSEGATE_CHROMIUM === 'packaged';
  if (env.FUSEGATE_CHROMIUM !== undefined && !packagedOnly) {
    throw new NoBrowser(`FUSEGATE_CHROMIUM=${env.FUSEGATE_CHROMIUM} is not understood: the one value is "packaged" (or leave it unset)`);
  }
  if (!packagedOnly && env.CHROMIUM_PATH) {
    if (!exists(env.CHROMIUM_PATH)) throw new NoBrowser(`CHROMIUM_PATH=${env.CHROMIUM_PATH} does not exist. ${HOW_TO}`);
    return { source: 'CHROMIUM_PATH', executablePath: env.CHROMIUM_PATH, env: {} };
  }
  if (!packagedOnly && exists(SYSTEM_CHROMIUM)) return { source: 'system', executablePath: SYSTEM_CHROMIUM, env: {} };
  return { source: 'package', ...(await unpackPackagedChromium()) };
}

function packageDir(): string {
  let resolved: string;
  try {
    resolved = fileURLToPath(import.meta.resolve(PACKAGE));
  } catch {
    throw new NoBrowser(
      `No browser: ${PACKAGE} is not installed${existsSync(SYSTEM_CHROMIUM) ? '' : ` and there is no ${SYSTEM_CHROMIUM}`}. ${HOW_TO}`,
    );
  }
  for (let dir = dirname(resolved); dir !== dirname(dir); dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'bin'))) return dir;
  }
  throw new NoBrowser(`No browser: cannot find the folder of ${PACKAGE} from ${resolved}. ${HOW_TO}`);
}

/** The archives are small (a few MB): decompress in memory, then let tar read them (it may stop before the padding). */
async function untarBrotli(archive: string, into: string): Promise<void> {
  mkdirSync(into, { recursive: true });
  const tar = spawn('tar', ['-x', '--no-same-owner', '-f', '-', '-C', into], { stdio: ['pipe', 'ignore', 'inherit'] });
  const exited = new Promise<number | null>((resolve, reject) => {
    tar.once('error', reject);
    tar.once('close', resolve);
  });
  tar.stdin.on('error', () => undefined);
  tar.stdin.end(brotliDecompressSync(readFileSync(archive)));
  const code = await exited;
  if (code !== 0) throw new Error(`tar exited with ${code} unpacking ${archive}`);
}

/**
 * Unpacks the packaged headless shell once per package version. Concurrent test
 * workers each unpack into their own temporary folder; the first rename wins.
 */
async function unpackPackagedChromium(): Promise<Omit<FoundChromium, 'source'>> {
  if (platform() !== 'linux' || arch() !== 'x64') {
    throw new NoBrowser(
      `No browser: the packaged Chromium runs on x64 Linux only (this is ${platform()} ${arch()}). Install Chromium and set CHROMIUM_PATH.`,
    );
  }
  const pkg = packageDir();
  const version = (JSON.parse(readFileSync(join(pkg, 'package.json'), 'utf8')) as { version: string }).version;
  const cacheRoot = join(process.cwd(), 'node_modules', '.cache', 'fusegate-chromium');
  const home = join(cacheRoot, version);
  const binary = join(home, 'chromium');
  if (!existsSync(binary)) {
    mkdirSync(cacheRoot, { recursive: true });
    const tmp = mkdtempSync(join(cacheRoot, `.${version}-`));
    try {
      await pipeline(
        createReadStream(join(pkg, 'bin', 'chromium.br')),
        createBrotliDecompress(),
        createWriteStream(join(tmp, 'chromium'), { mode: 0o755 }),
      );
      // NSS and expat built for the binary (Debian's may be absent or older), and the fonts it ships.
      await untarBrotli(join(pkg, 'bin', 'al2023.tar.br'), tmp);
      await untarBrotli(join(pkg, 'bin', 'fonts.tar.br'), tmp);
      try {
        renameSync(tmp, home);
      } catch (e) {
        if (!existsSync(binary)) throw e;
      }
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  // Written for the folder the tests run in now, not the one that unpacked the cache (a moved
  // or renamed checkout would otherwise point fontconfig at fonts that are gone, and Chromium dies).
  const fontsConf = `<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n  <dir>${join(home, 'fonts')}</dir>\n  <cachedir>${join(home, 'fonts-cache')}</cachedir>\n</fontconfig>\n`;
  const confPath = join(home, 'fonts.conf');
  if (!existsSync(confPath) || readFileSync(confPath, 'utf8') !== fontsConf) {
    const next = `${confPath}.${process.pid}`;
    writeFileSync(next, fontsConf);
    renameSync(next, confPath);
  }
  const libs = [join(home, 'lib'), process.env.LD_LIBRARY_PATH].filter(Boolean).join(':');
  return { executablePath: binary, env: { LD_LIBRARY_PATH: libs, FONTCONFIG_FILE: join(home, 'fonts.conf') } };
}

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Launches the browser findChromium chose; a failure names which one and what to do. */
export async function launchChromium(env: NodeJS.ProcessEnv = process.env): Promise<{ browser: Browser; found: FoundChromium }> {
  const found = await findChromium(env);
  try {
    const browser = await chromium.launch({
      executablePath: found.executablePath,
      args: ARGS,
      env: { ...process.env, ...found.env } as Record<string, string>,
    });
    return { browser, found };
  } catch (e) {
    throw new NoBrowser(`Chromium (${found.source}: ${found.executablePath}) did not start: ${(e as Error).message}\n${HOW_TO}`);
  }
}
