// The console's start: read the deployment's configuration, finish or
// begin the sign-in, learn who the person is, then show the console.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { User, UserManager } from 'oidc-client-ts';

import { apiClient, ok, Refusal } from './api';
import { App } from './app';
import { loadConfig, signedIn, userManager, type ConsoleConfig } from './auth';
import { SessionContext, type Session } from './session';
import './styles.css';

function Boot() {
  const [config, setConfig] = useState<ConsoleConfig | null>(null);
  const [manager, setManager] = useState<UserManager | null>(null);
  const [user, setUser] = useState<User | null | undefined>(undefined);
  const [session, setSession] = useState<Session | null>(null);
  const [failure, setFailure] = useState<string | null>(null);

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
    who()
      .then((me) => {
        const refreshMe = async () => {
          const fresh = await who();
          setSession((s) => (s ? { ...s, me: fresh } : s));
        };
        setSession({ api, me, issuer: config.issuer, signOut, refreshMe });
      })
      .catch((e) => {
        setFailure(
          e instanceof Refusal && (e.status === 401 || e.status === 403)
            ? `Signed in at ${config.issuer}, but this API does not know you (${e.message}). Ask an administrator to link your identity, then sign in again.`
            : (e as Error).message,
        );
        void manager.removeUser();
      });
  }, [user]);

  if (failure) {
    return (
      <main id="main" class="center">
        <h1>Authorization console</h1>
        <p class="error" role="alert">
          {failure}
        </p>
        {manager ? (
          <button type="button" onClick={() => (setFailure(null), void manager.signinRedirect({ prompt: 'login' }))}>
            Sign in again
          </button>
        ) : null}
      </main>
    );
  }
  if (user === null && manager) {
    return (
      <main id="main" class="center">
        <h1>Authorization console</h1>
        <p>Sign in with {config?.issuer} to manage tenants, members, roles and policies.</p>
        <button type="button" onClick={() => void manager.signinRedirect({ state: location.hash })}>
          Sign in
        </button>
      </main>
    );
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

const root = document.getElementById('app')!;
root.replaceChildren(); // the page's "Loading" line
render(<Boot />, root);
