import { useEffect, useState } from 'preact/hooks';
import type { ApiError } from '../api.js';
import { asApiError } from '../data.js';
import { pushState, turnOff, turnOn, type PushState } from '../push.js';
import { ErrorNote } from './bits.js';

const explain: Record<PushState, string> = {
  unsupported: 'This browser cannot show notifications from the console.',
  unconfigured: 'Notifications are off on this node (an operator sets TROUPE_WEB_PUSH_SUBJECT to turn them on).',
  denied: 'Notifications are blocked for this site in the browser settings.',
  off: 'Get a browser notification when a gate you may decide opens.',
  on: 'This browser notifies you when a gate you may decide opens.',
};

export function PushOptIn() {
  const [state, setState] = useState<PushState | undefined>(undefined);
  const [error, setError] = useState<ApiError | undefined>(undefined);
  useEffect(() => { pushState().then(setState, (err: unknown) => setError(asApiError(err))); }, []);
  const change = (fn: () => Promise<PushState>) => {
    setError(undefined);
    fn().then(setState, (err: unknown) => setError(asApiError(err)));
  };
  if (state === undefined && !error) return null;
  return (
    <div class="card push" role="group" aria-label="Notifications">
      {state ? <p class="small" data-push-state={state}>{explain[state]}</p> : null}
      {state === 'off' ? <button type="button" onClick={() => change(turnOn)}>Turn on notifications</button> : null}
      {state === 'on' ? <button type="button" class="button-quiet" onClick={() => change(turnOff)}>Turn off notifications</button> : null}
      <ErrorNote error={error} title="Notifications" />
    </div>
  );
}
