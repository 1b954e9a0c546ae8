// The provisioning API, typed from docs/openapi.json (openapi-typescript
// writes src/api/schema.d.ts; `make console-api` regenerates it), called
// with the signed-in person's access token; its refusals as words.
import createClient, { type Client } from 'openapi-fetch';

import type { components, paths } from './api/schema';
import { apiBase } from './auth';

export type Schemas = components['schemas'];
export type Api = Client<paths>;
/** A permission the API's route rules name: what a check asks about. */
export type Action = Schemas['CheckRequest']['action'];

export function apiClient(token: () => string | undefined): Api {
  const client = createClient<paths>({ baseUrl: apiBase() });
  client.use({
    onRequest({ request }) {
      const bearer = token();
      if (bearer) request.headers.set('Authorization', `Bearer ${bearer}`);
      return request;
    },
  });
  return client;
}

/** A refusal or failure of an API call, with what the API said. */
export class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly field?: string | null,
    readonly permission?: string | null,
    readonly heldUntil?: number | null,
    /** Words of the console's own for it, in place of the API's. */
    said?: string,
  ) {
    super(said ?? describe(status, code, detail, field, permission, heldUntil));
  }
}

/** The console's own refusal of a field, before any call: named and marked as the API's are. */
export function invalid(field: string, reason: string): Refusal {
  return new Refusal(400, 'invalid', reason, field);
}

/** Words for the API's field names, as a person reads them. */
const FIELD_WORDS: Record<string, string> = {
  email: 'Email address',
  name: 'Name',
  roles: 'Roles',
  permissions: 'Permissions',
  userId: 'User',
  tenantId: 'Tenant',
  roleId: 'Role',
  identityId: 'Identity',
  identities: 'Sign-in identities',
  issuer: 'Issuer',
  subject: 'Subject',
  expiresAt: 'End',
  rolesExpireAt: 'End of the global roles',
  status: 'Status',
  statement: 'Statement',
  reason: 'Reason',
  version: 'Version',
  q: 'Search',
  isVerified: 'Verification',
  isPrimary: 'Primary address',
  phone: 'Phone',
  givenName: 'Given name',
  familyName: 'Family name',
  preferredUsername: 'Username',
};

/** Singular words for a list's items, where dropping an `s` would not do. */
const ITEM_WORDS: Record<string, string> = {
  identities: 'Sign-in identity',
  emails: 'Email address',
};

/**
 * `permissions[1]` as "Permission 2", `identities[0].subject` as "Sign-in
 * identity 1, subject", `givenName` as "Given name".
 */
export function fieldWords(field: string): string {
  const item = /^(\w+)\[(\d+)\](?:\.(\w+))?$/.exec(field);
  if (item) {
    const base = ITEM_WORDS[item[1]] ?? (FIELD_WORDS[item[1]] ?? item[1]).replace(/s$/, '');
    const part = item[3] ? `, ${fieldWords(item[3]).toLowerCase()}` : '';
    return `${base} ${Number(item[2]) + 1}${part}`;
  }
  if (FIELD_WORDS[field]) return FIELD_WORDS[field];
  const spaced = field.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase();
  return spaced.charAt(0).toUpperCase() + spaced.slice(1);
}

/** The API's `field: reason` (or `field is ...`) with the field named once, in words. */
function inWords(detail: string, field: string): string {
  if (detail.startsWith(`${field}: `)) return `${fieldWords(field)}: ${detail.slice(field.length + 2)}`;
  if (detail.startsWith(`${field} `)) return `${fieldWords(field)}${detail.slice(field.length)}`;
  return `${fieldWords(field)}: ${detail}`;
}

/** What a refusal means for the person reading it. */
function describe(
  status: number,
  code: string,
  detail: string,
  field?: string | null,
  permission?: string | null,
  heldUntil?: number | null,
): string {
  // The API's own text repeats the permission (and the end as a number).
  if (status === 403 && permission) {
    const until = heldUntil ? ` for as long as this gives it (you hold it only until ${new Date(heldUntil * 1000).toLocaleString()})` : '';
    return `Refused: you do not hold ${permission}${until}, so you cannot give it.`;
  }
  if (status === 409 && field) return inWords(detail, field);
  // A precondition about a field (a member already) says what it is; any
  // other is a change someone made meanwhile.
  if (status === 412 && field && field !== 'version') return inWords(detail, field);
  if (status === 412) {
    return 'Someone changed this since you opened it. Nothing was saved: note your edits, reload the page to see theirs, and make yours again.';
  }
  if (status === 400 && field) return inWords(detail, field);
  if (status === 401) return 'Your session has ended: sign in again.';
  if (status === 429) return `Too many changes of this kind just now: ${detail}`;
  if (status === 503) return `The service is busy: try again in a moment. ${detail}`;
  return detail || `The API answered ${status} (${code}).`;
}

interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The answer's data, or a `Refusal` for anything but a 2xx. */
export async function ok<T>(call: Promise<Answer<T>>): Promise<T> {
  let answer: Answer<T>;
  try {
    answer = await call;
  } catch (e) {
    throw new Refusal(0, 'network', `The API could not be reached: ${(e as Error).message}`);
  }
  if (answer.response.ok) return answer.data as T;
  const body = (answer.error ?? {}) as { error?: Schemas['ErrorDetail']; message?: string };
  const e = body.error;
  throw new Refusal(
    answer.response.status,
    e?.code ?? 'error',
    e?.message ?? body.message ?? answer.response.statusText,
    e?.field,
    e?.permission,
    e?.heldUntil,
  );
}

/** `line L, column C` in a policy statement's 400, if it names one. */
export function statementPosition(message: string): { line: number; column: number } | null {
  const found = /line (\d+), column (\d+)/.exec(message);
  return found ? { line: Number(found[1]), column: Number(found[2]) } : null;
}
