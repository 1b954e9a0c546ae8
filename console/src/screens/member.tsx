// One member of a tenant: who they are, their grant (roles by name, when
// it ends), what each permission comes from, changing it, ending it
// sooner, or removing it (each confirmed, with why).
import { useState } from 'preact/hooks';

import { ok } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import { Confirm, Copy, ErrorNote, Field, PermissionSources, Section, When, label, reasonHeader, useLoad, useTitle } from '../ui';
import { GiveRoles, localInput } from './tenants';

export function Member({ tenantId, userId }: { tenantId: string; userId: string }) {
  const { api } = useSession();
  const can = useCan(['member:write'], tenantId);
  const path = { tenantId, userId };
  const grant = useLoad(() => ok(api.GET('/tenants/{tenantId}/members/{userId}', { params: { path } })), [tenantId, userId]);
  // The read names its user, tenant and roles, whatever the user's status.
  const names = grant.data?.names ?? {};
  const sources = useLoad(
    () => ok(api.GET('/tenants/{tenantId}/members/{userId}/permissions', { params: { path } })),
    [tenantId, userId, grant.data?.version],
  );
  // Names once the grant is read; never two ids as a heading (a removed
  // member's page, linked from the history, has no grant to name them).
  const who = grant.data ? label(names, userId) : 'this user';
  const where = grant.data ? label(names, tenantId) : 'this tenant';
  const heading = grant.data ? `${who} in ${where}` : grant.error ? 'Not a member here' : 'Member';
  useTitle(heading);
  return (
    <>
      <h1>{heading}</h1>
      <p>
        User <a href={href('users', userId)}>{who}</a> <Copy text={userId} what="user" /> in tenant{' '}
        <a href={href('tenants', tenantId)}>{label(names, tenantId)}</a> <Copy text={tenantId} what="tenant" />
      </p>
      <p>
        <a href={href('history', 'grant', tenantId, userId)}>History of this grant</a>
      </p>
      <ErrorNote error={grant.error} />
      {grant.data ? (
        <Section title="Grant">
          <dl>
            <dt>Roles</dt>
            <dd>{grant.data.roles.map((r) => label(names, r)).join(', ') || 'none'}</dd>
            <dt>Ends</dt>
            <dd>
              <When at={grant.data.expiresAt} />
            </dd>
          </dl>
        </Section>
      ) : null}
      <Section title="Permissions and where they come from">
        <ErrorNote error={sources.error} />
        <PermissionSources permissions={sources.data?.permissions} />
      </Section>
      {can['member:write'] && grant.data ? (
        <Section title="Change">
          <GiveRoles
            tenantId={tenantId}
            userId={userId}
            roles={grant.data.roles}
            expiresAt={grant.data.expiresAt}
            version={grant.data.version}
            onDone={grant.reload}
          />
          <EndSooner tenantId={tenantId} userId={userId} who={who} grant={grant.data} onDone={grant.reload} />
          <div class="row">
            <Confirm
              label="Remove from tenant"
              consequence={<p>{who} loses every role in this tenant at once; the history keeps the grant.</p>}
              reasonRequired
              run={async (reason) => {
                await ok(api.DELETE('/tenants/{tenantId}/members/{userId}', { params: { path }, headers: reasonHeader(reason) }));
                go('tenants', tenantId);
              }}
            />
          </div>
        </Section>
      ) : null}
    </>
  );
}

/**
 * Ends a grant sooner than it ends now (or at all, when it does not; the
 * API takes a future instant): confirmed, with why, as removing it is; its
 * roles stay until then.
 */
function EndSooner(props: {
  tenantId: string;
  userId: string;
  who: string;
  grant: { roles: string[]; expiresAt?: string | null; version: number };
  onDone: () => void;
}) {
  const { api } = useSession();
  const [end, setEnd] = useState('');
  const at = end ? new Date(end) : null;
  // Said at the field, before any dialog opens: an end that is not sooner.
  const notSooner = !!at && !!props.grant.expiresAt && end >= localInput(props.grant.expiresAt);
  const now = props.grant.expiresAt ? `It ends ${new Date(props.grant.expiresAt).toLocaleString()} now.` : 'It does not end now.';
  return (
    <div class="row search">
      <Field
        label="End the grant sooner, at"
        type="datetime-local"
        name="grant-end"
        field="expiresAt"
        value={end}
        onInput={setEnd}
        hint={notSooner ? `That is not sooner. ${now}` : now}
      />
      <Confirm
        label="End the grant sooner"
        disabled={!at || notSooner}
        consequence={
          <p>
            {props.who} loses every role in this tenant {at ? `at ${at.toLocaleString()}` : 'then'} instead; the history keeps the
            grant.
          </p>
        }
        reasonRequired
        run={async (reason) => {
          if (!at) throw new Error('Choose when the grant ends first.');
          if (props.grant.expiresAt && end >= localInput(props.grant.expiresAt)) {
            throw new Error(`That is not sooner: the grant ends ${new Date(props.grant.expiresAt).toLocaleString()} now.`);
          }
          await ok(
            api.PUT('/tenants/{tenantId}/members/{userId}', {
              params: { path: { tenantId: props.tenantId, userId: props.userId } },
              body: { roles: props.grant.roles, expiresAt: at.toISOString() },
              headers: { ...reasonHeader(reason), 'If-Match': String(props.grant.version) },
            }),
          );
          setEnd('');
          props.onDone();
          return `The grant of ${props.who} ends ${at.toLocaleString()} now.`;
        }}
      />
    </div>
  );
}
