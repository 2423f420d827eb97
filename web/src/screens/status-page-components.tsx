// The order of a status page's components, edited by dragging or from the keyboard. The
// public page shows components in page order, a group where its first member stands, so
// the editor moves groups as blocks and components within their group; the draft order is
// saved in one `PUT /status-pages/{page_id}/components` (which keeps each component by id).
// A viewer, who cannot save an order, gets the same layout as a plain list (`ComponentList`).
import { useState } from 'preact/hooks';
import { api, call, type Schemas } from '../api/client';
import { moveTo, Sortable, SortableHelp, type Controls } from '../sortable';
import { ErrorNote } from '../ui';

type Comp = Schemas['StatusPageComponent'];
interface Block {
  key: string;
  group: string | null;
  items: Comp[];
}

/** Blocks as the public page lays them out: a group gathers its members where its first stands. */
function toBlocks(list: Comp[]): Block[] {
  const out: Block[] = [];
  for (const c of list) {
    const g = c.group ?? null;
    const existing = g === null ? undefined : out.find((b) => b.group === g);
    if (existing) existing.items.push(c);
    else out.push({ key: g === null ? `c:${c.id}` : `g:${g}`, group: g, items: [c] });
  }
  return out;
}

const flat = (blocks: Block[]) => blocks.flatMap((b) => b.items);
const input = (c: Comp): Schemas['ComponentInput'] => ({
  id: c.id, name: c.name, group: c.group, monitorId: c.monitorId, description: c.description,
});

/** The components in page order, groups gathered, with nothing to move or remove. */
export function ComponentList(props: { components: Comp[]; monitors: Schemas['Monitor'][] }) {
  if (props.components.length === 0) return <p>No components yet.</p>;
  const monitorName = (id: string | null) => (id ? props.monitors.find((m) => m.id === id)?.name ?? 'monitor' : null);
  const item = (c: Comp) => (
    <li data-component-id={c.id}>
      {c.name}
      {monitorName(c.monitorId) && <span class="muted"> · {monitorName(c.monitorId)}</span>}
    </li>
  );
  return (
    <ul class="plain component-list" aria-label="Components">
      {toBlocks(props.components).map((b) =>
        b.group === null ? (
          item(b.items[0])
        ) : (
          <li>
            <strong>{b.group}</strong> <span class="muted">group</span>
            <ul class="plain" aria-label={`Components in ${b.group}`}>
              {b.items.map(item)}
            </ul>
          </li>
        ),
      )}
    </ul>
  );
}

export function ComponentsEditor(props: {
  pageId: string;
  components: Comp[];
  monitors: Schemas['Monitor'][];
  onSaved: () => void;
}) {
  // The draft remembers which saved list it was made from: a new list (a component added or
  // removed, a save) starts a fresh draft in the same render, so nothing looks unsaved.
  const [draft, setDraft] = useState(() => ({ from: props.components, blocks: toBlocks(props.components) }));
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const blocks = draft.from === props.components ? draft.blocks : toBlocks(props.components);
  const setBlocks = (next: Block[] | ((bs: Block[]) => Block[])) =>
    setDraft((d) => {
      const base = d.from === props.components ? d.blocks : toBlocks(props.components);
      return { from: props.components, blocks: typeof next === 'function' ? next(base) : next };
    });

  // Compared in block order: the saved list may hold a group's members apart (a component
  // added to a group lands last), which the page shows gathered, so that is no change.
  const saved = flat(toBlocks(props.components)).map((c) => c.id).join();
  const dirty = flat(blocks).map((c) => c.id).join() !== saved;

  const put = async (list: Comp[]) => {
    setError(null);
    setBusy(true);
    try {
      await call(api.PUT('/status-pages/{page_id}/components', { params: { path: { page_id: props.pageId } }, body: list.map(input) }));
      props.onSaved();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  const monitorName = (id: string | null) => (id ? props.monitors.find((m) => m.id === id)?.name ?? 'monitor' : null);
  const row = (c: Comp, ctl: Controls) => (
    <div class="sort-row" data-component-id={c.id}>
      {ctl.handle}
      <span class="sort-name">
        {c.name}
        {monitorName(c.monitorId) && <span class="muted"> · {monitorName(c.monitorId)}</span>}
      </span>
      {ctl.buttons}
      <button
        type="button"
        class="link"
        disabled={busy}
        onClick={() => put(flat(blocks).filter((x) => x.id !== c.id))}
        aria-label={`Remove ${c.name}`}
      >
        Remove
      </button>
    </div>
  );

  if (props.components.length === 0) {
    return <p>No components yet. Add the services your users care about below; link each to a monitor to show its status.</p>;
  }
  return (
    <>
      <Sortable
        items={blocks}
        class="blocks"
        aria-label="Component order"
        keyOf={(b) => b.key}
        labelOf={(b) => (b.group !== null ? `group ${b.group}` : b.items[0].name)}
        onMove={(key, to) => setBlocks((bs) => moveTo(bs, (b) => b.key, key, to))}
        render={(b, ctl) =>
          b.group === null ? (
            row(b.items[0], ctl)
          ) : (
            <div class="sort-group">
              <div class="sort-row group-row">
                {ctl.handle}
                <span class="sort-name"><strong>{b.group}</strong> <span class="muted">group</span></span>
                {ctl.buttons}
              </div>
              <Sortable
                items={b.items}
                aria-label={`Components in ${b.group}`}
                keyOf={(c) => c.id}
                labelOf={(c) => c.name}
                onMove={(key, to) =>
                  setBlocks((bs) => bs.map((x) => (x.key === b.key ? { ...x, items: moveTo(x.items, (c) => c.id, key, to) } : x)))
                }
                render={(c, inner) => row(c, inner)}
              />
            </div>
          )
        }
      />
      <SortableHelp />
      <ErrorNote error={error} />
      {dirty && (
        <div class="savebar" role="group" aria-label="Unsaved order">
          <span>The order has changed.</span>
          <button type="button" class="primary" disabled={busy} onClick={() => put(flat(blocks))}>Save order</button>
          <button type="button" disabled={busy} onClick={() => setBlocks(toBlocks(props.components))}>Undo</button>
        </div>
      )}
    </>
  );
}
