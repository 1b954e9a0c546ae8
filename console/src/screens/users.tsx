// Users: the list (by status, by email prefix), creating one (with the
// identity they sign in with), and one user: addresses and their
// verification, identities, status, global roles.
import { useState } from 'preact/hooks';

import { ok, type Schemas } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import { DeleteWithReason, Done, ErrorNote, Field, Paged, PrefixSearch, Section, When, useAction, useLoad } from '../ui';
import { RolePicker } from './tenants';

type Status = 'active' | 'suspended' | 'deleted';

export function Users() {
  const { api, issuer } = useSession();
  const can = useCan(['user:create', 'user:read']);
  const [status, setStatus] = useState<Status>('active');
  const [search, setSearch] = useState('');
  const [email, setEmail] = useState('');
  const [subject, setSubject] = useState('');
  const [roles, setRoles] = useState<string[]>([]);
  const create = useAction();
  return (
    <>
      <h1>Users</h1>
      {can['user:create'] ? (
        <Section title="Create a user">
          <form
            onSubmit={(e) => {
              e.preventDefault();
              void create.run(async () => {
                const user = await ok(
                  api.POST('/users', {
                    body: {
                      email,
                      roles,
                      identities: subject ? [{ issuer, subject }] : [],
                    },
                  }),
                );
                go('users', user.userId);
              });
            }}
          >
            <Field label="Email" name="user-email" type="email" value={email} onInput={setEmail} required />
            <Field
              label={`Signs in as (subject at ${issuer}, optional)`}
              name="user-subject"
              value={subject}
              onInput={setSubject}
            />
            <RolePicker scope="global" value={roles} onChange={setRoles} />
            <button type="submit" disabled={create.busy}>
              Create user
            </button>
            <ErrorNote error={create.error} />
          </form>
        </Section>
      ) : null}
      <Section title="Find users">
        <PrefixSearch label="Email starts with" onSearch={setSearch}>
          <label>
            <span>Status</span>
            <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value as Status)}>
              <option value="active">active</option>
              <option value="suspended">suspended</option>
              <option value="deleted">deleted</option>
            </select>
          </label>
        </PrefixSearch>
        {can['user:read'] === false ? (
          <p class="empty">You may not list users.</p>
        ) : (
          <Paged<Schemas['UserView']>
            label="Users"
            deps={[status, search]}
            load={(cursor) =>
              ok(api.GET('/users', { params: { query: { status, emailPrefix: search || undefined, cursor, limit: 25 } } }))
            }
            head={['Email', 'Status', 'Global roles']}
            empty="No user matches."
            row={(u) => (
              <tr>
                <td>
                  <a href={href('users', u.userId)}>{u.email}</a>
                </td>
                <td>{u.status}</td>
                <td>{u.roles.join(', ') || 'none'}</td>
              </tr>
            )}
          />
        )}
      </Section>
    </>
  );
}

export function User({ userId }: { userId: string }) {
  const { api } = useSession();
  const can = useCan(['user:update', 'user:delete']);
  const user = useLoad(() => ok(api.GET('/users/{userId}', { params: { path: { userId } } })), [userId]);
  const emails = useLoad(
    () => ok(api.GET('/users/{userId}/emails', { params: { path: { userId } } })),
    [userId, user.data?.version],
  );
  const verify = useAction();
  const u = user.data;
  return (
    <>
      <h1>{u ? `User ${u.email}` : 'User'}</h1>
      <p class="id">{userId}</p>
      <p>
        <a href={href('history', 'user', userId)}>History of this user</a>
      </p>
      <ErrorNote error={user.error} />
      {u ? (
        <Section title="Account">
          <dl>
            <dt>Status</dt>
            <dd>{u.status}</dd>
            <dt>Global roles</dt>
            <dd>{u.roles.join(', ') || 'none'}</dd>
            <dt>Global roles end</dt>
            <dd>
              <When at={u.rolesExpireAt} />
            </dd>
            <dt>Permissions everywhere</dt>
            <dd>{u.effectivePermissions.join(', ') || 'none'}</dd>
          </dl>
        </Section>
      ) : null}
      <Section title="Email addresses">
        <ErrorNote error={emails.error} />
        <table aria-label="Email addresses">
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">Primary</th>
              <th scope="col">Verified</th>
              <th scope="col">
                <span class="hint">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {emails.data?.items.map((e) => (
              <tr>
                <td>{e.email}</td>
                <td>{e.isPrimary ? 'primary' : ''}</td>
                <td>{e.isVerified ? <When at={e.verifiedAt} /> : 'not verified'}</td>
                <td>
                  {!e.isVerified && can['user:update'] ? (
                    <button
                      type="button"
                      disabled={verify.busy}
                      aria-label={`Mark ${e.email} verified`}
                      onClick={() =>
                        verify.run(async () => {
                          // On the administrator's word (the API refuses it
                          // for their own addresses).
                          await ok(
                            api.POST('/users/{userId}/emails/{emailId}/verify', {
                              params: { path: { userId, emailId: e.emailId } },
                              body: { verified: true },
                            }),
                          );
                          emails.reload();
                          return `${e.email} is verified.`;
                        })
                      }
                    >
                      Mark verified
                    </button>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <ErrorNote error={verify.error} />
        <Done text={verify.done} />
      </Section>
      {u ? (
        <Section title="Identities">
          {u.identities?.length ? (
            <ul>
              {u.identities?.map((i) => (
                <li>
                  {i.subject} at {i.issuer}
                </li>
              ))}
            </ul>
          ) : (
            <p class="empty">None linked.</p>
          )}
        </Section>
      ) : null}
      {u && can['user:update'] ? <Manage user={u} onDone={user.reload} /> : null}
      {u && can['user:delete'] ? (
        <DeleteWithReason
          what="user"
          warning="Removes their addresses, identities, roles and grants; they are refused at once."
          remove={async (reason) => {
            await ok(
              api.DELETE('/users/{userId}', {
                params: { path: { userId }, header: { 'X-Change-Reason': reason } },
              }),
            );
            go('users');
          }}
        />
      ) : null}
    </>
  );
}

function Manage({ user, onDone }: { user: Schemas['UserView']; onDone: () => void }) {
  const { api } = useSession();
  const [roles, setRoles] = useState<string[]>(user.roles);
  const status = useAction();
  const save = useAction();
  const setStatus = (next: Status) =>
    status.run(async () => {
      // Taking access away needs no version (the target cannot hold it
      // off); giving it back does.
      await ok(
        api.PATCH('/users/{userId}', {
          params: { path: { userId: user.userId } },
          body: next === 'active' ? { status: next, version: user.version } : { status: next },
        }),
      );
      onDone();
      return `Status is now ${next}.`;
    });
  return (
    <Section title="Manage">
      <div class="row">
        {user.status === 'active' ? (
          <button type="button" class="danger" disabled={status.busy} onClick={() => setStatus('suspended')}>
            Suspend
          </button>
        ) : (
          <button type="button" disabled={status.busy} onClick={() => setStatus('active')}>
            Activate
          </button>
        )}
      </div>
      <ErrorNote error={status.error} />
      <Done text={status.done} />
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save.run(async () => {
            await ok(
              api.PATCH('/users/{userId}', {
                params: { path: { userId: user.userId } },
                body: { roles, version: user.version },
              }),
            );
            onDone();
            return 'Global roles saved.';
          });
        }}
      >
        <RolePicker scope="global" value={roles} onChange={setRoles} />
        <button type="submit" disabled={save.busy}>
          Save global roles
        </button>
        <ErrorNote error={save.error} />
        <Done text={save.done} />
      </form>
    </Section>
  );
}
