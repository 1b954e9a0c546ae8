// The signed-in person: their token, the API client that sends it, and who
// the API says they are (`GET /users/me`: the user, their tenants, their
// pending invitations).
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';

import type { Api, Schemas } from './api';

export interface Session {
  api: Api;
  me: Schemas['DetailsView'];
  issuer: string;
  refreshMe: () => Promise<void>;
  signOut: () => Promise<void>;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const session = useContext(SessionContext);
  if (!session) throw new Error('useSession outside a signed-in page');
  return session;
}
