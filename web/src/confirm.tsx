// A destructive action that asks once more in place: the first press swaps the button for the
// question with "Yes" and "Cancel" (focus goes to the question's buttons and back), so nothing
// is deleted by a stray click or key press and no browser dialog is needed.
import { useEffect, useRef, useState } from 'preact/hooks';

export function ConfirmButton(props: {
  /** The button's text, e.g. "Delete". */
  label: string;
  /** What is being acted on, for the accessible names ("Delete Billing"). */
  subject: string;
  /** The question asked, e.g. "Delete this project?". */
  question: string;
  onConfirm: () => void | Promise<void>;
}) {
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  const first = useRef<HTMLButtonElement>(null);
  const wasAsking = useRef(false);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (wasAsking.current) first.current?.focus();
    wasAsking.current = asking;
  }, [asking]);
  if (!asking) {
    return (
      <button type="button" class="danger" ref={first} onClick={() => setAsking(true)} aria-label={`${props.label} ${props.subject}`}>
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        class="danger"
        ref={yes}
        aria-label={`Yes, ${props.label.toLowerCase()} ${props.subject}`}
        onClick={async () => {
          await props.onConfirm();
          setAsking(false);
        }}
      >
        Yes, {props.label.toLowerCase()}
      </button>
      <button type="button" onClick={() => setAsking(false)} onKeyDown={(e) => e.key === 'Escape' && setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}
