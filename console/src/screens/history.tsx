// Change history: one resource's (who, when, why, each field before and
// after, newest first), and the feeds: every change on the platform (for
// whoever holds history:read) or in one tenant (for its admins), filtered
// by who (on a tenant's feed, among its members), what and when, with
// names in place of ids; each titled by the name of what it shows.
import { useState } from 'preact/hooks';

import { fieldWords, ok, type Schemas } from '../api';
import { useCan, useCanIn } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import { Copy, Field, MemberPicker, Paged, Section, UserPicker, When, label, useTitle, type Page } from '../ui';

type Kind = 'user' | 'tenant' | 'role' | 'policy' | 'grant';

/** The names a list's pages carry, gathered as they arrive: what a title calls the entity. */
function useNames(): [Record<string, string>, <T extends Page<unknown>>(page: Promise<T>) => Promise<T>] {
  const [names, setNames] = useState<Record<string, string>>({});
  const keep = async <T extends Page<unknown>>(page: Promise<T>) => {
    const got = await page;
    setNames((old) => ({ ...old, ...(got.names ?? {}) }));
    return got;
  };
  return [names, keep];
}

/** What a resource's history calls it: by name, from the names its changes carry. */
function historyTitle(kind: Kind, ids: string[], names: Record<string, string>): string {
  const [first, second] = ids.map((id) => names[id]);
  switch (kind) {
    case 'user':
      return first ? `History of ${first}` : 'History of the user';
    case 'grant':
      return first && second ? `History of ${second} in ${first}` : 'History of the grant';
    default:
      return first ? `History of ${kind} ${first}` : `History of the ${kind}`;
  }
}

export function History({ kind, ids }: { kind: Kind; ids: string[] }) {
  const { api } = useSession();
  const [names, keep] = useNames();
  const title = historyTitle(kind, ids, names);
  useTitle(title);
  const loadPage = (cursor?: string) => {
    const query = { cursor, limit: 25 };
    switch (kind) {
      case 'user':
        return ok(api.GET('/users/{userId}/history', { params: { path: { userId: ids[0] }, query } }));
      case 'tenant':
        return ok(api.GET('/tenants/{tenantId}/history', { params: { path: { tenantId: ids[0] }, query } }));
      case 'role':
        return ok(api.GET('/roles/{roleId}/history', { params: { path: { roleId: ids[0] }, query } }));
      case 'policy':
        return ok(api.GET('/policies/{policyId}/history', { params: { path: { policyId: ids[0] }, query } }));
      case 'grant':
        return ok(
          api.GET('/tenants/{tenantId}/members/{userId}/history', {
            params: { path: { tenantId: ids[0], userId: ids[1] }, query },
          }),
        );
    }
  };
  const load = (cursor?: string) => keep(loadPage(cursor));
  return (
    <>
      <h1>{title}</h1>
      <p class="id">
        {ids.join(' / ')} <Copy text={ids.join('/')} what={kind} />
      </p>
      <Changes load={load} deps={[kind, ...ids]} />
    </>
  );
}

/** A page of changes: when, who, what, why, and the fields. */
function Changes(props: { load: (cursor?: string) => Promise<Schemas['ListView_ChangeView']>; deps: unknown[]; what?: boolean }) {
  return (
    <Paged<Schemas['ChangeView']>
      label="Changes"
      deps={props.deps}
      load={props.load}
      head={props.what ? ['When', 'Who', 'What', 'Why', 'Changes'] : ['When', 'Who', 'Why', 'Changes']}
      empty="No change recorded."
      row={(c, named) => (
        <tr>
          <td>
            <When at={c.modifiedAt} />
            {c.version ? <div class="hint">version {c.version}</div> : null}
          </td>
          <td>{who(c.modifiedBy, named)}</td>
          {props.what ? <td>{what(c, named)}</td> : null}
          <td>{c.modifiedReason ?? ''}</td>
          <td>
            <ul class="changes" aria-label="Fields changed">
              {Object.entries(c.changes)
                .filter(([field]) => !OWN_IDS.has(field))
                .map(([field, change]) => (
                <li>
                  <strong>{fieldWords(field)}</strong>: <FieldChange field={field} change={change} named={named} />
                </li>
              ))}
            </ul>
          </td>
        </tr>
      )}
    />
  );
}

/** What a change in a feed was about, by name and linked. */
function what(c: Schemas['ChangeView'], named: Record<string, string>) {
  switch (c.kind) {
    case 'grant':
      return (
        <a href={href('tenants', c.tenantId ?? '', 'members', c.userId ?? '')}>
          {label(named, c.userId ?? '')} in {label(named, c.tenantId ?? '')}
        </a>
      );
    case 'tenant':
      return <a href={href('tenants', c.tenantId ?? '')}>tenant {label(named, c.tenantId ?? '')}</a>;
    case 'user':
      return <a href={href('users', c.userId ?? '')}>user {label(named, c.userId ?? '')}</a>;
    case 'role':
      return <a href={href('roles', c.roleId ?? '')}>role {label(named, c.roleId ?? '')}</a>;
    case 'policy':
      return <a href={href('policies', c.policyId ?? '')}>policy {label(named, c.policyId ?? '')}</a>;
    default:
      return c.kind ?? '';
  }
}

/** Each kind of change, as the filter offers it. */
const KINDS: Record<string, string> = {
  tenant: 'tenants',
  user: 'users',
  role: 'roles',
  grant: 'grants (members)',
  policy: 'policies',
};

type Filter = { actor: string; kind: '' | Kind; from: string; to: string };

/**
 * The feeds: the platform's, or a tenant's (`tenantId`), newest first,
 * filtered. Without a tenant and without history:read, the person's own
 * tenants to choose from.
 */
export function Feed({ tenantId }: { tenantId?: string }) {
  const { api, me } = useSession();
  const platform = useCan(['history:read']);
  const [names, keep] = useNames();
  const tenantName = tenantId ? (me.tenants.find((t) => t.tenantId === tenantId)?.name ?? names[tenantId]) : undefined;
  // The platform's feed once the API allows it; until then, and without it, the person's tenants.
  const index = !tenantId && !platform['history:read'];
  // The person's tenants whose feed they may read.
  const mayRead = useCanIn('member:read', me.tenants.map((t) => t.tenantId));
  const readable = mayRead && me.tenants.filter((t) => mayRead[t.tenantId]);
  const title = tenantId ? `Changes in ${tenantName ?? 'the tenant'}` : index ? 'History' : 'History of the platform';
  useTitle(title);
  const [filter, setFilter] = useState<Filter>({ actor: '', kind: '', from: '', to: '' });
  const [asked, setAsked] = useState<Filter>(filter);
  const query = (cursor?: string) => ({
    actor: asked.actor || undefined,
    kind: asked.kind || undefined,
    // Whole days, in the person's own time zone: "until" includes its day.
    from: asked.from ? new Date(`${asked.from}T00:00`).toISOString() : undefined,
    to: asked.to ? new Date(new Date(`${asked.to}T00:00`).getTime() + 86_400_000).toISOString() : undefined,
    cursor,
    limit: 25,
  });
  if (index) {
    return (
      <>
        <h1>{title}</h1>
        {readable === undefined ? (
          <p>Finding the tenants whose changes you may read…</p>
        ) : readable.length ? (
          <>
            <p>Choose one of your tenants to see its changes.</p>
            <ul>
              {readable.map((t) => (
                <li>
                  <a href={href('feed', t.tenantId)}>{t.name ?? t.tenantId}</a>
                </li>
              ))}
            </ul>
          </>
        ) : (
          <p class="empty">None of your tenants' changes are yours to read: their administrators read them.</p>
        )}
      </>
    );
  }
  const actor = (userId: string) => setFilter({ ...filter, actor: userId });
  return (
    <>
      <h1>{title}</h1>
      <Section title="Filter">
        <form
          role="search"
          aria-label="Filter the changes"
          onSubmit={(e) => {
            e.preventDefault();
            setAsked(filter);
          }}
        >
          {/* A tenant's admins find who made a change among its members, not among every user. */}
          {tenantId ? (
            <MemberPicker tenantId={tenantId} label="Made by (optional)" name="feed-actor" value={filter.actor} onChange={actor} />
          ) : (
            <UserPicker label="Made by (optional)" name="feed-actor" value={filter.actor} onChange={actor} />
          )}
          <label>
            <span>What</span>
            <select name="kind" value={filter.kind} onChange={(e) => setFilter({ ...filter, kind: (e.target as HTMLSelectElement).value as Filter['kind'] })}>
              <option value="">anything</option>
              {(tenantId ? ['tenant', 'grant'] : ['tenant', 'user', 'role', 'grant', 'policy']).map((k) => (
                <option value={k}>{KINDS[k]}</option>
              ))}
            </select>
          </label>
          <Field label="From" type="date" value={filter.from} onInput={(from) => setFilter({ ...filter, from })} />
          <Field label="Until" type="date" value={filter.to} onInput={(to) => setFilter({ ...filter, to })} />
          <button type="submit">Show</button>
          {filter.actor ? (
            <button type="button" class="quiet" onClick={() => setFilter({ ...filter, actor: '' })}>
              Anyone
            </button>
          ) : null}
        </form>
      </Section>
      <Changes
        what
        deps={[tenantId, asked.actor, asked.kind, asked.from, asked.to]}
        load={(cursor) =>
          tenantId
            ? keep(
                ok(
                  api.GET('/tenants/{tenantId}/changes', {
                    // The tenant's feed offers the tenant's own kinds only.
                    params: { path: { tenantId }, query: { ...query(cursor), kind: query(cursor).kind as 'tenant' | 'grant' | undefined } },
                  }),
                ),
              )
            : ok(api.GET('/history', { params: { query: query(cursor) } }))
        }
      />
      {tenantId ? (
        <p>
          <button type="button" class="quiet" onClick={() => go('tenants', tenantId)}>
            Back to the tenant
          </button>
        </p>
      ) : null}
    </>
  );
}

/** Who made a change: a user by name, a sign-up, or the system. */
function who(by: string | null | undefined, named: Record<string, string>): string {
  if (!by) return 'the system';
  if (by.startsWith('signup:')) return 'their own sign-up';
  // A directory's token by its name: `SCIM token <name> (<id>)`.
  const token = /^SCIM token (.*) \([0-9A-Z]{26}\)$/.exec(by);
  if (token) return `the directory's token “${token[1]}”`;
  return label(named, by);
}

/**
 * Fields that only repeat the id of what changed (the row names it
 * already): a grant's, an address's, a token's, a directory group's.
 */
const OWN_IDS = new Set(['tenantGrantId', 'emailId', 'tokenId', 'id']);

/**
 * A field's value as text, each id the page has a name for by its name;
 * identities as who they are (subject at issuer), not their ids.
 */
/** A field's change: before → after, or, for a long list, what it gained and lost (the API lists at most 50 of each). */
function FieldChange(props: { field: string; change: unknown; named: Record<string, string> }) {
  const c = props.change as { before?: unknown; after?: unknown; added?: unknown[]; removed?: unknown[]; addedCount?: number; removedCount?: number };
  if (typeof c.addedCount === 'number') {
    const more = (listed: unknown[] | undefined, count: number) =>
      count > (listed?.length ?? 0) ? ` and ${count - (listed?.length ?? 0)} more` : '';
    return (
      <>
        {c.addedCount} added{c.addedCount ? <> (<code>{show(props.field, c.added, props.named)}</code>{more(c.added, c.addedCount)})</> : null},{' '}
        {c.removedCount ?? 0} removed
        {c.removedCount ? <> (<code>{show(props.field, c.removed, props.named)}</code>{more(c.removed, c.removedCount)})</> : null}
      </>
    );
  }
  return (
    <>
      <code>{show(props.field, c.before, props.named)}</code> → <code>{show(props.field, c.after, props.named)}</code>
    </>
  );
}

function show(field: string, value: unknown, named: Record<string, string>): string {
  if (value === undefined || value === null) return '—';
  if (field === 'identities' && Array.isArray(value)) {
    return (value as { issuer?: string; subject?: string }[]).map((i) => `${i.subject} at ${i.issuer}`).join(', ') || 'none';
  }
  if (field === 'ceiling' && Array.isArray(value)) {
    // What a token may give: each holding's permissions, and its end.
    return (
      (value as { permissions?: string[]; until?: number | null }[])
        .filter((h) => (h.permissions ?? []).length > 0)
        .map((h) => {
          const until = typeof h.until === 'number' ? ` until ${new Date(h.until * 1000).toISOString()}` : '';
          return `${(h.permissions ?? []).join(', ')}${until}`;
        })
        .join('; ') || 'nothing'
    );
  }
  if (field === 'members' && Array.isArray(value)) {
    return (value as { value?: string; display?: string }[]).map((m) => m.display ?? (m.value ? label(named, m.value) : JSON.stringify(m))).join(', ') || 'none';
  }
  if (typeof value === 'string') return label(named, value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) {
    return value.map((v) => label(named, v)).join(', ') || 'none';
  }
  return JSON.stringify(value);
}
