// The console's few building blocks: a loaded value, an action with its
// refusal shown beside it, a list that pages through the API's cursors,
// labelled fields.
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';

import { Refusal, type Schemas } from './api';

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]) {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<Error | null>(null);
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    setError(null);
    load().then(
      (value) => live && setData(value),
      (e) => live && setError(e as Error),
    );
    return () => {
      live = false;
    };
  }, [...deps, round]);
  return { data, error, reload: () => setRound((r) => r + 1) };
}

/** Runs one action at a time; its refusal stays until the next try. */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [done, setDone] = useState<string | null>(null);
  async function run(action: () => Promise<string | void>) {
    setBusy(true);
    setError(null);
    setDone(null);
    try {
      const said = await action();
      if (said) setDone(said);
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  }
  return { busy, error, done, run };
}

export function ErrorNote({ error }: { error: Error | null | undefined }) {
  if (!error) return null;
  const refusal = error instanceof Refusal ? error : null;
  return (
    <p class="error" role="alert" data-status={refusal?.status} data-field={refusal?.field ?? undefined}>
      {error.message}
    </p>
  );
}

export function Done({ text }: { text: string | null }) {
  return text ? (
    <p class="done" role="status">
      {text}
    </p>
  ) : null;
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      {children}
    </section>
  );
}

export function Field(props: {
  label: string;
  value: string;
  onInput: (value: string) => void;
  type?: 'text' | 'email' | 'number' | 'datetime-local';
  required?: boolean;
  placeholder?: string;
  name?: string;
}) {
  return (
    <label>
      <span>{props.label}</span>
      <input
        name={props.name}
        // Preact's types tell input types apart; any of these takes a string.
        type={(props.type ?? 'text') as 'text'}
        value={props.value}
        required={props.required}
        placeholder={props.placeholder}
        onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
      />
    </label>
  );
}

export function When({ at }: { at?: string | null }) {
  if (!at) return <span>never</span>;
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}

export interface Page<T> {
  items: T[];
  nextCursor?: string | null;
}

/**
 * A list read one page at a time from the API (`limit` and `cursor`):
 * "More" asks for the next page; nothing loads a whole table.
 */
export function Paged<T>(props: {
  load: (cursor?: string) => Promise<Page<T>>;
  deps: unknown[];
  head: string[];
  row: (item: T) => ComponentChildren;
  empty: string;
  label: string;
}) {
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<string | null | undefined>(undefined);
  const [error, setError] = useState<Error | null>(null);
  const [busy, setBusy] = useState(false);
  // Each list (its deps) is a generation: a page that arrives for an
  // older one is dropped.
  const generation = useRef(0);
  async function fetchPage(cursor?: string) {
    const mine = generation.current;
    setBusy(true);
    setError(null);
    try {
      const page = await props.load(cursor);
      if (mine !== generation.current) return;
      setItems((old) => (cursor ? [...old, ...page.items] : page.items));
      setNext(page.nextCursor ?? null);
    } catch (e) {
      if (mine === generation.current) setError(e as Error);
    } finally {
      if (mine === generation.current) setBusy(false);
    }
  }
  useEffect(() => {
    generation.current += 1;
    setItems([]);
    setNext(undefined);
    void fetchPage();
  }, props.deps);
  return (
    <div>
      <ErrorNote error={error} />
      {items.length === 0 && next === null ? (
        <p class="empty">{props.empty}</p>
      ) : (
        <table aria-label={props.label}>
          <thead>
            <tr>
              {props.head.map((h) => (
                <th scope="col">{h}</th>
              ))}
            </tr>
          </thead>
          <tbody>{items.map(props.row)}</tbody>
        </table>
      )}
      {next ? (
        <button type="button" disabled={busy} onClick={() => fetchPage(next)}>
          More
        </button>
      ) : null}
    </div>
  );
}

/**
 * A search by what a name starts with: `onSearch` hears the prefix when
 * the form is sent (children add more criteria, such as a status).
 */
export function PrefixSearch(props: { label: string; onSearch: (prefix: string) => void; children?: ComponentChildren }) {
  const [prefix, setPrefix] = useState('');
  return (
    <form
      role="search"
      onSubmit={(e) => {
        e.preventDefault();
        props.onSearch(prefix);
      }}
    >
      {props.children}
      <Field label={props.label} value={prefix} onInput={setPrefix} />
      <button type="submit">Search</button>
    </form>
  );
}

/** Deleting something whose history keeps why: the reason is required. */
export function DeleteWithReason(props: {
  what: string;
  warning: string;
  remove: (reason: string) => Promise<void>;
}) {
  const [reason, setReason] = useState('');
  const action = useAction();
  return (
    <Section title={`Delete this ${props.what}`}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(() => props.remove(reason));
        }}
      >
        <p>{props.warning}</p>
        <Field label="Reason" value={reason} onInput={setReason} required />
        <button type="submit" class="danger" disabled={action.busy}>
          Delete {props.what}
        </button>
        <ErrorNote error={action.error} />
      </form>
    </Section>
  );
}

/** Removing something at one click: disabled while it runs, its refusal beside it. */
export function RemoveButton(props: { label: string; remove: () => Promise<void> }) {
  const action = useAction();
  return (
    <>
      <button type="button" class="danger" disabled={action.busy} onClick={() => void action.run(props.remove)}>
        {props.label}
      </button>
      <ErrorNote error={action.error} />
    </>
  );
}

/** Each permission and the roles that give it. */
export function PermissionSources({ permissions }: { permissions?: Schemas['PermissionView'][] }) {
  return (
    <ul>
      {permissions?.map((p) => (
        <li>
          <code>{p.permission}</code> from {p.grantedBy.map((r) => `${r.name} (${r.scope})`).join(', ')}
        </li>
      ))}
    </ul>
  );
}
