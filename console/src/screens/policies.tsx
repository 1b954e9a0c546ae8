// Cedar policies: the list by name, creating one, and the editor, which
// shows the API's validation error at its line and column.
import { useRef, useState } from 'preact/hooks';

import { ok, Refusal, statementPosition, type Schemas } from '../api';
import { useCan } from '../can';
import { go, href } from '../route';
import { useSession } from '../session';
import {
  Copy,
  DeleteWithReason,
  Done,
  ErrorNote,
  Field,
  Paged,
  PrefixSearch,
  ReasonField,
  Section,
  reasonHeader,
  useAction,
  useLoad,
  useTitle,
} from '../ui';

export function Policies() {
  const { api } = useSession();
  const can = useCan(['policy:create']);
  const [search, setSearch] = useState('');
  useTitle('Cedar policies');
  return (
    <>
      <h1>Cedar policies</h1>
      {can['policy:create'] ? <PolicyEditor /> : null}
      <Section title="All policies">
        <PrefixSearch label="Name starts with" onSearch={setSearch} />
        <Paged<Schemas['PolicyView']>
          label="Policies"
          deps={[search]}
          load={(cursor) =>
            ok(api.GET('/policies', { params: { query: { prefix: search || undefined, cursor, limit: 25 } } }))
          }
          head={['Name', 'Tenant', 'Statement']}
          empty="No policy matches."
          row={(p, names) => (
            <tr>
              <td>
                <a href={href('policies', p.policyId)}>{p.name}</a>
              </td>
              <td>{p.tenantId ? <a href={href('tenants', p.tenantId)}>{names[p.tenantId] ?? p.tenantId}</a> : 'all tenants'}</td>
              <td>
                <code>{(p.statement ?? '').slice(0, 80)}</code>
              </td>
            </tr>
          )}
        />
      </Section>
    </>
  );
}

export function Policy({ policyId }: { policyId: string }) {
  const { api } = useSession();
  const can = useCan(['policy:update', 'policy:delete']);
  const policy = useLoad(() => ok(api.GET('/policies/{policyId}', { params: { path: { policyId } } })), [policyId]);
  const title = policy.data ? `Policy ${policy.data.name}` : 'Policy';
  useTitle(title);
  return (
    <>
      <h1>{title}</h1>
      <p class="id">
        {policyId} <Copy text={policyId} what="policy" />
      </p>
      <p>
        <a href={href('history', 'policy', policyId)}>History of this policy</a>
      </p>
      <ErrorNote error={policy.error} />
      {policy.data ? <PolicyEditor policy={policy.data} readOnly={!can['policy:update']} onSaved={policy.reload} /> : null}
      {can['policy:delete'] ? (
        <DeleteWithReason
          what="policy"
          warning="Its statement stops applying to every decision within the authorizers' refresh interval; its history stays."
          remove={async (reason) => {
            await ok(api.DELETE('/policies/{policyId}', { params: { path: { policyId } }, headers: reasonHeader(reason) }));
            go('policies');
          }}
        />
      ) : null}
    </>
  );
}

function PolicyEditor(props: { policy?: Schemas['PolicyView']; readOnly?: boolean; onSaved?: () => void }) {
  const { api } = useSession();
  const [name, setName] = useState(props.policy?.name ?? '');
  const [statement, setStatement] = useState(props.policy?.statement ?? '');
  const [reason, setReason] = useState('');
  const area = useRef<HTMLTextAreaElement>(null);
  const action = useAction();
  const position = action.error instanceof Refusal && action.error.field === 'statement' ? statementPosition(action.error.detail) : null;
  const lines = statement.split('\n');
  function showAt(line: number, column: number) {
    const el = area.current;
    if (!el) return;
    const offset = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + Math.max(column - 1, 0);
    el.focus();
    el.setSelectionRange(offset, Math.min(offset + 1, statement.length));
  }
  return (
    <Section title={props.policy ? 'Statement' : 'Write a policy'}>
      <form
        class="stack"
        ref={action.scope}
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(async () => {
            if (props.policy) {
              await ok(
                api.PATCH('/policies/{policyId}', {
                  params: { path: { policyId: props.policy.policyId } },
                  body: { statement, version: props.policy.version },
                  headers: reasonHeader(reason),
                }),
              );
              props.onSaved?.();
              return 'Saved: the authorizers use it within their refresh interval.';
            }
            const created = await ok(api.POST('/policies', { body: { name, statement }, headers: reasonHeader(reason) }));
            go('policies', created.policyId);
          });
        }}
      >
        {props.policy ? null : <Field label="Name" name="policy-name" field="name" value={name} onInput={setName} required />}
        <label>
          <span>Cedar statement</span>
          <textarea
            ref={area}
            name="statement"
            rows={Math.max(6, lines.length + 1)}
            spellcheck={false}
            placeholder={'forbid(principal, action == Action::"tenant:delete", resource);'}
            readOnly={props.readOnly}
            data-field="statement"
            value={statement}
            onInput={(e) => setStatement((e.target as HTMLTextAreaElement).value)}
          />
        </label>
        {position ? (
          <div class="at-line">
            <p role="alert" class="error" id={action.errorId} tabIndex={-1}>
              Line {position.line}, column {position.column}:{' '}
              {(action.error as Refusal).detail.replace(/^(statement: )?line \d+, column \d+: /, '')}
            </p>
            <pre aria-label="The line in error">
              <span class="line-no">{position.line}</span> {lines[position.line - 1] ?? ''}
              {'\n'}
              <span class="line-no"> </span> {' '.repeat(Math.max(position.column - 1, 0))}^
            </pre>
            <button type="button" onClick={() => showAt(position.line, position.column)}>
              Go to line {position.line}
            </button>
          </div>
        ) : (
          <ErrorNote error={action.error} id={action.errorId} />
        )}
        {props.readOnly ? null : <ReasonField value={reason} onInput={setReason} />}
        {props.readOnly ? null : (
          <button type="submit" disabled={action.busy}>
            {props.policy ? 'Save statement' : 'Create policy'}
          </button>
        )}
        <Done text={action.done} id={action.doneId} />
      </form>
    </Section>
  );
}
