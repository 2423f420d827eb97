// The signed-in person's role in the current workspace and what the screens offer by it. A
// viewer reads everything and changes nothing: the API refuses their writes anyway, so the
// screens leave out every control that would only fail (create, edit, delete, pause,
// acknowledge, save...) and keep reads, filters, tabs and copy buttons. Owners and admins
// also run the workspace (invitations), which the others cannot read; the audit log is read by
// every role but member (a viewer holds every `*:read`, `audit:read` included).
import { signal } from '@preact/signals';
import type { Schemas } from './api/client';

export type Role = Schemas['Role'];

/** Set by the shell from `GET /workspaces` with each session; unknown until then. */
export const role = signal<Role | undefined>(undefined);

/** Whether to offer controls that change the workspace's monitoring. An unknown role is not
 *  taken for a viewer: the shell learns the role before the first screen is drawn, and a
 *  failed look-up should not take everyone's buttons away. */
export function canWrite(): boolean {
  return role.value !== 'viewer';
}

/** Whether to offer the workspace's administration (invitations). */
export function canAdminister(): boolean {
  return role.value !== 'member' && role.value !== 'viewer';
}

/** Whether the audit log can be read: a member's role holds no `audit:read`. */
export function canReadAudit(): boolean {
  return role.value !== 'member';
}
