// The settings of one notification channel type as form fields, generated from the type's
// config schema in the API document (`<Type>ChannelConfig`, extracted at build time into
// api/channel-schemas.ts): titles as labels, descriptions as hints, required marks, enums and
// small integer ranges as selects, lists as comma-separated text, and secrets (`format:
// password`) as masked, write-only inputs where a blank keeps the stored value.
import { ApiError } from './api/client';
import { CHANNEL_SCHEMAS } from './api/channel-schemas';
import { Field } from './ui';

export interface FieldSchema {
  type?: string | string[];
  title?: string;
  description?: string;
  format?: string;
  enum?: unknown[];
  minimum?: number;
  maximum?: number;
  anyOf?: FieldSchema[];
  items?: FieldSchema;
  additionalProperties?: boolean | FieldSchema;
  [other: string]: unknown;
}

export interface ConfigSchema {
  description?: string;
  properties: Record<string, FieldSchema>;
  required: string[];
}

/** What every read shows in place of a stored secret; sent back, it keeps the secret. */
export const MASK = '********';

type Kind = 'secret' | 'select' | 'list' | 'map' | 'number' | 'text';

function types(s: FieldSchema): string[] {
  return Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
}

function kindOf(s: FieldSchema): Kind {
  if (s.format === 'password') return 'secret';
  if (s.enum) return 'select';
  const t = types(s);
  if (t.includes('integer') && s.minimum !== undefined && s.maximum !== undefined && s.maximum - s.minimum <= 12) {
    return 'select';
  }
  if (t.includes('array') || s.anyOf?.some((a) => types(a).includes('array'))) return 'list';
  if (t.includes('object')) return 'map';
  if (t.length === 1 && t[0] === 'integer') return 'number';
  return 'text';
}

/** The choices of a select field: its enum, or every integer of its range. */
function choices(s: FieldSchema): string[] {
  if (s.enum) return s.enum.filter((v) => v !== null).map(String);
  const out: string[] = [];
  for (let i = s.minimum!; i <= s.maximum!; i++) out.push(String(i));
  return out;
}

/** A type's description as one line for people: "A bot's sendMessage." */
function about(description: string): string {
  const s = description.replace(/^The `config` of an? \w+ channel: /, '').replace(/`/g, '');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function schemaOf(type: string): ConfigSchema | undefined {
  return CHANNEL_SCHEMAS[type];
}

/** Required keys first, each group in the document's order. */
function keys(schema: ConfigSchema): string[] {
  const all = Object.keys(schema.properties);
  return [...all.filter((k) => schema.required.includes(k)), ...all.filter((k) => !schema.required.includes(k))];
}

function initial(kind: Kind, v: unknown): string {
  if (v === undefined || v === null) return '';
  if (kind === 'secret') return '';
  if (kind === 'list') return Array.isArray(v) ? v.join(', ') : String(v);
  if (kind === 'map') {
    return Object.entries(v as Record<string, unknown>)
      .map(([k, x]) => `${k}: ${x}`)
      .join('\n');
  }
  return String(v);
}

/** The inputs of one type's config; `stored` is the channel's (masked) config when editing. */
export function ConfigFields(props: { type: string; stored?: Record<string, unknown>; error: unknown }) {
  const schema = schemaOf(props.type);
  if (!schema) return <p class="notice error">This server's API document describes no settings for {props.type}.</p>;
  const fe = (k: string) => (props.error instanceof ApiError ? props.error.forField(`config.${k}`) : undefined);
  return (
    <fieldset class="config" key={props.type}>
      <legend>{props.type} settings</legend>
      {schema.description && <p class="hint">{about(schema.description)}</p>}
      {keys(schema).map((k) => {
        const s = schema.properties[k];
        const kind = kindOf(s);
        const stored = props.stored?.[k];
        // A stored secret needs no new value: a blank keeps it.
        const kept = kind === 'secret' && props.stored !== undefined && stored !== undefined && stored !== null;
        const required = schema.required.includes(k) && !kept;
        const id = `ch-cfg-${k}`;
        const label = `${s.title ?? k}${required ? ' (required)' : ''}`;
        const value = initial(kind, stored);
        const describedBy = s.description ? `${id}-hint` : undefined;
        let input;
        if (kind === 'secret') {
          input = (
            <input
              id={id}
              name={k}
              type="password"
              autocomplete="new-password"
              required={required}
              placeholder={kept ? 'Stored: leave blank to keep' : ''}
              aria-describedby={describedBy}
            />
          );
        } else if (kind === 'select') {
          input = (
            <select id={id} name={k} required={required} aria-describedby={describedBy}>
              {!required && <option value="" selected={value === ''}>Default</option>}
              {choices(s).map((c) => (
                <option value={c} selected={c === value}>{c}</option>
              ))}
            </select>
          );
        } else if (kind === 'map') {
          input = <textarea id={id} name={k} class="code" rows={3} defaultValue={value} placeholder="Name: value (one a line)" aria-describedby={describedBy} />;
        } else if (kind === 'number') {
          input = (
            <input id={id} name={k} type="number" defaultValue={value} required={required} min={s.minimum} max={s.maximum} aria-describedby={describedBy} />
          );
        } else {
          input = (
            <input
              id={id}
              name={k}
              type="text"
              inputMode={/url$/i.test(k) ? 'url' : undefined}
              defaultValue={value}
              required={required}
              aria-describedby={describedBy}
            />
          );
        }
        // Descriptions are Markdown-ish text written for the API document: shown without code marks.
        const text = s.description?.replace(/`/g, '');
        const hint = kind === 'list' ? `${text ?? ''} Separate several with commas.`.trim() : text;
        return (
          <Field label={label} id={id} hint={hint} error={fe(k)}>
            {input}
          </Field>
        );
      })}
    </fieldset>
  );
}

/** The config the form's inputs say, for `type`; secrets left blank keep the stored value. */
export function readConfig(type: string, f: FormData, stored?: Record<string, unknown>): Record<string, unknown> {
  const schema = schemaOf(type);
  const out: Record<string, unknown> = {};
  if (!schema) return out;
  for (const k of Object.keys(schema.properties)) {
    const s = schema.properties[k];
    const kind = kindOf(s);
    const raw = String(f.get(k) ?? '').trim();
    if (kind === 'secret') {
      if (raw) out[k] = raw;
      else if (stored && stored[k] !== undefined && stored[k] !== null) out[k] = MASK;
      continue;
    }
    if (!raw) continue;
    if (kind === 'list') {
      out[k] = raw.split(/[,\n]/).map((x) => x.trim()).filter(Boolean);
    } else if (kind === 'map') {
      const map: Record<string, string> = {};
      for (const line of raw.split('\n')) {
        const at = line.indexOf(':');
        if (at > 0) map[line.slice(0, at).trim()] = line.slice(at + 1).trim();
      }
      out[k] = map;
    } else if (kind === 'number' || (kind === 'select' && types(s).includes('integer'))) {
      out[k] = Number(raw);
    } else {
      out[k] = raw;
    }
  }
  return out;
}
