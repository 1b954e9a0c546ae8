// The signed-in person's own page: their tenants and the invitations
// waiting for them. Someone with one tenant and no platform role is taken
// to it when they sign in.
import { useEffect } from 'preact/hooks';

import { ok } from '../api';
import type { Allowed } from '../can';
import { href } from '../route';
import { useSession } from '../session';
import { Outcome, Section, When, label, useAction, useTitle } from '../ui';

/** Set once someone with a single tenant has been taken to it. */
const LANDED = 'console.landed';

export function Home({ platform }: { platform: Allowed }) {
  const { api, me, refreshMe } = useSession();
  const answer = useAction();
  useTitle('Home');
  const reply = (invitationId: string, verb: 'accept' | 'decline') =>
    answer.run(async () => {
      const path = { invitationId };
      await ok(
        verb === 'accept'
          ? api.POST('/invitations/{invitationId}/accept', { params: { path } })
          : api.POST('/invitations/{invitationId}/decline', { params: { path } }),
      );
      await refreshMe();
      return verb === 'accept' ? 'Accepted: you are a member now.' : 'Declined.';
    });
  useEffect(() => {
    // Once a session, replacing this entry: Home stays reachable, and Back
    // does not loop.
    if (sessionStorage.getItem(LANDED)) return;
    if (platform['tenant:list'] === false && me.tenants.length === 1 && me.invitations.length === 0) {
      sessionStorage.setItem(LANDED, '1');
      location.replace(href('tenants', me.tenants[0].tenantId));
    }
  }, [platform['tenant:list']]);
  return (
    <>
      <h1>Welcome, {me.user.email}</h1>
      <Section title="Your tenants">
        {me.tenants.length ? (
          <ul>
            {me.tenants.map((t) => (
              <li>
                <a href={href('tenants', t.tenantId)}>{t.name ?? t.tenantId}</a>{' '}
                <span class="hint">roles {t.roles.map((r) => label(me.names, r)).join(', ') || 'none'}</span>
              </li>
            ))}
          </ul>
        ) : (
          <p class="empty">You are a member of no tenant.</p>
        )}
      </Section>
      <Section title="Invitations for you">
        <Outcome action={answer} />
        {me.invitations.length ? (
          <ul>
            {me.invitations.map((i) => (
              <li>
                To <strong>{label(me.names, i.tenantId)}</strong>
                {i.roles.length ? ` as ${i.roles.map((r) => label(me.names, r)).join(', ')}` : ''}, for {i.email}
                {i.invitedBy ? `, from ${label(me.names, i.invitedBy)}` : ''}, until <When at={i.expiresAt} />{' '}
                <button type="button" disabled={answer.busy} onClick={() => reply(i.invitationId, 'accept')}>
                  Accept
                </button>{' '}
                <button type="button" disabled={answer.busy} onClick={() => reply(i.invitationId, 'decline')}>
                  Decline
                </button>
              </li>
            ))}
          </ul>
        ) : (
          <p class="empty">None waiting.</p>
        )}
      </Section>
    </>
  );
}
