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

/** Passes at most, each tick, to catch up with the writer (see `checkpoint`). */
const CATCH_UP_PASSES = 8;

function checkpoint(): void {
  try {
    let r = passive.get() as CheckpointRow;
    // Under a steady write load that pass ends behind the writer: it copies the frames committed before it
    // began, and more come meanwhile. The writer rewinds the WAL only when it begins a transaction with every
    // frame copied; until then each COMMIT appends past the end of the file, and a sync that grows the file
    // costs half again as much (docs/pipeline.md). Short passes more copy the last groups' frames, and stop
    // once one finds nothing new: most often between two commits, so that the next commit rewinds the WAL.
    for (let pass = 0, seen = -1; pass < CATCH_UP_PASSES && !(r.checkpointed === r.log && r.log === seen); pass++) {
      seen = r.log;
      r = passive.get() as CheckpointRow;
    }
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
