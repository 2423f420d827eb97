// Projects: ordered groups of monitors. The list in the workspace's order (drag a project by
// its handle, or focus the handle and use the arrow keys, or the move buttons; every change is
// saved with `POST /projects/order`), create, rename and describe, pick the monitors
// (`PUT /projects/{id}/monitors`), and delete (the monitors stay). A viewer gets the projects
// in order with their monitors, and nothing that moves or changes them (role.ts).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, call, type Schemas } from '../api/client';
import { ConfirmButton } from '../confirm';
import { canWrite } from '../role';
import { Link } from '../router';
import { Empty, ErrorNote, Field, useLoad } from '../ui';

type Project = Schemas['Project'];

/** `ids` with `id` moved to index `to` (clamped). */
function moved(ids: string[], id: string, to: number): string[] {
  const rest = ids.filter((x) => x !== id);
  const at = Math.max(0, Math.min(rest.length, to));
  return [...rest.slice(0, at), id, ...rest.slice(at)];
}

export function Projects() {
  const projects = useLoad(() => call(api.GET('/projects')), []);
  const monitors = useLoad(() => call(api.GET('/monitors')), []);
  const [error, setError] = useState<unknown>(null);
  const [formError, setFormError] = useState<unknown>(null);
  const [editing, setEditing] = useState<string | null>(null);
  const [picking, setPicking] = useState<string | null>(null);
  const [dragging, setDragging] = useState<string | null>(null);
  const [said, setSaid] = useState('');
  const listRef = useRef<HTMLOListElement>(null);
  const drag = useRef<{ id: string; start: Project[] } | null>(null);
  /** The project and control (`handle`, `up`, `down`) to give focus back to after a move. */
  const refocus = useRef<[string, string] | null>(null);
  const saves = useRef(0);

  const list = projects.data ?? [];
  // The drag's window listeners outlive a render: they read the order through this.
  const listNow = useRef<Project[]>(list);
  listNow.current = list;
  const names = Object.fromEntries((monitors.data ?? []).map((m) => [m.id, m.name]));

  // Keyed items keep their DOM node when moved, but moving a focused node can drop focus.
  useEffect(() => {
    const r = refocus.current;
    if (!r) return;
    refocus.current = null;
    const item = listRef.current?.querySelector(`[data-project-id="${CSS.escape(r[0])}"]`);
    const el = item?.querySelector<HTMLButtonElement>(`[data-move="${r[1]}"]`);
    (el && !el.disabled ? el : item?.querySelector<HTMLElement>('.handle'))?.focus();
  });

  const reorderLocally = (ids: string[]) => {
    const byId = new Map(listNow.current.map((p) => [p.id, p]));
    const next = ids.map((id) => byId.get(id)).filter((p): p is Project => !!p);
    listNow.current = next;
    projects.setData(next);
  };

  const persist = async (ids: string[], id: string) => {
    setError(null);
    const name = listNow.current.find((p) => p.id === id)?.name ?? '';
    // Quick moves send several orders; only the answer to the last one is shown.
    const n = ++saves.current;
    try {
      const saved = await call(api.POST('/projects/order', { body: { projectIds: ids } }));
      if (n !== saves.current) return;
      listNow.current = saved;
      projects.setData(saved);
      setSaid(`${name} moved to position ${ids.indexOf(id) + 1} of ${ids.length}; order saved.`);
    } catch (err) {
      setError(err);
      projects.reload();
    }
  };

  const moveBy = (id: string, delta: number, from = 'handle') => {
    const ids = listNow.current.map((p) => p.id);
    const at = ids.indexOf(id);
    const to = at + delta;
    if (at < 0 || to < 0 || to >= ids.length) return;
    const next = moved(ids, id, to);
    reorderLocally(next);
    refocus.current = [id, from];
    persist(next, id);
  };

  // Pointer dragging: while the button is down the window follows the pointer (the handle's
  // own node may move in the list, so it cannot hold the capture); the project goes where the
  // pointer is among the other projects' midpoints, and the order is saved when it is let go.
  const onPointerDown = (e: PointerEvent, id: string) => {
    if (e.button !== 0 || drag.current) return;
    e.preventDefault();
    drag.current = { id, start: listNow.current };
    setDragging(id);
    const move = (ev: PointerEvent) => {
      const d = drag.current;
      if (!d || !listRef.current) return;
      const others = [...listRef.current.querySelectorAll<HTMLElement>('[data-project-id]')].filter(
        (el) => el.dataset.projectId !== d.id,
      );
      const to = others.filter((el) => {
        const r = el.getBoundingClientRect();
        return r.top + r.height / 2 < ev.clientY;
      }).length;
      const ids = listNow.current.map((p) => p.id);
      if (ids.indexOf(d.id) !== to) reorderLocally(moved(ids, d.id, to));
    };
    const end = (ev: Event) => {
      removeEventListener('pointermove', move);
      removeEventListener('pointerup', end);
      removeEventListener('pointercancel', end);
      removeEventListener('keydown', esc);
      const d = drag.current;
      if (!d) return;
      drag.current = null;
      setDragging(null);
      if (ev.type !== 'pointerup') {
        projects.setData(d.start);
        return;
      }
      const ids = listNow.current.map((p) => p.id);
      if (ids.join() !== d.start.map((p) => p.id).join()) persist(ids, d.id);
    };
    const esc = (ev: KeyboardEvent) => ev.key === 'Escape' && end(ev);
    addEventListener('pointermove', move);
    addEventListener('pointerup', end);
    addEventListener('pointercancel', end);
    addEventListener('keydown', esc);
  };
  const onHandleKey = (e: KeyboardEvent, id: string) => {
    if (e.key === 'ArrowUp' || e.key === 'ArrowDown') {
      e.preventDefault();
      moveBy(id, e.key === 'ArrowUp' ? -1 : 1);
    }
  };

  const create = async (e: Event) => {
    e.preventDefault();
    const form = e.target as HTMLFormElement;
    const f = new FormData(form);
    setFormError(null);
    try {
      const description = String(f.get('description') ?? '').trim();
      await call(api.POST('/projects', { body: { name: String(f.get('name') ?? ''), description: description || null } }));
      form.reset();
      projects.reload();
    } catch (err) {
      setFormError(err);
    }
  };
  const remove = async (p: Project) => {
    setError(null);
    try {
      await call(api.DELETE('/projects/{project_id}', { params: { path: { project_id: p.id } } }));
      setSaid(`${p.name} deleted.`);
      projects.reload();
    } catch (err) {
      setError(err);
    }
  };
  const fe = (n: string) => (formError instanceof ApiError ? formError.forField(n) : undefined);
  const writer = canWrite();

  return (
    <main id="main">
      <h1>Projects</h1>
      <p class="muted">Projects group monitors, in the order you choose, for the monitor list and reports.</p>
      <ErrorNote error={projects.error ?? error} />
      <p class="sr-only" role="status" aria-live="polite">{said}</p>
      {projects.data && list.length === 0 && (
        <Empty title="No projects yet">
          {writer && <p>Create a project below, then pick the monitors that belong to it.</p>}
        </Empty>
      )}
      {list.length > 0 && (
        <>
          {writer && (
            <p class="hint" id="reorder-help">
              To change the order, drag a project by its handle (⠿), or focus the handle and press the up and down arrow keys.
            </p>
          )}
          <ol class={`cards projects${dragging ? ' is-dragging' : ''}`} ref={listRef} aria-label="Projects">
            {list.map((p, i) => (
              <li key={p.id} class={`card project${dragging === p.id ? ' dragged' : ''}`} data-project-id={p.id}>
                <div class="title-row">
                  <div class="project-name">
                    {writer && (
                      <button
                        type="button"
                        class="handle"
                        aria-label={`Reorder ${p.name}, position ${i + 1} of ${list.length}`}
                        aria-describedby="reorder-help"
                        aria-pressed={dragging === p.id ? 'true' : undefined}
                        onPointerDown={(e) => onPointerDown(e, p.id)}
                        onKeyDown={(e) => onHandleKey(e, p.id)}
                      >
                        ⠿
                      </button>
                    )}
                    <h2>{p.name}</h2>
                  </div>
                  {writer && (
                    <div class="actions">
                      <button type="button" data-move="up" onClick={() => moveBy(p.id, -1, 'up')} disabled={i === 0} aria-label={`Move ${p.name} up`}>↑</button>
                      <button type="button" data-move="down" onClick={() => moveBy(p.id, 1, 'down')} disabled={i === list.length - 1} aria-label={`Move ${p.name} down`}>↓</button>
                      <button type="button" aria-expanded={editing === p.id} aria-label={`Edit ${p.name}`} onClick={() => setEditing(editing === p.id ? null : p.id)}>Edit</button>
                      <button type="button" aria-expanded={picking === p.id} aria-label={`Monitors of ${p.name}`} onClick={() => setPicking(picking === p.id ? null : p.id)}>Monitors</button>
                      <ConfirmButton label="Delete" subject={p.name} question="Delete this project? Its monitors stay." onConfirm={() => remove(p)} />
                    </div>
                  )}
                </div>
                {p.description && <p>{p.description}</p>}
                <p class="muted">
                  {p.monitorIds.length === 0
                    ? writer ? 'No monitors yet: use “Monitors” to add some.' : 'No monitors yet.'
                    : `${p.monitorIds.length} monitor${p.monitorIds.length === 1 ? '' : 's'}: ${p.monitorIds.map((m) => names[m] ?? m).join(', ')}`}
                </p>
                {writer && editing === p.id && (
                  <EditProject project={p} onDone={(saved) => {
                    setEditing(null);
                    if (saved) projects.setData(list.map((x) => (x.id === saved.id ? saved : x)));
                  }} />
                )}
                {writer && picking === p.id && (
                  <PickMonitors project={p} monitors={monitors.data ?? []} onDone={(saved) => {
                    setPicking(null);
                    if (saved) projects.setData(list.map((x) => (x.id === saved.id ? saved : x)));
                  }} />
                )}
              </li>
            ))}
          </ol>
        </>
      )}
      {writer && (
        <form class="card form" onSubmit={create} noValidate>
          <h2>New project</h2>
          <ErrorNote error={formError} />
          <Field label="Name" id="pj-name" error={fe('name')}>
            <input id="pj-name" name="name" required maxLength={100} aria-invalid={fe('name') ? 'true' : undefined} />
          </Field>
          <Field label="Description (optional)" id="pj-description" error={fe('description')}>
            <textarea id="pj-description" name="description" maxLength={2000} />
          </Field>
          <button type="submit" class="primary">Create project</button>
        </form>
      )}
    </main>
  );
}

function EditProject({ project, onDone }: { project: Project; onDone: (saved?: Project) => void }) {
  const [error, setError] = useState<unknown>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.target as HTMLFormElement);
    setError(null);
    try {
      const description = String(f.get('description') ?? '').trim();
      const saved = await call(
        api.PATCH('/projects/{project_id}', {
          params: { path: { project_id: project.id } },
          body: { name: String(f.get('name') ?? ''), description: description || null },
        }),
      );
      onDone(saved);
    } catch (err) {
      setError(err);
    }
  };
  const fe = (n: string) => (error instanceof ApiError ? error.forField(n) : undefined);
  const id = `pe-${project.id}`;
  return (
    <form class="form subform" onSubmit={save} noValidate>
      <ErrorNote error={error} />
      <Field label="Project name" id={`${id}-name`} error={fe('name')}>
        <input id={`${id}-name`} name="name" defaultValue={project.name} required maxLength={100} aria-invalid={fe('name') ? 'true' : undefined} />
      </Field>
      <Field label="Project description" id={`${id}-description`} error={fe('description')}>
        <textarea id={`${id}-description`} name="description" defaultValue={project.description ?? ''} maxLength={2000} />
      </Field>
      <div class="actions">
        <button type="submit" class="primary">Save</button>
        <button type="button" onClick={() => onDone()}>Cancel</button>
      </div>
    </form>
  );
}

function PickMonitors(props: { project: Project; monitors: Schemas['Monitor'][]; onDone: (saved?: Project) => void }) {
  const { project, monitors } = props;
  const [picked, setPicked] = useState<Set<string>>(new Set(project.monitorIds));
  const [error, setError] = useState<unknown>(null);
  const save = async (e: Event) => {
    e.preventDefault();
    setError(null);
    // Members keep their order; new ones follow in the list's order.
    const ids = [
      ...project.monitorIds.filter((m) => picked.has(m)),
      ...monitors.map((m) => m.id).filter((m) => picked.has(m) && !project.monitorIds.includes(m)),
    ];
    try {
      const saved = await call(
        api.PUT('/projects/{project_id}/monitors', { params: { path: { project_id: project.id } }, body: { monitorIds: ids } }),
      );
      props.onDone(saved);
    } catch (err) {
      setError(err);
    }
  };
  if (!monitors.length) {
    return (
      <p class="notice">
        This workspace has no monitors yet. <Link href="/monitors/new">Create a monitor</Link>, then add it here.
      </p>
    );
  }
  return (
    <form class="subform" onSubmit={save}>
      <ErrorNote error={error} />
      <fieldset class="caps">
        <legend>Monitors in {project.name}</legend>
        {monitors.map((m) => (
          <label class="check">
            <input
              type="checkbox"
              checked={picked.has(m.id)}
              onChange={(e) => {
                const next = new Set(picked);
                if ((e.target as HTMLInputElement).checked) next.add(m.id);
                else next.delete(m.id);
                setPicked(next);
              }}
            />
            {m.name}
          </label>
        ))}
      </fieldset>
      <div class="actions">
        <button type="submit" class="primary">Save monitors</button>
        <button type="button" onClick={() => props.onDone()}>Cancel</button>
      </div>
    </form>
  );
}
