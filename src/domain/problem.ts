/**
 * A refusal as every door of this service answers it: RFC 9457 problem
 * details with a stable, machine-readable `code` and a `detail` for people.
 * Below the API so that the layers beneath it (payments) refuse in the same
 * shape; src/api/problem.ts turns one into an HTTP answer.
 */

export const PROBLEM_TYPE_BASE = 'https://fusegate.dev/problems/';

export interface ProblemInit {
  status: number;
  code: string;
  title: string;
  detail?: string;
  headers?: Record<string, string>;
  /** Extension members, merged into the body. */
  extra?: Record<string, unknown>;
}

export class Problem extends Error {
  readonly status: number;
  readonly code: string;
  readonly title: string;
  readonly detail: string | undefined;
  readonly headers: Record<string, string>;
  readonly extra: Record<string, unknown>;

  constructor(init: ProblemInit) {
    super(init.detail ?? init.title);
    this.name = 'Problem';
    this.status = init.status;
    this.code = init.code;
    this.title = init.title;
    this.detail = init.detail;
    this.headers = init.headers ?? {};
    this.extra = init.extra ?? {};
  }

  body(instance?: string): Record<string, unknown> {
    return {
      type: PROBLEM_TYPE_BASE + this.code,
      title: this.title,
      status: this.status,
      ...(this.detail ? { detail: this.detail } : {}),
      code: this.code,
      ...(instance ? { instance } : {}),
      ...this.extra,
    };
  }
}
