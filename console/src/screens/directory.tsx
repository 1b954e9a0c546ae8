// A tenant's directory (SCIM), for its admins: tokens (created with a
// name and an optional end, the secret shown once with the SCIM base URL,
// listed, revoked with a reason) and the directory's groups with the
// tenant roles each gives its members (mapped by picking roles by name).
import { useState } from 'preact/hooks';

import { ok, type Schemas } from '../api';
import { useSession } from '../session';
import { Confirm, Copy, ErrorNote, Field, Outcome, ReasonField, Section, When, reasonHeader, useAction, useLoad } from '../ui';
import { RolePicker } from './tenants';

export function Directory({ tenantId }: { tenantId: string }) {
  return (
    <>
      <Tokens tenantId={tenantId} />
      <Groups tenantId={tenantId} />
    </>
  );
}

function Tokens({ tenantId }: { tenantId: string }) {
  const { api } = useSession();
  const [name, setName] = useState('');
  const [expiresAt, setExpiresAt] = useState('');
  const [reason, setReason] = useState('');
  const [issued, setIssued] = useState<Schemas['CreatedScimToken'] | null>(null);
  const create = useAction();
  const revoke = useAction();
  const tokens = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/scim-tokens', { params: { path: { tenantId } } })),
    [tenantId],
  );
  return (
    <Section title="Directory tokens (SCIM)">
      <p class="hint">
        A token lets this tenant&apos;s directory (Okta, Entra ID) provision its people here, on this tenant&apos;s SCIM
        base only.
      </p>
      <form
        aria-label="Create a directory token"
        ref={create.scope}
        onSubmit={(e) => {
          e.preventDefault();
          void create.run(async () => {
            const made = await ok(
              api.POST('/tenants/{tenantId}/scim-tokens', {
                params: { path: { tenantId } },
                body: { name, expiresAt: expiresAt ? new Date(expiresAt).toISOString() : undefined },
                headers: reasonHeader(reason),
              }),
            );
            setIssued(made);
            setName('');
            tokens.reload();
            return `Created the token ${made.name}: copy it now, it is not shown again.`;
          });
        }}
      >
        <Field label="Name (what the directory is)" name="scim-token-name" field="name" value={name} onInput={setName} required />
        <Field label="Ends at (empty: until revoked)" type="datetime-local" field="expiresAt" value={expiresAt} onInput={setExpiresAt} />
        <ReasonField value={reason} onInput={setReason} />
        <button type="submit" disabled={create.busy}>
          Create token
        </button>
        <Outcome action={create} />
      </form>
      {issued ? (
        <dl class="issued" aria-label="The new token">
          <dt>SCIM base URL</dt>
          <dd>
            <code>{issued.baseUrl}</code> <Copy text={issued.baseUrl} what="SCIM base URL" id={false} />
          </dd>
          <dt>Token (shown once)</dt>
          <dd>
            <code class="secret">{issued.token}</code> <Copy text={issued.token} what="token" id={false} />
          </dd>
        </dl>
      ) : null}
      <ErrorNote error={tokens.error} />
      <Outcome action={revoke} />
      {tokens.data?.items.length ? (
        <div class="scroll">
          <table aria-label="Directory tokens">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Created</th>
                <th scope="col">Ends</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {tokens.data.items.map((t) => (
                <tr>
                  <td>{t.name}</td>
                  <td>
                    <When at={t.createdAt} />
                  </td>
                  <td>{t.expiresAt ? <When at={t.expiresAt} /> : 'when revoked'}</td>
                  <td>
                    <Confirm
                      label={`Revoke ${t.name}`}
                      consequence={<p>The directory using {t.name} is refused from now on, within seconds.</p>}
                      action={revoke}
                      run={async (reason) => {
                        await ok(
                          api.DELETE('/tenants/{tenantId}/scim-tokens/{tokenId}', {
                            params: { path: { tenantId, tokenId: t.tokenId } },
                            headers: reasonHeader(reason),
                          }),
                        );
                        tokens.reload();
                        return `Revoked ${t.name}.`;
                      }}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : (
        <p class="empty">No directory token.</p>
      )}
    </Section>
  );
}

/** How many of the directory's groups one page shows. */
const GROUPS_PER_PAGE = 20;

function Groups({ tenantId }: { tenantId: string }) {
  const { api } = useSession();
  // A page at a time (each group with its own role picker): the cursors
  // of the pages before this one, to go back.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const cursor = cursors[cursors.length - 1];
  const groups = useLoad(
    () =>
      ok(
        api.GET('/tenants/{tenantId}/scim-groups', {
          params: { path: { tenantId }, query: { limit: GROUPS_PER_PAGE, cursor } },
        }),
      ),
    [tenantId, cursor],
  );
  // The roles the groups give, named by the list; those a mapping picks
  // among the tenant's first 100, for what a save says.
  const roles = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/roles', { params: { path: { tenantId }, query: { limit: 100 } } })),
    [tenantId],
  );
  const names = {
    ...Object.fromEntries((roles.data?.items ?? []).map((r) => [r.roleId, r.name])),
    ...(groups.data?.names ?? {}),
  };
  const next = groups.data?.nextCursor;
  return (
    <Section title="Directory groups">
      <p class="hint">
        The directory&apos;s groups give nothing until you map them to roles here; its members then hold those roles in
        this tenant, and lose them when they leave the group.
      </p>
      <ErrorNote error={groups.error} />
      {groups.data?.items.length ? (
        groups.data.items.map((g) => <Group tenantId={tenantId} group={g} names={names} onDone={groups.reload} />)
      ) : (
        <p class="empty">The directory has pushed no group yet.</p>
      )}
      <div class="row">
        {cursors.length > 1 ? (
          <button type="button" onClick={() => setCursors(cursors.slice(0, -1))}>
            Previous groups
          </button>
        ) : null}
        {next ? (
          <button type="button" onClick={() => setCursors([...cursors, next])}>
            Next groups
          </button>
        ) : null}
      </div>
    </Section>
  );
}

function Group(props: {
  tenantId: string;
  group: Schemas['ScimGroupView'];
  names: Record<string, string>;
  onDone: () => void;
}) {
  const { api } = useSession();
  const { group } = props;
  const [roles, setRoles] = useState<string[]>(group.roles);
  const [reason, setReason] = useState('');
  const action = useAction();
  const given = group.roles.map((r) => props.names[r] ?? r).join(', ') || 'nothing';
  return (
    <form
      aria-label={`Group ${group.displayName}`}
      ref={action.scope}
      onSubmit={(e) => {
        e.preventDefault();
        void action.run(async () => {
          await ok(
            api.PUT('/tenants/{tenantId}/scim-groups/{groupId}/roles', {
              params: { path: { tenantId: props.tenantId, groupId: group.groupId } },
              body: { roles },
              headers: reasonHeader(reason),
            }),
          );
          props.onDone();
          return `${group.displayName} gives ${roles.map((r) => props.names[r] ?? r).join(', ') || 'nothing'} now.`;
        });
      }}
    >
      <h3>{group.displayName}</h3>
      <p>
        {group.members} member{group.members === 1 ? '' : 's'}; gives {given}.
      </p>
      <RolePicker scope="tenant" tenantId={props.tenantId} value={roles} onChange={setRoles} />
      <ReasonField value={reason} onInput={setReason} />
      <button type="submit" disabled={action.busy}>
        Save the roles of {group.displayName}
      </button>
      <Outcome action={action} />
    </form>
  );
}
