// Tenants: the list (search by name, create) and one tenant: rename,
// delete with a reason, its members by name (search, per-row and bulk
// removal, giving roles to a user found by name or address), invitations
// (several addresses at once; who sent each, with which roles), its
// directory (SCIM tokens and the roles its groups give), the policies
// confined to it, and its changes.
import { useState } from 'preact/hooks';

import { invalid, ok, Refusal, type Schemas } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { Directory } from './directory';
import { useSession } from '../session';
import {
  Confirm,
  Copy,
  DeleteWithReason,
  ErrorNote,
  Field,
  Named,
  Outcome,
  Paged,
  PrefixSearch,
  ReasonField,
  Search,
  Section,
  UserPicker,
  When,
  label,
  eachInTurn,
  encodeReason,
  reasonHeader,
  useAction,
  useLoad,
  useTitle,
} from '../ui';

export function Tenants() {
  useTitle('Tenants');
  const { api } = useSession();
  const can = useCan(['tenant:create', 'tenant:list']);
  const [search, setSearch] = useState('');
  const [name, setName] = useState('');
  const [reason, setReason] = useState('');
  const create = useAction();
  return (
    <>
      <h1>Tenants</h1>
      {can['tenant:create'] ? (
        <Section title="Create a tenant">
          <form
            ref={create.scope}
            onSubmit={(e) => {
              e.preventDefault();
              void create.run(async () => {
                const tenant = await ok(api.POST('/tenants', { body: { name }, headers: reasonHeader(reason) }));
                go('tenants', tenant.tenantId);
              });
            }}
          >
            <Field label="Name" name="tenant-name" field="name" value={name} onInput={setName} required />
            <ReasonField value={reason} onInput={setReason} />
            <button type="submit" disabled={create.busy}>
              Create tenant
            </button>
            <Outcome action={create} />
          </form>
        </Section>
      ) : null}
      <Section title="All tenants">
        <PrefixSearch label="Name starts with" onSearch={setSearch} />
        {can['tenant:list'] === false ? (
          <p class="empty">You may not list tenants.</p>
        ) : (
          <Paged<Schemas['TenantView']>
            label="Tenants"
            deps={[search]}
            load={(cursor) =>
              ok(api.GET('/tenants', { params: { query: { namePrefix: search || undefined, cursor, limit: 25 } } }))
            }
            head={['Name', 'Created']}
            empty="No tenant matches."
            row={(t) => (
              <tr>
                <td>
                  <Named id={t.tenantId} names={{ [t.tenantId]: t.name }} href={href('tenants', t.tenantId)} what="tenant" />
                </td>
                <td>
                  <When at={t.createdAt} />
                </td>
              </tr>
            )}
          />
        )}
      </Section>
    </>
  );
}

export function Tenant({ tenantId }: { tenantId: string }) {
  const { api } = useSession();
  const can = useCan(
    ['tenant:update', 'tenant:delete', 'member:read', 'member:write', 'policy:read', 'tenant:read'],
    tenantId,
  );
  const platform = useCan(['user:read', 'user:update']);
  const tenant = useLoad(() => ok(api.GET('/tenants/{tenantId}', { params: { path: { tenantId } } })), [tenantId]);
  useTitle(tenant.data ? `Tenant ${tenant.data.name}` : 'Tenant');
  const [round, setRound] = useState(0);
  const changed = () => setRound((n) => n + 1);
  return (
    <>
      <h1>{tenant.data ? `Tenant ${tenant.data.name}` : 'Tenant'}</h1>
      <ErrorNote error={tenant.error} />
      <p class="id">
        {tenantId} <Copy text={tenantId} what="tenant" />
      </p>
      <p>
        <a href={href('history', 'tenant', tenantId)}>History of this tenant</a>
        {can['member:read'] ? (
          <>
            {' · '}
            <a href={href('feed', tenantId)}>All changes in this tenant</a>
          </>
        ) : null}
      </p>
      {tenant.data && can['tenant:update'] ? <Rename tenant={tenant.data} onDone={tenant.reload} /> : null}
      {can['member:read'] ? (
        <Members
          tenantId={tenantId}
          canWrite={!!can['member:write']}
          canSuspend={!!platform['user:update']}
          round={round}
          onChange={changed}
        />
      ) : null}
      {can['member:write'] && platform['user:read'] ? (
        <Section title="Give roles to a user">
          <GiveRoles tenantId={tenantId} onDone={changed} />
        </Section>
      ) : null}
      {can['member:write'] ? <Invite tenantId={tenantId} onDone={changed} /> : null}
      {can['member:read'] ? <Invitations tenantId={tenantId} canWrite={!!can['member:write']} round={round} /> : null}
      {can['member:write'] ? <Directory tenantId={tenantId} /> : null}
      {can['policy:read'] ? <TenantPolicies tenantId={tenantId} /> : null}
      {tenant.data && can['tenant:delete'] ? (
        <DeleteWithReason
          what="tenant"
          warning="Its members lose access at once; its grants are removed. The reason is kept in its history."
          remove={async (reason) => {
            await ok(
              api.DELETE('/tenants/{tenantId}', {
                params: { path: { tenantId }, header: { 'X-Change-Reason': encodeReason(reason) } },
              }),
            );
            go('tenants');
          }}
        />
      ) : null}
    </>
  );
}

function Rename({ tenant, onDone }: { tenant: Schemas['TenantView']; onDone: () => void }) {
  const { api } = useSession();
  const [name, setName] = useState(tenant.name);
  const [reason, setReason] = useState('');
  const action = useAction();
  return (
    <Section title="Rename">
      <form
        ref={action.scope}
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            await ok(
              api.PATCH('/tenants/{tenantId}', {
                params: { path: { tenantId: tenant.tenantId } },
                body: { name, version: tenant.version },
                headers: reasonHeader(reason),
              }),
            );
            onDone();
            return `Renamed to ${name}.`;
          });
        }}
      >
        <Field label="New name" field="name" value={name} onInput={setName} required />
        <ReasonField value={reason} onInput={setReason} />
        <button type="submit" disabled={action.busy}>
          Rename
        </button>
        <Outcome action={action} />
      </form>
    </Section>
  );
}

/**
 * The tenant's members: searched, changed or removed one by one, removed
 * several at once; suspended several at once by whoever may suspend users
 * (a platform administrator: a person's suspension holds in every tenant).
 */
function Members(props: {
  tenantId: string;
  canWrite: boolean;
  canSuspend: boolean;
  round: number;
  onChange: () => void;
}) {
  const { api } = useSession();
  const { tenantId } = props;
  const [q, setQ] = useState('');
  const [chosen, setChosen] = useState<string[]>([]);
  const [names, setNames] = useState<Record<string, string>>({});
  const removal = useAction();
  const suspension = useAction();
  const removeMember = (userId: string, reason: string) =>
    ok(
      api.DELETE('/tenants/{tenantId}/members/{userId}', {
        params: { path: { tenantId, userId } },
        headers: reasonHeader(reason),
      }),
    );
  return (
    <Section title="Members">
      <PrefixSearch label="Find a member (name, email, id)" onSearch={setQ} />
      {props.canWrite ? (
        <div class="row">
          <Confirm
            label={`Remove ${chosen.length} selected`}
            disabled={!chosen.length}
            action={removal}
            consequence={
              <p>
                {chosen.map((u) => label(names, u)).join(', ')} lose their roles in this tenant at once.
              </p>
            }
            reasonRequired
            run={async (reason) => {
              // One at a time: each is its own change, with its reason.
              try {
                const done = await eachInTurn(
                  chosen,
                  (userId) => removeMember(userId, reason),
                  (u) => label(names, u),
                  (done) => setChosen((c) => c.filter((u) => !done.includes(u))),
                );
                return `Removed ${done} members.`;
              } finally {
                props.onChange(); // the list as it now stands, whatever was done
              }
            }}
          />
          {props.canSuspend ? (
            <Confirm
              label={`Suspend ${chosen.length} selected`}
              disabled={!chosen.length}
              action={suspension}
              consequence={
                <p>
                  {chosen.map((u) => label(names, u)).join(', ')} are refused in every tenant within seconds, until
                  activated again.
                </p>
              }
              reasonRequired
              run={async (reason) => {
                try {
                  const done = await eachInTurn(
                    chosen,
                    (userId) =>
                      ok(
                        api.PATCH('/users/{userId}', {
                          params: { path: { userId } },
                          body: { status: 'suspended' },
                          headers: reasonHeader(reason),
                        }),
                      ),
                    (u) => label(names, u),
                    (done) => setChosen((c) => c.filter((u) => !done.includes(u))),
                  );
                  return `Suspended ${done} members.`;
                } finally {
                  props.onChange();
                }
              }}
            />
          ) : null}
        </div>
      ) : null}
      <Outcome action={removal} />
      <Outcome action={suspension} />
      <Paged<Schemas['GrantView']>
        label="Members"
        deps={[tenantId, props.round, q]}
        load={async (cursor) => {
          const page = await ok(
            api.GET('/tenants/{tenantId}/members', {
              params: { path: { tenantId }, query: { q: q || undefined, cursor, limit: 25 } },
            }),
          );
          setNames((old) => ({ ...old, ...(page.names ?? {}) }));
          return page;
        }}
        head={props.canWrite ? ['Select', 'Member', 'Roles', 'Ends', 'Actions'] : ['Member', 'Roles', 'Ends']}
        empty={q ? 'No member matches.' : 'No members yet.'}
        row={(g, named) => (
          <tr>
            {props.canWrite ? (
              <td>
                <input
                  type="checkbox"
                  aria-label={`Select ${label(named, g.userId)}`}
                  checked={chosen.includes(g.userId)}
                  onChange={(e) =>
                    setChosen((c) =>
                      (e.target as HTMLInputElement).checked ? [...c, g.userId] : c.filter((u) => u !== g.userId),
                    )
                  }
                />
              </td>
            ) : null}
            <td>
              <Named id={g.userId} names={named} href={href('tenants', tenantId, 'members', g.userId)} what="user" />
            </td>
            <td>{g.roles.map((r) => label(named, r)).join(', ') || 'none'}</td>
            <td>
              <When at={g.expiresAt} />
            </td>
            {props.canWrite ? (
              <td>
                <a href={href('tenants', tenantId, 'members', g.userId)}>Change roles</a>{' '}
                <Confirm
                  label="Remove"
                  subject={label(named, g.userId)}
                  consequence={<p>{label(named, g.userId)} loses every role in this tenant at once.</p>}
                  reasonRequired
                  action={removal}
                  run={async (reason) => {
                    await removeMember(g.userId, reason);
                    props.onChange();
                    return `Removed ${label(named, g.userId)}.`;
                  }}
                />
              </td>
            ) : null}
          </tr>
        )}
      />
    </Section>
  );
}

/**
 * Gives a user tenant roles. On the tenant's page (no `userId`) it makes
 * new members only (`If-None-Match: *`): someone who is a member already
 * is changed on their own page, their roles seen first. There (`userId`,
 * `version`) it replaces the grant as read (`If-Match`), never another
 * admin's change unseen.
 */
export function GiveRoles(props: {
  tenantId: string;
  userId?: string;
  roles?: string[];
  expiresAt?: string | null;
  version?: number;
  onDone: () => void;
}) {
  const { api } = useSession();
  const [userId, setUserId] = useState(props.userId ?? '');
  const picked = props.userId ? '' : userId;
  // Whether the person picked is a member here already (a 404: not yet).
  const member = useLoad(async () => {
    if (!picked) return null;
    const found = await api.GET('/tenants/{tenantId}/members/{userId}', {
      params: { path: { tenantId: props.tenantId, userId: picked } },
    });
    return found.response.ok ? found.data ?? null : null;
  }, [props.tenantId, picked]);
  // A grant that has ended (awaiting deletion) is no membership.
  const live = member.data && (!member.data.expiresAt || new Date(member.data.expiresAt) > new Date());
  const already = picked && live ? member.data : null;
  const [roles, setRoles] = useState<string[]>(props.roles ?? []);
  // A grant that ends keeps its end unless it is cleared here.
  const kept = props.expiresAt ? localInput(props.expiresAt) : '';
  const [expiresAt, setExpiresAt] = useState(kept);
  const [reason, setReason] = useState('');
  const action = useAction();
  return (
    <form
      aria-label="Give roles"
      ref={action.scope}
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          if (!userId) throw invalid('userId', 'choose one first: find them by name or address');
          // An existing grant ended sooner is asked for on its own, confirmed ("End the grant sooner").
          if (props.userId && expiresAt && (!kept || new Date(expiresAt) < new Date(kept))) {
            throw invalid(
              'expiresAt',
              'to end the grant sooner, use "End the grant sooner" below: it asks why. Here the end may only stay, move later or be cleared',
            );
          }
          const end = expiresAt === kept ? props.expiresAt ?? undefined : expiresAt ? new Date(expiresAt).toISOString() : undefined;
          const precondition: Record<string, string> = props.userId
            ? props.version === undefined
              ? {}
              : { 'If-Match': String(props.version) }
            : { 'If-None-Match': '*' };
          try {
            await ok(
              api.PUT('/tenants/{tenantId}/members/{userId}', {
                params: { path: { tenantId: props.tenantId, userId } },
                body: { roles, expiresAt: end },
                headers: { ...reasonHeader(reason), ...precondition },
              }),
            );
          } catch (e) {
            // Someone made them a member meanwhile: their roles are changed on their page.
            if (e instanceof Refusal && e.status === 412 && e.field === 'userId') {
              member.reload();
              throw invalid('userId', 'is a member here already: change their roles on their member page');
            }
            throw e;
          }
          member.reload();
          props.onDone();
          return 'Roles saved.';
        });
      }}
    >
      {props.userId ? null : <UserPicker label="Find the user" name="userId" value={userId} onChange={setUserId} />}
      {already ? (
        <p role="status">
          {label(already.names, picked)} is a member here already
          {already.roles.length ? `, with ${already.roles.map((r) => label(already.names, r)).join(', ')}` : ''}:{' '}
          <a href={href('tenants', props.tenantId, 'members', picked)}>change their roles on their member page</a>.
        </p>
      ) : null}
      <RolePicker scope="tenant" tenantId={props.tenantId} value={roles} onChange={setRoles} />
      <Field label="Ends at (empty: never)" type="datetime-local" field="expiresAt" value={expiresAt} onInput={setExpiresAt} />
      <ReasonField value={reason} onInput={setReason} />
      <button type="submit" disabled={action.busy || !!already}>
        Save roles
      </button>
      <Outcome action={action} />
    </form>
  );
}

/** An instant as a `datetime-local` input's value, in local time. */
export function localInput(at: string): string {
  const d = new Date(at);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/**
 * Roles of a scope to choose from, by name, with what each gives: a
 * tenant's roles from the tenant (what its admins may give), the global
 * ones from the catalogue. A page of 100 at a time, found by what their
 * name starts with (`namePrefix`); the checked ones stay listed whatever
 * is searched.
 */
export function RolePicker(props: {
  scope: 'tenant' | 'global';
  tenantId?: string;
  value: string[];
  onChange: (roles: string[]) => void;
}) {
  const { api } = useSession();
  const [prefix, setPrefix] = useState('');
  // Every role shown here so far: a checked one keeps its name when a search leaves it out.
  const [seen, setSeen] = useState<Record<string, Schemas['RoleView']>>({});
  const roles = useLoad(async () => {
    const namePrefix = prefix || undefined;
    const page = props.tenantId
      ? await ok(
          api.GET('/tenants/{tenantId}/roles', { params: { path: { tenantId: props.tenantId }, query: { namePrefix, limit: 100 } } }),
        )
      : await ok(api.GET('/roles', { params: { query: { scope: props.scope, namePrefix, limit: 100 } } }));
    setSeen((old) => ({ ...old, ...Object.fromEntries(page.items.map((r) => [r.roleId, r])) }));
    return page;
  }, [props.scope, props.tenantId, prefix]);
  const found = roles.data?.items ?? [];
  const kept = props.value.filter((id) => !found.some((r) => r.roleId === id));
  const toggle = (roleId: string, on: boolean) =>
    props.onChange(on ? [...props.value, roleId] : props.value.filter((r) => r !== roleId));
  const choice = (roleId: string, role?: Schemas['RoleView']) => (
    <label class="check">
      <input
        type="checkbox"
        checked={props.value.includes(roleId)}
        onChange={(e) => toggle(roleId, (e.target as HTMLInputElement).checked)}
      />
      {role ? role.name : roleId} {role ? <span class="hint">({role.permissions.join(', ')})</span> : null}
    </label>
  );
  return (
    <fieldset>
      <legend>Roles</legend>
      <Search
        label="Find a role (what its name starts with)"
        name="role-search"
        hint="Empty: the first 100"
        onSearch={setPrefix}
      />
      <ErrorNote error={roles.error} />
      <div class="picker" data-field="roles">
        {kept.map((id) => choice(id, seen[id]))}
        {found.map((role) => choice(role.roleId, role))}
      </div>
      {roles.data && !found.length ? (
        <span class="hint">{prefix ? `No ${props.scope} role starts with ${prefix}.` : `No ${props.scope} role yet.`}</span>
      ) : null}
      {roles.data?.nextCursor ? (
        <span class="hint">More {prefix ? `roles start with ${prefix}` : 'roles exist'} than these 100: narrow the search.</span>
      ) : null}
    </fieldset>
  );
}

/** Invites one or several addresses (one a line) with the same roles. */
function Invite({ tenantId, onDone }: { tenantId: string; onDone: () => void }) {
  const { api } = useSession();
  const [emails, setEmails] = useState('');
  const [roles, setRoles] = useState<string[]>([]);
  const [days, setDays] = useState('7');
  const [reason, setReason] = useState('');
  const action = useAction();
  const hintId = 'invite-emails-hint';
  return (
    <Section title="Invite by email">
      <form
        ref={action.scope}
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            const list = emails
              .split(/[\s,;]+/)
              .map((a) => a.trim())
              .filter(Boolean);
            const sent: string[] = [];
            for (const [at, email] of list.entries()) {
              try {
                await ok(
                  api.POST('/tenants/{tenantId}/invitations', {
                    params: { path: { tenantId } },
                    body: { email, roles, expiresInDays: Number(days) },
                    headers: reasonHeader(reason),
                  }),
                );
                sent.push(email);
              } catch (e) {
                onDone();
                // The addresses not invited stay, the refused one first, and its field is marked.
                setEmails(list.slice(at).join('\n'));
                const before = sent.length ? `Invited ${sent.join(', ')}; ` : '';
                const said = `${before}${email} was not invited: ${(e as Error).message}`;
                if (!(e instanceof Refusal)) throw new Error(said);
                throw new Refusal(e.status, e.code, e.detail, e.field, e.permission, e.heldUntil, said);
              }
            }
            setEmails('');
            onDone();
            return `Invited ${sent.join(', ')}.`;
          });
        }}
      >
        <label>
          <span>Email addresses (one a line, or separated by commas)</span>
          <textarea
            name="invite-emails"
            data-field="email"
            rows={3}
            value={emails}
            required
            aria-describedby={hintId}
            onInput={(e) => setEmails((e.target as HTMLTextAreaElement).value)}
          />
          <span class="hint" id={hintId}>
            Each gets an invitation with the same roles.
          </span>
        </label>
        <RolePicker scope="tenant" tenantId={tenantId} value={roles} onChange={setRoles} />
        <Field label="Valid for days (1-30)" type="number" field="expiresInDays" value={days} onInput={setDays} />
        <ReasonField value={reason} onInput={setReason} />
        <button type="submit" disabled={action.busy}>
          Invite
        </button>
        <Outcome action={action} />
      </form>
    </Section>
  );
}

function Invitations({ tenantId, canWrite, round: invited }: { tenantId: string; canWrite: boolean; round: number }) {
  const { api } = useSession();
  const [round, setRound] = useState(0);
  const revoke = useAction();
  return (
    <Section title="Pending invitations">
      <Outcome action={revoke} />
      <Paged<Schemas['InvitationView']>
        label="Pending invitations"
        deps={[tenantId, round, invited]}
        load={(cursor) =>
          ok(api.GET('/tenants/{tenantId}/invitations', { params: { path: { tenantId }, query: { cursor, limit: 25 } } }))
        }
        head={canWrite ? ['Email', 'Roles', 'Sent by', 'Expires', 'Actions'] : ['Email', 'Roles', 'Sent by', 'Expires']}
        empty="No pending invitation."
        row={(i, named) => (
          <tr>
            <td>{i.email}</td>
            <td>{i.roles.map((r) => label(named, r)).join(', ') || 'none'}</td>
            <td>{i.invitedBy ? label(named, i.invitedBy) : 'the operator'}</td>
            <td>
              <When at={i.expiresAt} />
            </td>
            {canWrite ? (
              <td>
                <Confirm
                  label="Revoke"
                  subject={`the invitation to ${i.email}`}
                  consequence={<p>The invitation to {i.email} stops working.</p>}
                  action={revoke}
                  run={async (reason) => {
                    await ok(
                      api.DELETE('/tenants/{tenantId}/invitations/{invitationId}', {
                        params: { path: { tenantId, invitationId: i.invitationId } },
                        headers: reasonHeader(reason),
                      }),
                    );
                    setRound((r) => r + 1);
                    return `Revoked the invitation to ${i.email}.`;
                  }}
                />
              </td>
            ) : null}
          </tr>
        )}
      />
    </Section>
  );
}

function TenantPolicies({ tenantId }: { tenantId: string }) {
  const { api } = useSession();
  const policies = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/policies', { params: { path: { tenantId } } })),
    [tenantId],
  );
  return (
    <Section title="Policies confined to this tenant">
      <ErrorNote error={policies.error} />
      <p class="hint">Global policies apply here too.</p>
      {policies.data?.items.length ? (
        <ul>
          {policies.data.items.map((p) => (
            <li>
              <a href={href('policies', p.policyId)}>{p.name}</a>
            </li>
          ))}
        </ul>
      ) : (
        <p class="empty">None.</p>
      )}
    </Section>
  );
}
