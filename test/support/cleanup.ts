/**
 * Set up before every test file (vitest.config.ts): once the file's own hooks
 * have closed its ledgers and servers, the folders it made with tempDir are
 * removed, so that runs leave nothing behind in the temporary folder.
 */
import { afterAll } from 'vitest';
import { removeTempDirs } from './server.ts';

afterAll(removeTempDirs);
