/** The absence catalog's surface presets (lists of act kinds), from src/content/surface-presets.json. */
import { surfacePresetsSchema } from './schemas.ts';
import presets from '../content/surface-presets.json' with { type: 'json' };

export const SURFACE_PRESETS: Readonly<Record<string, readonly string[]>> = surfacePresetsSchema.parse(presets);
