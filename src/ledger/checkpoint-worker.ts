/**
 * The checkpointer's thread (see checkpointer.ts): its own connection to the
 * database file, checkpointing the WAL on a timer. Blocking here is fine: this
 * thread serves nothing else.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'libsql';

interface Options {
  path: string;
  intervalMs: number;
  /** Past this many WAL frames after a passive checkpoint, wait for a moment without writers and rewind the WAL. */
  truncateFrames: number;
}

const { path, intervalMs, truncateFrames } = workerData as Options;
const db = new Database(path);
// A TRUNCATE waits for the writer in progress (another thread or process) to commit.
db.exec('PRAGMA busy_timeout=5000');
const passive = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
const truncate = db.prepare('PRAGMA wal_checkpoint(TRUNCATE)');

interface CheckpointRow {
  busy: number;
  log: number;
  checkpointed: number;
}

function checkpoint(): void {
  try {
    const r = passive.get() as CheckpointRow;
    if (r.log > truncateFrames) truncate.get();
  } catch (e) {
    parentPort?.postMessage({ error: String(e) });
  }
}

const timer = setInterval(checkpoint, intervalMs);
parentPort?.on('message', (m) => {
  if (m !== 'close') return;
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort?.close();
});
