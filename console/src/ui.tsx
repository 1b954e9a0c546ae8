// The console's building blocks: a loaded value, an action whose outcome
// takes the focus (the first invalid field, the refusal, or the result),
// a list that pages through the API's cursors, labelled fields, names in
// place of ids (each id still copyable), pickers that find what a person
// means without an id, and a confirmation that asks why.
import type { ComponentChildren } from 'preact';
import { useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';

import { ok, Refusal, type Schemas } from './api';
import { useSession } from './session';

/** Names the page: `<title> · Authorization console`. */
export function useTitle(title: string) {
  // As the screen is committed, not after paint: a passive effect the
  // screen it replaced still had queued would otherwise run after this
  // one and leave that screen's title.
  useLayoutEffect(() => {
    document.title = `${title} · Authorization console`;
  }, [title]);
}

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

export interface Action {
  busy: boolean;
  error: Error | null;
  done: string | null;
  run: (action: () => Promise<string | void>) => Promise<void>;
  /** The form's `ref`: where the invalid field is looked for. */
  scope: (form: HTMLFormElement | null) => void;
  /** The ids of the refusal's and the result's notes. */
  errorId: string;
  doneId: string;
}

/**
 * Runs one action at a time; its refusal stays until the next try. When it
 * ends, the focus moves to what a person reads next: the field the refusal
 * names (marked `aria-invalid`, described by the refusal), else the
 * refusal, else the result.
 */
export function useAction(): Action {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [done, setDone] = useState<string | null>(null);
  const [round, setRound] = useState(0);
  const form = useRef<HTMLFormElement | null>(null);
  const scope = (f: HTMLFormElement | null) => {
    form.current = f;
  };
  const errorId = useId();
  const doneId = useId();
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
      setRound((r) => r + 1);
    }
  }
  // Before the browser paints: the focus moves with the outcome.
  useLayoutEffect(() => {
    if (round === 0) return;
    const root = form.current ?? document;
    // A field marked before gets back its own description (its hint), if it had one.
    root.querySelectorAll('[aria-invalid="true"]').forEach((f) => {
      f.removeAttribute('aria-invalid');
      const own = f.getAttribute(OWN_DESCRIPTION);
      if (own) f.setAttribute('aria-describedby', own);
      else f.removeAttribute('aria-describedby');
      f.removeAttribute(OWN_DESCRIPTION);
    });
    if (error) {
      const field = error instanceof Refusal ? error.field : null;
      const input = field ? fieldInput(root, field) : null;
      if (input) {
        const own = input.getAttribute('aria-describedby');
        if (own) input.setAttribute(OWN_DESCRIPTION, own);
        input.setAttribute('aria-invalid', 'true');
        // Described by the refusal first, then by its own hint.
        input.setAttribute('aria-describedby', own ? `${errorId} ${own}` : errorId);
        input.focus();
      } else {
        document.getElementById(errorId)?.focus();
      }
    } else if (done) {
      document.getElementById(doneId)?.focus();
    }
  }, [round]);
  return { busy, error, done, run, scope, errorId, doneId };
}

/** Where a field marked invalid keeps its own `aria-describedby` (its hint) meanwhile. */
const OWN_DESCRIPTION = 'data-own-describedby';

/**
 * The input a refusal's field names (`permissions[1]` is `permissions`):
 * the element marked with it, or the first control inside a group (a
 * fieldset of choices, a picker).
 */
function fieldInput(root: ParentNode, field: string): HTMLElement | null {
  const base = field.replace(/\[\d+\].*$/, '');
  const marked = root.querySelector<HTMLElement>(`[data-field="${CSS.escape(field)}"], [data-field="${CSS.escape(base)}"]`);
  if (!marked || marked.matches('input, select, textarea')) return marked;
  return marked.querySelector<HTMLElement>('input, select, textarea');
}

/** A refusal in words, once (`Email: ...`), able to take the focus. */
export function ErrorNote({ error, id }: { error: Error | null | undefined; id?: string }) {
  if (!error) return null;
  const refusal = error instanceof Refusal ? error : null;
  return (
    <p class="error" role="alert" id={id} tabIndex={-1} data-status={refusal?.status}>
      {error.message}
    </p>
  );
}

export function Done({ text, id }: { text: string | null; id?: string }) {
  return text ? (
    <p class="done" role="status" id={id} tabIndex={-1}>
      {text}
    </p>
  ) : null;
}

/** An action's refusal and result, where it was asked. */
export function Outcome({ action }: { action: Action }) {
  return (
    <>
      <ErrorNote error={action.error} id={action.errorId} />
      <Done text={action.done} id={action.doneId} />
    </>
  );
}

export function Section({ title, children }: { title: string; children: ComponentChildren }) {
  const id = useId();
  return (
    <section aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {children}
    </section>
  );
}

export function Field(props: {
  label: string;
  value: string;
  onInput: (value: string) => void;
  type?: 'text' | 'email' | 'number' | 'datetime-local' | 'date' | 'tel';
  required?: boolean;
  placeholder?: string;
  name?: string;
  /** The API's name for it: a refusal naming it marks it. */
  field?: string;
  hint?: string;
}) {
  const hintId = useId();
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
        data-field={props.field}
        aria-describedby={props.hint ? hintId : undefined}
        onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
      />
      {props.hint ? (
        <span class="hint" id={hintId}>
          {props.hint}
        </span>
      ) : null}
    </label>
  );
}

/**
 * An optional reason, kept in the history of what the write changes;
 * `label` says which writes, where one reason serves several.
 */
export function ReasonField({ value, onInput, label }: { value: string; onInput: (v: string) => void; label?: string }) {
  return <Field label={label ?? 'Why (kept in the history, optional)'} name="reason" value={value} onInput={onInput} />;
}

/**
 * A reason as `X-Change-Reason` carries it: percent-encoded UTF-8, since a
 * header value is ASCII (fetch refuses a ’ or an é in one).
 */
export function encodeReason(reason: string): string {
  return encodeURIComponent(reason.trim());
}

/** `X-Change-Reason` for a request, when a reason was given. */
export function reasonHeader(reason: string): Record<string, string> {
  return reason.trim() ? { 'X-Change-Reason': encodeReason(reason) } : {};
}

export function When({ at }: { at?: string | null }) {
  if (!at) return <span>never</span>;
  return <time dateTime={at}>{new Date(at).toLocaleString()}</time>;
}

/** Copies `text` (an id, by default) for pasting elsewhere; `what` names it. */
export function Copy({ text, what, id = true }: { text: string; what: string; id?: boolean }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      class="link"
      // The visible words first, then what they copy.
      aria-label={`${copied ? 'copied' : id ? 'copy id' : 'copy'}: the ${what}${id ? ' id' : ''} ${text}`}
      onClick={() =>
        void navigator.clipboard?.writeText(text).then(
          () => setCopied(true),
          () => setCopied(false),
        )
      }
    >
      {copied ? 'copied' : id ? 'copy id' : 'copy'}
    </button>
  );
}

/** A user as people read them (as the API's `names` do): `Name <address>`, or the address. */
export function personName(u: { email: string; givenName?: string | null; familyName?: string | null }): string {
  const name = [u.givenName, u.familyName].filter(Boolean).join(' ');
  return name ? `${name} <${u.email}>` : u.email;
}

/** What people call `id` (from a list's `names`), else the id itself. */
export function label(names: Record<string, string> | null | undefined, id: string): string {
  return names?.[id] ?? id;
}

/** A named thing, linked, its id copyable. */
export function Named(props: { names?: Record<string, string> | null; id: string; href?: string; what: string }) {
  const text = label(props.names, props.id);
  return (
    <span class="named">
      {props.href ? <a href={props.href}>{text}</a> : <span>{text}</span>} <Copy text={props.id} what={props.what} />
    </span>
  );
}

export interface Page<T> {
  items: T[];
  nextCursor?: string | null;
  names?: Record<string, string> | null;
}

/** Empty pages a list reads past, at most, before it shows nothing. */
const EMPTY_PAGES_READ_ON = 5;

/**
 * A list read one page at a time from the API (`limit` and `cursor`):
 * "More" asks for the next page; nothing loads a whole table. The rows get
 * the names the pages carry.
 */
export function Paged<T>(props: {
  load: (cursor?: string) => Promise<Page<T>>;
  deps: unknown[];
  head: string[];
  row: (item: T, names: Record<string, string>) => ComponentChildren;
  empty: string;
  label: string;
}) {
  const [items, setItems] = useState<T[]>([]);
  const [names, setNames] = useState<Record<string, string>>({});
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
      let page = await props.load(cursor);
      // A filtered page may come back empty with a cursor (the filter read
      // a stretch where nothing matched): read on a few pages before
      // showing nothing with More.
      for (let more = 0; page.items.length === 0 && page.nextCursor && more < EMPTY_PAGES_READ_ON; more += 1) {
        if (mine !== generation.current) return;
        page = await props.load(page.nextCursor);
      }
      if (mine !== generation.current) return;
      setItems((old) => (cursor ? [...old, ...page.items] : page.items));
      setNames((old) => ({ ...(cursor ? old : {}), ...(page.names ?? {}) }));
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
      {items.length === 0 && next !== undefined ? (
        <p class="empty">{next ? `${props.empty} More may be further on.` : props.empty}</p>
      ) : (
        <div class="scroll" tabIndex={0}>
          <table aria-label={props.label}>
            <thead>
              <tr>
                {props.head.map((h) => (
                  <th scope="col">{h}</th>
                ))}
              </tr>
            </thead>
            <tbody>{items.map((item) => props.row(item, names))}</tbody>
          </table>
        </div>
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
      aria-label={props.label}
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

/**
 * Asks before doing something hard to undo: a button opens a dialog that
 * says what will happen and asks why (kept in the history); the action
 * runs only when confirmed, its refusal shown in the dialog.
 */
export function Confirm(props: {
  /** The button, and the dialog's title. */
  label: string;
  /**
   * What it acts on, where rows repeat the button (`Remove` in every
   * member's row): the button's name and the title say it ("Remove Ana").
   */
  subject?: string;
  /** What will happen, in words (how many lose what). */
  consequence: ComponentChildren;
  /** Whether a reason must be given (deletes); else it is optional. */
  reasonRequired?: boolean;
  danger?: boolean;
  disabled?: boolean;
  run: (reason: string) => Promise<string | void>;
  /**
   * Where the result is told, when what the button belongs to goes away
   * with it (a removed row): a parent's action, its `Outcome` in place.
   */
  action?: Action;
}) {
  const dialog = useRef<HTMLDialogElement>(null);
  const trigger = useRef<HTMLButtonElement>(null);
  const [reason, setReason] = useState('');
  const action = useAction();
  const titleId = useId();
  const named = props.subject ? `${props.label} ${props.subject}` : props.label;
  const close = () => {
    dialog.current?.close();
    trigger.current?.focus();
  };
  return (
    <>
      <button
        type="button"
        ref={trigger}
        class={props.danger === false ? undefined : 'danger'}
        disabled={props.disabled}
        aria-label={props.subject ? named : undefined}
        onClick={() => {
          setReason('');
          dialog.current?.showModal();
        }}
      >
        {props.label}
      </button>
      <dialog ref={dialog} aria-labelledby={titleId}>
        <form
          method="dialog"
          class="stack"
          ref={action.scope}
          onSubmit={(e) => {
            e.preventDefault();
            void action.run(async () => {
              const said = await props.run(reason);
              close();
              if (!props.action) return said;
              void props.action.run(async () => said);
            });
          }}
        >
          <h2 id={titleId}>{named}?</h2>
          <div>{props.consequence}</div>
          <Field
            label={props.reasonRequired ? 'Why (kept in the history)' : 'Why (kept in the history, optional)'}
            name="confirm-reason"
            field="reason"
            value={reason}
            onInput={setReason}
            required={props.reasonRequired}
          />
          <div class="row">
            <button type="submit" class={props.danger === false ? undefined : 'danger'} disabled={action.busy}>
              {props.label}
            </button>
            <button type="button" class="quiet" onClick={close}>
              Cancel
            </button>
          </div>
          <ErrorNote error={action.error} id={action.errorId} />
        </form>
      </dialog>
      <Done text={action.done} id={action.doneId} />
    </>
  );
}

/**
 * Does `act` for each item in turn; the first refusal stops the rest and
 * says which were done. Answers how many were; `settled` is told which,
 * refused or not (to drop them from a selection and show the list anew).
 */
export async function eachInTurn<T>(
  items: T[],
  act: (item: T) => Promise<unknown>,
  name: (item: T) => string,
  settled: (done: T[]) => void,
): Promise<number> {
  const done: T[] = [];
  try {
    for (const item of items) {
      try {
        await act(item);
        done.push(item);
      } catch (e) {
        const before = done.length ? `Done for ${done.map(name).join(', ')}; ` : 'Nothing done: ';
        throw new Error(`${before}${name(item)} refused: ${(e as Error).message}`);
      }
    }
    return done.length;
  } finally {
    settled(done);
  }
}

/** Deleting something whose history keeps why: confirmed, with a reason. */
export function DeleteWithReason(props: {
  what: string;
  warning: ComponentChildren;
  remove: (reason: string) => Promise<void>;
}) {
  return (
    <Section title={`Delete this ${props.what}`}>
      <p>{props.warning}</p>
      <Confirm label={`Delete ${props.what}`} consequence={props.warning} reasonRequired run={props.remove} />
    </Section>
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

/** What a picker has chosen, as it was shown. */
export interface Chosen {
  id: string;
  text: string;
}

/**
 * A picker's choice, kept across its searches: what the form sends is
 * always on screen, by name, even once another search found others.
 */
function useChosen(value: string, onChange: (id: string, text: string) => void) {
  const [chosen, setChosen] = useState<Chosen | null>(null);
  const pick = (id: string, text: string) => {
    setChosen({ id, text });
    onChange(id, text);
  };
  return { chosen: chosen && chosen.id === value ? chosen : null, pick };
}

/**
 * A choice among what a search found: radio buttons, keyboard-ready; the
 * one chosen before stays listed (and said) whatever this search found.
 */
function Choices<T>(props: {
  legend: string;
  items: T[];
  idOf: (item: T) => string;
  text: (item: T) => string;
  value: string;
  chosen: Chosen | null;
  onChange: (id: string, text: string) => void;
}) {
  const found: Chosen[] = props.items.map((item) => ({ id: props.idOf(item), text: props.text(item) }));
  const kept = props.chosen && !found.some((c) => c.id === props.chosen?.id) ? [props.chosen] : [];
  const choices = [...kept, ...found];
  return (
    <>
      {props.chosen ? (
        <p class="hint" role="status">
          Chosen: {props.chosen.text}
        </p>
      ) : null}
      {choices.length ? (
        <fieldset>
          <legend>{props.legend}</legend>
          {choices.map((c) => (
            <label class="check">
              <input type="radio" name={props.legend} checked={props.value === c.id} onChange={() => props.onChange(c.id, c.text)} />
              {c.text}
            </label>
          ))}
        </fieldset>
      ) : null}
      {found.length ? null : <p class="empty">Nothing found.</p>}
    </>
  );
}

/**
 * A picker's search box and its "Find" button. Not a form of its own:
 * pickers live inside forms, so Enter here searches instead of sending
 * the form around it.
 */
export function Search(props: { label: string; hint: string; onSearch: (q: string) => void; name: string }) {
  const [q, setQ] = useState('');
  return (
    <div
      class="row search"
      onKeyDown={(e) => {
        if (e.key !== 'Enter' || !(e.target instanceof HTMLInputElement)) return;
        e.preventDefault();
        props.onSearch(q.trim());
      }}
    >
      <Field
        label={props.label}
        name={props.name}
        value={q}
        onInput={setQ}
        hint={props.hint}
      />
      <button type="button" onClick={() => props.onSearch(q.trim())}>
        Find
      </button>
    </div>
  );
}

/** Picks a user by name, email, id or identity (`GET /users/search`). */
export function UserPicker(props: {
  label: string;
  value: string;
  onChange: (userId: string, who: string) => void;
  name?: string;
}) {
  const { api } = useSession();
  const [q, setQ] = useState('');
  const found = useLoad(
    () => (q ? ok(api.GET('/users/search', { params: { query: { q, limit: 10 } } })) : Promise.resolve(null)),
    [q],
  );
  const users = found.data?.items ?? [];
  const { chosen, pick } = useChosen(props.value, props.onChange);
  return (
    <div class="picker" data-field={props.name}>
      <Search
        label={props.label}
        name={props.name ?? 'user-search'}
        hint="A name, an email or its start, a user id, or an issuer and a subject"
        onSearch={setQ}
      />
      <ErrorNote error={found.error} />
      {q ? (
        <Choices
          legend={`Users matching ${q}`}
          items={users}
          idOf={(u) => u.userId}
          text={personName}
          value={props.value}
          chosen={chosen}
          onChange={pick}
        />
      ) : null}
    </div>
  );
}

/**
 * Picks a member of a tenant by name, email or id (`GET
 * /tenants/{tenantId}/members?q=`): for whoever reads the tenant's members,
 * without `GET /users/search`.
 */
export function MemberPicker(props: {
  tenantId: string;
  label: string;
  value: string;
  onChange: (userId: string, who: string) => void;
  name?: string;
}) {
  const { api } = useSession();
  const [q, setQ] = useState('');
  const found = useLoad(
    () =>
      q
        ? ok(api.GET('/tenants/{tenantId}/members', { params: { path: { tenantId: props.tenantId }, query: { q, limit: 10 } } }))
        : Promise.resolve(null),
    [props.tenantId, q],
  );
  const names = found.data?.names ?? {};
  const { chosen, pick } = useChosen(props.value, props.onChange);
  return (
    <div class="picker" data-field={props.name}>
      <Search
        label={props.label}
        name={props.name ?? 'member-search'}
        hint="A member's name, email or its start, or user id"
        onSearch={setQ}
      />
      <ErrorNote error={found.error} />
      {q ? (
        <Choices
          legend={`Members matching ${q}`}
          items={found.data?.items ?? []}
          idOf={(g) => g.userId}
          text={(g) => label(names, g.userId)}
          value={props.value}
          chosen={chosen}
          onChange={pick}
        />
      ) : null}
    </div>
  );
}

/** Picks a tenant by name (`GET /tenants?namePrefix=`). */
export function TenantPicker(props: { label: string; value: string; onChange: (tenantId: string, name: string) => void }) {
  const { api } = useSession();
  const [q, setQ] = useState('');
  const found = useLoad(
    () => (q ? ok(api.GET('/tenants', { params: { query: { namePrefix: q, limit: 10 } } })) : Promise.resolve(null)),
    [q],
  );
  const { chosen, pick } = useChosen(props.value, props.onChange);
  return (
    <div class="picker">
      <Search label={props.label} name="tenant-search" hint="What its name starts with" onSearch={setQ} />
      <ErrorNote error={found.error} />
      {q ? (
        <Choices
          legend={`Tenants starting with ${q}`}
          items={found.data?.items ?? []}
          idOf={(t) => t.tenantId}
          text={(t) => t.name}
          value={props.value}
          chosen={chosen}
          onChange={pick}
        />
      ) : null}
    </div>
  );
}

/** The permissions this deployment knows, with what each lets one do. */
export function useKnownPermissions() {
  const { api } = useSession();
  return useLoad(() => ok(api.GET('/permissions')), []);
}

/**
 * Picks permissions among the known ones, each with what it lets its
 * holder do when the deployment says, and the routes that need it (and
 * `*`, or a `prefix:*`).
 */
export function PermissionPicker(props: { value: string[]; onChange: (p: string[]) => void }) {
  const known = useKnownPermissions();
  const [extra, setExtra] = useState('');
  const items = known.data?.items ?? [];
  const wildcards = props.value.filter((p) => !items.some((k) => k.permission === p));
  const toggle = (p: string, on: boolean) =>
    props.onChange(on ? [...props.value, p] : props.value.filter((v) => v !== p));
  return (
    <fieldset data-field="permissions">
      <legend>Permissions</legend>
      <ErrorNote error={known.error} />
      {items.map((k) => (
        <label class="check">
          <input type="checkbox" checked={props.value.includes(k.permission)} onChange={(e) => toggle(k.permission, (e.target as HTMLInputElement).checked)} />
          <span>
            <code>{k.permission}</code> {k.description ? <>{k.description} </> : null}
            <span class="hint">{k.routes.join('; ')}</span>
          </span>
        </label>
      ))}
      {wildcards.map((p) => (
        <label class="check">
          <input type="checkbox" checked onChange={() => toggle(p, false)} />
          <code>{p}</code>
        </label>
      ))}
      <div class="row">
        <Field label="Or a wildcard (ticket:* or *)" name="permission-wildcard" value={extra} onInput={setExtra} />
        <button
          type="button"
          onClick={() => {
            const p = extra.trim();
            if (p && !props.value.includes(p)) props.onChange([...props.value, p]);
            setExtra('');
          }}
        >
          Add
        </button>
      </div>
    </fieldset>
  );
}
