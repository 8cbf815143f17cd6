/**
 * Every signature goes through signEd25519 (libsodium when its addon loads,
 * node:crypto otherwise). Ed25519 is deterministic (RFC 8032 5.1.6), so the
 * libsodium signature must equal OpenSSL's byte for byte, and verify under
 * OpenSSL and under @noble/curves. Without the addon, node:crypto signs the
 * same bytes.
 */
import { spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes, sign, verify } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { compactVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import { ed25519Signer, signEd25519 } from '../src/crypto/ed25519.ts';
import { compactJwsSync } from '../src/crypto/jws.ts';
import { PROCESS_TEST_TIMEOUT_MS, run, cleanEnv } from './support/cli.ts';
import { tempDir, testEnv } from './support/server.ts';

const rawPublic = (publicKey: import('node:crypto').KeyObject) => Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url');

describe('signEd25519', () => {
  it('signs with libsodium here: the optional addon is installed and loads', () => {
    expect(ed25519Signer).toBe('libsodium');
  });

  it(
    'is named by the server when it starts listening',
    async () => {
      const dir = tempDir();
      const server = spawn(process.execPath, ['src/server.ts'], {
        env: { ...cleanEnv(), ...testEnv(dir), LOG_LEVEL: 'info' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      try {
        const listening = await new Promise<Record<string, unknown>>((resolve, reject) => {
          let out = '';
          server.stdout.on('data', (d) => {
            out += d;
            const line = out.split('\n').find((l) => l.includes('"listening"'));
            if (line) resolve(JSON.parse(line) as Record<string, unknown>);
          });
          server.once('exit', (code) => reject(new Error(`the server exited ${code}`)));
        });
        expect(listening.signer).toBe('libsodium');
      } finally {
        const exited = new Promise((r) => server.once('exit', r));
        server.kill('SIGTERM');
        await exited;
      }
    },
    PROCESS_TEST_TIMEOUT_MS,
  );

  it('gives OpenSSL’s signature byte for byte, which a second implementation verifies', () => {
    for (let k = 0; k < 8; k++) {
      const { privateKey, publicKey } = generateKeyPairSync('ed25519');
      for (const length of [0, 1, 31, 64, 300, 4096]) {
        const message = randomBytes(length);
        const signature = signEd25519(message, privateKey);
        expect(signature.toString('hex')).toBe(sign(null, message, privateKey).toString('hex'));
        expect(verify(null, message, publicKey, signature)).toBe(true);
        expect(ed25519.verify(signature, message, rawPublic(publicKey))).toBe(true);
        const tampered = Buffer.from(message.length ? message : Buffer.from([0]));
        tampered[0]! ^= 1;
        expect(verify(null, tampered, publicKey, signature)).toBe(false);
      }
    }
  });

  it('signs with each key its own signature when several keys are in use', () => {
    const a = generateKeyPairSync('ed25519');
    const b = generateKeyPairSync('ed25519');
    const message = Buffer.from('the same message');
    const sa = signEd25519(message, a.privateKey);
    const sb = signEd25519(message, b.privateKey);
    expect(sa.equals(sb)).toBe(false);
    expect(verify(null, message, a.publicKey, sa)).toBe(true);
    expect(verify(null, message, b.publicKey, sb)).toBe(true);
    expect(signEd25519(message, a.privateKey).equals(sa)).toBe(true);
  });

  it('refuses a public key', () => {
    const { publicKey } = generateKeyPairSync('ed25519');
    expect(() => signEd25519(Buffer.from('x'), publicKey)).toThrow();
  });

  it('makes compact JWSs that jose verifies', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ed25519');
    const jws = compactJwsSync('{"a":1}', { kid: 'k1', privateKey } as never, 'test+jws');
    const { payload, protectedHeader } = await compactVerify(jws, publicKey);
    expect(new TextDecoder().decode(payload)).toBe('{"a":1}');
    expect(protectedHeader).toEqual({ alg: 'EdDSA', kid: 'k1', typ: 'test+jws' });
  });

  it(
    'falls back to node:crypto, with the same bytes, where the addon does not load',
    async () => {
      const { privateKey } = generateKeyPairSync('ed25519');
      const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' }).toString('base64');
      const message = 'a message signed twice';
      // A resolve hook that makes sodium-native unresolvable, as on a platform with no build of it.
      const hideAddon = `import { registerHooks } from 'node:module';
registerHooks({ resolve(specifier, context, next) { if (specifier === 'sodium-native') throw new Error('no build here'); return next(specifier, context); } });`;
      const child = `import { createPrivateKey } from 'node:crypto';
const { ed25519Signer, signEd25519 } = await import(${JSON.stringify(new URL('../src/crypto/ed25519.ts', import.meta.url).href)});
const key = createPrivateKey({ key: Buffer.from(${JSON.stringify(pkcs8)}, 'base64'), format: 'der', type: 'pkcs8' });
console.log(JSON.stringify({ ed25519Signer, signature: signEd25519(Buffer.from(${JSON.stringify(message)}), key).toString('hex') }));`;
      const out = await run(
        process.execPath,
        ['--import', `data:text/javascript,${encodeURIComponent(hideAddon)}`, '--input-type=module', '-e', child],
        cleanEnv(),
      );
      expect(out.code, out.stderr).toBe(0);
      const got = JSON.parse(out.stdout) as { ed25519Signer: string; signature: string };
      expect(got.ed25519Signer).toBe('node:crypto');
      expect(got.signature).toBe(signEd25519(Buffer.from(message), privateKey).toString('hex'));
    },
    PROCESS_TEST_TIMEOUT_MS,
  );
});
