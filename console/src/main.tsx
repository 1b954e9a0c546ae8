// The console's start: read the deployment's configuration, finish or
// begin the sign-in, learn who the person is, then show the console.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { User, UserManager } from 'oidc-client-ts';

import { apiClient, ok, Refusal } from './api';
import { App } from './app';
import { loadConfig, opensSignUp, signedIn, userManager, type ConsoleConfig } from './auth';
import { SessionContext, type Session } from './session';
import { Copy, Outcome, useAction, useTitle } from './ui';
import './styles.css';

function Boot() {
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  const [manager, setManager] = useState<UserManager | null>(null);
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [session, setSession] = useState<Session | null>(null);
  const [failure, setFailure] = useState<string | null>(null);
  // Signed in at an issuer open to sign-up, unknown to the API.
  const [newcomer, setNewcomer] = useState<{ signUp: () => Promise<void>; subject: string; email?: string } | null>(null);
  // Signed in but not let in: unknown to the API where sign-up is closed,
  // or a user whose account is not active. Who they are, for an administrator.
  const [outsider, setOutsider] = useState<Outsider | null>(null);

  useEffect(() => {
    (async () => {
      const loaded = await loadConfig();
      const m = userManager(loaded);
      // The session ends when the access token does.
      m.events.addAccessTokenExpired(() => {
        void m.removeUser();
        setSession(null);
        setUser(null);
      });
      setConfig(loaded);
      setManager(m);
      setUser(await signedIn(m));
    })().catch((e) => setFailure((e as Error).message));
  }, []);

  useEffect(() => {
    if (!user || !manager || !config) return;
    const api = apiClient(() => user.access_token);
    const signOut = async () => {
      await manager.removeUser();
      sessionStorage.clear(); // everything this tab kept of the session
      setSession(null);
      setUser(null);
      const metadata = await manager.metadataService.getMetadata().catch(() => null);
      if (metadata?.end_session_endpoint) await manager.signoutRedirect({ id_token_hint: user.id_token });
    };
    const who = () => ok(api.GET('/users/me'));
    const refreshMe = async () => {
      const fresh = await who();
      setSession((s) => (s ? { ...s, me: fresh } : s));
    };
    const begin = (me: Session['me']) => setSession({ api, me, issuer: config.issuer, signOut, refreshMe });
    who()
      .then(begin)
      .catch((e) => {
        // The authorizer's own refusal of a known user whose account is not
        // active (docs/authorizer.md): not a stranger, and not for sign-up.
        const identity = { issuer: String(user.profile.iss), subject: user.profile.sub, email: user.profile.email };
        if (e instanceof Refusal && e.status === 403 && e.detail === NOT_ACTIVE) {
          setOutsider({ ...identity, inactive: true });
          void manager.removeUser();
          return;
        }
        const unknown = e instanceof Refusal && (e.status === 401 || e.status === 403);
        if (unknown && opensSignUp(config, String(user.profile.iss))) {
          // The API creates the account from the token alone (its verified address).
          setNewcomer({
            email: user.profile.email,
            subject: user.profile.sub,
            signUp: async () => {
              await ok(api.POST('/users/me'));
              begin(await who());
              setNewcomer(null);
            },
          });
          return;
        }
        if (unknown) {
          setOutsider({ ...identity, inactive: false });
        } else {
          setFailure((e as Error).message);
        }
        void manager.removeUser();
      });
  }, [user]);

  if (newcomer && manager) {
    const cancel = () => {
      setNewcomer(null);
      setUser(null);
      void manager.removeUser();
    };
    return (
      <SignUp
        email={newcomer.email}
        issuer={String(user?.profile.iss ?? config?.issuer)}
        subject={newcomer.subject}
        signUp={newcomer.signUp}
        onCancel={cancel}
      />
    );
  }

  if (outsider && manager) {
    return (
      <NotLetIn
        {...outsider}
        onRetry={() => {
          setOutsider(null);
          void manager.signinRedirect({ prompt: 'login' });
        }}
      />
    );
  }
  if (failure) {
    return (
      <Failed
        failure={failure}
        onRetry={manager ? () => (setFailure(null), void manager.signinRedirect({ prompt: 'login' })) : undefined}
      />
    );
  }
  if (user === null && manager) {
    return <SignIn issuer={config?.issuer} onSignIn={() => void manager.signinRedirect({ state: location.hash })} />;
  }
  if (!session) {
    return (
      <main id="main" class="center">
        <p class="loading">Loading the console…</p>
      </main>
    );
  }
  return (
    <SessionContext.Provider value={session}>
      <App />
    </SessionContext.Provider>
  );
}

/** Who a person is to this service: the identity an administrator links. */
/** The first screen: who to sign in with. */
function SignIn(props: { issuer?: string; onSignIn: () => void }) {
  useTitle('Sign in');
  return (
    <main id="main" class="center">
      <h1>Authorization console</h1>
      <p>Sign in with {props.issuer} to manage tenants, members, roles and policies.</p>
      <button type="button" onClick={props.onSignIn}>
        Sign in
      </button>
    </main>
  );
}

/** Signing in failed or the session ended: why, and the way back. */
function Failed(props: { failure: string; onRetry?: () => void }) {
  useTitle('Not signed in');
  return (
    <main id="main" class="center">
      <h1>Authorization console</h1>
      <p class="error" role="alert">
        {props.failure}
      </p>
      {props.onRetry ? (
        <button type="button" onClick={props.onRetry}>
          Sign in again
        </button>
      ) : null}
    </main>
  );
}

function Identity(props: { issuer: string; subject: string }) {
  return (
    <dl>
      <dt>Issuer</dt>
      <dd>
        <code>{props.issuer}</code> <Copy text={props.issuer} what="issuer" id={false} />
      </dd>
      <dt>Subject</dt>
      <dd>
        <code>{props.subject}</code> <Copy text={props.subject} what="subject" id={false} />
      </dd>
    </dl>
  );
}

/** Someone signed in whom the console does not let in. */
type Outsider = { issuer: string; subject: string; email?: string; inactive: boolean };

/** What the authorizer says of a user whose account is suspended or deleted. */
const NOT_ACTIVE = "the caller's account is not active";

/**
 * Signed in, but no user here has this identity, or it is the identity of
 * a user whose account is not active: what to send an administrator.
 */
function NotLetIn(props: Outsider & { onRetry: () => void }) {
  const as = props.email ? ` as ${props.email}` : '';
  useTitle(props.inactive ? 'Account not active' : 'Not known here');
  return (
    <main id="main" class="center">
      <h1>{props.inactive ? 'Your account here is not active' : 'This service does not know you yet'}</h1>
      <p role="alert">
        {props.inactive
          ? `You signed in${as}, and this identity is your user's, but an administrator suspended or removed the account. Ask them to restore it, naming this identity; then sign in again.`
          : `You signed in${as}, but no user here has this identity. Send an administrator these two lines: they link the identity to your user, then you sign in again.`}
      </p>
      <Identity issuer={props.issuer} subject={props.subject} />
      <button type="button" onClick={props.onRetry}>
        Sign in again
      </button>
    </main>
  );
}

/** A first sign-in at an issuer open to sign-up: the person creates their own account. */
function SignUp(props: { email?: string; issuer: string; subject: string; signUp: () => Promise<void>; onCancel: () => void }) {
  const action = useAction();
  useTitle('Create your account');
  return (
    <main id="main" class="center">
      <h1>Create your account</h1>
      <p>
        You signed in at {props.issuer}
        {props.email ? ` as ${props.email}` : ''}, and this service does not know you yet. Create your account to
        accept invitations and use what your tenants give you; your address is the one your provider vouches for. Or
        send an administrator your identity, to link it to the user they made for you:
      </p>
      <Identity issuer={props.issuer} subject={props.subject} />
      <div class="row">
        <button type="button" disabled={action.busy} onClick={() => void action.run(props.signUp)}>
          Create my account
        </button>
        <button type="button" class="quiet" onClick={props.onCancel}>
          Not now
        </button>
      </div>
      <Outcome action={action} />
    </main>
  );
}

const root = document.getElementById('app')!;
root.replaceChildren(); // the page's "Loading" line
render(<Boot />, root);
