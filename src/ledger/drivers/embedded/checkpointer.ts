/**
 * WAL checkpoints off the event loop.
 *
 * SQLite checkpoints a WAL database from inside COMMIT once the WAL passes
 * 1000 pages: it copies every page back into the database file and fsyncs it,
 * all on the thread that committed. Under load that stalled the event loop for
 * tens to hundreds of milliseconds every few batches (the p99 of a hop). The
 * serving connection therefore never checkpoints (wal_autocheckpoint=0); a
 * worker thread with its own connection does, every `intervalMs`, in PASSIVE
 * mode (it never blocks a reader or the writer), catching up with the writer
 * so that the writer's next transaction rewinds the WAL instead of growing it
 * (checkpoint-worker.ts), and truncates the WAL when it grew past `truncateFrames`.
 *
 * Durability is unchanged: with synchronous=FULL every COMMIT still syncs the
 * WAL before it returns; a checkpoint only moves committed pages into the main file.
 */
import { Worker } from 'node:worker_threads';

export interface CheckpointerOptions {
  path: string;
  intervalMs: number;
  truncateFrames: number;
}

export interface Checkpointer {
  close(): Promise<void>;
}

export function startCheckpointer(opts: CheckpointerOptions, onError: (message: string) => void): Checkpointer {
  // The thread runs one file of ours and needs no flag of the process's, which it would inherit: with
  // --input-type it refuses to load a file, and Worker refuses V8 flags such as --max-old-space-size.
  const worker = new Worker(new URL('./checkpoint-worker.ts', import.meta.url), { workerData: opts, execArgv: [] });
  worker.on('message', (m: { error?: string }) => {
    if (m.error) onError(m.error);
  });
  worker.on('error', (e) => onError(String(e)));
  // The thread must not keep a process alive that has nothing else to do.
  worker.unref();
  return {
    async close() {
      if (worker.threadId === -1) return;
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      // Held while it finishes its last checkpoint, or the process could end before it has.
      worker.ref();
      worker.postMessage('close');
      await exited;
    },
  };
}
