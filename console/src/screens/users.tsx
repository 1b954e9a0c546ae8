// Users: finding one (by name, email, id or identity), creating one (with
// the identity they sign in with), and the whole user on one page: their
// name and phone, status (suspending asks why), global roles, tenants and
// grants, addresses (add, remove, verify, send the code again, make
// primary) and identities (link, unlink).
import { useState } from 'preact/hooks';

import { ok, type Schemas } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
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
  ReasonField,
  Section,
  When,
  eachInTurn,
  label,
  personName,
  encodeReason,
  reasonHeader,
  useAction,
  useLoad,
  useTitle,
} from '../ui';
import { RolePicker } from './tenants';

type Status = 'active' | 'suspended' | 'deleted';

export function Users() {
  useTitle('Users');
  const { api, issuer } = useSession();
  const can = useCan(['user:create', 'user:read', 'user:update']);
  const [status, setStatus] = useState<Status>('active');
  const [chosen, setChosen] = useState<Schemas['UserView'][]>([]);
  const [round, setRound] = useState(0);
  const bulk = !!can['user:update'] && status === 'active';
  const suspension = useAction();
  const [q, setQ] = useState('');
  const [typed, setTyped] = useState('');
  const [email, setEmail] = useState('');
  const [givenName, setGivenName] = useState('');
  const [familyName, setFamilyName] = useState('');
  const [subject, setSubject] = useState('');
  const [roles, setRoles] = useState<string[]>([]);
  const [reason, setReason] = useState('');
  const create = useAction();
  return (
    <>
      <h1>Users</h1>
      <Section title="Find users">
        <form
          role="search"
          aria-label="Find users"
          onSubmit={(e) => {
            e.preventDefault();
            setQ(typed.trim());
            setChosen([]);
          }}
        >
          <Field
            label="Name, email (or its start), user id, or issuer and subject"
            name="user-query"
            value={typed}
            onInput={setTyped}
          />
          <label>
            <span>Status</span>
            <select value={status} onChange={(e) => setStatus((e.target as HTMLSelectElement).value as Status)}>
              <option value="active">active</option>
              <option value="suspended">suspended</option>
              <option value="deleted">deleted</option>
            </select>
          </label>
          <button type="submit">Search</button>
        </form>
        {bulk ? (
          <div class="row">
            <Confirm
              label={`Suspend ${chosen.length} selected`}
              disabled={!chosen.length}
              action={suspension}
              consequence={<p>{chosen.map(personName).join(', ')} are refused everywhere within seconds, until activated again.</p>}
              reasonRequired
              run={async (why) => {
                // One change each, with the reason; a refusal stops the rest.
                const n = await eachInTurn(
                  chosen,
                  (u) =>
                    ok(
                      api.PATCH('/users/{userId}', {
                        params: { path: { userId: u.userId } },
                        body: { status: 'suspended' },
                        headers: reasonHeader(why),
                      }),
                    ),
                  personName,
                  // Those done leave the selection and the list, refused or not.
                  (done) => {
                    setChosen((c) => c.filter((u) => !done.includes(u)));
                    setRound((r) => r + 1);
                  },
                );
                return `Suspended ${n} users.`;
              }}
            />
          </div>
        ) : null}
        <Outcome action={suspension} />
        {can['user:read'] === false ? (
          <p class="empty">You may not list users.</p>
        ) : (
          <Paged<Schemas['UserView']>
            label="Users"
            deps={[status, q, round]}
            load={(cursor) =>
              q
                ? ok(api.GET('/users/search', { params: { query: { q, status, cursor, limit: 25 } } }))
                : ok(api.GET('/users', { params: { query: { status, cursor, limit: 25 } } }))
            }
            head={bulk ? ['Select', 'User', 'Status', 'Global roles'] : ['User', 'Status', 'Global roles']}
            empty="No user matches."
            row={(u, names) => (
              <tr>
                {bulk ? (
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Select ${personName(u)}`}
                      checked={chosen.some((c) => c.userId === u.userId)}
                      onChange={(e) =>
                        setChosen((c) =>
                          (e.target as HTMLInputElement).checked ? [...c, u] : c.filter((x) => x.userId !== u.userId),
                        )
                      }
                    />
                  </td>
                ) : null}
                <td>
                  <Named id={u.userId} names={{ [u.userId]: personName(u) }} href={href('users', u.userId)} what="user" />
                </td>
                <td>{u.status}</td>
                <td>{u.roles.map((r) => label(names, r)).join(', ') || 'none'}</td>
              </tr>
            )}
          />
        )}
      </Section>
      {can['user:create'] ? (
        <Section title="Create a user">
          <form
            ref={create.scope}
            onSubmit={(e) => {
              e.preventDefault();
              void create.run(async () => {
                const user = await ok(
                  api.POST('/users', {
                    body: {
                      email,
                      givenName: givenName || undefined,
                      familyName: familyName || undefined,
                      roles,
                      identities: subject ? [{ issuer, subject }] : [],
                    },
                    headers: reasonHeader(reason),
                  }),
                );
                go('users', user.userId);
              });
            }}
          >
            <Field label="Email" name="user-email" field="email" type="email" value={email} onInput={setEmail} required />
            <Field label="Given name" name="user-given" field="givenName" value={givenName} onInput={setGivenName} />
            <Field label="Family name" name="user-family" field="familyName" value={familyName} onInput={setFamilyName} />
            <Field
              label={`Signs in as (subject at ${issuer}, optional)`}
              name="user-subject"
              field="identities"
              value={subject}
              onInput={setSubject}
            />
            <RolePicker scope="global" value={roles} onChange={setRoles} />
            <ReasonField value={reason} onInput={setReason} />
            <button type="submit" disabled={create.busy}>
              Create user
            </button>
            <Outcome action={create} />
          </form>
        </Section>
      ) : null}
    </>
  );
}

export function User({ userId }: { userId: string }) {
  const { api, me } = useSession();
  const can = useCan(['user:update', 'user:delete', 'user:read', 'email:code']);
  const user = useLoad(() => ok(api.GET('/users/{userId}', { params: { path: { userId } } })), [userId]);
  const u = user.data;
  useTitle(u ? `User ${personName(u)}` : 'User');
  const own = me.user.userId === userId;
  return (
    <>
      <h1>{u ? personName(u) : 'User'}</h1>
      <p class="id">
        {userId} <Copy text={userId} what="user" />
      </p>
      <p>
        <a href={href('history', 'user', userId)}>History of this user</a>
      </p>
      <ErrorNote error={user.error} />
      {u ? <Account user={u} canUpdate={!!can['user:update']} onDone={user.reload} /> : null}
      {u ? <Tenants userId={userId} /> : null}
      {u ? (
        <Emails
          user={u}
          canUpdate={!!can['user:update'] || own}
          canVouch={!!can['user:update'] && !own}
          canResend={!!can['email:code'] && !own}
          onDone={user.reload}
        />
      ) : null}
      {u ? <Identities user={u} canUpdate={!!can['user:update']} onDone={user.reload} /> : null}
      {u && can['user:delete'] ? (
        <DeleteWithReason
          what="user"
          warning="Removes their addresses, identities, roles and grants; they are refused at once."
          remove={async (reason) => {
            await ok(
              api.DELETE('/users/{userId}', {
                params: { path: { userId }, header: { 'X-Change-Reason': encodeReason(reason) } },
              }),
            );
            go('users');
          }}
        />
      ) : null}
    </>
  );
}

function Account({ user, canUpdate, onDone }: { user: Schemas['UserView']; canUpdate: boolean; onDone: () => void }) {
  const { api } = useSession();
  const [givenName, setGivenName] = useState(user.givenName ?? '');
  const [familyName, setFamilyName] = useState(user.familyName ?? '');
  const [phone, setPhone] = useState(user.phone ?? '');
  const [roles, setRoles] = useState<string[]>(user.roles);
  const [reason, setReason] = useState('');
  const [rolesReason, setRolesReason] = useState('');
  const profile = useAction();
  const save = useAction();
  // The read names the global roles held.
  const names: Record<string, string> = user.names ?? {};
  const setStatus = (next: Status, why: string) =>
    (async () => {
      // Taking access away needs no version (the target cannot hold it
      // off); giving it back does.
      await ok(
        api.PATCH('/users/{userId}', {
          params: { path: { userId: user.userId } },
          body: next === 'active' ? { status: next, version: user.version } : { status: next },
          headers: reasonHeader(why),
        }),
      );
      onDone();
      return `Status is now ${next}.`;
    })();
  return (
    <>
      <Section title="Account">
        <dl>
          <dt>Status</dt>
          <dd>{user.status}</dd>
          <dt>Global roles</dt>
          <dd>{user.roles.map((r) => label(names, r)).join(', ') || 'none'}</dd>
          <dt>Global roles end</dt>
          <dd>
            <When at={user.rolesExpireAt} />
          </dd>
          <dt>Permissions everywhere</dt>
          <dd>{user.effectivePermissions.join(', ') || 'none'}</dd>
        </dl>
        {canUpdate ? (
          <div class="row">
            {user.status === 'active' ? (
              <Confirm
                label="Suspend"
                consequence={<p>{personName(user)} is refused everywhere within seconds, until activated again.</p>}
                reasonRequired
                run={(why) => setStatus('suspended', why)}
              />
            ) : (
              <Confirm label="Activate" danger={false} consequence={<p>{personName(user)} gets back what they hold.</p>} run={(why) => setStatus('active', why)} />
            )}
          </div>
        ) : null}
      </Section>
      {canUpdate ? (
        <Section title="Name and phone">
          <form
            ref={profile.scope}
            onSubmit={(e) => {
              e.preventDefault();
              void profile.run(async () => {
                await ok(
                  api.PATCH('/users/{userId}', {
                    params: { path: { userId: user.userId } },
                    body: {
                      givenName: givenName || null,
                      familyName: familyName || null,
                      phone: phone || null,
                      version: user.version,
                    },
                    headers: reasonHeader(reason),
                  }),
                );
                onDone();
                return 'Saved.';
              });
            }}
          >
            <Field label="Given name" field="givenName" value={givenName} onInput={setGivenName} />
            <Field label="Family name" field="familyName" value={familyName} onInput={setFamilyName} />
            <Field label="Phone (E.164, +15550100)" type="tel" field="phone" value={phone} onInput={setPhone} />
            <ReasonField value={reason} onInput={setReason} />
            <button type="submit" disabled={profile.busy}>
              Save
            </button>
            <Outcome action={profile} />
          </form>
        </Section>
      ) : null}
      {canUpdate ? (
        <Section title="Global roles">
          <form
            ref={save.scope}
            onSubmit={(e) => {
              e.preventDefault();
              void save.run(async () => {
                await ok(
                  api.PATCH('/users/{userId}', {
                    params: { path: { userId: user.userId } },
                    body: { roles, version: user.version },
                    headers: reasonHeader(rolesReason),
                  }),
                );
                onDone();
                return 'Global roles saved.';
              });
            }}
          >
            <RolePicker scope="global" value={roles} onChange={setRoles} />
            <ReasonField value={rolesReason} onInput={setRolesReason} />
            <button type="submit" disabled={save.busy}>
              Save global roles
            </button>
            <Outcome action={save} />
          </form>
        </Section>
      ) : null}
    </>
  );
}

function Tenants({ userId }: { userId: string }) {
  const { api } = useSession();
  return (
    <Section title="Tenants and grants">
      <Paged<Schemas['GrantView']>
        label="Tenants"
        deps={[userId]}
        load={(cursor) => ok(api.GET('/users/{userId}/tenants', { params: { path: { userId }, query: { cursor, limit: 25 } } }))}
        head={['Tenant', 'Roles', 'Ends']}
        empty="A member of no tenant."
        row={(g, named) => (
          <tr>
            <td>
              <Named id={g.tenantId} names={named} href={href('tenants', g.tenantId, 'members', userId)} what="tenant" />
            </td>
            <td>{g.roles.map((r) => label(named, r)).join(', ') || 'none'}</td>
            <td>
              <When at={g.expiresAt} />
            </td>
          </tr>
        )}
      />
    </Section>
  );
}

/**
 * A user's addresses: verify one (by the code it was sent, or on an
 * administrator's word), send its code again (for whoever delivers codes,
 * `email:code`), make one primary, remove one, add one; each with why.
 */
function Emails(props: { user: Schemas['UserView']; canUpdate: boolean; canVouch: boolean; canResend: boolean; onDone: () => void }) {
  const { api } = useSession();
  const userId = props.user.userId;
  const emails = useLoad(() => ok(api.GET('/users/{userId}/emails', { params: { path: { userId } } })), [userId, props.user.version]);
  const [email, setEmail] = useState('');
  const [code, setCode] = useState<Record<string, string>>({});
  // One reason for what is done to an address in the table (verify, make primary); adding has its own.
  const [reason, setReason] = useState('');
  const [addReason, setAddReason] = useState('');
  const add = useAction();
  const act = useAction();
  const reload = () => {
    emails.reload();
    props.onDone();
  };
  return (
    <Section title="Email addresses">
      <ErrorNote error={emails.error} />
      {props.canUpdate && emails.data?.items.some((e) => !e.isVerified || !e.isPrimary) ? (
        <ReasonField
          label="Why you verify an address or make it primary (kept in the history, optional)"
          value={reason}
          onInput={setReason}
        />
      ) : null}
      <div class="scroll" tabIndex={0}>
        <table aria-label="Email addresses">
          <thead>
            <tr>
              <th scope="col">Address</th>
              <th scope="col">Primary</th>
              <th scope="col">Verified</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {emails.data?.items.map((e) => (
              <tr>
                <td>{e.email}</td>
                <td>{e.isPrimary ? 'primary' : 'no'}</td>
                <td>{e.isVerified ? <When at={e.verifiedAt} /> : 'not verified'}</td>
                <td>
                  <div class="actions">
                    {!e.isVerified && props.canUpdate ? (
                      <form
                        class="inline"
                        aria-label={`Verify ${e.email} with its code`}
                        onSubmit={(ev) => {
                          ev.preventDefault();
                          // A wrong code marks this address's box, not another's.
                          act.scope(ev.currentTarget as HTMLFormElement);
                          void act.run(async () => {
                            await ok(
                              api.POST('/users/{userId}/emails/{emailId}/verify', {
                                params: { path: { userId, emailId: e.emailId } },
                                body: { code: code[e.emailId] ?? '' },
                                headers: reasonHeader(reason),
                              }),
                            );
                            reload();
                            return `${e.email} is verified.`;
                          });
                        }}
                      >
                        <Field
                          label={`Code sent to ${e.email}`}
                          field="code"
                          value={code[e.emailId] ?? ''}
                          onInput={(v) => setCode((c) => ({ ...c, [e.emailId]: v }))}
                        />
                        <button type="submit" disabled={act.busy}>
                          Verify {e.email}
                        </button>
                      </form>
                    ) : null}
                    {!e.isVerified && props.canVouch ? (
                      <button
                        type="button"
                        disabled={act.busy}
                        onClick={() =>
                          act.run(async () => {
                            // On the administrator's word (the API refuses it
                            // for their own addresses).
                            await ok(
                              api.POST('/users/{userId}/emails/{emailId}/verify', {
                                params: { path: { userId, emailId: e.emailId } },
                                body: { verified: true },
                                headers: reasonHeader(reason),
                              }),
                            );
                            reload();
                            return `${e.email} is verified.`;
                          })
                        }
                      >
                        Vouch for {e.email}
                      </button>
                    ) : null}
                    {!e.isVerified && props.canResend ? (
                      <button
                        type="button"
                        class="quiet"
                        disabled={act.busy}
                        onClick={() =>
                          act.run(async () => {
                            // The API sends no mail: whoever asks delivers the code.
                            const sent = await ok(
                              api.POST('/users/{userId}/emails/{emailId}/code', { params: { path: { userId, emailId: e.emailId } } }),
                            );
                            const until = sent.verificationCodeExpiresAt ? `, until ${new Date(sent.verificationCodeExpiresAt).toLocaleString()}` : '';
                            return sent.verificationCode
                              ? `A new code for ${e.email}: ${sent.verificationCode}${until}. Send it to the address; the previous code no longer works.`
                              : `A new code was made for ${e.email}; the previous one no longer works.`;
                          })
                        }
                      >
                        Send the code again to {e.email}
                      </button>
                    ) : null}
                    {e.isVerified && !e.isPrimary && props.canUpdate ? (
                      <button
                        type="button"
                        disabled={act.busy}
                        onClick={() =>
                          act.run(async () => {
                            await ok(
                              api.PUT('/users/{userId}/primary-email', {
                                params: { path: { userId } },
                                body: { emailId: e.emailId, version: props.user.version },
                                headers: reasonHeader(reason),
                              }),
                            );
                            reload();
                            return `${e.email} is the primary address now.`;
                          })
                        }
                      >
                        Make {e.email} primary
                      </button>
                    ) : null}
                    {!e.isPrimary && props.canUpdate ? (
                      <Confirm
                        label={`Remove ${e.email}`}
                        consequence={<p>{e.email} is no longer one of this user's addresses; invitations to it are not theirs.</p>}
                        action={act}
                        run={async (why) => {
                          await ok(
                            api.DELETE('/users/{userId}/emails/{emailId}', {
                              params: { path: { userId, emailId: e.emailId } },
                              headers: reasonHeader(why),
                            }),
                          );
                          reload();
                          return `Removed ${e.email}.`;
                        }}
                      />
                    ) : null}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Outcome action={act} />
      {props.canUpdate ? (
        <form
          ref={add.scope}
          onSubmit={(e) => {
            e.preventDefault();
            void add.run(async () => {
              await ok(
                api.POST('/users/{userId}/emails', { params: { path: { userId } }, body: { email }, headers: reasonHeader(addReason) }),
              );
              setEmail('');
              reload();
              return `Added ${email}: a code goes to it; it is the user's once verified.`;
            });
          }}
        >
          <Field label="Add an address" type="email" field="email" name="add-email" value={email} onInput={setEmail} required />
          <ReasonField value={addReason} onInput={setAddReason} />
          <button type="submit" disabled={add.busy}>
            Add address
          </button>
          <Outcome action={add} />
        </form>
      ) : null}
    </Section>
  );
}

function Identities({ user, canUpdate, onDone }: { user: Schemas['UserView']; canUpdate: boolean; onDone: () => void }) {
  const { api, issuer: ownIssuer } = useSession();
  const [issuer, setIssuer] = useState(ownIssuer);
  const [subject, setSubject] = useState('');
  const [reason, setReason] = useState('');
  const link = useAction();
  const unlink = useAction();
  return (
    <Section title="Identities">
      <p class="hint">
        A token carrying one of these acts as this user. The last platform administrator keeps at least one (unlinking it
        is refused, so someone can always sign in as an administrator).
      </p>
      <Outcome action={unlink} />
      {user.identities?.length ? (
        <ul>
          {user.identities.map((i) => (
            <li>
              <code>{i.subject}</code> at {i.issuer} <span class="hint">since <When at={i.linkedAt} /></span>{' '}
              {canUpdate ? (
                <Confirm
                  label={`Unlink ${i.subject}`}
                  consequence={<p>Tokens for {i.subject} at {i.issuer} stop acting as this user within seconds.</p>}
                  action={unlink}
                  run={async (why) => {
                    await ok(
                      api.DELETE('/users/{userId}/identities/{identityId}', {
                        params: { path: { userId: user.userId, identityId: i.identityId } },
                        headers: reasonHeader(why),
                      }),
                    );
                    onDone();
                    return `Unlinked ${i.subject}.`;
                  }}
                />
              ) : null}
            </li>
          ))}
        </ul>
      ) : (
        <p class="empty">None linked.</p>
      )}
      {canUpdate ? (
        <form
          ref={link.scope}
          onSubmit={(e) => {
            e.preventDefault();
            void link.run(async () => {
              await ok(
                api.POST('/users/{userId}/identities', {
                  params: { path: { userId: user.userId } },
                  body: { issuer, subject },
                  headers: reasonHeader(reason),
                }),
              );
              setSubject('');
              onDone();
              return `Linked ${subject}.`;
            });
          }}
        >
          <Field label="Issuer" field="issuer" name="identity-issuer" value={issuer} onInput={setIssuer} required />
          <Field label="Subject (what the issuer calls them)" field="subject" name="identity-subject" value={subject} onInput={setSubject} required />
          <ReasonField value={reason} onInput={setReason} />
          <button type="submit" disabled={link.busy}>
            Link identity
          </button>
          <Outcome action={link} />
        </form>
      ) : null}
    </Section>
  );
}
