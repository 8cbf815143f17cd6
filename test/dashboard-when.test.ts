/** Times and durations as the dashboard writes them. */
import { describe, expect, it } from 'vitest';
import { duration, humanDate, timeTag } from '../src/api/dashboard/when.ts';

describe('dashboard times', () => {
  it('writes a time as a date a person reads, keeping the exact one in <time>', () => {
    expect(humanDate('2026-11-28T10:01:23.557Z')).toBe('28 Nov 2026, 10:01 UTC');
    const now = Date.parse('2026-11-28T10:04:30Z');
    expect(timeTag('2026-11-28T10:01:23.557Z', 'never', now)).toBe(
      '<time datetime="2026-11-28T10:01:23.557Z" title="2026-11-28T10:01:23.557Z">28 Nov 2026, 10:01 UTC (3 min ago)</time>',
    );
    expect(timeTag('2026-12-28T10:04:30Z', 'never', now)).toContain('(in 30 days)');
    expect(timeTag(null, 'never', now)).toBe('never');
    expect(timeTag('not a time', 'unknown', now)).toBe('unknown');
  });

  it('names a duration in its largest whole unit', () => {
    expect([
      duration(45_000),
      duration(3 * 60_000 + 59_000),
      duration(5 * 3_600_000),
      duration(86_400_000),
      duration(-29 * 86_400_000),
    ]).toEqual(['45 s', '3 min', '5 h', '1 day', '29 days']);
  });
});
