// MCP grants: the OAuth grants the signed-in person gave AI agents (MCP clients) in this
// workspace, with their scopes and last use, and revoking one (its tokens stop at once).
// Grants are personal: nobody else sees or revokes yours, and no API key can manage them; so
// a viewer, who changes nothing in the workspace, still revokes their own.
import { useState } from 'preact/hooks';
import { api, call } from '../api/client';
import { ConfirmButton } from '../confirm';
import { ago, when } from '../format';
import { Link } from '../router';
import { Empty, ErrorNote, useLoad } from '../ui';

export function McpGrants() {
  const grants = useLoad(() => call(api.GET('/mcp/grants')), []);
  const [error, setError] = useState<unknown>(null);
  const [said, setSaid] = useState('');
  const mcpUrl = `${location.origin}/mcp`;

  const revoke = async (id: string, client: string) => {
    setError(null);
    try {
      await call(api.DELETE('/mcp/grants/{grant_id}', { params: { path: { grant_id: id } } }));
      setSaid(`Access of ${client} revoked.`);
      grants.reload();
    } catch (err) {
      setError(err);
    }
  };

  const list = grants.data ?? [];
  return (
    <main id="main">
      <h1>MCP grants</h1>
      <p class="muted">AI agents you allowed to use this workspace through the Model Context Protocol. Revoking one stops its access at once.</p>
      <ErrorNote error={grants.error ?? error} />
      {said && <p class="notice" role="status">{said}</p>}
      {grants.data && list.length === 0 && (
        <Empty title="No agent has access">
          <p>
            To connect an agent, add this MCP server address to it: <code data-testid="mcp-url">{mcpUrl}</code>
          </p>
          <p>
            An agent that supports OAuth sends you to a consent page here, where you choose what it may do; the grant then
            shows on this page. For other agents, <Link href="/api-keys">mint an API key</Link> usable on MCP and give it as a
            bearer token. The README's “Connect an agent” section has examples.
          </p>
        </Empty>
      )}
      {list.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption>Your grants</caption>
            <thead>
              <tr>
                <th scope="col">Client</th>
                <th scope="col">Scopes</th>
                <th scope="col">Granted</th>
                <th scope="col">Last used</th>
                <th scope="col"><span class="sr-only">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {list.map((g) => (
                <tr data-grant-id={g.id}>
                  <td><code>{g.clientId}</code></td>
                  <td class="muted">{g.scopes.join(', ')}</td>
                  <td>{when(g.createdAt)}</td>
                  <td title={g.lastUsedAt ? when(g.lastUsedAt) : undefined}>{g.lastUsedAt ? ago(g.lastUsedAt) : 'never'}</td>
                  <td class="actions">
                    <ConfirmButton label="Revoke" subject={g.clientId} question="Revoke this agent's access?" onConfirm={() => revoke(g.id, g.clientId)} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </main>
  );
}
