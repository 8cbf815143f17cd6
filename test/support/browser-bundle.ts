/**
 * Bundles a module for the browser with Vite, the bundler of the site's own
 * scripts, into one script that sets `globalThis[name]` to its exports. The
 * build fails when anything it reaches imports a Node module: what runs in a
 * page must not need one.
 */
import { builtinModules } from 'node:module';
import { build, type Plugin, type Rolldown } from 'vite';

const NO_NODE_MODULES: Plugin = {
  name: 'no-node-modules',
  enforce: 'pre',
  resolveId(id, importer) {
    if (id.startsWith('node:') || builtinModules.includes(id))
      this.error(`${importer ?? 'the entry'} imports ${id}: a browser has no Node modules`);
    return null;
  },
};

export async function bundleForBrowser(entry: string, name: string): Promise<string> {
  const built = await build({
    configFile: false,
    logLevel: 'silent',
    plugins: [NO_NODE_MODULES],
    build: { write: false, minify: false, target: 'es2022', lib: { entry, name, formats: ['iife'], fileName: 'bundle' } },
  });
  const outputs = (Array.isArray(built) ? built : [built]) as Rolldown.RolldownOutput[];
  const chunk = outputs.flatMap((o) => o.output).find((o) => o.type === 'chunk');
  if (!chunk || chunk.type !== 'chunk') throw new Error(`bundling ${entry} made no script`);
  return chunk.code;
}
